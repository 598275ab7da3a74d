package debezium

import "fmt"

// Flavor selects the connector whose names are reproduced.
type Flavor string

// Connector flavors.
const (
	// FlavorMySQL reproduces the Debezium MySQL connector
	// (io.debezium.connector.mysql.*).
	FlavorMySQL Flavor = "mysql"
	// FlavorMariaDB reproduces the Debezium MariaDB connector
	// (io.debezium.connector.mariadb.*).
	FlavorMariaDB Flavor = "mariadb"
)

// Op is the envelope operation.
type Op string

// Envelope operations.
const (
	OpCreate   Op = "c"
	OpUpdate   Op = "u"
	OpDelete   Op = "d"
	OpRead     Op = "r" // snapshot read
	OpTruncate Op = "t"
	OpMessage  Op = "m"
)

// SnapshotMarker is the value of source.snapshot.
type SnapshotMarker string

// Values of source.snapshot (Debezium ≥ 3.1 SnapshotRecord).
const (
	SnapshotFalse                 SnapshotMarker = "false" // streaming
	SnapshotTrue                  SnapshotMarker = "true"
	SnapshotFirst                 SnapshotMarker = "first"
	SnapshotFirstInDataCollection SnapshotMarker = "first_in_data_collection"
	SnapshotLastInDataCollection  SnapshotMarker = "last_in_data_collection"
	SnapshotLast                  SnapshotMarker = "last"
	SnapshotIncremental           SnapshotMarker = "incremental"
)

const snapshotAllowed = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"

func str() *Schema     { return &Schema{Type: STRING} }
func optStr() *Schema  { return &Schema{Type: STRING, Optional: true} }
func i64() *Schema     { return &Schema{Type: INT64} }
func optI64() *Schema  { return &Schema{Type: INT64, Optional: true} }
func i32() *Schema     { return &Schema{Type: INT32} }
func optI32() *Schema  { return &Schema{Type: INT32, Optional: true} }
func optBool() *Schema { return &Schema{Type: BOOLEAN, Optional: true} }

func connectorNamespace(f Flavor) string {
	if f == FlavorMariaDB {
		return "io.debezium.connector.mariadb"
	}
	return "io.debezium.connector.mysql"
}

// SourceSchema returns the source block schema of the flavor's connector
// (Debezium ≥ 3.1: version 1, 7-value snapshot enum defaulting to "false").
func SourceSchema(f Flavor) *Schema {
	return &Schema{
		Type: STRUCT, Name: connectorNamespace(f) + ".Source", Version: 1,
		Fields: []Field{
			{"version", str()},
			{"connector", str()},
			{"name", str()},
			{"ts_ms", i64()},
			{"snapshot", &Schema{Type: STRING, Optional: true, Name: EnumName, Version: 1,
				Parameters: []Param{{"allowed", snapshotAllowed}}, Default: string(SnapshotFalse)}},
			{"db", str()},
			{"sequence", optStr()},
			{"ts_us", optI64()},
			{"ts_ns", optI64()},
			{"table", optStr()},
			{"server_id", i64()},
			{"gtid", optStr()},
			{"file", str()},
			{"pos", i64()},
			{"row", i32()},
			{"thread", optI64()},
			{"query", optStr()},
		},
	}
}

// Source is the value of the source block.
type Source struct {
	Version   string // Debezium version reported, e.g. "3.1.2.Final"
	Connector Flavor
	Name      string // topic.prefix
	TsMs      int64  // event time in the database
	TsUs      int64
	TsNs      int64
	Snapshot  SnapshotMarker // "" means SnapshotFalse
	DB        string
	Table     string // "" is null
	ServerID  int64
	GTID      string // "" is null
	File      string
	Pos       int64
	Row       int32
	Thread    int64  // 0 is null (MySQL thread ids start at 1)
	Query     string // "" is null
}

// Struct returns the value in the field order of [SourceSchema].
func (s *Source) Struct() Struct {
	snap := s.Snapshot
	if snap == "" {
		snap = SnapshotFalse
	}
	return Struct{
		s.Version, string(s.Connector), s.Name, s.TsMs, string(snap), s.DB,
		nil, s.TsUs, s.TsNs, nullString(s.Table), s.ServerID, nullString(s.GTID),
		s.File, s.Pos, s.Row, nullInt64(s.Thread), nullString(s.Query),
	}
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt64(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// BlockSchema returns the optional envelope transaction block event.block.
func BlockSchema() *Schema {
	return &Schema{
		Type: STRUCT, Optional: true, Name: "event.block", Version: 1,
		Fields: []Field{
			{"id", str()},
			{"total_order", i64()},
			{"data_collection_order", i64()},
		},
	}
}

// Block is the value of the envelope transaction block.
type Block struct {
	ID                  string // GTID, or file=<binlog>,pos=<pos>
	TotalOrder          int64  // 1-based position in the transaction
	DataCollectionOrder int64  // 1-based position within the table
}

// KeySchema returns the record-key schema P.db.tbl.Key with one field per
// key column, or nil when fields is empty (keyless tables have a null key).
func KeySchema(t TableID, fields []Field) *Schema {
	if len(fields) == 0 {
		return nil
	}
	return &Schema{Type: STRUCT, Name: t.SchemaPrefix() + ".Key", Fields: fields}
}

// ValueSchema returns the optional row schema P.db.tbl.Value used for the
// envelope's before and after fields.
func ValueSchema(t TableID, fields []Field) *Schema {
	return &Schema{Type: STRUCT, Optional: true, Name: t.SchemaPrefix() + ".Value", Fields: fields}
}

// EnvelopeSchema returns the change-event value schema P.db.tbl.Envelope
// (version 2) around the row schema value (from [ValueSchema]).
func EnvelopeSchema(t TableID, f Flavor, value *Schema) *Schema {
	return &Schema{
		Type: STRUCT, Name: t.SchemaPrefix() + ".Envelope", Version: 2,
		Fields: []Field{
			{"before", value},
			{"after", value},
			{"source", SourceSchema(f)},
			{"transaction", BlockSchema()},
			{"op", str()},
			{"ts_ms", optI64()},
			{"ts_us", optI64()},
			{"ts_ns", optI64()},
		},
	}
}

// Envelope is the value of a change event.
type Envelope struct {
	Before, After Struct // nil is null
	Source        Source
	Transaction   *Block // nil is null
	Op            Op
	TsMs          int64 // processing time
	TsUs          int64
	TsNs          int64
}

// Struct returns the value in the field order of [EnvelopeSchema].
func (e *Envelope) Struct() Struct {
	var before, after, tx any
	if e.Before != nil {
		before = e.Before
	}
	if e.After != nil {
		after = e.After
	}
	if e.Transaction != nil {
		tx = Struct{e.Transaction.ID, e.Transaction.TotalOrder, e.Transaction.DataCollectionOrder}
	}
	return Struct{before, after, e.Source.Struct(), tx, string(e.Op), e.TsMs, e.TsUs, e.TsNs}
}

// SchemaChangeKeySchema returns the key schema of the schema-change topic P.
func SchemaChangeKeySchema(f Flavor) *Schema {
	return &Schema{
		Type: STRUCT, Name: connectorNamespace(f) + ".SchemaChangeKey", Version: 1,
		Fields: []Field{{"databaseName", str()}},
	}
}

// SchemaChangeValueSchema returns the value schema of the schema-change
// topic P: source, ts_ms, databaseName, schemaName, ddl, tableChanges.
func SchemaChangeValueSchema(f Flavor) *Schema {
	column := &Schema{
		Type: STRUCT, Name: "io.debezium.connector.schema.Column", Version: 1,
		Fields: []Field{
			{"name", str()},
			{"jdbcType", i32()},
			{"nativeType", optI32()},
			{"typeName", str()},
			{"typeExpression", optStr()},
			{"charsetName", optStr()},
			{"length", optI32()},
			{"scale", optI32()},
			{"position", i32()},
			{"optional", optBool()},
			{"autoIncremented", optBool()},
			{"generated", optBool()},
			{"comment", optStr()},
			{"defaultValueExpression", optStr()},
			{"enumValues", &Schema{Type: ARRAY, Optional: true, Elem: str()}},
		},
	}
	table := &Schema{
		Type: STRUCT, Optional: true, Name: "io.debezium.connector.schema.Table", Version: 1,
		Fields: []Field{
			{"defaultCharsetName", optStr()},
			{"primaryKeyColumnNames", &Schema{Type: ARRAY, Optional: true, Elem: str()}},
			{"columns", &Schema{Type: ARRAY, Elem: column}},
			{"comment", optStr()},
		},
	}
	change := &Schema{
		Type: STRUCT, Name: "io.debezium.connector.schema.Change", Version: 1,
		Fields: []Field{
			{"type", str()},
			{"id", str()},
			{"table", table},
		},
	}
	return &Schema{
		Type: STRUCT, Name: connectorNamespace(f) + ".SchemaChangeValue", Version: 1,
		Fields: []Field{
			{"source", SourceSchema(f)},
			{"ts_ms", i64()},
			{"databaseName", optStr()},
			{"schemaName", optStr()},
			{"ddl", optStr()},
			{"tableChanges", &Schema{Type: ARRAY, Elem: change}},
		},
	}
}

// TransactionKeySchema returns the key schema of the P.transaction topic.
func TransactionKeySchema() *Schema {
	return &Schema{
		Type: STRUCT, Name: "io.debezium.connector.common.TransactionMetadataKey", Version: 1,
		Fields: []Field{{"id", str()}},
	}
}

// TransactionValueSchema returns the value schema of the P.transaction
// topic: status (BEGIN|END), id, event_count, data_collections, ts_ms.
func TransactionValueSchema() *Schema {
	// The array's elements are optional: Debezium 3.5's registered schema
	// has items ["null", event.collection].
	collection := &Schema{
		Type: STRUCT, Optional: true, Name: "event.collection", Version: 1,
		Fields: []Field{{"data_collection", str()}, {"event_count", i64()}},
	}
	return &Schema{
		Type: STRUCT, Name: "io.debezium.connector.common.TransactionMetadataValue", Version: 1,
		Fields: []Field{
			{"status", str()},
			{"id", str()},
			{"event_count", optI64()},
			{"data_collections", &Schema{Type: ARRAY, Optional: true, Elem: collection}},
			{"ts_ms", i64()},
		},
	}
}

// HeartbeatKeySchema returns the key schema of the heartbeat topic
// ({serverName}, the topic prefix).
func HeartbeatKeySchema() *Schema {
	return &Schema{
		Type: STRUCT, Name: "io.debezium.connector.common.ServerNameKey", Version: 1,
		Fields: []Field{{"serverName", str()}},
	}
}

// HeartbeatValueSchema returns the value schema of the heartbeat topic
// ({ts_ms}).
func HeartbeatValueSchema() *Schema {
	return &Schema{
		Type: STRUCT, Name: "io.debezium.connector.common.Heartbeat", Version: 1,
		Fields: []Field{{"ts_ms", i64()}},
	}
}

// GeometrySchema returns io.debezium.data.geometry.Geometry (version 1,
// Debezium ≤ 3.6): {wkb bytes, srid optional int32}.
func GeometrySchema(optional bool) *Schema {
	return &Schema{
		Type: STRUCT, Optional: optional, Name: GeometryName, Version: 1, Doc: "Geometry",
		Fields: []Field{
			{"wkb", &Schema{Type: BYTES}},
			{"srid", optI32()},
		},
	}
}

// PointSchema returns io.debezium.data.geometry.Point (version 1):
// {x double, y double, wkb optional bytes, srid optional int32}.
func PointSchema(optional bool) *Schema {
	return &Schema{
		Type: STRUCT, Optional: optional, Name: PointName, Version: 1, Doc: "Geometry (POINT)",
		Fields: []Field{
			{"x", &Schema{Type: FLOAT64}},
			{"y", &Schema{Type: FLOAT64}},
			{"wkb", &Schema{Type: BYTES, Optional: true}},
			{"srid", optI32()},
		},
	}
}

func appendString(dst []byte, s string) []byte {
	dst = AppendLong(dst, int64(len(s)))
	return append(dst, s...)
}

// appendOptString appends a ["null","string"] union; "" is null.
func appendOptString(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, 0)
	}
	return appendString(append(dst, 2), s)
}

// appendOptLong appends a ["null","long"] union holding v.
func appendOptLong(dst []byte, v int64) []byte {
	return AppendLong(append(dst, 2), v)
}

// AppendAvro appends the Avro encoding of the source block; it equals
// AppendAvro(dst, SourceSchema(f), s.Struct()) without boxing any value.
func (s *Source) AppendAvro(dst []byte) []byte {
	snap := s.Snapshot
	if snap == "" {
		snap = SnapshotFalse
	}
	dst = appendString(dst, s.Version)
	dst = appendString(dst, string(s.Connector))
	dst = appendString(dst, s.Name)
	dst = AppendLong(dst, s.TsMs)
	dst = appendString(append(dst, 0), string(snap)) // [Enum,"null"]: value is branch 0
	dst = appendString(dst, s.DB)
	dst = append(dst, 0) // sequence: null
	dst = appendOptLong(dst, s.TsUs)
	dst = appendOptLong(dst, s.TsNs)
	dst = appendOptString(dst, s.Table)
	dst = AppendLong(dst, s.ServerID)
	dst = appendOptString(dst, s.GTID)
	dst = appendString(dst, s.File)
	dst = AppendLong(dst, s.Pos)
	dst = AppendLong(dst, int64(s.Row))
	if s.Thread == 0 {
		dst = append(dst, 0)
	} else {
		dst = appendOptLong(dst, s.Thread)
	}
	return appendOptString(dst, s.Query)
}

// AppendAvro appends the Avro encoding of the envelope for env, a schema
// built by [EnvelopeSchema]. It equals AppendAvro(dst, env, e.Struct()) but
// boxes nothing outside the row values.
func (e *Envelope) AppendAvro(dst []byte, env *Schema) ([]byte, error) {
	if len(env.Fields) != 8 || env.Fields[0].Name != "before" {
		return dst, fmt.Errorf("%w: %s is not an envelope schema", ErrInvalidSchema, env.Name)
	}
	value := env.Fields[0].Schema
	var err error
	for _, row := range [2]Struct{e.Before, e.After} {
		if row == nil {
			dst = append(dst, 0)
			continue
		}
		if dst, err = appendStruct(append(dst, 2), value, row); err != nil {
			return dst, fmt.Errorf("encoding row: %w", err)
		}
	}
	dst = e.Source.AppendAvro(dst)
	if t := e.Transaction; t == nil {
		dst = append(dst, 0)
	} else {
		dst = appendString(append(dst, 2), t.ID)
		dst = AppendLong(dst, t.TotalOrder)
		dst = AppendLong(dst, t.DataCollectionOrder)
	}
	dst = appendString(dst, string(e.Op))
	dst = appendOptLong(dst, e.TsMs)
	dst = appendOptLong(dst, e.TsUs)
	return appendOptLong(dst, e.TsNs), nil
}
