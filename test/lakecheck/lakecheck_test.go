package lakecheck

import (
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

// TestCheckTypes checks that the Iceberg types lakecheck expects come from
// the MariaDB column alone: a mapping that loses a decimal's scale, makes
// a double a long, narrows an INT UNSIGNED, or changes a geometry struct is
// refused, the mapping of TYPES.md is accepted, and a column Iceberg lacks
// is left to Diff. (A double as float is a REAL's type: see
// TestCheckTypesAliases.)
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
		"d": iceberg.DecimalTypeOf(10, 1), "dw": iceberg.DecimalTypeOf(38, 30), "f": p.Int64, "iu": p.Int32,
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

// TestCheckTypesAliases checks that the other type a declaration alias
// information_schema does not keep gives (TYPES.md "Declaration forms and
// aliases": BOOLEAN tinyint(1) boolean, FLOAT4 float double, REAL double
// float) is accepted for exactly the column types such an alias can
// produce, besides the type of IcebergTypeOf, and nothing else is.
func TestCheckTypesAliases(t *testing.T) {
	p := iceberg.PrimitiveTypes
	tests := []struct {
		m  mysqlColumn
		t  iceberg.Type
		ok bool
	}{
		{mysqlColumn{dataType: "tinyint", columnType: "tinyint(1)"}, p.Int32, true},
		{mysqlColumn{dataType: "tinyint", columnType: "tinyint(1)"}, p.Bool, true},
		{mysqlColumn{dataType: "tinyint", columnType: "tinyint(4)"}, p.Bool, false},
		{mysqlColumn{dataType: "tinyint", columnType: "tinyint(3) unsigned zerofill"}, p.Bool, false},
		{mysqlColumn{dataType: "tinyint", columnType: "tinyint(1) unsigned"}, p.Bool, false},
		{mysqlColumn{dataType: "tinyint", columnType: "tinyint(1)"}, p.Int64, false},
		{mysqlColumn{dataType: "smallint", columnType: "smallint(1)"}, p.Bool, false},
		{mysqlColumn{dataType: "int", columnType: "int(1)"}, p.Bool, false},
		{mysqlColumn{dataType: "bit", columnType: "bit(1)"}, p.Bool, true},
		{mysqlColumn{dataType: "float", columnType: "float"}, p.Float32, true},
		{mysqlColumn{dataType: "float", columnType: "float"}, p.Float64, true},
		{mysqlColumn{dataType: "float", columnType: "float unsigned"}, p.Float64, true},
		{mysqlColumn{dataType: "float", columnType: "float unsigned zerofill"}, p.Float64, true},
		{mysqlColumn{dataType: "float", columnType: "float(7,4)"}, p.Float64, true},
		{mysqlColumn{dataType: "float", columnType: "float(7,4)"}, p.Float32, false},
		{mysqlColumn{dataType: "float", columnType: "float"}, p.Int64, false},
		{mysqlColumn{dataType: "float", columnType: "float"}, iceberg.DecimalTypeOf(10, 2), false},
		{mysqlColumn{dataType: "double", columnType: "double"}, p.Float64, true},
		{mysqlColumn{dataType: "double", columnType: "double"}, p.Float32, true},
		{mysqlColumn{dataType: "double", columnType: "double(10,2)"}, p.Float32, true},
		{mysqlColumn{dataType: "double", columnType: "double unsigned zerofill"}, p.Float32, true},
		{mysqlColumn{dataType: "double", columnType: "double"}, p.Int64, false},
		{mysqlColumn{dataType: "double", columnType: "double(10,2)"}, iceberg.DecimalTypeOf(10, 2), false},
		{mysqlColumn{dataType: "decimal", columnType: "decimal(10,2)", precision: 10, scale: 2}, p.Float32, false},
		{mysqlColumn{dataType: "bigint", columnType: "bigint(20)"}, p.Float64, false},
		{mysqlColumn{dataType: "int", columnType: "int(11)"}, p.Float32, false},
	}
	for _, tt := range tests {
		err := checkTypes("x", map[string]mysqlColumn{"c": tt.m}, map[string]iceberg.Type{"c": tt.t})
		if (err == nil) != tt.ok {
			t.Errorf("MySQL %s as Iceberg %s: err %v, want accepted %v", tt.m.columnType, tt.t, err, tt.ok)
		}
	}
}

// arrowOf is a one-value Arrow array of v, as a scan of the lake gives.
func arrowOf(t *testing.T, v any) arrow.Array {
	t.Helper()
	mem := memory.DefaultAllocator
	switch v := v.(type) {
	case bool:
		b := array.NewBooleanBuilder(mem)
		defer b.Release()
		b.Append(v)
		return b.NewArray()
	case int32:
		b := array.NewInt32Builder(mem)
		defer b.Release()
		b.Append(v)
		return b.NewArray()
	case float32:
		b := array.NewFloat32Builder(mem)
		defer b.Release()
		b.Append(v)
		return b.NewArray()
	case float64:
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.Append(v)
		return b.NewArray()
	}
	t.Fatalf("no Arrow array for %T", v)
	return nil
}

// TestSQLValueAliases checks the values of alias-declared columns in the
// lake's type: MariaDB's tinyint is true iff not 0, MariaDB's float (the
// stored float32) is that float32 widened exactly, MariaDB's double is
// narrowed to float32 as float32(v) (Java's (float)) does, and rendered as
// the lake's value is (Arrow, and Java's text where given). A lake value
// that is not the converted MariaDB value still differs.
func TestSQLValueAliases(t *testing.T) {
	p := iceberg.PrimitiveTypes
	tiny1 := mysqlColumn{dataType: "tinyint", columnType: "tinyint(1)"}
	flt := mysqlColumn{dataType: "float", columnType: "float"}
	dbl := mysqlColumn{dataType: "double", columnType: "double"}
	dmd := mysqlColumn{dataType: "double", columnType: "double(10,2)"}
	const halfUlp1 = 1 + 1.0/(1<<24) // the float32 midpoint between 1 and the next float32
	tests := []struct {
		in    string
		m     mysqlColumn
		t     iceberg.Type
		lake  any    // the value in the lake
		java  string // the Java reader's text of lake, if not empty
		equal bool
	}{
		{"0", tiny1, p.Bool, false, "false", true},
		{"0", tiny1, p.Bool, true, "true", false},
		{"1", tiny1, p.Bool, true, "true", true},
		{"1", tiny1, p.Bool, false, "", false},
		{"2", tiny1, p.Bool, true, "", true},
		{"-128", tiny1, p.Bool, true, "", true},
		{"-128", tiny1, p.Bool, false, "", false},
		{"127", tiny1, p.Bool, true, "", true},
		{"-128", tiny1, p.Int32, int32(-128), "", true}, // declared TINYINT(1): still an int
		{"-128", tiny1, p.Int32, int32(1), "", false},
		{"1.1", flt, p.Float64, float64(float32(1.1)), "1.100000023841858", true},
		{"1.1", flt, p.Float64, 1.1, "1.1", false},
		{"-1.5", flt, p.Float64, -1.5, "-1.5", true},
		{"-1.5", flt, p.Float64, -1.25, "", false},
		{"3.40282e38", flt, p.Float64, float64(float32(3.40282e38)), "", true},
		{"3.40282e38", flt, p.Float64, 3.40282e38, "", false},
		{"0.1", flt, p.Float64, 0.1, "", false},
		{"1.5", dbl, p.Float32, float32(1.5), "1.5", true},
		{"1.5", dbl, p.Float32, float32(1.25), "1.25", false},
		{"1.1", dbl, p.Float32, float32(1.1), "1.1", true},
		{"1.1", dbl, p.Float32, math.Nextafter32(1.1, 2), "", false},
		{"-3.4e38", dbl, p.Float32, float32(-3.4e38), "-3.4E38", true},
		{"-99999999.99", dmd, p.Float32, float32(-1e8), "-1.0E8", true},
		{"-99999999.99", dmd, p.Float32, math.Nextafter32(-1e8, 0), "", false},
		// The double 1+2^-24 narrows to 1 (ties to even), though the
		// float32 nearest to its text is the next one.
		{"1.0000000596046448", dbl, p.Float32, float32(halfUlp1), "1.0", true},
		{"1.0000000596046448", dbl, p.Float32, math.Nextafter32(1, 2), "", false},
		{"1.7976931348623157e308", dbl, p.Float32, float32(math.Inf(1)), "Infinity", true},
		{"1.7976931348623157e308", dbl, p.Float32, float32(math.MaxFloat32), "", false},
		{"-4.9e-324", dbl, p.Float32, float32(math.Copysign(0, -1)), "-0.0", true},
		{"-4.9e-324", dbl, p.Float32, float32(0), "", false},
		{"0.1", dbl, p.Float64, 0.1, "0.1", true}, // a plain DOUBLE: unchanged
		{"0.1", dbl, p.Float64, float64(float32(0.1)), "", false},
	}
	for _, tt := range tests {
		col := arrowOf(t, tt.lake)
		lake := arrowValue(col, 0, tt.t)
		col.Release()
		got := sqlValue([]byte(tt.in), tt.t, tt.m)
		if (got == lake) != tt.equal {
			t.Errorf("MySQL %s %q as %s = %q, lake %v = %q: equal %v, want %v", tt.m.columnType, tt.in, tt.t, got, tt.lake, lake, got == lake, tt.equal)
		}
		if tt.java != "" {
			if j := javaValue(tt.java, tt.t); j != lake {
				t.Errorf("Java's %q as %s = %q, Arrow's %v = %q", tt.java, tt.t, j, tt.lake, lake)
			}
		}
	}
}
