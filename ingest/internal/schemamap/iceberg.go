package schemamap

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"

	"github.com/binlake/binlake/schemas/debezium"
)

// MaxDecimalPrecision is the largest precision of an Iceberg decimal.
// Connect Decimals with a larger precision (MySQL DECIMAL(65,30)) map to
// string columns holding the exact plain-text value.
const MaxDecimalPrecision = 38

// Extra Debezium semantic names understood here beyond those of the
// debezium package.
const (
	nanoTimestampName = "io.debezium.time.NanoTimestamp"
	nanoTimeName      = "io.debezium.time.NanoTime"
)

// Kind says how a Connect value is converted into the value the batch
// package appends to Arrow. The Go type of each converted value is given
// per kind; nil is always null.
type Kind uint8

// Conversion kinds.
const (
	KindBool            Kind = iota + 1 // bool
	KindInt                             // int32 (from INT8, INT16, INT32, Year)
	KindLong                            // int64
	KindFloat                           // float32
	KindDouble                          // float64
	KindString                          // string (STRING, Json, Enum, EnumSet, ZonedTime)
	KindBinary                          // []byte (BYTES, Bits)
	KindDecimal                         // decimal128.Num, unscaled, at the column's scale
	KindDecimalString                   // string, plain decimal text (precision > 38)
	KindDate                            // int32 days since 1970-01-01
	KindTimeMillis                      // int64 µs (signed duration), from INT32 ms
	KindTimeMicros                      // int64 µs (signed duration)
	KindTimeNanos                       // int64 µs (signed duration), from INT64 ns
	KindTimestampMillis                 // int64 µs since epoch, from INT64 ms
	KindTimestampMicros                 // int64 µs since epoch
	KindTimestampNanos                  // int64 µs since epoch, from INT64 ns
	KindZonedTimestamp                  // int64 µs since epoch UTC, from an ISO-8601 string
	KindStruct                          // []any, one converted value per field
	KindList                            // []any of converted elements
	KindMap                             // map[string]any of converted values
)

// Column describes one mapped column (or nested field) and how to convert
// its values.
type Column struct {
	Name     string
	Kind     Kind
	Required bool
	Scale    int      // decimal scale (KindDecimal, KindDecimalString)
	Fields   []Column // KindStruct
	Elem     *Column  // KindList element, KindMap value
	// Default is the column's default from the producer's schema (the
	// Avro field default: the DDL default, as Debezium writes it),
	// converted as [Column.Convert] converts values; nil when there is
	// none, when it is Debezium's stand-in for an expression default
	// (see [DefaultOf]), or for structs, lists and maps.
	Default any
}

// Mapping is the Iceberg view of one Debezium row schema.
type Mapping struct {
	// Schema is the Iceberg schema with fresh field IDs (top-level columns
	// 1..n in source order, nested fields after) and the key columns as
	// identifier fields.
	Schema *iceberg.Schema
	// Columns are the top-level columns in source (row) order.
	Columns []Column
	// Key holds the identifier column names in key order.
	Key []string
}

// Map maps a Debezium row schema (the Value struct, or an envelope, see
// [RowSchema]) to an Iceberg schema. keyFields are the names of the record
// key's fields; they become required identifier fields and must be columns
// of the row with a type Iceberg accepts as an equality key (not float,
// double, struct, list or map). Optional Connect fields become optional
// columns.
//
// A schema outside the limits of this package (MaxDepth, MaxFields,
// MaxNameBytes, decimal precision and scale) is ErrLimit; a panic while
// mapping is ErrPanic. Both wrap ErrUnsupported.
func Map(row *debezium.Schema, keyFields []string) (m *Mapping, err error) {
	defer recovered(&err)
	row, err = RowSchema(row)
	if err != nil {
		return nil, err
	}
	if len(row.Fields) > MaxFields {
		return nil, fmt.Errorf("%w: %d columns (at most %d fields)", ErrLimit, len(row.Fields), MaxFields)
	}
	if err := checkNames(row.Fields); err != nil {
		return nil, err
	}
	m = &Mapping{Key: slices.Clone(keyFields)}
	ids := &idAlloc{next: len(row.Fields) + 1}
	fields := make([]iceberg.NestedField, 0, len(row.Fields))
	var identifier []int
	for i, f := range row.Fields {
		isKey := slices.Contains(keyFields, f.Name)
		col, typ, err := mapField(f, ids, 1)
		if err != nil {
			return nil, err
		}
		if isKey {
			switch col.Kind {
			case KindFloat, KindDouble, KindStruct, KindList, KindMap:
				return nil, fmt.Errorf("%w: key column %q of kind %s cannot be an Iceberg identifier field", ErrUnsupported, f.Name, col.Kind)
			}
			col.Required = true
			identifier = append(identifier, i+1)
		}
		m.Columns = append(m.Columns, col)
		fields = append(fields, iceberg.NestedField{ID: i + 1, Name: f.Name, Type: typ, Required: col.Required, Doc: f.Schema.Doc})
	}
	for _, k := range keyFields {
		if row.FieldIndex(k) < 0 {
			return nil, fmt.Errorf("%w: key field %q is not a column of %s", ErrUnsupported, k, row.Name)
		}
	}
	// Identifier IDs must follow key order for equality deletes to read well.
	slices.SortFunc(identifier, func(a, b int) int {
		return slices.Index(keyFields, row.Fields[a-1].Name) - slices.Index(keyFields, row.Fields[b-1].Name)
	})
	m.Schema = iceberg.NewSchemaWithIdentifiers(0, identifier, fields...)
	return m, nil
}

type idAlloc struct{ next int }

func (a *idAlloc) id() int { a.next++; return a.next - 1 }

// over reports whether more than MaxFields IDs were given out.
func (a *idAlloc) over() error {
	if a.next > MaxFields+1 {
		return fmt.Errorf("%w: more than %d fields", ErrLimit, MaxFields)
	}
	return nil
}

// checkNames validates the names of a struct's fields: each valid
// (checkName) and none twice.
func checkNames(fields []debezium.Field) error {
	seen := make(map[string]struct{}, len(fields))
	for _, f := range fields {
		if err := checkName(f.Name); err != nil {
			return err
		}
		if _, dup := seen[f.Name]; dup {
			return fmt.Errorf("%w: field %q twice in one struct", ErrLimit, f.Name)
		}
		seen[f.Name] = struct{}{}
		if f.Schema == nil {
			return fmt.Errorf("%w: field %q without a schema", ErrUnsupported, f.Name)
		}
	}
	return nil
}

func mapField(f debezium.Field, ids *idAlloc, depth int) (Column, iceberg.Type, error) {
	col, typ, err := mapSchema(f.Schema, ids, depth)
	if err != nil {
		return Column{}, nil, fmt.Errorf("column %q: %w", f.Name, err)
	}
	col.Name = f.Name
	col.Required = !f.Schema.Optional
	if d, ok := DefaultOf(f.Schema, &col); ok {
		col.Default = d
	}
	return col, typ, nil
}

// DefaultOf is the default of schema s (mapped as c) converted for c, and
// whether it is one: a literal default, reproducible for the rows that
// existed before the column was added. Not one: no default, a default
// that does not convert, and Debezium's stand-in for CURRENT_TIMESTAMP on
// TIMESTAMP and DATETIME columns, the epoch ("1970-01-01T00:00:00Z" and
// 0): the rows MariaDB filled hold the time of the ALTER, which no event
// carries. (No TIMESTAMP literal can be the epoch, whose smallest value is
// 1970-01-01 00:00:01 UTC; a DATETIME DEFAULT '1970-01-01 00:00:00' is
// taken for the stand-in too, and a zero-date default, which Debezium
// also writes as the epoch.) Other expression defaults (DEFAULT (1 + 1),
// UUID() …) have no default in Debezium's schema.
func DefaultOf(s *debezium.Schema, c *Column) (any, bool) {
	if s.Default == nil {
		return nil, false
	}
	switch c.Kind {
	case KindStruct, KindList, KindMap:
		return nil, false
	}
	v, err := c.Convert(s.Default)
	if err != nil || v == nil {
		return nil, false
	}
	switch c.Kind {
	case KindZonedTimestamp, KindTimestampMillis, KindTimestampMicros, KindTimestampNanos:
		if v == int64(0) {
			return nil, false
		}
	}
	return v, true
}

func mapSchema(s *debezium.Schema, ids *idAlloc, depth int) (Column, iceberg.Type, error) {
	if s == nil {
		return Column{}, nil, fmt.Errorf("%w: a type without a schema", ErrUnsupported)
	}
	if depth > MaxDepth {
		return Column{}, nil, fmt.Errorf("%w: nested more than %d levels", ErrLimit, MaxDepth)
	}
	if err := ids.over(); err != nil {
		return Column{}, nil, err
	}
	switch s.Name {
	case debezium.DecimalName:
		scale, prec, err := decimalParams(s)
		if err != nil {
			return Column{}, nil, err
		}
		if prec > MaxDecimalPrecision {
			return Column{Kind: KindDecimalString, Scale: scale}, iceberg.PrimitiveTypes.String, nil
		}
		return Column{Kind: KindDecimal, Scale: scale}, iceberg.DecimalTypeOf(prec, scale), nil
	case debezium.DateName, debezium.ConnectDateName:
		return Column{Kind: KindDate}, iceberg.PrimitiveTypes.Date, nil
	// MySQL TIME is a signed duration (-838:59:59 to 838:59:59), not a
	// time of day: Iceberg's time type cannot hold it (the Java reader
	// rejects values outside a day), so it is stored as long µs.
	case debezium.ConnectTimeName:
		return Column{Kind: KindTimeMillis}, iceberg.PrimitiveTypes.Int64, nil
	case debezium.MicroTimeName:
		return Column{Kind: KindTimeMicros}, iceberg.PrimitiveTypes.Int64, nil
	case nanoTimeName:
		return Column{Kind: KindTimeNanos}, iceberg.PrimitiveTypes.Int64, nil
	case debezium.TimestampName, debezium.ConnectTimestamp:
		return Column{Kind: KindTimestampMillis}, iceberg.PrimitiveTypes.Timestamp, nil
	case debezium.MicroTimestampName:
		return Column{Kind: KindTimestampMicros}, iceberg.PrimitiveTypes.Timestamp, nil
	case nanoTimestampName:
		return Column{Kind: KindTimestampNanos}, iceberg.PrimitiveTypes.Timestamp, nil
	case debezium.ZonedTimestampName:
		return Column{Kind: KindZonedTimestamp}, iceberg.PrimitiveTypes.TimestampTz, nil
	}
	switch s.Type {
	case debezium.BOOLEAN:
		return Column{Kind: KindBool}, iceberg.PrimitiveTypes.Bool, nil
	case debezium.INT8, debezium.INT16, debezium.INT32:
		return Column{Kind: KindInt}, iceberg.PrimitiveTypes.Int32, nil
	case debezium.INT64:
		return Column{Kind: KindLong}, iceberg.PrimitiveTypes.Int64, nil
	case debezium.FLOAT32:
		return Column{Kind: KindFloat}, iceberg.PrimitiveTypes.Float32, nil
	case debezium.FLOAT64:
		return Column{Kind: KindDouble}, iceberg.PrimitiveTypes.Float64, nil
	case debezium.STRING:
		return Column{Kind: KindString}, iceberg.PrimitiveTypes.String, nil
	case debezium.BYTES:
		return Column{Kind: KindBinary}, iceberg.PrimitiveTypes.Binary, nil
	case debezium.STRUCT:
		if err := checkNames(s.Fields); err != nil {
			return Column{}, nil, err
		}
		if len(s.Fields) > MaxFields {
			return Column{}, nil, fmt.Errorf("%w: more than %d fields", ErrLimit, MaxFields)
		}
		if len(s.Fields) == 0 {
			// No source writes one (MySQL has no struct columns; Debezium's
			// structs, geometries say, have fields), Parquet cannot store an
			// empty group, and iceberg-go's HighestFieldID does not count
			// it, so a change log's columns after it took its field id.
			return Column{}, nil, fmt.Errorf("%w: a struct with no fields", ErrUnsupported)
		}
		col := Column{Kind: KindStruct}
		st := &iceberg.StructType{}
		base := make([]int, len(s.Fields))
		for i := range s.Fields {
			base[i] = ids.id()
		}
		if err := ids.over(); err != nil {
			return Column{}, nil, err
		}
		for i, f := range s.Fields {
			c, t, err := mapField(f, ids, depth+1)
			if err != nil {
				return Column{}, nil, err
			}
			col.Fields = append(col.Fields, c)
			st.FieldList = append(st.FieldList, iceberg.NestedField{ID: base[i], Name: f.Name, Type: t, Required: c.Required, Doc: f.Schema.Doc})
		}
		return col, st, nil
	case debezium.ARRAY:
		if s.Elem == nil {
			return Column{}, nil, fmt.Errorf("%w: array without an element type", ErrUnsupported)
		}
		id := ids.id()
		c, t, err := mapSchema(s.Elem, ids, depth+1)
		if err != nil {
			return Column{}, nil, err
		}
		c.Required = !s.Elem.Optional
		return Column{Kind: KindList, Elem: &c}, &iceberg.ListType{ElementID: id, Element: t, ElementRequired: c.Required}, nil
	case debezium.MAP:
		if s.Key == nil || s.Key.Type != debezium.STRING {
			return Column{}, nil, fmt.Errorf("%w: map with non-string keys", ErrUnsupported)
		}
		if s.Value == nil {
			return Column{}, nil, fmt.Errorf("%w: map without a value type", ErrUnsupported)
		}
		kid, vid := ids.id(), ids.id()
		c, t, err := mapSchema(s.Value, ids, depth+1)
		if err != nil {
			return Column{}, nil, err
		}
		c.Required = !s.Value.Optional
		return Column{Kind: KindMap, Elem: &c}, &iceberg.MapType{KeyID: kid, KeyType: iceberg.PrimitiveTypes.String, ValueID: vid, ValueType: t, ValueRequired: c.Required}, nil
	}
	return Column{}, nil, fmt.Errorf("%w: Connect type %s (name %q)", ErrUnsupported, s.Type, s.Name)
}

func decimalParams(s *debezium.Schema) (scale, prec int, err error) {
	prec = 64 // Connect's default when connect.decimal.precision is absent
	if v, ok := s.Param(debezium.DecimalPrecisionParam); ok {
		if prec, err = strconv.Atoi(v); err != nil {
			return 0, 0, fmt.Errorf("%w: decimal precision %q", ErrUnsupported, v)
		}
	}
	v, ok := s.Param(debezium.DecimalScaleParam)
	if !ok {
		return 0, 0, fmt.Errorf("%w: decimal without scale", ErrUnsupported)
	}
	if scale, err = strconv.Atoi(v); err != nil {
		return 0, 0, fmt.Errorf("%w: decimal scale %q", ErrUnsupported, v)
	}
	// iceberg.DecimalTypeOf panics outside these; formatting a decimal
	// costs time quadratic in its scale.
	switch {
	case prec < 1 || prec > MaxDecimalStringPrecision:
		return 0, 0, fmt.Errorf("%w: decimal precision %d (from 1 to %d)", ErrLimit, prec, MaxDecimalStringPrecision)
	case scale < 0 || scale > MaxDecimalScale:
		return 0, 0, fmt.Errorf("%w: decimal scale %d (from 0 to %d)", ErrLimit, scale, MaxDecimalScale)
	case scale > prec:
		return 0, 0, fmt.Errorf("%w: decimal scale %d over its precision %d", ErrLimit, scale, prec)
	}
	return scale, prec, nil
}

var kindNames = [...]string{
	KindBool: "bool", KindInt: "int", KindLong: "long", KindFloat: "float", KindDouble: "double",
	KindString: "string", KindBinary: "binary", KindDecimal: "decimal", KindDecimalString: "decimal-as-string",
	KindDate: "date", KindTimeMillis: "time-millis", KindTimeMicros: "time-micros", KindTimeNanos: "time-nanos",
	KindTimestampMillis: "timestamp-millis", KindTimestampMicros: "timestamp-micros",
	KindTimestampNanos: "timestamp-nanos", KindZonedTimestamp: "zoned-timestamp",
	KindStruct: "struct", KindList: "list", KindMap: "map",
}

// String names the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// ErrValue reports a value whose Go type or content does not fit its column.
var ErrValue = fmt.Errorf("%w: value does not fit column", ErrUnsupported)

// Convert turns a Connect value (the Go model of the debezium package: int8,
// int16, int32, int64, float32, float64, bool, string, []byte, []any,
// map[string]any, debezium.Struct) into the converted value documented for
// c.Kind. It also accepts the shapes a generic Avro decoder produces: int32
// for INT8/INT16, *big.Rat for decimals, time.Time for dates and timestamps,
// and map[string]any for structs. nil stays nil.
func (c *Column) Convert(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.Kind {
	case KindBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case KindInt:
		switch x := v.(type) {
		case int32:
			return x, nil
		case int8:
			return int32(x), nil
		case int16:
			return int32(x), nil
		}
	case KindLong:
		switch x := v.(type) {
		case int64:
			return x, nil
		case int32:
			return int64(x), nil
		case int:
			return int64(x), nil
		}
	case KindFloat:
		if f, ok := v.(float32); ok {
			return f, nil
		}
	case KindDouble:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		}
	case KindString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case KindBinary:
		if b, ok := v.([]byte); ok {
			return b, nil
		}
	case KindDecimal:
		switch x := v.(type) {
		case []byte:
			n, ok := DecimalFromBytes(x)
			if !ok {
				return nil, fmt.Errorf("%w: %s: %d-byte decimal overflows 128 bits", ErrValue, c.Name, len(x))
			}
			return n, nil
		case *big.Rat:
			return ratToNum(x, c.Scale)
		case decimal128.Num:
			return x, nil
		}
	case KindDecimalString:
		switch x := v.(type) {
		case []byte:
			if len(x) > maxDecimalStringBytes {
				return nil, fmt.Errorf("%w: %s: a %d-byte decimal (at most %d)", ErrValue, c.Name, len(x), maxDecimalStringBytes)
			}
			return formatDecimal(debezium.DecimalFromBytes(x), c.Scale), nil
		case *big.Rat:
			return x.FloatString(c.Scale), nil
		case string:
			return x, nil
		}
	case KindDate:
		switch x := v.(type) {
		case int32:
			return x, nil
		case time.Time:
			return int32(x.Unix() / 86400), nil
		}
	case KindTimeMillis:
		switch x := v.(type) {
		case int32:
			return int64(x) * 1000, nil
		case time.Duration:
			return x.Microseconds(), nil
		}
	case KindTimeMicros:
		switch x := v.(type) {
		case int64:
			return x, nil
		case time.Duration:
			return x.Microseconds(), nil
		}
	case KindTimeNanos, KindTimestampNanos:
		if x, ok := v.(int64); ok {
			return floorDiv(x, 1000), nil
		}
	case KindTimestampMillis:
		switch x := v.(type) {
		case int64:
			return x * 1000, nil
		case time.Time:
			return x.UnixMicro(), nil
		}
	case KindTimestampMicros:
		switch x := v.(type) {
		case int64:
			return x, nil
		case time.Time:
			return x.UnixMicro(), nil
		}
	case KindZonedTimestamp:
		if s, ok := v.(string); ok {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrValue, c.Name, err)
			}
			return t.UnixMicro(), nil
		}
	case KindStruct:
		var in []any
		switch x := v.(type) {
		case debezium.Struct:
			in = x
		case []any:
			in = x
		case map[string]any:
			in = make([]any, len(c.Fields))
			for i := range c.Fields {
				in[i] = x[c.Fields[i].Name]
			}
		}
		if in == nil || len(in) != len(c.Fields) {
			break
		}
		out := make([]any, len(in))
		for i := range c.Fields {
			cv, err := c.Fields[i].Convert(in[i])
			if err != nil {
				return nil, err
			}
			out[i] = cv
		}
		return out, nil
	case KindList:
		if x, ok := v.([]any); ok {
			out := make([]any, len(x))
			for i, e := range x {
				cv, err := c.Elem.Convert(e)
				if err != nil {
					return nil, err
				}
				out[i] = cv
			}
			return out, nil
		}
	case KindMap:
		if x, ok := v.(map[string]any); ok {
			out := make(map[string]any, len(x))
			for k, e := range x {
				cv, err := c.Elem.Convert(e)
				if err != nil {
					return nil, err
				}
				out[k] = cv
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: column %q (%s) got %T", ErrValue, c.Name, c.Kind, v)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// DecimalFromBytes reads a big-endian two's-complement unscaled value (the
// Connect Decimal encoding) of up to 16 bytes without allocating. ok is false
// when the value does not fit in 128 bits.
func DecimalFromBytes(b []byte) (n decimal128.Num, ok bool) {
	if len(b) == 0 {
		return decimal128.Num{}, true
	}
	if len(b) > 16 {
		// Leading sign-extension bytes are allowed.
		ext := byte(0)
		if b[0]&0x80 != 0 {
			ext = 0xff
		}
		for _, c := range b[:len(b)-16] {
			if c != ext {
				return decimal128.Num{}, false
			}
		}
		b = b[len(b)-16:]
		if (b[0]&0x80 != 0) != (ext == 0xff) {
			return decimal128.Num{}, false
		}
	}
	var hi, lo uint64
	if b[0]&0x80 != 0 {
		hi, lo = ^uint64(0), ^uint64(0)
	}
	for _, c := range b {
		hi = hi<<8 | lo>>56
		lo = lo<<8 | uint64(c)
	}
	return decimal128.New(int64(hi), lo), true
}

func ratToNum(r *big.Rat, scale int) (decimal128.Num, error) {
	u := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	q, m := new(big.Int).QuoRem(u, r.Denom(), new(big.Int))
	if m.Sign() != 0 || q.BitLen() > 127 {
		return decimal128.Num{}, fmt.Errorf("%w: decimal %s does not fit scale %d in 128 bits", ErrValue, r.String(), scale)
	}
	return decimal128.FromBigInt(q), nil
}

// maxDecimalStringBytes is the longest unscaled value of a decimal mapped
// to a string: enough for MaxDecimalStringPrecision digits.
const maxDecimalStringBytes = MaxDecimalStringPrecision*10/24 + 2

func formatDecimal(unscaled *big.Int, scale int) string {
	if scale <= 0 {
		return unscaled.String()
	}
	neg := unscaled.Sign() < 0
	digits := new(big.Int).Abs(unscaled).String()
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	s := digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

// Columns that [ChangeLog] adds to the source columns, in this order.
const (
	ChangeOpColumn        = "_binlake_op"        // string: c, r, u, d or t
	ChangeBeforeColumn    = "_binlake_before"    // boolean: the row is the before image of a u or d
	ChangeTsMsColumn      = "_binlake_ts_ms"     // long: source.ts_ms of the change
	ChangePartitionColumn = "_binlake_partition" // int: Kafka partition
	ChangeOffsetColumn    = "_binlake_offset"    // long: Kafka offset
)

// ChangeLog maps the row schema of a table without a primary key to the
// schema of its append-only change log: the source columns, all optional
// (a truncate row and a before image may lack values), then one column per
// name of [ChangeOpColumn]..[ChangeOffsetColumn], required. There are no
// identifier fields. A source column with one of those names is refused.
func ChangeLog(row *debezium.Schema) (_ *Mapping, err error) {
	defer recovered(&err)
	m, err := Map(row, nil)
	if err != nil {
		return nil, err
	}
	fields := m.Schema.Fields()
	for i := range fields {
		fields[i].Required = false
		m.Columns[i].Required = false
	}
	meta := []struct {
		name string
		typ  iceberg.Type
		kind Kind
	}{
		{ChangeOpColumn, iceberg.PrimitiveTypes.String, KindString},
		{ChangeBeforeColumn, iceberg.PrimitiveTypes.Bool, KindBool},
		{ChangeTsMsColumn, iceberg.PrimitiveTypes.Int64, KindLong},
		{ChangePartitionColumn, iceberg.PrimitiveTypes.Int32, KindInt},
		{ChangeOffsetColumn, iceberg.PrimitiveTypes.Int64, KindLong},
	}
	next := m.Schema.HighestFieldID() + 1
	for _, c := range meta {
		if _, clash := m.Schema.FindFieldByName(c.name); clash {
			return nil, fmt.Errorf("%w: source column %q clashes with ingest's change-log column", ErrUnsupported, c.name)
		}
		fields = append(fields, iceberg.NestedField{ID: next, Name: c.name, Type: c.typ, Required: true})
		m.Columns = append(m.Columns, Column{Name: c.name, Kind: c.kind, Required: true})
		next++
	}
	m.Schema = iceberg.NewSchema(0, fields...)
	return m, nil
}

// SourceOrderColumn is the column [WithSourceOrder] adds: a nullable long
// holding each row's position in the source binlog (batch.SourceOrder),
// which lets a truncate delete exactly the rows that precede it and lets a
// change log be replayed in source order whatever the Kafka partitioning.
const SourceOrderColumn = "_binlake_source_order"

// WithSourceOrder appends [SourceOrderColumn] (optional long) to m, the
// mapping of a keyed table (Map) or of a change log (ChangeLog). A source
// column of that name is refused.
func WithSourceOrder(m *Mapping) (_ *Mapping, err error) {
	defer recovered(&err)
	if _, clash := m.Schema.FindFieldByName(SourceOrderColumn); clash {
		return nil, fmt.Errorf("%w: source column %q clashes with ingest's source-order column", ErrUnsupported, SourceOrderColumn)
	}
	fields := append(m.Schema.Fields(), iceberg.NestedField{ID: m.Schema.HighestFieldID() + 1, Name: SourceOrderColumn, Type: iceberg.PrimitiveTypes.Int64,
		Doc: "binlake: position of the row's last change in the source binlog (file sequence << 33 + pos + row)"})
	m.Columns = append(m.Columns, Column{Name: SourceOrderColumn, Kind: KindLong})
	m.Schema = iceberg.NewSchemaWithIdentifiers(0, m.Schema.IdentifierFieldIDs, fields...)
	return m, nil
}
