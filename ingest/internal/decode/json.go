package decode

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/schemas/debezium"
)

// jsonCodec is a compiled JsonConverter value schema.
type jsonCodec struct {
	skip    string // the schema name of a record that is not a change
	schema  *Schema
	row     *debezium.Schema
	columns []schemamap.Column
}

type jsonMessage struct {
	Schema  json.RawMessage `json:"schema"`
	Payload json.RawMessage `json:"payload"`
}

func parseMessage(b []byte) (jsonMessage, error) {
	var m jsonMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return m, jsonErr(err)
	}
	if len(m.Schema) == 0 || bytes.Equal(m.Schema, []byte("null")) {
		return m, fmt.Errorf("%w: JSON without a schema (enable schemas: value.converter.schemas.enable=true)", ErrBadSchema)
	}
	return m, nil
}

// jsonErr describes a JSON error without quoting the input.
func jsonErr(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: invalid JSON at byte %d", ErrMalformed, se.Offset)
	}
	return fmt.Errorf("%w: invalid JSON", ErrMalformed)
}

func (d *Decoder) decodeJSONValue(value []byte, wantBefore bool, bud *budget) (Change, error) {
	m, err := parseMessage(value)
	if err != nil {
		return Change{}, err
	}
	d.mu.RLock()
	jc := d.json[string(m.Schema)]
	d.mu.RUnlock()
	if jc == nil {
		if jc, err = d.compileJSON(m.Schema); err != nil {
			return Change{}, err
		}
	}
	if jc.skip != "" {
		ch := Change{NotChange: jc.skip}
		if isSchemaChange(jc.skip) {
			var p map[string]any
			if err := unmarshalNumbers(m.Payload, &p); err != nil {
				return Change{}, err
			}
			ch.SchemaChange = schemaChangeFromJSON(p)
		}
		return ch, nil
	}
	var p map[string]any
	if err := unmarshalNumbers(m.Payload, &p); err != nil {
		return Change{}, err
	}
	if p == nil {
		return Change{Tombstone: true}, nil
	}
	ch := Change{Schema: jc.schema}
	op, _ := p["op"].(string)
	image := func(field string) ([]any, error) {
		img, ok := p[field].(map[string]any)
		if !ok {
			return nil, nil
		}
		row := make([]any, len(jc.columns))
		for i := range jc.columns {
			v, err := fromJSON(jc.row.Fields[i].Schema, img[jc.columns[i].Name], 0, bud)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", jc.columns[i].Name, err)
			}
			if row[i], err = convert(&jc.columns[i], v); err != nil {
				return nil, err
			}
		}
		return row, nil
	}
	row, err := image("after")
	if err != nil {
		return Change{}, err
	}
	if wantBefore {
		if ch.Before, err = image("before"); err != nil {
			return Change{}, err
		}
	}
	if src, ok := p["source"].(map[string]any); ok {
		if n, ok := src["ts_ms"].(json.Number); ok {
			ch.Event.TsMs, _ = n.Int64()
		}
		ch.Event.GTID, _ = src["gtid"].(string)
		ch.Source = sourceFromJSON(src)
		ch.SourceDB, _ = src["db"].(string)
		ch.SourceTable, _ = src["table"].(string)
	}
	if err := setOp(&ch.Event, []byte(op), row); err != nil {
		return Change{}, err
	}
	if src, ok := p["source"].(map[string]any); ok {
		file, _ := src["file"].(string)
		var pos, rowIdx int64
		if n, ok := src["pos"].(json.Number); ok {
			pos, _ = n.Int64()
		}
		if n, ok := src["row"].(json.Number); ok {
			rowIdx, _ = n.Int64()
		}
		if rowIdx >= 0 && rowIdx <= math.MaxInt32 {
			setOrder(&ch.Event, file, pos, int32(rowIdx))
		}
		ch.Event.Binlog = batch.Basename(file)
	}
	return ch, nil
}

func unmarshalNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return jsonErr(err)
	}
	return nil
}

// compileJSON compiles a JsonConverter value schema and caches it, within
// Limits.JSONSchemaCacheBytes: schemas are dropped (any of them: one
// compiled again costs a flush of its table's batch, not a wrong result)
// until the new one fits; one larger than the whole cache is not kept.
func (d *Decoder) compileJSON(schemaJSON []byte) (*jsonCodec, error) {
	d.mu.Lock()
	d.jsonSeq++
	id := fmt.Sprintf("json:%d", d.jsonSeq)
	d.mu.Unlock()
	jc, err := compileJSON(id, schemaJSON)
	if err != nil {
		return nil, err
	}
	size := len(schemaJSON)
	d.mu.Lock()
	defer d.mu.Unlock()
	if prev := d.json[string(schemaJSON)]; prev != nil {
		return prev, nil // compiled meanwhile by another caller: one *Schema per schema
	}
	if size > d.limits.JSONSchemaCacheBytes {
		return jc, nil
	}
	for k := range d.json {
		if d.jsonBytes+size <= d.limits.JSONSchemaCacheBytes {
			break
		}
		delete(d.json, k)
		d.jsonBytes -= len(k)
	}
	d.json[string(schemaJSON)] = jc
	d.jsonBytes += size
	return jc, nil
}

func compileJSON(id string, schemaJSON []byte) (*jsonCodec, error) {
	var raw any
	if err := unmarshalNumbers(schemaJSON, &raw); err != nil {
		return nil, err
	}
	env, err := connectSchema(raw, 0)
	if err != nil {
		return nil, err
	}
	if NonChangeSchema(env.Name) {
		return &jsonCodec{skip: env.Name}, nil
	}
	if env.Type != debezium.STRUCT || env.FieldIndex("op") < 0 || env.FieldIndex("after") < 0 {
		return nil, ErrNotEnvelope
	}
	row, err := schemamap.RowSchema(env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotEnvelope, err)
	}
	m, err := schemamap.Map(row, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSchema, err)
	}
	jc := &jsonCodec{schema: &Schema{ID: id, Row: row}, row: row, columns: m.Columns}
	for _, c := range m.Columns {
		jc.schema.Columns = append(jc.schema.Columns, c.Name)
	}
	return jc, nil
}

// connectSchema reads a Kafka Connect JSON schema
// (org.apache.kafka.connect.json.JsonConverter with schemas.enable).
func connectSchema(v any, depth int) (*debezium.Schema, error) {
	o, ok := v.(map[string]any)
	if !ok || depth > 64 {
		return nil, fmt.Errorf("%w: Connect schema is not an object", ErrBadSchema)
	}
	typ, _ := o["type"].(string)
	s := &debezium.Schema{}
	switch typ {
	case "int8":
		s.Type = debezium.INT8
	case "int16":
		s.Type = debezium.INT16
	case "int32":
		s.Type = debezium.INT32
	case "int64":
		s.Type = debezium.INT64
	case "float":
		s.Type = debezium.FLOAT32
	case "double":
		s.Type = debezium.FLOAT64
	case "boolean":
		s.Type = debezium.BOOLEAN
	case "string":
		s.Type = debezium.STRING
	case "bytes":
		s.Type = debezium.BYTES
	case "array":
		s.Type = debezium.ARRAY
		e, err := connectSchema(o["items"], depth+1)
		if err != nil {
			return nil, err
		}
		s.Elem = e
	case "map":
		s.Type = debezium.MAP
		k, err := connectSchema(o["keys"], depth+1)
		if err != nil {
			return nil, err
		}
		val, err := connectSchema(o["values"], depth+1)
		if err != nil {
			return nil, err
		}
		s.Key, s.Value = k, val
	case "struct":
		s.Type = debezium.STRUCT
		fields, _ := o["fields"].([]any)
		for _, f := range fields {
			fs, err := connectSchema(f, depth+1)
			if err != nil {
				return nil, err
			}
			name, _ := f.(map[string]any)["field"].(string)
			s.Fields = append(s.Fields, debezium.Field{Name: name, Schema: fs})
		}
	default:
		return nil, fmt.Errorf("%w: Connect type %q", ErrBadSchema, typ)
	}
	s.Optional, _ = o["optional"].(bool)
	s.Name, _ = o["name"].(string)
	if n, ok := o["version"].(json.Number); ok {
		v, _ := n.Int64()
		s.Version = int(v)
	}
	if params, ok := o["parameters"].(map[string]any); ok {
		keys := make([]string, 0, len(params))
		for k := range params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if pv, ok := params[k].(string); ok {
				s.Parameters = append(s.Parameters, debezium.Param{Key: k, Value: pv})
			}
		}
	}
	return s, nil
}

var errJSONValue = fmt.Errorf("%w: JSON value does not match its schema", ErrMalformed)

// maxDecimalText is the longest decimal a JsonConverter NUMERIC value may
// be written as, and the largest exponent it may have: big.Rat would
// expand "1e9999999" into ten million digits.
const maxDecimalText = 2 * schemamap.MaxDecimalStringPrecision

// decimalText reports whether x is a decimal of a reasonable size.
func decimalText(x string) bool {
	if len(x) > maxDecimalText {
		return false
	}
	i := strings.IndexAny(x, "eE")
	if i < 0 {
		return true
	}
	e, err := strconv.Atoi(x[i+1:])
	return err == nil && e >= -maxDecimalText && e <= maxDecimalText
}

// fromJSON turns a JsonConverter payload value into the Go model of the
// debezium package, within bud.
func fromJSON(s *debezium.Schema, v any, depth int, bud *budget) (any, error) {
	if v == nil {
		return nil, nil
	}
	if depth > 64 {
		return nil, errJSONValue
	}
	size := 0
	if str, ok := v.(string); ok {
		size = len(str)
	}
	if !bud.spend(size) {
		return nil, bud.err
	}
	num := func() (json.Number, error) {
		n, ok := v.(json.Number)
		if !ok {
			return "", fmt.Errorf("%w: want a number for %s", errJSONValue, s.Type)
		}
		return n, nil
	}
	switch s.Type {
	case debezium.INT8, debezium.INT16, debezium.INT32, debezium.INT64:
		n, err := num()
		if err != nil {
			return nil, err
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: not an integer", errJSONValue)
		}
		// JSON numbers carry no width: a value outside the schema's type
		// would wrap in the conversion, silently altered.
		switch bits := map[debezium.Type]int{debezium.INT8: 8, debezium.INT16: 16, debezium.INT32: 32}[s.Type]; {
		case bits > 0 && (i < -1<<(bits-1) || i > 1<<(bits-1)-1):
			return nil, fmt.Errorf("%w: integer out of range for %s", errJSONValue, s.Type)
		case s.Type == debezium.INT8:
			return int8(i), nil
		case s.Type == debezium.INT16:
			return int16(i), nil
		case s.Type == debezium.INT32:
			return int32(i), nil
		}
		return i, nil
	case debezium.FLOAT32, debezium.FLOAT64:
		n, err := num()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return nil, fmt.Errorf("%w: not a number", errJSONValue)
		}
		if s.Type == debezium.FLOAT32 {
			return float32(f), nil
		}
		return f, nil
	case debezium.BOOLEAN:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case debezium.STRING:
		if str, ok := v.(string); ok {
			return str, nil
		}
	case debezium.BYTES:
		switch x := v.(type) {
		case string:
			b, err := base64.StdEncoding.DecodeString(x)
			if err != nil {
				return nil, fmt.Errorf("%w: bytes are not base64", errJSONValue)
			}
			return b, nil
		case json.Number: // decimal.format=NUMERIC
			if !decimalText(string(x)) {
				return nil, fmt.Errorf("%w: a decimal of %d characters or with a large exponent", ErrLimit, len(x))
			}
			r, ok := new(big.Rat).SetString(string(x))
			if !ok {
				return nil, fmt.Errorf("%w: not a decimal", errJSONValue)
			}
			return r, nil
		}
	case debezium.STRUCT:
		o, ok := v.(map[string]any)
		if !ok {
			break
		}
		out := make(debezium.Struct, len(s.Fields))
		for i, f := range s.Fields {
			fv, err := fromJSON(f.Schema, o[f.Name], depth+1, bud)
			if err != nil {
				return nil, err
			}
			out[i] = fv
		}
		return out, nil
	case debezium.ARRAY:
		a, ok := v.([]any)
		if !ok {
			break
		}
		out := make([]any, len(a))
		for i, e := range a {
			ev, err := fromJSON(s.Elem, e, depth+1, bud)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case debezium.MAP:
		out := map[string]any{}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				ev, err := fromJSON(s.Value, e, depth+1, bud)
				if err != nil {
					return nil, err
				}
				out[k] = ev
			}
			return out, nil
		case []any: // non-string keys: [[k, v], ...]
			for _, pair := range x {
				kv, ok := pair.([]any)
				if !ok || len(kv) != 2 {
					return nil, errJSONValue
				}
				ev, err := fromJSON(s.Value, kv[1], depth+1, bud)
				if err != nil {
					return nil, err
				}
				out[fmt.Sprint(kv[0])] = ev
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: want %s, got %T", errJSONValue, s.Type, v)
}

// convert is Column.Convert with an error that never quotes the value.
func convert(col *schemamap.Column, v any) (any, error) {
	out, err := col.Convert(v)
	if err != nil {
		return nil, fmt.Errorf("%w: column %s (%s) cannot hold the %T value", schemamap.ErrValue, col.Name, col.Kind, v)
	}
	return out, nil
}

func decodeJSONKey(key []byte, bud *budget) ([]any, []string, error) {
	m, err := parseMessage(key)
	if err != nil {
		return nil, nil, err
	}
	var raw any
	if err := unmarshalNumbers(m.Schema, &raw); err != nil {
		return nil, nil, err
	}
	ks, err := connectSchema(raw, 0)
	if err != nil {
		return nil, nil, err
	}
	if ks.Type != debezium.STRUCT {
		return nil, nil, fmt.Errorf("%w: key schema is %s, not a struct", ErrBadSchema, ks.Type)
	}
	km, err := schemamap.Map(ks, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrBadSchema, err)
	}
	var p map[string]any
	if err := unmarshalNumbers(m.Payload, &p); err != nil {
		return nil, nil, err
	}
	vals := make([]any, len(ks.Fields))
	names := make([]string, len(ks.Fields))
	for i, f := range ks.Fields {
		v, err := fromJSON(f.Schema, p[f.Name], 0, bud)
		if err != nil {
			return nil, nil, fmt.Errorf("key field %s: %w", f.Name, err)
		}
		if vals[i], err = convert(&km.Columns[i], v); err != nil {
			return nil, nil, err
		}
		names[i] = f.Name
	}
	return vals, names, nil
}
