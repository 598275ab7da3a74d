// Package debezium models Debezium change events at the Kafka Connect level
// and turns them into the bytes a Debezium 3.1+ MySQL/MariaDB connector with
// the Confluent AvroConverter (connect.meta.data=true) would produce.
//
// It provides:
//   - a Connect schema model ([Schema], [Field], [Struct]);
//   - [AvroSchema], which renders a Connect schema as the exact compact Avro
//     JSON that io.confluent.connect.avro.AvroData registers (property order,
//     union order and named-record reuse included);
//   - builders for the standard schemas (source block, transaction block,
//     table envelope, key/value rows, schema-change, transaction-metadata and
//     heartbeat topics) and for Debezium topic and schema names;
//   - [AppendAvro], an allocation-free Avro binary encoder for values of those
//     schemas, and the Confluent wire framing ([AppendFrame], [ParseFrame]).
//
// Values use one Go type per Connect type, which is also their Avro type:
// INT8 int8, INT16 int16, INT32 int32, INT64 int64, FLOAT32 float32, FLOAT64
// float64, BOOLEAN bool, STRING string, BYTES []byte (a Connect Decimal is
// already its big-endian two's-complement unscaled bytes, see [DecimalBytes]),
// ARRAY []any, MAP map[string]any, STRUCT [Struct]. nil is null.
//
// The package is imported by both binaries; it holds no state and is safe for
// concurrent use. Schemas must not be mutated once they are in use.
package debezium

import "errors"

// Type is a Kafka Connect schema type.
type Type uint8

// Connect schema types.
const (
	INT8 Type = iota + 1
	INT16
	INT32
	INT64
	FLOAT32
	FLOAT64
	BOOLEAN
	STRING
	BYTES
	ARRAY
	MAP
	STRUCT
)

var typeNames = [...]string{
	INT8: "INT8", INT16: "INT16", INT32: "INT32", INT64: "INT64", FLOAT32: "FLOAT32",
	FLOAT64: "FLOAT64", BOOLEAN: "BOOLEAN", STRING: "STRING", BYTES: "BYTES",
	ARRAY: "ARRAY", MAP: "MAP", STRUCT: "STRUCT",
}

// String returns the Connect name of the type, e.g. "INT32".
func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "Type(" + itoa(int64(t)) + ")"
}

// Param is one schema parameter. Parameters keep their insertion order
// because the Avro rendering (connect.parameters) preserves it.
type Param struct {
	Key, Value string
}

// Field is one field of a STRUCT schema.
type Field struct {
	Name   string
	Schema *Schema
}

// Schema is a Kafka Connect schema.
type Schema struct {
	Type     Type
	Optional bool
	// Name is the fully qualified schema name, e.g. "io.debezium.time.Date"
	// or "dbserver1.inventory.orders.Value". Empty for unnamed schemas.
	Name string
	// Version is the schema version; 0 means none.
	Version int
	// Doc is the schema documentation (for a column: its comment).
	Doc string
	// Parameters in insertion order.
	Parameters []Param
	// Default is the default value in the Go representation of Type (see
	// the package documentation); nil means no default.
	Default any
	// Fields of a STRUCT, in order.
	Fields []Field
	// Elem is the element schema of an ARRAY.
	Elem *Schema
	// Key and Value are the schemas of a MAP.
	Key, Value *Schema
}

// Param returns the value of the named parameter and whether it is set.
func (s *Schema) Param(key string) (string, bool) {
	for _, p := range s.Parameters {
		if p.Key == key {
			return p.Value, true
		}
	}
	return "", false
}

// FieldIndex returns the position of the named field, or -1.
func (s *Schema) FieldIndex(name string) int {
	for i, f := range s.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// Struct is the value of a STRUCT schema: one value per field, in field order.
type Struct []any

// Well-known Connect and Debezium schema names.
const (
	DecimalName        = "org.apache.kafka.connect.data.Decimal"
	ConnectDateName    = "org.apache.kafka.connect.data.Date"
	ConnectTimeName    = "org.apache.kafka.connect.data.Time"
	ConnectTimestamp   = "org.apache.kafka.connect.data.Timestamp"
	DateName           = "io.debezium.time.Date"
	MicroTimeName      = "io.debezium.time.MicroTime"
	TimestampName      = "io.debezium.time.Timestamp"
	MicroTimestampName = "io.debezium.time.MicroTimestamp"
	ZonedTimestampName = "io.debezium.time.ZonedTimestamp"
	YearName           = "io.debezium.time.Year"
	JSONName           = "io.debezium.data.Json"
	EnumName           = "io.debezium.data.Enum"
	EnumSetName        = "io.debezium.data.EnumSet"
	BitsName           = "io.debezium.data.Bits"
	GeometryName       = "io.debezium.data.geometry.Geometry"
	PointName          = "io.debezium.data.geometry.Point"
	FloatVectorName    = "io.debezium.data.FloatVector"

	// DecimalScaleParam and DecimalPrecisionParam are the Decimal parameters.
	DecimalScaleParam     = "scale"
	DecimalPrecisionParam = "connect.decimal.precision"
)

// Errors returned by this package. Callers branch on them with errors.Is.
var (
	// ErrInvalidSchema reports a schema that cannot be rendered or encoded.
	ErrInvalidSchema = errors.New("debezium: invalid schema")
	// ErrInvalidValue reports a value whose Go type does not match its schema.
	ErrInvalidValue = errors.New("debezium: value does not match schema")
	// ErrNullValue reports a nil value for a required schema.
	ErrNullValue = errors.New("debezium: null value for required schema")
	// ErrShortFrame reports a Confluent frame shorter than its 5-byte header.
	ErrShortFrame = errors.New("debezium: frame shorter than 5-byte header")
	// ErrUnknownMagic reports a frame whose first byte is not the Confluent
	// magic byte 0x00.
	ErrUnknownMagic = errors.New("debezium: unknown magic byte")
)

func itoa(v int64) string {
	var b [20]byte
	return string(appendInt(b[:0], v))
}
