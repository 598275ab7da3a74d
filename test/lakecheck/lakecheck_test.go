package lakecheck

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// TestCheckTypes checks that the Iceberg types lakecheck expects come from
// the MariaDB column alone: a mapping that loses a decimal's scale, narrows
// a double or a BIGINT, or changes a geometry struct is refused, the
// mapping of TYPES.md is accepted, and a column Iceberg lacks is left to
// Diff.
func TestCheckTypes(t *testing.T) {
	p := iceberg.PrimitiveTypes
	mysql := map[string]mysqlColumn{
		"d":   {dataType: "decimal", columnType: "decimal(10,2)", precision: 10, scale: 2},
		"dw":  {dataType: "decimal", columnType: "decimal(65,30)", precision: 65, scale: 30},
		"f":   {dataType: "double", columnType: "double"},
		"fl":  {dataType: "float", columnType: "float"},
		"fm":  {dataType: "float", columnType: "float(7,2)"},
		"iu":  {dataType: "int", columnType: "int(10) unsigned"},
		"b1":  {dataType: "bit", columnType: "bit(1)"},
		"b9":  {dataType: "bit", columnType: "bit(9)"},
		"t":   {dataType: "time", columnType: "time(6)"},
		"ts":  {dataType: "timestamp", columnType: "timestamp(3)"},
		"p":   {dataType: "point", columnType: "point"},
		"g":   {dataType: "linestring", columnType: "linestring"},
		"j":   {dataType: "longtext", columnType: "longtext"},
		"y":   {dataType: "year", columnType: "year(4)"},
		"new": {dataType: "varchar", columnType: "varchar(10)"},
	}
	point := &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 20, Name: "x", Type: p.Float64, Required: true}, {ID: 21, Name: "y", Type: p.Float64, Required: true},
		{ID: 22, Name: "wkb", Type: p.Binary}, {ID: 23, Name: "srid", Type: p.Int32}}}
	geom := &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 24, Name: "wkb", Type: p.Binary, Required: true}, {ID: 25, Name: "srid", Type: p.Int32}}}
	good := map[string]iceberg.Type{"d": iceberg.DecimalTypeOf(10, 2), "dw": p.String, "f": p.Float64, "fl": p.Float32, "fm": p.Float64,
		"iu": p.Int64, "b1": p.Bool, "b9": p.Binary, "t": p.Int64, "ts": p.TimestampTz, "p": point, "g": geom, "j": p.String, "y": p.Int32}
	if err := checkTypes("x", mysql, good); err != nil {
		t.Fatalf("the TYPES.md mapping: %v", err)
	}
	for col, bad := range map[string]iceberg.Type{
		"d": iceberg.DecimalTypeOf(10, 1), "dw": iceberg.DecimalTypeOf(38, 30), "f": p.Float32, "iu": p.Int32,
		"b1": p.Int32, "t": p.Time, "ts": p.Timestamp, "p": geom, "g": point, "y": p.String,
	} {
		types := map[string]iceberg.Type{}
		for k, v := range good {
			types[k] = v
		}
		types[col] = bad
		err := checkTypes("x", mysql, types)
		if err == nil || !strings.Contains(err.Error(), "column "+col+":") {
			t.Errorf("%s as %s: err %v, want a refusal naming %s", col, bad, err, col)
		}
	}
	if err := checkTypes("x", map[string]mysqlColumn{"u": {dataType: "uuid", columnType: "uuid"}}, map[string]iceberg.Type{"u": p.String}); err == nil {
		t.Error("a type TYPES.md does not map was accepted")
	}
}

// TestSQLValueTemporal checks MariaDB's temporal text at the limits against
// the canonical forms: the zero TIMESTAMP is the epoch whatever the
// column's nullability, a zero DATE or DATETIME is NULL or the epoch, year
// 0 is kept, and an invalid day stays as written (so it can never equal a
// value ingest could write).
func TestSQLValueTemporal(t *testing.T) {
	p := iceberg.PrimitiveTypes
	tests := []struct {
		in   string
		t    iceberg.Type
		m    mysqlColumn
		want string
	}{
		{"0000-00-00 00:00:00", p.TimestampTz, mysqlColumn{dataType: "timestamp", nullable: true}, "1970-01-01 00:00:00.000000"},
		{"0000-00-00 00:00:00.000", p.TimestampTz, mysqlColumn{dataType: "timestamp"}, "1970-01-01 00:00:00.000000"},
		{"1970-01-01 00:00:00.999999", p.TimestampTz, mysqlColumn{dataType: "timestamp", nullable: true}, "1970-01-01 00:00:00.999999"},
		{"2038-01-19 03:14:07.999999", p.TimestampTz, mysqlColumn{dataType: "timestamp"}, "2038-01-19 03:14:07.999999"},
		{"0000-00-00 00:00:00", p.Timestamp, mysqlColumn{dataType: "datetime", nullable: true}, "NULL"},
		{"2020-00-15 10:20:30.123456", p.Timestamp, mysqlColumn{dataType: "datetime"}, "1970-01-01 00:00:00.000000"},
		{"0000-12-31 23:59:59.999999", p.Timestamp, mysqlColumn{dataType: "datetime"}, "0000-12-31 23:59:59.999999"},
		{"9999-12-31 23:59:59.999999", p.Timestamp, mysqlColumn{dataType: "datetime"}, "9999-12-31 23:59:59.999999"},
		{"2020-02-00", p.Date, mysqlColumn{dataType: "date", nullable: true}, "NULL"},
		{"2020-02-00", p.Date, mysqlColumn{dataType: "date"}, "1970-01-01"},
		{"0000-01-01", p.Date, mysqlColumn{dataType: "date"}, "0000-01-01"},
		{"2021-02-31", p.Date, mysqlColumn{dataType: "date"}, "2021-02-31"},
		{"2021-02-31 10:00:00", p.Timestamp, mysqlColumn{dataType: "datetime"}, "2021-02-31 10:00:00"},
		{"-838:59:59.999999", p.Int64, mysqlColumn{dataType: "time"}, "-3020399999999"},
		{"-00:00:00.000001", p.Int64, mysqlColumn{dataType: "time"}, "-1"},
		{"0000", p.Int32, mysqlColumn{dataType: "year"}, "0"},
		{"2155", p.Int32, mysqlColumn{dataType: "year"}, "2155"},
	}
	for _, tt := range tests {
		if got := sqlValue([]byte(tt.in), tt.t, tt.m); got != tt.want {
			t.Errorf("%s %q: got %q, want %q", tt.m.dataType, tt.in, got, tt.want)
		}
	}
}

// TestFloatMD: a FLOAT(M,D) value is compared as the float32 MariaDB
// stores, widened exactly to the Iceberg double; a double that is not
// that float32 still differs.
func TestFloatMD(t *testing.T) {
	m := mysqlColumn{dataType: "float", columnType: "float(7,4)"}
	got := sqlValue([]byte("-999.9999"), iceberg.PrimitiveTypes.Float64, m)
	if want := javaValue("-999.9998779296875", iceberg.PrimitiveTypes.Float64); got != want {
		t.Errorf("FLOAT(7,4) -999.9999 = %q, want the stored float32 %q", got, want)
	}
	if other := javaValue("-999.9999", iceberg.PrimitiveTypes.Float64); got == other {
		t.Errorf("the double -999.9999 (not a float32) compares equal to FLOAT(7,4) -999.9999")
	}
	d := mysqlColumn{dataType: "double", columnType: "double"}
	if got := sqlValue([]byte("-999.9999"), iceberg.PrimitiveTypes.Float64, d); got != "-999.9999" {
		t.Errorf("DOUBLE -999.9999 = %q", got)
	}
}
