package mysqltype

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/binlake/binlake/schemas/debezium"
)

// Column describes one column as information_schema.COLUMNS does.
type Column struct {
	// Name is the column name.
	Name string
	// Type is COLUMN_TYPE, e.g. "tinyint(1)", "bigint(20) unsigned",
	// "decimal(65,30)", "datetime(6)", "enum('a','b')". MariaDB reports a
	// JSON column as "longtext"; pass "json" when the DDL says JSON.
	Type string
	// Nullable is IS_NULLABLE = 'YES'.
	Nullable bool
	// Default is COLUMN_DEFAULT; nil means no default. Both MySQL's raw
	// form (abc) and MariaDB's quoted form ('abc', NULL) are accepted.
	Default *string
	// DefaultGenerated is set when EXTRA contains DEFAULT_GENERATED (a
	// MySQL 8 expression default). Only CURRENT_TIMESTAMP-like expressions
	// then produce a Connect default.
	DefaultGenerated bool
	// Comment is COLUMN_COMMENT; it becomes the schema doc.
	Comment string
	// Charset is CHARACTER_SET_NAME: the character set the column's
	// values are in, binlog and snapshot alike (a snapshot reads them with
	// character_set_results=binary). String, ENUM and SET values are
	// decoded from it to UTF-8; "" means utf8mb4. A character set capture
	// cannot decode fails [New] with a [*CharsetError].
	Charset string `json:",omitempty"`
}

// Converter converts the values of one column. It is immutable and safe for
// concurrent use.
type Converter struct {
	name   string
	schema *debezium.Schema
	conv   func(v any) (any, error)
}

// Field returns the Debezium field of the column.
func (c *Converter) Field() debezium.Field { return debezium.Field{Name: c.name, Schema: c.schema} }

// Schema returns the Connect schema of the column.
func (c *Converter) Schema() *debezium.Schema { return c.schema }

// Convert converts a binlog or snapshot value of the column into the
// Debezium value of [Converter.Schema]. nil converts to nil.
func (c *Converter) Convert(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	out, err := c.conv(v)
	if err != nil {
		return nil, fmt.Errorf("converting column %s: %w", c.name, err)
	}
	return out, nil
}

// New builds the converter of a column. It fails with [ErrUnsupportedType]
// for types without a Debezium mapping, [ErrInvalidDefault] for defaults
// that do not convert and [ErrInvalidOptions] for unknown modes.
func New(col Column, opts Options) (*Converter, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ct, err := parseColumnType(col.Type)
	if err != nil {
		return nil, fmt.Errorf("converting column %s: %w", col.Name, err)
	}
	cs, err := columnCharset(col, ct)
	if err != nil {
		return nil, err
	}
	s, conv, err := mapType(ct, col.Nullable, opts, cs)
	if err != nil {
		return nil, fmt.Errorf("converting column %s: %w", col.Name, err)
	}
	// A default is UTF-8 text (information_schema, DDL), not the column's
	// bytes: it goes through the same converter with a UTF-8 decoder.
	_, textConv, _ := mapType(ct, col.Nullable, opts, charsets["utf8mb4"])
	s.Optional = col.Nullable
	if col.Comment != "" {
		s.Doc = col.Comment
	}
	c := &Converter{name: col.Name, schema: s, conv: textConv}
	if err := c.setDefault(col, ct); err != nil {
		return nil, fmt.Errorf("converting column %s: %w", col.Name, err)
	}
	c.conv = conv
	return c, nil
}

func named(t debezium.Type, name string, params ...debezium.Param) *debezium.Schema {
	return &debezium.Schema{Type: t, Name: name, Version: 1, Parameters: params}
}

func decimalSchema(precision, scale int) *debezium.Schema {
	return named(debezium.BYTES, debezium.DecimalName,
		debezium.Param{Key: debezium.DecimalScaleParam, Value: strconv.Itoa(scale)},
		debezium.Param{Key: debezium.DecimalPrecisionParam, Value: strconv.Itoa(precision)})
}

// mapType is the exhaustive switch from a MySQL type to its Connect schema
// and value converter.
func mapType(ct columnType, nullable bool, o Options, cs *charset) (*debezium.Schema, func(any) (any, error), error) {
	plain := func(t debezium.Type) *debezium.Schema { return &debezium.Schema{Type: t} }
	connectTime := o.TimePrecision == TimeConnect
	switch ct.name {
	case "bool", "boolean":
		return plain(debezium.BOOLEAN), convBool, nil
	case "tinyint", "int1":
		// Debezium's MySQL/MariaDB connectors map TINYINT, signed or not and
		// TINYINT(1) included, to INT16 (observed in the golden events of
		// schemas/testdata/debezium, snapshot and streaming alike).
		if ct.unsigned {
			return plain(debezium.INT16), intConv(8, true, toInt16), nil
		}
		return plain(debezium.INT16), intConv(8, false, tinyToInt16), nil
	case "smallint", "int2":
		if ct.unsigned {
			return plain(debezium.INT32), intConv(16, true, toInt32), nil
		}
		return plain(debezium.INT16), intConv(16, false, toInt16), nil
	case "mediumint", "int3", "middleint":
		return plain(debezium.INT32), intConv(24, ct.unsigned, toInt32), nil
	case "int", "integer", "int4":
		if ct.unsigned {
			return plain(debezium.INT64), intConv(32, true, toInt64), nil
		}
		return plain(debezium.INT32), intConv(32, false, toInt32), nil
	case "bigint", "int8", "serial":
		if ct.name == "serial" {
			ct.unsigned = true
		}
		if !ct.unsigned {
			return plain(debezium.INT64), intConv(64, false, toInt64), nil
		}
		if o.BigintUnsigned == BigintPrecise {
			return decimalSchema(20, 0), convUint64Decimal, nil
		}
		return plain(debezium.INT64), convUint64Long, nil
	case "float":
		if len(ct.args) == 2 || ct.arg(0, 0) > 24 {
			return plain(debezium.FLOAT64), convFloat64, nil
		}
		return plain(debezium.FLOAT32), convFloat32, nil
	case "real":
		return plain(debezium.FLOAT32), convFloat32, nil
	case "double", "double precision", "float8":
		return plain(debezium.FLOAT64), convFloat64, nil
	case "float4":
		return plain(debezium.FLOAT32), convFloat32, nil
	case "decimal", "numeric", "dec", "fixed":
		precision, scale := ct.arg(0, 10), ct.arg(1, 0)
		switch o.Decimal {
		case DecimalString:
			return plain(debezium.STRING), decimalStringConv(scale), nil
		case DecimalDouble:
			return plain(debezium.FLOAT64), convFloat64, nil
		}
		return decimalSchema(precision, scale), decimalBytesConv(scale), nil
	case "bit":
		n := ct.arg(0, 1)
		if n == 1 {
			return plain(debezium.BOOLEAN), convBitBool, nil
		}
		return named(debezium.BYTES, debezium.BitsName, debezium.Param{Key: "length", Value: strconv.Itoa(n)}),
			bitsConv((n + 7) / 8), nil
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "nchar", "nvarchar",
		"national char", "national varchar", "character", "character varying", "long varchar",
		"long", "national character", "national character varying", "nchar varchar":
		return plain(debezium.STRING), stringConv(cs), nil
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "long varbinary":
		pad := 0
		if ct.name == "binary" {
			pad = ct.arg(0, 1)
		}
		return binarySchema(o.Binary), binaryConv(o.Binary, pad), nil
	case "date":
		if connectTime {
			return named(debezium.INT32, debezium.ConnectDateName), dateConv(nullable), nil
		}
		return named(debezium.INT32, debezium.DateName), dateConv(nullable), nil
	case "time":
		if connectTime {
			return named(debezium.INT32, debezium.ConnectTimeName), convTimeMillis, nil
		}
		return named(debezium.INT64, debezium.MicroTimeName), convTimeMicros, nil
	case "datetime":
		fsp := ct.arg(0, 0)
		switch {
		case connectTime:
			return named(debezium.INT64, debezium.ConnectTimestamp), datetimeConv(nullable, false), nil
		case fsp <= 3:
			return named(debezium.INT64, debezium.TimestampName), datetimeConv(nullable, false), nil
		default:
			return named(debezium.INT64, debezium.MicroTimestampName), datetimeConv(nullable, true), nil
		}
	case "timestamp":
		return named(debezium.STRING, debezium.ZonedTimestampName),
			timestampConv(nullable, ct.arg(0, 0), o.ServerTimeZone), nil
	case "year":
		return named(debezium.INT32, debezium.YearName), convYear, nil
	case "json":
		return named(debezium.STRING, debezium.JSONName), jsonConv(nullable), nil
	case "enum":
		return named(debezium.STRING, debezium.EnumName, debezium.Param{Key: "allowed", Value: strings.Join(ct.labels, ",")}),
			enumConv(ct.labels, cs), nil
	case "set":
		return named(debezium.STRING, debezium.EnumSetName, debezium.Param{Key: "allowed", Value: strings.Join(ct.labels, ",")}),
			setConv(ct.labels, cs), nil
	case "geometry", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
		"geometrycollection", "geomcollection":
		return debezium.GeometrySchema(nullable), convGeometry, nil
	case "point":
		return debezium.PointSchema(nullable), convPoint, nil
	case "vector":
		return &debezium.Schema{Type: debezium.ARRAY, Name: debezium.FloatVectorName, Version: 1,
			Elem: &debezium.Schema{Type: debezium.FLOAT32}}, convVector, nil
	}
	return nil, nil, fmt.Errorf("%w: %s", ErrUnsupportedType, ct.name)
}

// usesCharset reports the types whose values are text in the column's
// character set.
func usesCharset(name string) bool {
	switch name {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "nchar", "nvarchar",
		"national char", "national varchar", "character", "character varying", "long varchar",
		"long", "national character", "national character varying", "nchar varchar", "enum", "set":
		return true
	}
	return false
}

// columnCharset returns the decoder of a column's character set: utf8mb4
// for types without one, a [*CharsetError] when capture cannot decode it.
func columnCharset(col Column, ct columnType) (*charset, error) {
	if !usesCharset(ct.name) {
		return charsets["utf8mb4"], nil
	}
	cs, ok := lookupCharset(col.Charset)
	if !ok {
		return nil, &CharsetError{Column: col.Name, Charset: col.Charset}
	}
	return cs, nil
}

func binarySchema(m BinaryMode) *debezium.Schema {
	if m == BinaryBytes {
		return &debezium.Schema{Type: debezium.BYTES}
	}
	return &debezium.Schema{Type: debezium.STRING}
}

// binaryConv returns the converter of a binary column; BINARY(pad) values
// are right-padded with 0x00 to pad bytes because the binlog strips them.
func binaryConv(m BinaryMode, pad int) func(any) (any, error) {
	return func(v any) (any, error) {
		var b []byte
		switch x := v.(type) {
		case []byte:
			b = x
		case string:
			b = []byte(x)
		default:
			return nil, badType(v, "BINARY")
		}
		if len(b) < pad {
			p := make([]byte, pad)
			copy(p, b)
			b = p
		}
		switch m {
		case BinaryBase64:
			return base64.StdEncoding.EncodeToString(b), nil
		case BinaryBase64URLSafe:
			return base64.URLEncoding.EncodeToString(b), nil
		case BinaryHex:
			return hex.EncodeToString(b), nil
		}
		return b, nil
	}
}

func badType(v any, what string) error {
	return fmt.Errorf("%w: %T for %s", ErrInvalidValue, v, what)
}

func badValue(v any, what string) error {
	return fmt.Errorf("%w: %v for %s", ErrInvalidValue, v, what)
}
