// Package lakecheck compares an Iceberg table with its source MariaDB
// table row for row and value for value, for the demo and end-to-end tests.
// Both sides are rendered to canonical text guided by the Iceberg column
// type and, on the MariaDB side, the MySQL column type (the mapping of
// schemas/TYPES.md). The Iceberg type a MariaDB column must have is
// decided here from information_schema alone, by TYPES.md with the
// producers' defaults (see [IcebergTypeOf]), and a table whose column has
// another type is an error: ingest's mapping is checked, never reused, so
// a wrong mapping (a lost decimal scale, a double as float) cannot make
// both sides render alike. The one exception is a declaration alias that
// information_schema does not keep (BOOLEAN, FLOAT4, REAL: TYPES.md
// "Declaration forms and aliases"), whose other type is accepted too (see
// [AliasTypeOf]); its MariaDB value is then converted as the producer
// converts it, and compared in the lake's type. For these columns alone a
// wrong mapping (a DOUBLE as float) passes here; the per-declaration
// Connect types are checked against Debezium by the compat tests. The
// canonical forms, per Iceberg type:
//
//   - NULL: NULL.
//   - int, long: decimal digits. MySQL BIGINT UNSIGNED in a long column:
//     the 64 bits read as signed (Debezium's bigint.unsigned.handling.mode
//     long: 2^64-1 → -1). MySQL TIME in a long column: signed microseconds
//     (-838:59:59 → -3020399000000). YEAR: the year.
//   - float, double: the shortest text that reads back as the same float32
//     or float64 (MariaDB's text for FLOAT must therefore have at most 6
//     significant digits to name one float32: tests use such values).
//     MySQL FLOAT(M,D) is a double column holding the stored float32
//     exactly: MariaDB's text (D digits) is read as the float32 it names
//     and compared as that double (999.9999 → 999.9998779296875); so is
//     MySQL FLOAT (declared FLOAT4) in a double column. MySQL DOUBLE
//     (declared REAL) in a float column: MariaDB's text read as the double
//     it names, narrowed to float32 as Go's float32(v) and Java's (float)
//     do (overflow → ±Inf), rendered as a float.
//   - boolean: true or false (MySQL BIT(1); TINYINT(1) is an int, or a
//     boolean when declared BOOLEAN: true iff the value is not 0).
//   - decimal(p,s): plain text with exactly s fraction digits. MySQL
//     DECIMAL with p > 38 is an Iceberg string holding the same text.
//   - string: the text (CHAR, VARCHAR, TEXT, ENUM, SET, JSON).
//   - binary: lower-case hex. MySQL BIT(n>1) is little-endian in Iceberg
//     (Debezium's Bits), so MariaDB's big-endian bytes are reversed.
//   - date: YYYY-MM-DD. timestamp, timestamptz: "YYYY-MM-DD
//     HH:MM:SS.ffffff" in UTC (the MariaDB session must use time_zone
//     '+00:00').
//   - Zero dates (month or day 0) in DATE and DATETIME cannot round-trip:
//     Debezium turns them into NULL in a nullable column and the epoch in a
//     NOT NULL one, so MariaDB's zero date is compared as that. The zero
//     TIMESTAMP is second 0 (UNIX_TIMESTAMP 0), which Debezium's binlog
//     reader emits as the epoch, nullable column or not: it is compared as
//     1970-01-01 00:00:00. Year 0 with a real month and day (0000-01-01)
//     is a date like any other.
//   - struct (geometry): {name=value,...} in field order, each value in its
//     canonical form. MariaDB's geometry (4-byte little-endian SRID + WKB)
//     becomes wkb = the WKB, srid = the SRID or NULL when 0, and for a
//     POINT also x and y read from the WKB.
package lakecheck

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Rows are a table's rows: canonical values by column, keyed by the
// canonical primary key.
type Rows struct {
	Columns []string
	ByKey   map[string][]string
}

// SourceOrderColumn is ingest's source-order column (ingest's
// schemamap.SourceOrderColumn): a binlog position, not a source value, so
// [Iceberg] leaves it out.
const SourceOrderColumn = "_binlake_source_order"

// Iceberg reads every live row of tbl (iceberg-go applies equality and
// position deletes) and renders it canonically, without
// [SourceOrderColumn].
func Iceberg(ctx context.Context, tbl *table.Table, key []string) (Rows, map[string]iceberg.Type, error) {
	types := map[string]iceberg.Type{}
	var cols []string
	for _, f := range tbl.Schema().Fields() {
		if f.Name == SourceOrderColumn {
			continue
		}
		types[f.Name] = f.Type
		cols = append(cols, f.Name)
	}
	out := Rows{Columns: cols, ByKey: map[string][]string{}}
	if tbl.CurrentSnapshot() == nil {
		return out, types, nil
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return out, types, fmt.Errorf("scanning %v: %w", tbl.Identifier(), err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		idx := make([]int, len(cols))
		for i, c := range cols {
			found := rec.Schema().FieldIndices(c)
			if len(found) == 0 {
				return out, types, fmt.Errorf("column %s missing from the scan", c)
			}
			idx[i] = found[0]
		}
		for r := range int(rec.NumRows()) {
			row := make([]string, len(cols))
			for i, c := range cols {
				row[i] = arrowValue(rec.Column(idx[i]), r, types[c])
			}
			k := keyOf(cols, row, key)
			if _, dup := out.ByKey[k]; dup {
				return out, types, fmt.Errorf("key %s appears twice in %v", k, tbl.Identifier())
			}
			out.ByKey[k] = row
		}
	}
	return out, types, nil
}

func keyOf(cols, row, key []string) string {
	var parts []string
	for _, k := range key {
		for i, c := range cols {
			if c == k {
				parts = append(parts, row[i])
			}
		}
	}
	return strings.Join(parts, "|")
}

func arrowValue(col arrow.Array, i int, t iceberg.Type) string {
	if col.IsNull(i) {
		return "NULL"
	}
	switch a := col.(type) {
	case *array.Int32:
		if _, ok := t.(iceberg.DateType); ok {
			return time.Unix(int64(a.Value(i))*86400, 0).UTC().Format("2006-01-02")
		}
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Date32:
		return a.Value(i).ToTime().UTC().Format("2006-01-02")
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'g', -1, 64)
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return hex.EncodeToString(a.Value(i))
	case *array.LargeBinary:
		return hex.EncodeToString(a.Value(i))
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return a.Value(i).ToString(dt.Scale)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return micros(a.Value(i).ToTime(unit).UTC())
	case *array.Time64:
		return fmt.Sprintf("time:%d", a.Value(i))
	case *array.Struct:
		st, ok := t.(*iceberg.StructType)
		if !ok || st == nil || len(st.FieldList) != a.NumField() {
			return fmt.Sprintf("%v", col.GetOneForMarshal(i))
		}
		parts := make([]string, a.NumField())
		for j, f := range st.FieldList {
			parts[j] = f.Name + "=" + arrowValue(a.Field(j), i, f.Type)
		}
		return "{" + strings.Join(parts, ",") + "}"
	default:
		return fmt.Sprintf("%v", col.GetOneForMarshal(i))
	}
}

func micros(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000") }

// MariaDB reads a MariaDB table (its session must use time_zone '+00:00')
// and renders it with the same canonical forms, guided by the Iceberg
// column types.
func MariaDB(ctx context.Context, db *sql.DB, name string, key []string, types map[string]iceberg.Type) (Rows, error) {
	out := Rows{ByKey: map[string][]string{}}
	var err error
	out.Columns, err = scanMariaDB(ctx, db, name, types, func(cols, row []string) {
		out.ByKey[keyOf(cols, row, key)] = row
	})
	return out, err
}

// Multiset is the rows of a table without a primary key: each canonical
// row (values joined by RowSep) and how many times it occurs.
type Multiset map[string]int

// RowSep separates the values of a row in a Multiset key.
const RowSep = "\x1f"

// MariaDBMultiset reads a MariaDB table (time_zone '+00:00') as a
// Multiset of canonical rows over its columns, returned too.
func MariaDBMultiset(ctx context.Context, db *sql.DB, name string, types map[string]iceberg.Type) ([]string, Multiset, error) {
	out := Multiset{}
	cols, err := scanMariaDB(ctx, db, name, types, func(_, row []string) {
		out[strings.Join(row, RowSep)]++
	})
	return cols, out, err
}

// JavaRow renders the values of cols of one row read by the Java reader
// canonically.
func JavaRow(r map[string]*string, cols []string, types map[string]iceberg.Type) []string {
	row := make([]string, len(cols))
	for i, c := range cols {
		if v := r[c]; v == nil {
			row[i] = "NULL"
		} else {
			row[i] = javaValue(*v, types[c])
		}
	}
	return row
}

func scanMariaDB(ctx context.Context, db *sql.DB, name string, types map[string]iceberg.Type, each func(cols, row []string)) ([]string, error) {
	// Before the SELECT: the caller may allow one connection only.
	mysqlTypes, err := columnTypes(ctx, db, name)
	if err != nil {
		return nil, err
	}
	if err := checkTypes(name, mysqlTypes, types); err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, "SELECT * FROM `"+name+"`")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return cols, err
		}
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = sqlValue(vals[i], types[c], mysqlTypes[c])
		}
		each(cols, row)
	}
	return cols, rows.Err()
}

// mysqlColumn is a column's definition from information_schema.
type mysqlColumn struct {
	dataType   string // e.g. "bigint", "bit", "time"
	columnType string // e.g. "bigint(20) unsigned", "bit(10)"
	nullable   bool
	precision  int // NUMERIC_PRECISION of a decimal
	scale      int // NUMERIC_SCALE of a decimal
}

func columnTypes(ctx context.Context, db *sql.DB, table string) (map[string]mysqlColumn, error) {
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE,
		COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0)
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?`, table)
	if err != nil {
		return nil, fmt.Errorf("reading the column types of %s: %w", table, err)
	}
	defer rows.Close()
	out := map[string]mysqlColumn{}
	for rows.Next() {
		var name, nullable string
		var c mysqlColumn
		if err := rows.Scan(&name, &c.dataType, &c.columnType, &nullable, &c.precision, &c.scale); err != nil {
			return nil, err
		}
		c.dataType, c.columnType, c.nullable = strings.ToLower(c.dataType), strings.ToLower(c.columnType), nullable == "YES"
		out[name] = c
	}
	return out, rows.Err()
}

// IcebergTypeOf is the Iceberg type of a MySQL/MariaDB column given its
// information_schema DATA_TYPE and COLUMN_TYPE (lower case) and, for a
// decimal, its precision and scale: schemas/TYPES.md with Debezium's
// defaults (decimal.handling.mode=precise, bigint.unsigned.handling.mode=
// long, time.precision.mode=adaptive_time_microseconds,
// binary.handling.mode=bytes), written down here on its own rather than
// taken from ingest. MariaDB's JSON is a longtext. ok is false for a type
// TYPES.md does not map.
func IcebergTypeOf(dataType, columnType string, precision, scale int) (t iceberg.Type, ok bool) {
	p := iceberg.PrimitiveTypes
	switch dataType {
	case "tinyint", "smallint", "mediumint", "year":
		return p.Int32, true
	case "int":
		if strings.Contains(columnType, "unsigned") {
			return p.Int64, true
		}
		return p.Int32, true
	case "bigint", "time":
		return p.Int64, true
	case "float":
		if strings.Contains(columnType, ",") { // float(M,D) is a double
			return p.Float64, true
		}
		return p.Float32, true
	case "double", "real":
		return p.Float64, true
	case "decimal", "numeric":
		if precision > 38 {
			return p.String, true
		}
		return iceberg.DecimalTypeOf(precision, scale), true
	case "bit":
		if columnType == "bit(1)" {
			return p.Bool, true
		}
		return p.Binary, true
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json":
		return p.String, true
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return p.Binary, true
	case "date":
		return p.Date, true
	case "datetime":
		return p.Timestamp, true
	case "timestamp":
		return p.TimestampTz, true
	case "point":
		return geometryType("x", "y", "wkb", "srid"), true
	case "geometry", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		return geometryType("wkb", "srid"), true
	}
	return nil, false
}

// AliasTypeOf is the other Iceberg type a MySQL/MariaDB column may have
// when it was declared by an alias that information_schema does not keep
// and the producer typed it from the streamed DDL (TYPES.md "Declaration
// forms and aliases"): tinyint(1) declared BOOLEAN or BOOL is a boolean;
// float declared FLOAT4 (with UNSIGNED or ZEROFILL: float unsigned
// [zerofill]) is a double; double declared REAL (REAL(M,D), UNSIGNED,
// ZEROFILL: double(M,D), double unsigned [zerofill]) is a float. ok is
// false for every other column: no alias gives it another type (BOOLEAN
// takes no length or sign, so tinyint(n≠1) and tinyint(1) unsigned cannot
// come from one).
func AliasTypeOf(dataType, columnType string) (t iceberg.Type, ok bool) {
	p := iceberg.PrimitiveTypes
	switch dataType {
	case "tinyint":
		if columnType == "tinyint(1)" {
			return p.Bool, true
		}
	case "float":
		switch columnType {
		case "float", "float unsigned", "float unsigned zerofill":
			return p.Float64, true
		}
	case "double":
		return p.Float32, true
	}
	return nil, false
}

// geometryType is the struct of Debezium's Point (x, y, wkb, srid) or
// Geometry (wkb, srid); field IDs and optionality are not compared.
func geometryType(names ...string) *iceberg.StructType {
	types := map[string]iceberg.Type{"x": iceberg.PrimitiveTypes.Float64, "y": iceberg.PrimitiveTypes.Float64,
		"wkb": iceberg.PrimitiveTypes.Binary, "srid": iceberg.PrimitiveTypes.Int32}
	st := &iceberg.StructType{}
	for _, n := range names {
		st.FieldList = append(st.FieldList, iceberg.NestedField{Name: n, Type: types[n]})
	}
	return st
}

// sameType compares Iceberg types, structs by field names and types only.
func sameType(a, b iceberg.Type) bool {
	sa, okA := a.(*iceberg.StructType)
	sb, okB := b.(*iceberg.StructType)
	if !okA || !okB {
		return a.Equals(b)
	}
	if len(sa.FieldList) != len(sb.FieldList) {
		return false
	}
	for i, f := range sa.FieldList {
		g := sb.FieldList[i]
		if f.Name != g.Name || !sameType(f.Type, g.Type) {
			return false
		}
	}
	return true
}

// checkTypes refuses Iceberg column types that are not what TYPES.md
// says for the MariaDB columns: [IcebergTypeOf], or [AliasTypeOf] for a
// column an alias may have declared. A column Iceberg lacks (not yet
// added) is left to Diff.
func checkTypes(name string, mysqlTypes map[string]mysqlColumn, types map[string]iceberg.Type) error {
	var errs []string
	for c, m := range mysqlTypes {
		got := types[c]
		if got == nil {
			continue
		}
		want, ok := IcebergTypeOf(m.dataType, m.columnType, m.precision, m.scale)
		alias, aliased := AliasTypeOf(m.dataType, m.columnType)
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("column %s: MySQL %s has no Iceberg type in TYPES.md", c, m.columnType))
		case sameType(want, got), aliased && sameType(alias, got):
		case aliased:
			errs = append(errs, fmt.Sprintf("column %s: MySQL %s is Iceberg %s, want %s or, declared by an alias, %s (TYPES.md)", c, m.columnType, got, want, alias))
		default:
			errs = append(errs, fmt.Sprintf("column %s: MySQL %s is Iceberg %s, want %s (TYPES.md)", c, m.columnType, got, want))
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("table %s: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// zeroDate reports MySQL's zero date (or a date with month or day 0).
func zeroDate(s string) bool {
	return len(s) >= 10 && (s[5:7] == "00" || s[8:10] == "00")
}

func sqlValue(v sql.RawBytes, t iceberg.Type, m mysqlColumn) string {
	if v == nil {
		return "NULL"
	}
	s := string(v)
	switch m.dataType {
	case "timestamp":
		if zeroDate(s) {
			s = "1970-01-01 00:00:00"
		}
	case "date", "datetime":
		if zeroDate(s) {
			if m.nullable {
				return "NULL"
			}
			if m.dataType == "date" {
				s = "1970-01-01"
			} else {
				s = "1970-01-01 00:00:00"
			}
		}
	case "year":
		// MariaDB prints YEAR 0 as 0000; Iceberg holds the int 0.
		if y, err := strconv.Atoi(s); err == nil {
			return strconv.Itoa(y)
		}
	case "time":
		if _, ok := t.(iceberg.Int64Type); ok {
			if us, err := timeMicros(s); err == nil {
				return strconv.FormatInt(us, 10)
			}
		}
	case "bigint":
		if _, ok := t.(iceberg.Int64Type); ok && strings.Contains(m.columnType, "unsigned") {
			if u, err := strconv.ParseUint(s, 10, 64); err == nil {
				return strconv.FormatInt(int64(u), 10)
			}
		}
	case "bit":
		if _, ok := t.(iceberg.BinaryType); ok {
			r := slices.Clone([]byte(v))
			slices.Reverse(r)
			return hex.EncodeToString(r)
		}
	case "tinyint":
		if _, ok := t.(iceberg.BooleanType); ok {
			// Declared BOOLEAN: the producer's boolean is value ≠ 0.
			// Text that is not an integer stays as written, equal to
			// no boolean.
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return strconv.FormatBool(n != 0)
			}
			return s
		}
	case "double":
		if _, ok := t.(iceberg.Float32Type); ok {
			// Declared REAL: the stored double (which MariaDB's text
			// names) narrowed to float32, as the producer does; not
			// the float32 nearest to the text, which may differ.
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return strconv.FormatFloat(float64(float32(f)), 'g', -1, 32)
			}
			return s
		}
	}
	if st, ok := t.(*iceberg.StructType); ok {
		if g, ok := geometry(v, st); ok {
			return g
		}
	}
	switch tt := t.(type) {
	case iceberg.TimestampType, iceberg.TimestampTzType:
		for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05"} {
			if ts, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
				return micros(ts)
			}
		}
	case iceberg.DecimalType:
		if r, ok := new(big.Rat).SetString(s); ok {
			return r.FloatString(tt.Scale())
		}
	case iceberg.BinaryType, iceberg.FixedType:
		return hex.EncodeToString(v)
	case iceberg.Float32Type:
		if f, err := strconv.ParseFloat(s, 32); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 32)
		}
	case iceberg.Float64Type:
		if m.dataType == "float" {
			// FLOAT(M,D), and FLOAT declared FLOAT4, is a float32 in
			// MariaDB, printed with D (or at most 6 significant)
			// digits: the double Iceberg holds is that float32 exactly.
			if f, err := strconv.ParseFloat(s, 32); err == nil {
				return strconv.FormatFloat(f, 'g', -1, 64)
			}
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	case iceberg.BooleanType:
		return strconv.FormatBool(s != "0" && s != "\x00")
	}
	return s
}

// timeMicros reads MySQL TIME text ([-]HHH:MM:SS[.ffffff]) as signed µs.
func timeMicros(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	frac := ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s, frac = s[:i], s[i+1:]
	}
	hms := strings.Split(s, ":")
	if len(hms) != 3 || len(frac) > 6 {
		return 0, fmt.Errorf("TIME %q", s)
	}
	var us int64
	for _, p := range hms {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return 0, err
		}
		us = us*60 + n
	}
	us *= 1_000_000
	if frac != "" {
		f, err := strconv.ParseInt((frac + "000000")[:6], 10, 64)
		if err != nil {
			return 0, err
		}
		us += f
	}
	if neg {
		us = -us
	}
	return us, nil
}

// geometry renders MariaDB's geometry value (SRID, little-endian, then
// WKB) as the canonical struct of st: Debezium's Geometry (wkb, srid) or
// Point (x, y, wkb, srid).
func geometry(v []byte, st *iceberg.StructType) (string, bool) {
	if len(v) < 5 {
		return "", false
	}
	srid := "NULL"
	if n := binary.LittleEndian.Uint32(v[:4]); n != 0 {
		srid = strconv.FormatUint(uint64(n), 10)
	}
	wkb := v[4:]
	vals := map[string]string{"wkb": hex.EncodeToString(wkb), "srid": srid}
	if len(wkb) >= 21 {
		var bo binary.ByteOrder = binary.LittleEndian
		if wkb[0] == 0 {
			bo = binary.BigEndian
		}
		vals["x"] = strconv.FormatFloat(math.Float64frombits(bo.Uint64(wkb[5:13])), 'g', -1, 64)
		vals["y"] = strconv.FormatFloat(math.Float64frombits(bo.Uint64(wkb[13:21])), 'g', -1, 64)
	}
	parts := make([]string, len(st.FieldList))
	for i, f := range st.FieldList {
		val, ok := vals[f.Name]
		if !ok {
			return "", false
		}
		parts[i] = f.Name + "=" + val
	}
	return "{" + strings.Join(parts, ",") + "}", true
}

// Diff compares two row sets over the columns of want (the source): it
// returns the differences (at most max), or none if every row and value is
// equal.
func Diff(want, got Rows, max int) []string {
	var diffs []string
	add := func(f string, a ...any) {
		if len(diffs) < max {
			diffs = append(diffs, fmt.Sprintf(f, a...))
		}
	}
	gotIdx := map[string]int{}
	for i, c := range got.Columns {
		gotIdx[c] = i
	}
	keys := make([]string, 0, len(want.ByKey))
	for k := range want.ByKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := 0
	for _, k := range keys {
		w := want.ByKey[k]
		g, ok := got.ByKey[k]
		if !ok {
			add("key %s: missing from Iceberg", k)
			n++
			continue
		}
		for i, c := range want.Columns {
			j, ok := gotIdx[c]
			if !ok {
				add("column %s missing from Iceberg", c)
				continue
			}
			if w[i] != g[j] {
				add("key %s column %s: mariadb=%q iceberg=%q", k, c, w[i], g[j])
				n++
			}
		}
	}
	for k := range got.ByKey {
		if _, ok := want.ByKey[k]; !ok {
			add("key %s: in Iceberg, not in MariaDB", k)
			n++
		}
	}
	if n > len(diffs) && len(diffs) == max {
		diffs = append(diffs, fmt.Sprintf("... %d differences in all", n))
	}
	return diffs
}

// FromJava renders rows read by the Java reference reader (package
// test/icebergreader: column → canonical text or nil) in the same canonical
// forms, so Diff can compare them with MariaDB's.
func FromJava(rows []map[string]*string, cols []string, key []string, types map[string]iceberg.Type) (Rows, error) {
	out := Rows{Columns: cols, ByKey: map[string][]string{}}
	for _, r := range rows {
		row := make([]string, len(cols))
		for i, c := range cols {
			v := r[c]
			if v == nil {
				row[i] = "NULL"
				continue
			}
			row[i] = javaValue(*v, types[c])
		}
		k := keyOf(cols, row, key)
		if _, dup := out.ByKey[k]; dup {
			return out, fmt.Errorf("key %s appears twice in the Java reader's output", k)
		}
		out.ByKey[k] = row
	}
	return out, nil
}

// javaValue renders one value printed by the Java reader canonically:
// Java's float text ("1.0E20") differs from Go's, and struct fields are
// rendered by their own types.
func javaValue(v string, t iceberg.Type) string {
	switch tt := t.(type) {
	case iceberg.Float32Type:
		if f, err := strconv.ParseFloat(v, 32); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 32)
		}
	case iceberg.Float64Type:
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	case *iceberg.StructType:
		// {name=value,...}: values of the types used in structs here
		// (numbers, hex, NULL) hold no ',', '=' or braces.
		inner, ok := strings.CutPrefix(v, "{")
		if inner, ok = strings.CutSuffix(inner, "}"); !ok {
			return v
		}
		parts := strings.Split(inner, ",")
		if len(parts) != len(tt.FieldList) {
			return v
		}
		for i, f := range tt.FieldList {
			name, val, ok := strings.Cut(parts[i], "=")
			if !ok || name != f.Name {
				return v
			}
			if val != "NULL" {
				val = javaValue(val, f.Type)
			}
			parts[i] = name + "=" + val
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return v
}
