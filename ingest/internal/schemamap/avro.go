// Package schemamap maps Debezium change-event schemas to Apache Iceberg
// schemas, decides which schema changes a table can follow, and names the
// Iceberg tables that Debezium tables land in.
//
// The input is the Avro schema JSON that the producer registered (Confluent
// AvroConverter with connect.meta.data=true). [ParseAvro] turns it back into
// the Kafka Connect view ([debezium.Schema]) using connect.name,
// connect.parameters, connect.type and logicalType. [Map] builds the Iceberg
// schema of a row, with the record key fields as required identifier fields,
// and returns for each column the [Kind] of value conversion that turns a
// Connect value into the value the batch package writes to Arrow.
// [Evolve] compares a table's current Iceberg schema with the schema a new
// Debezium schema maps to and returns the changes Iceberg can make without
// rewriting data, or an [*IncompatibleError] naming the column.
//
// The mapping is documented as a table in schemas/TYPES.md (Iceberg column).
// Everything here is pure: no I/O, safe for concurrent use.
package schemamap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/binlake/binlake/schemas/debezium"
)

// Errors callers branch on with errors.Is.
var (
	// ErrInvalidAvro reports Avro schema JSON that cannot be read.
	ErrInvalidAvro = errors.New("schemamap: invalid Avro schema")
	// ErrUnsupported reports a Connect schema with no Iceberg mapping.
	ErrUnsupported = errors.New("schemamap: unsupported schema")
	// ErrIncompatible is the parent of every [*IncompatibleError].
	ErrIncompatible = errors.New("schemamap: incompatible schema change")
)

// ParseAvro parses an Avro schema (the JSON text registered for a Debezium
// key, value row or envelope) into its Kafka Connect view. Named types
// defined earlier in the schema may be referenced by name later, as the
// envelope's "after" field references "Value".
//
// A field's Avro "default" becomes the Connect default
// ([debezium.Schema.Default]) of its schema, in the Go model of the
// debezium package (int8, int16, int32, int64, float32, float64, bool,
// string, []byte): the default the producer read from the column's DDL
// (Debezium's value schema carries it, e.g. after ALTER TABLE … ADD
// COLUMN c VARCHAR(32) DEFAULT 'dflt'). A null default is no default.
// Defaults of structs, arrays and maps are not read.
func ParseAvro(avroJSON []byte) (_ *debezium.Schema, err error) {
	defer recovered(&err)
	var v any
	dec := json.NewDecoder(bytes.NewReader(avroJSON))
	dec.UseNumber() // a long default may not fit a float64
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidAvro, err)
	}
	p := avroParser{named: map[string]*debezium.Schema{}}
	return p.parse(v, "")
}

type avroParser struct {
	named map[string]*debezium.Schema
}

func (p *avroParser) parse(v any, ns string) (*debezium.Schema, error) {
	switch t := v.(type) {
	case string:
		return p.primitive(t, ns, nil)
	case []any:
		return p.union(t, ns)
	case map[string]any:
		return p.object(t, ns)
	default:
		return nil, fmt.Errorf("%w: unexpected JSON %T", ErrInvalidAvro, v)
	}
}

func (p *avroParser) union(branches []any, ns string) (*debezium.Schema, error) {
	var out *debezium.Schema
	hasNull := false
	for _, b := range branches {
		if s, ok := b.(string); ok && s == "null" {
			hasNull = true
			continue
		}
		if out != nil {
			return nil, fmt.Errorf("%w: union with more than one non-null branch", ErrUnsupported)
		}
		s, err := p.parse(b, ns)
		if err != nil {
			return nil, err
		}
		out = s
	}
	if out == nil {
		return nil, fmt.Errorf("%w: union of only null", ErrUnsupported)
	}
	if hasNull {
		c := *out // a named record may be shared; optionality is per use
		c.Optional = true
		out = &c
	}
	return out, nil
}

func (p *avroParser) primitive(name, ns string, props map[string]any) (*debezium.Schema, error) {
	s := &debezium.Schema{}
	switch name {
	case "boolean":
		s.Type = debezium.BOOLEAN
	case "int":
		s.Type = debezium.INT32
		switch props["connect.type"] {
		case "int8":
			s.Type = debezium.INT8
		case "int16":
			s.Type = debezium.INT16
		}
	case "long":
		s.Type = debezium.INT64
	case "float":
		s.Type = debezium.FLOAT32
	case "double":
		s.Type = debezium.FLOAT64
	case "string":
		s.Type = debezium.STRING
	case "bytes":
		s.Type = debezium.BYTES
	default:
		full := name
		if !containsDot(name) && ns != "" {
			full = ns + "." + name
		}
		if n, ok := p.named[full]; ok {
			return n, nil
		}
		if n, ok := p.named[name]; ok {
			return n, nil
		}
		return nil, fmt.Errorf("%w: unknown type %q", ErrInvalidAvro, name)
	}
	applyProps(s, props)
	return s, nil
}

func containsDot(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return true
		}
	}
	return false
}

func (p *avroParser) object(o map[string]any, ns string) (*debezium.Schema, error) {
	typ, _ := o["type"].(string)
	switch typ {
	case "record", "error":
		return p.record(o, ns)
	case "array":
		elem, err := p.parse(o["items"], ns)
		if err != nil {
			return nil, err
		}
		s := &debezium.Schema{Type: debezium.ARRAY, Elem: elem}
		applyProps(s, o)
		return s, nil
	case "map":
		val, err := p.parse(o["values"], ns)
		if err != nil {
			return nil, err
		}
		s := &debezium.Schema{Type: debezium.MAP, Key: &debezium.Schema{Type: debezium.STRING}, Value: val}
		applyProps(s, o)
		return s, nil
	case "enum":
		s := &debezium.Schema{Type: debezium.STRING}
		applyProps(s, o)
		p.define(o, ns, s)
		return s, nil
	case "fixed":
		s := &debezium.Schema{Type: debezium.BYTES}
		applyProps(s, o)
		p.define(o, ns, s)
		return s, nil
	case "":
		// {"type": {...}} or {"type": ["null", ...]} wrappers.
		if inner, ok := o["type"]; ok {
			return p.parse(inner, ns)
		}
		return nil, fmt.Errorf("%w: object without type", ErrInvalidAvro)
	default:
		return p.primitive(typ, ns, o)
	}
}

func (p *avroParser) define(o map[string]any, ns string, s *debezium.Schema) string {
	name, _ := o["name"].(string)
	if name == "" {
		return ns
	}
	if v, ok := o["namespace"].(string); ok {
		ns = v
	}
	full := name
	if !containsDot(name) && ns != "" {
		full = ns + "." + name
	}
	p.named[full] = s
	if i := lastDot(full); i >= 0 {
		return full[:i]
	}
	return ""
}

func lastDot(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}

func (p *avroParser) record(o map[string]any, ns string) (*debezium.Schema, error) {
	s := &debezium.Schema{Type: debezium.STRUCT}
	inner := p.define(o, ns, s)
	name, _ := o["name"].(string)
	if name != "" {
		if inner != "" && !containsDot(name) {
			s.Name = inner + "." + name
		} else {
			s.Name = name
		}
	}
	fields, _ := o["fields"].([]any)
	for _, f := range fields {
		fo, ok := f.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: record field is %T", ErrInvalidAvro, f)
		}
		fname, _ := fo["name"].(string)
		fs, err := p.parse(fo["type"], inner)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", fname, err)
		}
		if dv, ok := fo["default"]; ok && dv != nil {
			d, err := avroDefault(fs, dv)
			if err != nil {
				return nil, fmt.Errorf("%w: default of field %s: %w", ErrInvalidAvro, fname, err)
			}
			if d != nil {
				c := *fs // a named schema may be shared; the default is per field
				c.Default = d
				fs = &c
			}
		}
		s.Fields = append(s.Fields, debezium.Field{Name: fname, Schema: fs})
	}
	applyProps(s, o)
	return s, nil
}

// applyProps copies the Connect metadata and maps Avro logical types that
// carry no connect.name to their Connect logical types.
func applyProps(s *debezium.Schema, o map[string]any) {
	if o == nil {
		return
	}
	if v, ok := o["connect.name"].(string); ok {
		s.Name = v
	}
	if v, ok := number(o["connect.version"]); ok {
		s.Version = int(v)
	}
	if v, ok := o["connect.doc"].(string); ok {
		s.Doc = v
	}
	if params, ok := o["connect.parameters"].(map[string]any); ok {
		keys := make([]string, 0, len(params))
		for k := range params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if v, ok := params[k].(string); ok {
				s.Parameters = append(s.Parameters, debezium.Param{Key: k, Value: v})
			}
		}
	}
	lt, _ := o["logicalType"].(string)
	if s.Name != "" || lt == "" {
		return
	}
	switch lt {
	case "decimal":
		prec, _ := number(o["precision"])
		scale, _ := number(o["scale"])
		s.Name = debezium.DecimalName
		s.Parameters = append(s.Parameters,
			debezium.Param{Key: debezium.DecimalScaleParam, Value: fmt.Sprint(int(scale))},
			debezium.Param{Key: debezium.DecimalPrecisionParam, Value: fmt.Sprint(int(prec))})
	case "date":
		s.Name = debezium.ConnectDateName
	case "time-millis":
		s.Name = debezium.ConnectTimeName
	case "timestamp-millis":
		s.Name = debezium.ConnectTimestamp
	case "time-micros":
		s.Name = debezium.MicroTimeName
	case "timestamp-micros":
		s.Name = debezium.MicroTimestampName
	}
}

// RowSchema returns the row schema of a Debezium envelope (the schema of its
// "after" field, made required), or the schema itself when it is not an
// envelope (already a row or a key).
func RowSchema(s *debezium.Schema) (*debezium.Schema, error) {
	if s == nil || s.Type != debezium.STRUCT {
		return nil, fmt.Errorf("%w: row schema must be a struct", ErrUnsupported)
	}
	i := s.FieldIndex("after")
	if i < 0 || s.FieldIndex("op") < 0 {
		return s, nil
	}
	row := *s.Fields[i].Schema
	row.Optional = false
	if row.Type != debezium.STRUCT {
		return nil, fmt.Errorf("%w: envelope field after is %s", ErrUnsupported, row.Type)
	}
	return &row, nil
}

// number reads a JSON number decoded with UseNumber.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// avroDefault turns the JSON default of a field of schema s into a
// Connect value (nil for the types whose defaults are not read). The
// Avro JSON encoding is that of the union's first branch (the value
// branch: Connect puts it first when there is a default); bytes are a
// string of code points 0–255.
func avroDefault(s *debezium.Schema, v any) (any, error) {
	bad := func() error { return fmt.Errorf("%v does not fit %s", v, s.Type) }
	integer := func(lo, hi int64) (int64, error) {
		n, ok := v.(json.Number)
		if !ok {
			return 0, bad()
		}
		i, err := n.Int64()
		if err != nil || i < lo || i > hi {
			return 0, bad()
		}
		return i, nil
	}
	switch s.Type {
	case debezium.BOOLEAN:
		b, ok := v.(bool)
		if !ok {
			return nil, bad()
		}
		return b, nil
	case debezium.INT8:
		i, err := integer(math.MinInt8, math.MaxInt8)
		return int8(i), err
	case debezium.INT16:
		i, err := integer(math.MinInt16, math.MaxInt16)
		return int16(i), err
	case debezium.INT32:
		i, err := integer(math.MinInt32, math.MaxInt32)
		return int32(i), err
	case debezium.INT64:
		return integer(math.MinInt64, math.MaxInt64)
	case debezium.FLOAT32, debezium.FLOAT64:
		n, ok := v.(json.Number)
		if !ok {
			return nil, bad()
		}
		f, err := n.Float64()
		if err != nil {
			return nil, bad()
		}
		if s.Type == debezium.FLOAT32 {
			return float32(f), nil
		}
		return f, nil
	case debezium.STRING:
		str, ok := v.(string)
		if !ok {
			return nil, bad()
		}
		return str, nil
	case debezium.BYTES:
		str, ok := v.(string)
		if !ok {
			return nil, bad()
		}
		b := make([]byte, 0, len(str))
		for _, r := range str {
			if r > 0xff {
				return nil, bad()
			}
			b = append(b, byte(r))
		}
		return b, nil
	}
	return nil, nil
}
