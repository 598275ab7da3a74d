package debezium

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Names used by the Confluent AvroConverter for unnamed structs and maps with
// non-string keys.
const (
	connectDefaultNamespace = "io.confluent.connect.avro"
	connectDefaultName      = "ConnectDefault"
	mapEntryName            = "MapEntry"
	defaultDecimalPrecision = 64
)

// AvroSchema renders s as the compact Avro schema JSON that the Confluent
// AvroConverter (AvroData.fromConnectSchema with connect.meta.data=true and
// Avro's Schema.toString) produces, byte for byte:
//   - properties of a non-union schema in the order: (Decimal: scale,
//     precision,) connect.doc, connect.version, connect.parameters,
//     connect.default, connect.name, connect.type, logicalType;
//   - records named by splitting the Connect name at its last dot, each
//     named record defined once and referenced by name (relative to the
//     enclosing namespace) afterwards;
//   - optional schemas as ["null",T] with field default null, or [T,"null"]
//     with the field default when the schema has a default (optional structs
//     are always ["null",record]).
func AvroSchema(s *Schema) ([]byte, error) {
	w := avroSchemaWriter{defined: map[string]bool{}}
	if err := w.schema(s); err != nil {
		return nil, err
	}
	return w.buf, nil
}

type avroSchemaWriter struct {
	buf     []byte
	defined map[string]bool
	space   string // enclosing namespace
}

// splitName splits a Connect name at its last dot into namespace and name.
func splitName(full string) (space, name string) {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "", full
}

func (w *avroSchemaWriter) schema(s *Schema) error {
	if s == nil {
		return fmt.Errorf("%w: nil schema", ErrInvalidSchema)
	}
	if s.Type == STRUCT {
		if s.Optional {
			w.buf = append(w.buf, `["null",`...)
			if err := w.record(s, s.Name); err != nil {
				return err
			}
			w.buf = append(w.buf, ']')
			return nil
		}
		return w.record(s, s.Name)
	}
	union := s.Optional
	valueFirst := s.Default != nil
	if union {
		if valueFirst {
			w.buf = append(w.buf, '[')
		} else {
			w.buf = append(w.buf, `["null",`...)
		}
	}
	if err := w.nonRecord(s); err != nil {
		return err
	}
	if union {
		if valueFirst {
			w.buf = append(w.buf, `,"null"]`...)
		} else {
			w.buf = append(w.buf, ']')
		}
	}
	return nil
}

// nonRecord writes a non-union, non-record schema with its properties.
func (w *avroSchemaWriter) nonRecord(s *Schema) error {
	var avroType, connectType string
	switch s.Type {
	case INT8:
		avroType, connectType = "int", "int8"
	case INT16:
		avroType, connectType = "int", "int16"
	case INT32:
		avroType = "int"
	case INT64:
		avroType = "long"
	case FLOAT32:
		avroType = "float"
	case FLOAT64:
		avroType = "double"
	case BOOLEAN:
		avroType = "boolean"
	case STRING:
		avroType = "string"
	case BYTES:
		avroType = "bytes"
	case ARRAY:
		if s.Elem == nil {
			return fmt.Errorf("%w: array without element schema", ErrInvalidSchema)
		}
		w.buf = append(w.buf, `{"type":"array","items":`...)
		if err := w.schema(s.Elem); err != nil {
			return err
		}
		return w.props(s, "", true)
	case MAP:
		if s.Key == nil || s.Value == nil {
			return fmt.Errorf("%w: map without key or value schema", ErrInvalidSchema)
		}
		if s.Key.Type == STRING && !s.Key.Optional {
			w.buf = append(w.buf, `{"type":"map","values":`...)
			if err := w.schema(s.Value); err != nil {
				return err
			}
			return w.props(s, "", true)
		}
		w.buf = append(w.buf, `{"type":"array","items":`...)
		entry := &Schema{Type: STRUCT, Name: connectDefaultNamespace + "." + mapEntryName,
			Fields: []Field{{Name: "key", Schema: s.Key}, {Name: "value", Schema: s.Value}}}
		if err := w.recordBody(entry, entry.Name, true); err != nil {
			return err
		}
		return w.props(s, "", true)
	default:
		return fmt.Errorf("%w: unknown type %v", ErrInvalidSchema, s.Type)
	}
	start := len(w.buf)
	w.buf = append(w.buf, `{"type":"`...)
	w.buf = append(w.buf, avroType...)
	w.buf = append(w.buf, '"')
	n := len(w.buf)
	if s.Type == BYTES && s.Name == DecimalName {
		scale, precision, err := decimalParams(s)
		if err != nil {
			return err
		}
		w.buf = append(w.buf, `,"scale":`...)
		w.buf = strconv.AppendInt(w.buf, int64(scale), 10)
		w.buf = append(w.buf, `,"precision":`...)
		w.buf = strconv.AppendInt(w.buf, int64(precision), 10)
	}
	if err := w.props(s, connectType, false); err != nil {
		return err
	}
	switch s.Name {
	case DecimalName:
		if s.Type == BYTES {
			w.buf = append(w.buf, `,"logicalType":"decimal"`...)
		}
	case ConnectDateName:
		w.buf = append(w.buf, `,"logicalType":"date"`...)
	case ConnectTimeName:
		w.buf = append(w.buf, `,"logicalType":"time-millis"`...)
	case ConnectTimestamp:
		w.buf = append(w.buf, `,"logicalType":"timestamp-millis"`...)
	}
	if len(w.buf) == n {
		// No properties: Avro writes the bare primitive name.
		w.buf = append(w.buf[:start], '"')
		w.buf = append(w.buf, avroType...)
		w.buf = append(w.buf, '"')
		return nil
	}
	w.buf = append(w.buf, '}')
	return nil
}

// decimalParams returns the scale and Avro precision of a Decimal schema.
func decimalParams(s *Schema) (scale, precision int, err error) {
	precision = defaultDecimalPrecision
	if v, ok := s.Param(DecimalScaleParam); ok {
		if scale, err = strconv.Atoi(v); err != nil {
			return 0, 0, fmt.Errorf("%w: decimal scale %q", ErrInvalidSchema, v)
		}
	}
	if v, ok := s.Param(DecimalPrecisionParam); ok {
		if precision, err = strconv.Atoi(v); err != nil {
			return 0, 0, fmt.Errorf("%w: decimal precision %q", ErrInvalidSchema, v)
		}
	}
	return scale, precision, nil
}

// props appends the connect.* metadata of s, each preceded by a comma.
// When closeObj is set the object is closed with '}'.
func (w *avroSchemaWriter) props(s *Schema, connectType string, closeObj bool) error {
	if s.Doc != "" {
		w.buf = append(w.buf, `,"connect.doc":`...)
		w.buf = appendJSONString(w.buf, s.Doc)
	}
	if s.Version != 0 {
		w.buf = append(w.buf, `,"connect.version":`...)
		w.buf = strconv.AppendInt(w.buf, int64(s.Version), 10)
	}
	if len(s.Parameters) > 0 {
		w.buf = append(w.buf, `,"connect.parameters":{`...)
		for i, p := range s.Parameters {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.buf = appendJSONString(w.buf, p.Key)
			w.buf = append(w.buf, ':')
			w.buf = appendJSONString(w.buf, p.Value)
		}
		w.buf = append(w.buf, '}')
	}
	if s.Default != nil {
		w.buf = append(w.buf, `,"connect.default":`...)
		var err error
		if w.buf, err = appendDefaultJSON(w.buf, s, s.Default); err != nil {
			return err
		}
	}
	if s.Name != "" {
		w.buf = append(w.buf, `,"connect.name":`...)
		w.buf = appendJSONString(w.buf, s.Name)
	}
	if connectType != "" {
		w.buf = append(w.buf, `,"connect.type":"`...)
		w.buf = append(w.buf, connectType...)
		w.buf = append(w.buf, '"')
	}
	if closeObj {
		w.buf = append(w.buf, '}')
	}
	return nil
}

func (w *avroSchemaWriter) record(s *Schema, full string) error {
	return w.recordBody(s, full, false)
}

// recordBody writes a record definition, or a reference to it when a record
// of the same full name was already written.
func (w *avroSchemaWriter) recordBody(s *Schema, full string, internal bool) error {
	if full == "" {
		full = connectDefaultNamespace + "." + connectDefaultName
	}
	space, name := splitName(full)
	if w.defined[full] {
		if space == w.space {
			w.buf = appendJSONString(w.buf, name)
		} else {
			w.buf = appendJSONString(w.buf, full)
		}
		return nil
	}
	w.defined[full] = true
	w.buf = append(w.buf, `{"type":"record","name":`...)
	w.buf = appendJSONString(w.buf, name)
	if space != w.space {
		w.buf = append(w.buf, `,"namespace":`...)
		w.buf = appendJSONString(w.buf, space)
	}
	saved := w.space
	w.space = space
	w.buf = append(w.buf, `,"fields":[`...)
	for i, f := range s.Fields {
		if f.Schema == nil {
			return fmt.Errorf("%w: field %s has no schema", ErrInvalidSchema, f.Name)
		}
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = append(w.buf, `{"name":`...)
		w.buf = appendJSONString(w.buf, f.Name)
		w.buf = append(w.buf, `,"type":`...)
		if err := w.schema(f.Schema); err != nil {
			return fmt.Errorf("rendering field %s: %w", f.Name, err)
		}
		switch {
		case f.Schema.Default != nil:
			w.buf = append(w.buf, `,"default":`...)
			var err error
			if w.buf, err = appendDefaultJSON(w.buf, f.Schema, f.Schema.Default); err != nil {
				return fmt.Errorf("rendering default of field %s: %w", f.Name, err)
			}
		case f.Schema.Optional:
			w.buf = append(w.buf, `,"default":null`...)
		}
		w.buf = append(w.buf, '}')
	}
	w.buf = append(w.buf, ']')
	w.space = saved
	if internal {
		w.buf = append(w.buf, '}')
		return nil
	}
	return w.props(s, "", true)
}

// appendDefaultJSON renders a default value the way AvroData's
// defaultValueFromConnect does (Jackson formatting).
func appendDefaultJSON(dst []byte, s *Schema, v any) ([]byte, error) {
	if v == nil {
		return append(dst, "null"...), nil
	}
	bad := func() ([]byte, error) {
		return dst, fmt.Errorf("%w: default %T for %v schema %s", ErrInvalidValue, v, s.Type, s.Name)
	}
	switch s.Type {
	case INT8, INT16, INT32, INT64:
		i, ok := asInt64(v)
		if !ok {
			return bad()
		}
		return strconv.AppendInt(dst, i, 10), nil
	case FLOAT32:
		f, ok := v.(float32)
		if !ok {
			return bad()
		}
		return appendJavaFloat(dst, float64(f), 32), nil
	case FLOAT64:
		f, ok := v.(float64)
		if !ok {
			return bad()
		}
		return appendJavaFloat(dst, f, 64), nil
	case BOOLEAN:
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		return strconv.AppendBool(dst, b), nil
	case STRING:
		str, ok := v.(string)
		if !ok {
			return bad()
		}
		return appendJSONString(dst, str), nil
	case BYTES:
		b, ok := v.([]byte)
		if !ok {
			return bad()
		}
		// Avro JSON encodes bytes as ISO-8859-1 code points.
		dst = append(dst, '"')
		for _, c := range b {
			dst = appendJSONRune(dst, rune(c))
		}
		return append(dst, '"'), nil
	case ARRAY:
		a, ok := v.([]any)
		if !ok {
			return bad()
		}
		dst = append(dst, '[')
		for i, e := range a {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendDefaultJSON(dst, s.Elem, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case MAP:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendDefaultJSON(dst, s.Value, m[k]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case STRUCT:
		st, ok := v.(Struct)
		if !ok || len(st) != len(s.Fields) {
			return bad()
		}
		dst = append(dst, '{')
		for i, f := range s.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, f.Name)
			dst = append(dst, ':')
			var err error
			if dst, err = appendDefaultJSON(dst, f.Schema, st[i]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return bad()
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}

// appendJavaFloat formats f like Java's Float/Double.toString (shortest
// round-trip digits; plain notation for 1e-3 <= |f| < 1e7 with at least one
// fraction digit, otherwise d.dddE±n).
func appendJavaFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	abs := math.Abs(f)
	if f == 0 || (abs >= 1e-3 && abs < 1e7) {
		start := len(dst)
		dst = strconv.AppendFloat(dst, f, 'f', -1, bits)
		if !slices.Contains(dst[start:], '.') {
			dst = append(dst, ".0"...)
		}
		return dst
	}
	e := strconv.AppendFloat(nil, f, 'e', -1, bits) // e.g. 1.5e+10, 1e-05
	i := slices.Index(e, 'e')
	mant, exp := e[:i], e[i+1:]
	dst = append(dst, mant...)
	if !slices.Contains(mant, '.') {
		dst = append(dst, ".0"...)
	}
	dst = append(dst, 'E')
	if exp[0] == '-' {
		dst = append(dst, '-')
	}
	exp = exp[1:]
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	return append(dst, exp...)
}

// appendJSONString appends s as a JSON string escaped the way Jackson does:
// quote, backslash and control characters only; everything else raw UTF-8.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			if c < utf8.RuneSelf {
				dst = append(dst, c)
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
			continue
		}
		dst = appendJSONRune(dst, rune(c))
		i++
	}
	return append(dst, '"')
}

// appendJSONRune appends one rune with Jackson's escaping rules.
func appendJSONRune(dst []byte, r rune) []byte {
	const hex = "0123456789ABCDEF"
	switch r {
	case '"':
		return append(dst, `\"`...)
	case '\\':
		return append(dst, `\\`...)
	case '\b':
		return append(dst, `\b`...)
	case '\f':
		return append(dst, `\f`...)
	case '\n':
		return append(dst, `\n`...)
	case '\r':
		return append(dst, `\r`...)
	case '\t':
		return append(dst, `\t`...)
	}
	if r < 0x20 {
		return append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
	}
	return utf8.AppendRune(dst, r)
}
