// Package debeziumtest cross-checks the debezium package's Avro encoder
// against an independent implementation (github.com/linkedin/goavro/v2).
// It is meant for tests only.
package debeziumtest

import (
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/binlake/binlake/schemas/debezium"
	"github.com/linkedin/goavro/v2"
)

// ErrMismatch reports a goavro value that does not fit the Connect schema.
var ErrMismatch = errors.New("debeziumtest: decoded value does not fit schema")

// Codec returns a goavro codec for the Avro rendering of s.
func Codec(s *debezium.Schema) (*goavro.Codec, error) {
	js, err := debezium.AvroSchema(s)
	if err != nil {
		return nil, fmt.Errorf("rendering schema: %w", err)
	}
	c, err := goavro.NewCodec(string(js))
	if err != nil {
		return nil, fmt.Errorf("parsing schema with goavro: %w", err)
	}
	return c, nil
}

// RoundTrip encodes v with debezium.AppendAvro, decodes the bytes with
// goavro and returns the decoded value converted back to the debezium value
// model, so that callers can compare it with v.
func RoundTrip(s *debezium.Schema, v any) (any, error) {
	c, err := Codec(s)
	if err != nil {
		return nil, err
	}
	buf, err := debezium.AppendAvro(nil, s, v)
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	native, rest, err := c.NativeFromBinary(buf)
	if err != nil {
		return nil, fmt.Errorf("decoding with goavro: %w", err)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMismatch, len(rest))
	}
	return FromNative(s, native)
}

// FromNative converts a goavro native value of the Avro rendering of s to
// the debezium value model.
func FromNative(s *debezium.Schema, v any) (any, error) {
	if s.Optional {
		if v == nil {
			return nil, nil
		}
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return nil, fmt.Errorf("%w: union value %T", ErrMismatch, v)
		}
		for _, inner := range m {
			v = inner
		}
	}
	bad := func() (any, error) {
		return nil, fmt.Errorf("%w: %T for %v %s", ErrMismatch, v, s.Type, s.Name)
	}
	switch s.Type {
	case debezium.INT8, debezium.INT16, debezium.INT32:
		var i int32
		switch x := v.(type) {
		case int32:
			i = x
		case time.Time: // logicalType date
			i = int32(x.Unix() / 86400)
		case time.Duration: // logicalType time-millis
			i = int32(x / time.Millisecond)
		default:
			return bad()
		}
		switch s.Type {
		case debezium.INT8:
			return int8(i), nil
		case debezium.INT16:
			return int16(i), nil
		}
		return i, nil
	case debezium.INT64:
		switch x := v.(type) {
		case int64:
			return x, nil
		case time.Time: // logicalType timestamp-millis
			return x.UnixMilli(), nil
		}
		return bad()
	case debezium.FLOAT32:
		if x, ok := v.(float32); ok {
			return x, nil
		}
		return bad()
	case debezium.FLOAT64:
		if x, ok := v.(float64); ok {
			return x, nil
		}
		return bad()
	case debezium.BOOLEAN:
		if x, ok := v.(bool); ok {
			return x, nil
		}
		return bad()
	case debezium.STRING:
		if x, ok := v.(string); ok {
			return x, nil
		}
		return bad()
	case debezium.BYTES:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case *big.Rat: // logicalType decimal
			scale := 0
			if p, ok := s.Param(debezium.DecimalScaleParam); ok {
				_, _ = fmt.Sscan(p, &scale)
			}
			r := new(big.Rat).Mul(x, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
			if !r.IsInt() {
				return bad()
			}
			return debezium.DecimalBytes(r.Num()), nil
		}
		return bad()
	case debezium.STRUCT:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(debezium.Struct, len(s.Fields))
		for i, f := range s.Fields {
			fv, err := FromNative(f.Schema, m[f.Name])
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			out[i] = fv
		}
		return out, nil
	case debezium.ARRAY:
		a, ok := v.([]any)
		if !ok {
			return bad()
		}
		out := make([]any, len(a))
		for i, e := range a {
			ev, err := FromNative(s.Elem, e)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case debezium.MAP:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			ev, err := FromNative(s.Value, e)
			if err != nil {
				return nil, err
			}
			out[k] = ev
		}
		return out, nil
	}
	return bad()
}
