// Package decode turns the Kafka records of a Debezium change topic into
// batch events.
//
// Three encodings are understood, told apart by the first byte of the
// value (and of the key): Confluent-framed Avro (0x00, schema id, Avro
// binary; the AvroConverter with its schemas in a Confluent-compatible
// registry), Glue-framed Avro (0x03, compression, schema version UUID, Avro
// binary, zlib-deflated or not; AWS's converter with its schemas in AWS
// Glue Schema Registry, see WithGlue) and Debezium's JsonConverter with
// schemas enabled ('{': {"schema":…, "payload":…}). For Avro, each schema is fetched from the registry once by
// id and compiled into a reader that decodes the envelope's "after" row
// straight into the converted values of schemamap (no intermediate maps);
// fields the ingest does not need (before, transaction, most of source) are
// skipped without being materialised.
//
// Guarantees: a tombstone (null value) decodes to Change{Tombstone: true}
// and is to be ignored (the delete before it carries the key). Every error
// is a *Error naming topic, partition and offset and wrapping one of the
// sentinels below; no error text contains a row value. A Decoder is safe
// for concurrent use.
package decode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/schemas/debezium"
)

// Errors callers branch on with errors.Is.
var (
	// ErrMagic reports a record that is neither Confluent-framed Avro
	// (first byte 0x00), Glue-framed Avro (first byte 0x03) nor
	// JsonConverter JSON (first byte '{').
	ErrMagic = errors.New("decode: unknown encoding (want Confluent Avro magic byte 0x00, Glue header version 0x03 or JSON '{')")
	// ErrUnknownSchema reports a schema id the registry does not know or
	// could not be asked about.
	ErrUnknownSchema = errors.New("decode: schema not found in the registry")
	// ErrRegistryUnavailable reports a registry that did not answer a
	// schema lookup (unreachable, or an error of its own) for
	// RegistryRetry, or refused it (401, 403: check
	// schema-registry-url and its credentials; for a Glue-framed record
	// the error names glue-registry-region and the AWS credentials). It
	// says nothing about the record.
	ErrRegistryUnavailable = errors.New("decode: the schema registry did not answer (check schema-registry-url and that the registry is up)")
	// ErrBadSchema reports a schema that cannot be read or mapped.
	ErrBadSchema = errors.New("decode: unusable schema")
	// ErrNotEnvelope reports a value schema that is not a Debezium change
	// event envelope (no "op" and "after" fields).
	ErrNotEnvelope = fmt.Errorf("%w: not a Debezium envelope", ErrBadSchema)
	// ErrMalformed reports data that does not match its schema.
	ErrMalformed = errors.New("decode: malformed data")
	// ErrOp reports an envelope operation ingest does not handle.
	ErrOp = errors.New("decode: unsupported op")
)

// Error is a decoding failure of one record.
type Error struct {
	Topic     string
	Partition int32
	Offset    int64
	Part      string // "key" or "value"
	Err       error
}

func (e *Error) Error() string {
	return fmt.Sprintf("decoding the %s of %s/%d at offset %d: %v", e.Part, e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Registry is where Avro schemas are looked up by id; *sr.Client is one.
type Registry interface {
	SchemaByID(ctx context.Context, id int) (sr.Schema, error)
}

var _ Registry = (*sr.Client)(nil)

// Schema is the row schema of a change event. All events decoded with the
// same value schema share one *Schema, so a pointer comparison tells a
// schema change.
type Schema struct {
	// ID names the schema: "avro:<registry id>", "glue:<schema version
	// id>" or "json:<n>".
	ID string
	// Row is the Connect row schema (the envelope's after field).
	Row *debezium.Schema
	// Columns are the row's column names in row order.
	Columns []string
}

// Change is one decoded record.
type Change struct {
	// Tombstone means the value was null: nothing to apply.
	Tombstone bool
	// NotChange is set, to the value schema's name, when the record is one
	// of Debezium's records that are not row changes (schema changes on
	// topic <prefix>, transaction metadata on <prefix>.transaction,
	// heartbeats on __debezium-heartbeat.<prefix>): nothing to apply, the
	// key is not decoded. See [NonChangeSchema].
	NotChange string
	// Event is the change; its Key and Row hold converted values.
	Event batch.Event
	// Schema is the row schema (nil for a tombstone).
	Schema *Schema
	// KeyFields are the names of the record key's fields in key order
	// (nil for a null key, as on a truncate).
	KeyFields []string
	// Keyless means a change event with a null key: a table without a
	// primary key. Then Before holds the before image (of a u or d, in the
	// Schema's column order; nil when the event has none).
	//
	// A key with a nullable column is keyless too, and NullableKey names
	// those columns: Debezium keys a table without a primary key on its
	// first column declared UNIQUE, nullable or not, but such a column
	// can hold NULL in many rows and an Iceberg identifier field is
	// required, so the rows are no mirror's keys.
	Keyless     bool
	NullableKey []string
	Before      []any
	// Source is the change's binlog position (zero when the record has
	// none), to order it against schema changes.
	Source SourcePos
	// SourceDB and SourceTable are source.db and source.table: the
	// change's database and table ("" when the record has none). They
	// name the table of a topic whose names hold dots.
	SourceDB, SourceTable string
	// SchemaChange is set on a schema-change record (NotChange is then
	// its schema name).
	SchemaChange *SchemaChange
}

// NonChangeSchema reports whether a value schema name (Connect name) is one
// of Debezium's records that are not row changes: the schema change event
// (io.debezium.connector.<connector>.SchemaChangeValue), transaction
// metadata (io.debezium.connector.common.TransactionMetadataValue) and the
// heartbeat (io.debezium.connector.common.Heartbeat). Names from Debezium's
// SchemaFactory (../shared/reference/wire-format.md, A.7-A.9). Any other
// value that is not an envelope stays an error: skipping it could lose
// changes.
func NonChangeSchema(name string) bool {
	const pkg = "io.debezium.connector."
	switch name {
	case pkg + "common.TransactionMetadataValue", pkg + "common.Heartbeat":
		return true
	}
	rest, ok := strings.CutPrefix(name, pkg)
	if !ok {
		return false
	}
	conn, kind, ok := strings.Cut(rest, ".")
	return ok && conn != "" && kind == "SchemaChangeValue"
}

// Decoder decodes records, caching compiled schemas by id.
type Decoder struct {
	reg    Registry
	glue   GlueRegistry // nil: Glue-framed records are unknown schemas
	limits Limits

	mu        sync.RWMutex
	keys      map[schemaRef]*keyCodec
	values    map[schemaRef]*valueCodec
	json      map[string]*jsonCodec
	jsonBytes int // the text of the schemas in json
	jsonSeq   int // the last json:<n> given out
}

// New returns a Decoder that fetches Avro schemas from reg (nil: only
// JSON records can be decoded).
func New(reg Registry, opts ...Option) *Decoder {
	d := &Decoder{reg: reg, limits: Limits{}.withDefaults(), keys: map[schemaRef]*keyCodec{}, values: map[schemaRef]*valueCodec{}, json: map[string]*jsonCodec{}}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Decode decodes the record at topic/partition/offset. Decoding one record
// stays within the decoder's Limits (else ErrLimit), and a panic while
// decoding it (a bug) is recovered into ErrPanic: no record can stop
// ingest other than by an error of its own.
func (d *Decoder) Decode(ctx context.Context, topic string, partition int32, offset int64, key, value []byte) (ch Change, err error) {
	fail := func(part string, err error) (Change, error) {
		return Change{}, &Error{Topic: topic, Partition: partition, Offset: offset, Part: part, Err: err}
	}
	defer func() {
		if r := recover(); r != nil {
			ch, err = fail("record", fmt.Errorf("%w: %v", ErrPanic, r))
		}
	}()
	bud := d.limits.budget(len(key) + len(value))
	if value == nil {
		return Change{Tombstone: true}, nil
	}
	// A null key is a table without a primary key (Debezium's key=null):
	// its before images are needed to record deletes and updates.
	keyless := len(key) == 0
	switch {
	case len(value) > 0 && isAvro(value[0]):
		ch, err = d.decodeAvroValue(ctx, value, keyless, bud)
	case len(value) > 0 && value[0] == '{':
		ch, err = d.decodeJSONValue(value, keyless, bud)
	case len(value) == 0:
		return fail("value", fmt.Errorf("%w: empty value", ErrMagic))
	default:
		return fail("value", fmt.Errorf("%w: got 0x%02x", ErrMagic, value[0]))
	}
	if err != nil {
		return fail("value", err)
	}
	if ch.NotChange != "" {
		return ch, nil
	}
	if ch.Event.Op != batch.OpTruncate {
		switch {
		case keyless:
			ch.Keyless = true
		case isAvro(key[0]):
			ch.Event.Key, ch.KeyFields, err = d.decodeAvroKey(ctx, key, bud)
		case key[0] == '{':
			ch.Event.Key, ch.KeyFields, err = decodeJSONKey(key, bud)
		default:
			err = fmt.Errorf("%w: got 0x%02x", ErrMagic, key[0])
		}
		if err != nil {
			return fail("key", err)
		}
		if nk := nullableKey(ch.Schema, ch.KeyFields); len(nk) > 0 {
			// Decoded again for the before image a keyless change needs.
			if isAvro(value[0]) {
				ch, err = d.decodeAvroValue(ctx, value, true, bud)
			} else {
				ch, err = d.decodeJSONValue(value, true, bud)
			}
			if err != nil {
				return fail("value", err)
			}
			ch.Keyless, ch.NullableKey = true, nk
		}
	}
	ch.Event.Topic, ch.Event.Partition, ch.Event.Offset = topic, partition, offset
	ch.Event.Size = len(key) + len(value)
	return ch, nil
}

// nullableKey returns the key fields that are nullable columns of the row.
func nullableKey(s *Schema, key []string) []string {
	if s == nil || s.Row == nil {
		return nil
	}
	var out []string
	for _, f := range s.Row.Fields {
		if f.Schema != nil && f.Schema.Optional && slices.Contains(key, f.Name) {
			out = append(out, f.Name)
		}
	}
	return out
}

// isAvro reports whether a record's first byte is that of an Avro
// framing: Confluent's magic byte 0 or Glue's header version 3.
func isAvro(b byte) bool { return b == 0 || b == glueHeaderVersion }

// schemaRef names an Avro schema of either registry.
type schemaRef struct {
	glue   bool
	id     uint32 // Confluent
	glueID GlueID // Glue
}

func (r schemaRef) String() string {
	if r.glue {
		return "glue:" + r.glueID.String()
	}
	return fmt.Sprintf("avro:%d", r.id)
}

// frame splits an Avro record, Confluent- or Glue-framed, into its schema
// and body (a zlib Glue body inflated within bud).
func frame(b []byte, bud *budget) (schemaRef, []byte, error) {
	if len(b) > 0 && b[0] == glueHeaderVersion {
		id, payload, err := glueFrame(b, bud)
		return schemaRef{glue: true, glueID: id}, payload, err
	}
	id, payload, err := debezium.ParseFrame(b)
	if err != nil {
		return schemaRef{}, nil, fmt.Errorf("%w: %w", ErrMagic, err)
	}
	return schemaRef{id: id}, payload, nil
}

// fetchRef returns the Avro text of the schema ref names.
func (d *Decoder) fetchRef(ctx context.Context, ref schemaRef) ([]byte, error) {
	if ref.glue {
		return d.fetchGlue(ctx, ref.glueID)
	}
	return d.fetch(ctx, ref.id)
}

func (d *Decoder) fetch(ctx context.Context, id uint32) ([]byte, error) {
	if d.reg == nil {
		return nil, fmt.Errorf("%w: id %d (no registry configured)", ErrUnknownSchema, id)
	}
	s, err := d.schemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.Type != sr.TypeAvro {
		return nil, fmt.Errorf("%w: schema %d is %s, not Avro", ErrBadSchema, id, s.Type)
	}
	return []byte(s.Schema), nil
}

// RegistryRetry is how long a schema lookup retries while the registry
// cannot answer (unreachable, 5xx, 429) before it fails with
// ErrRegistryUnavailable.
var RegistryRetry = 5 * time.Minute

// schemaByID asks the registry for schema id. Only the registry's own "not
// found" (404) is ErrUnknownSchema, a fact about the record; a registry
// that cannot answer (restarting, unreachable, overloaded) is retried with
// backoff, then ErrRegistryUnavailable, a fact about the registry: the
// record must never be judged by it.
func (d *Decoder) schemaByID(ctx context.Context, id uint32) (sr.Schema, error) {
	deadline := time.Now().Add(RegistryRetry)
	wait := 100 * time.Millisecond
	for {
		s, err := d.reg.SchemaByID(ctx, int(id))
		if err == nil {
			return s, nil
		}
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return sr.Schema{}, fmt.Errorf("%w: id %d: %w", ErrUnknownSchema, id, err)
		}
		if errors.As(err, &re) && re.StatusCode < 500 && re.StatusCode != http.StatusTooManyRequests {
			return sr.Schema{}, fmt.Errorf("%w: id %d: %w", ErrRegistryUnavailable, id, err)
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return sr.Schema{}, fmt.Errorf("%w: id %d, retried for %s: %w", ErrRegistryUnavailable, id, RegistryRetry, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// keyCodec reads a record key.
type keyCodec struct {
	rec    *recordReader
	fields []string
}

func (d *Decoder) decodeAvroKey(ctx context.Context, key []byte, bud *budget) ([]any, []string, error) {
	id, payload, err := frame(key, bud)
	if err != nil {
		return nil, nil, err
	}
	d.mu.RLock()
	kc := d.keys[id]
	d.mu.RUnlock()
	if kc == nil {
		text, err := d.fetchRef(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if kc, err = compileKey(text); err != nil {
			return nil, nil, fmt.Errorf("key schema %s: %w", id, err)
		}
		d.mu.Lock()
		d.keys[id] = kc
		d.mu.Unlock()
	}
	r := reader{b: payload, bud: bud}
	vals, err := kc.rec.read(&r, make([]any, 0, len(kc.fields)))
	if err != nil {
		return nil, nil, err
	}
	return vals, kc.fields, nil
}

func compileKey(text []byte) (*keyCodec, error) {
	cs, err := schemamap.ParseAvro(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSchema, err)
	}
	if cs.Type != debezium.STRUCT {
		return nil, fmt.Errorf("%w: key schema is %s, not a struct", ErrBadSchema, cs.Type)
	}
	m, err := schemamap.Map(cs, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSchema, err)
	}
	n, err := parseAvroNodes(text)
	if err != nil {
		return nil, err
	}
	rec, err := compileRecord(n, m.Columns)
	if err != nil {
		return nil, err
	}
	return &keyCodec{rec: rec, fields: rec.names}, nil
}

// valueCodec reads an envelope.
type valueCodec struct {
	schema *Schema
	steps  []step
	skip   string // the schema name of a record that is not a change
	// schemaChange is the schema of a SchemaChangeValue, read for renames.
	schemaChange *node
}

type stepKind uint8

const (
	stepSkip stepKind = iota
	stepAfter
	stepBefore
	stepOp
	stepSource
)

type step struct {
	kind stepKind
	n    *node
	// stepAfter
	row            *recordReader
	nullAt, valAt  int
	src            []srcStep // stepSource
	srcTs, srcGTID int
}

type srcStep struct {
	n    *node
	want int // 0 skip, 1 ts_ms, 2 gtid, 3 file, 4 pos, 5 row, 6 db, 7 table
}

func (d *Decoder) decodeAvroValue(ctx context.Context, value []byte, wantBefore bool, bud *budget) (Change, error) {
	id, payload, err := frame(value, bud)
	if err != nil {
		return Change{}, err
	}
	d.mu.RLock()
	vc := d.values[id]
	d.mu.RUnlock()
	if vc == nil {
		text, err := d.fetchRef(ctx, id)
		if err != nil {
			return Change{}, err
		}
		if vc, err = compileValue(id.String(), text); err != nil {
			return Change{}, fmt.Errorf("value schema %s: %w", id, err)
		}
		d.mu.Lock()
		d.values[id] = vc
		d.mu.Unlock()
	}
	return vc.decode(payload, wantBefore, bud)
}

func compileValue(id string, text []byte) (*valueCodec, error) {
	cs, err := schemamap.ParseAvro(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSchema, err)
	}
	if NonChangeSchema(cs.Name) {
		vc := &valueCodec{skip: cs.Name}
		if isSchemaChange(cs.Name) {
			if vc.schemaChange, err = parseAvroNodes(text); err != nil {
				return nil, err
			}
		}
		return vc, nil
	}
	if cs.Type != debezium.STRUCT || cs.FieldIndex("op") < 0 || cs.FieldIndex("after") < 0 {
		return nil, ErrNotEnvelope
	}
	row, err := schemamap.RowSchema(cs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotEnvelope, err)
	}
	m, err := schemamap.Map(row, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSchema, err)
	}
	n, err := parseAvroNodes(text)
	if err != nil {
		return nil, err
	}
	if n.kind != avroRecord {
		return nil, ErrNotEnvelope
	}
	vc := &valueCodec{schema: &Schema{ID: id, Row: row}}
	for _, c := range m.Columns {
		vc.schema.Columns = append(vc.schema.Columns, c.Name)
	}
	for _, f := range n.fields {
		st := step{kind: stepSkip, n: f.typ}
		switch f.name {
		case "after", "before":
			rn, nullAt, valAt := nonNull(f.typ)
			if rn == nil {
				return nil, fmt.Errorf("%w: %s is not an optional record", ErrNotEnvelope, f.name)
			}
			if st.row, err = compileRecord(rn, m.Columns); err != nil {
				return nil, err
			}
			st.kind, st.nullAt, st.valAt = stepAfter, nullAt, valAt
			if f.name == "before" {
				st.kind = stepBefore
			}
		case "op":
			if f.typ.kind != avroString {
				return nil, fmt.Errorf("%w: op is not a string", ErrNotEnvelope)
			}
			st.kind = stepOp
		case "source":
			if f.typ.kind != avroRecord {
				break
			}
			st.kind = stepSource
			for _, sf := range f.typ.fields {
				ss := srcStep{n: sf.typ}
				switch sf.name {
				case "ts_ms":
					ss.want = 1
				case "gtid":
					ss.want = 2
				case "file":
					ss.want = 3
				case "pos":
					ss.want = 4
				case "row":
					ss.want = 5
				case "db":
					ss.want = 6
				case "table":
					ss.want = 7
				}
				st.src = append(st.src, ss)
			}
		}
		vc.steps = append(vc.steps, st)
	}
	return vc, nil
}

func (vc *valueCodec) decode(payload []byte, wantBefore bool, bud *budget) (Change, error) {
	if vc.skip != "" {
		ch := Change{NotChange: vc.skip}
		if vc.schemaChange != nil {
			r := reader{b: payload, bud: bud}
			v := r.value(vc.schemaChange, 0)
			if r.err != nil {
				return Change{}, r.err
			}
			ch.SchemaChange = schemaChangeFromAvro(vc.schemaChange, v)
		}
		return ch, nil
	}
	r := reader{b: payload, bud: bud}
	ch := Change{Schema: vc.schema}
	var op []byte
	var row []any
	var file string
	var pos int64
	var rowIdx int32
	for i := range vc.steps {
		st := &vc.steps[i]
		switch st.kind {
		case stepSkip:
			r.skip(st.n, 0)
		case stepOp:
			op = r.bytes()
		case stepAfter:
			if st.nullAt < 0 || r.union(2) == st.valAt {
				var err error
				if row, err = st.row.read(&r, make([]any, 0, len(st.row.fields))); err != nil {
					return Change{}, err
				}
			}
		case stepBefore:
			if !wantBefore {
				r.skip(st.n, 0)
				break
			}
			if st.nullAt < 0 || r.union(2) == st.valAt {
				var err error
				if ch.Before, err = st.row.read(&r, make([]any, 0, len(st.row.fields))); err != nil {
					return Change{}, err
				}
			}
		case stepSource:
			for _, ss := range st.src {
				switch ss.want {
				case 1:
					if ss.n.kind == avroLong {
						ch.Event.TsMs = r.long()
					} else if v, ok := r.value(ss.n, 0).(int64); ok {
						ch.Event.TsMs = v
					}
				case 2:
					if s, ok := r.value(ss.n, 0).(string); ok {
						ch.Event.GTID = s
					}
				case 3:
					file, _ = r.value(ss.n, 0).(string)
					ch.Source.File = file
				case 4:
					pos = toInt64(r.value(ss.n, 0))
					ch.Source.Pos = pos
				case 5:
					switch v := r.value(ss.n, 0).(type) {
					case int32:
						rowIdx = v
					case int64:
						rowIdx = int32(v)
					}
				case 6:
					ch.SourceDB, _ = r.value(ss.n, 0).(string)
				case 7:
					ch.SourceTable, _ = r.value(ss.n, 0).(string)
				default:
					r.skip(ss.n, 0)
				}
			}
		}
		if r.err != nil {
			return Change{}, r.err
		}
	}
	if r.i != len(r.b) {
		return Change{}, fmt.Errorf("%w: %d bytes after the envelope", ErrMalformed, len(r.b)-r.i)
	}
	if err := setOp(&ch.Event, op, row); err != nil {
		return Change{}, err
	}
	setOrder(&ch.Event, file, pos, rowIdx)
	ch.Event.Binlog = batch.Basename(file)
	return ch, nil
}

// setOrder sets the event's source order from source.file, pos and row
// (batch.SourceOrder); it stays 0 when they are missing.
//
// A truncate sorts at its own event: row 0, whatever source.row says.
// Debezium (and capture, which matches it) gives a TRUNCATE the row index
// of the last row of the previous rows event, of any table; added to the
// truncate's position it can pass the first rows written after the
// truncate, which the truncate's watermark would then drop as older.
func setOrder(ev *batch.Event, file string, pos int64, row int32) {
	if ev.Op == batch.OpTruncate {
		row = 0
	}
	ev.Order, _ = batch.SourceOrder(file, pos, row, ev.Op == batch.OpRead)
}

// setOp sets the event's op and row, checking they agree.
func setOp(ev *batch.Event, op []byte, row []any) error {
	if len(op) != 1 {
		return fmt.Errorf("%w: op of %d bytes", ErrOp, len(op))
	}
	switch batch.Op(op[0]) {
	case batch.OpCreate, batch.OpRead, batch.OpUpdate:
		if row == nil {
			return fmt.Errorf("%w: %c event without an after image", ErrMalformed, op[0])
		}
		ev.Row = row
	case batch.OpDelete, batch.OpTruncate:
	default:
		return fmt.Errorf("%w: %q", ErrOp, op)
	}
	ev.Op = batch.Op(op[0])
	return nil
}
