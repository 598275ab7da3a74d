package debezium

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"slices"
)

// AppendAvro appends the Avro binary encoding of v, a value of schema s, to
// dst and returns the extended buffer. The encoding matches the schema that
// [AvroSchema] renders for s: an optional schema is a union whose null
// branch is index 0, except for non-struct schemas with a default, where
// the value branch is index 0 and null is index 1.
//
// A nil value for a required schema with a default is encoded as the
// default; for a required schema without one it is an [ErrNullValue]. A nil
// value for an optional schema is always encoded as null, even when the
// schema has a default (the Confluent converter's
// ignore.default.for.nullables=true behaviour: a NULL column stays NULL).
func AppendAvro(dst []byte, s *Schema, v any) ([]byte, error) {
	if s.Optional {
		valueFirst := s.Default != nil && s.Type != STRUCT
		if v == nil {
			if valueFirst {
				return append(dst, 2), nil // union index 1
			}
			return append(dst, 0), nil // union index 0
		}
		if valueFirst {
			dst = append(dst, 0)
		} else {
			dst = append(dst, 2)
		}
	} else if v == nil {
		if s.Default == nil {
			return dst, fmt.Errorf("%w: %s", ErrNullValue, describe(s))
		}
		v = s.Default
	}
	return appendValue(dst, s, v)
}

func describe(s *Schema) string {
	if s.Name != "" {
		return s.Type.String() + " " + s.Name
	}
	return s.Type.String()
}

func mismatch(s *Schema, v any) error {
	return fmt.Errorf("%w: %T for %s", ErrInvalidValue, v, describe(s))
}

func appendValue(dst []byte, s *Schema, v any) ([]byte, error) {
	switch s.Type {
	case INT8:
		switch x := v.(type) {
		case int8:
			return AppendLong(dst, int64(x)), nil
		case int:
			if x >= math.MinInt8 && x <= math.MaxInt8 {
				return AppendLong(dst, int64(x)), nil
			}
		}
	case INT16:
		switch x := v.(type) {
		case int16:
			return AppendLong(dst, int64(x)), nil
		case int:
			if x >= math.MinInt16 && x <= math.MaxInt16 {
				return AppendLong(dst, int64(x)), nil
			}
		}
	case INT32:
		switch x := v.(type) {
		case int32:
			return AppendLong(dst, int64(x)), nil
		case int:
			if x >= math.MinInt32 && x <= math.MaxInt32 {
				return AppendLong(dst, int64(x)), nil
			}
		}
	case INT64:
		switch x := v.(type) {
		case int64:
			return AppendLong(dst, x), nil
		case int:
			return AppendLong(dst, int64(x)), nil
		}
	case FLOAT32:
		if x, ok := v.(float32); ok {
			return binary.LittleEndian.AppendUint32(dst, math.Float32bits(x)), nil
		}
	case FLOAT64:
		if x, ok := v.(float64); ok {
			return binary.LittleEndian.AppendUint64(dst, math.Float64bits(x)), nil
		}
	case BOOLEAN:
		if x, ok := v.(bool); ok {
			if x {
				return append(dst, 1), nil
			}
			return append(dst, 0), nil
		}
	case STRING:
		if x, ok := v.(string); ok {
			dst = AppendLong(dst, int64(len(x)))
			return append(dst, x...), nil
		}
	case BYTES:
		if x, ok := v.([]byte); ok {
			dst = AppendLong(dst, int64(len(x)))
			return append(dst, x...), nil
		}
	case STRUCT:
		if x, ok := v.(Struct); ok {
			return appendStruct(dst, s, x)
		}
	case ARRAY:
		if x, ok := v.([]any); ok {
			if len(x) > 0 {
				dst = AppendLong(dst, int64(len(x)))
				for i, e := range x {
					var err error
					if dst, err = AppendAvro(dst, s.Elem, e); err != nil {
						return dst, fmt.Errorf("encoding array element %d: %w", i, err)
					}
				}
			}
			return append(dst, 0), nil
		}
	case MAP:
		if x, ok := v.(map[string]any); ok {
			return appendMap(dst, s, x)
		}
	default:
		return dst, fmt.Errorf("%w: unknown type %v", ErrInvalidSchema, s.Type)
	}
	return dst, mismatch(s, v)
}

func appendStruct(dst []byte, s *Schema, x Struct) ([]byte, error) {
	if len(x) != len(s.Fields) {
		return dst, fmt.Errorf("%w: struct %s has %d values for %d fields",
			ErrInvalidValue, s.Name, len(x), len(s.Fields))
	}
	var err error
	for i := range s.Fields {
		if dst, err = AppendAvro(dst, s.Fields[i].Schema, x[i]); err != nil {
			return dst, fmt.Errorf("encoding field %s: %w", s.Fields[i].Name, err)
		}
	}
	return dst, nil
}

func appendMap(dst []byte, s *Schema, m map[string]any) ([]byte, error) {
	if len(m) == 0 {
		return append(dst, 0), nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic bytes for equal maps
	stringKeys := s.Key.Type == STRING && !s.Key.Optional
	dst = AppendLong(dst, int64(len(m)))
	var err error
	for _, k := range keys {
		if stringKeys {
			dst = AppendLong(dst, int64(len(k)))
			dst = append(dst, k...)
		} else if dst, err = AppendAvro(dst, s.Key, k); err != nil {
			return dst, fmt.Errorf("encoding map key: %w", err)
		}
		if dst, err = AppendAvro(dst, s.Value, m[k]); err != nil {
			return dst, fmt.Errorf("encoding map value %q: %w", k, err)
		}
	}
	return append(dst, 0), nil
}

// AppendLong appends v as an Avro long (zig-zag varint).
func AppendLong(dst []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// DecimalBytes returns the Connect Decimal representation of an unscaled
// value: the minimal big-endian two's-complement bytes (Java's
// BigInteger.toByteArray). Zero is one 0x00 byte.
func DecimalBytes(unscaled *big.Int) []byte {
	switch unscaled.Sign() {
	case 0:
		return []byte{0}
	case 1:
		b := unscaled.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// Negative: two's complement of |v| over n bytes, where n is the
	// smallest width whose range includes v.
	abs := new(big.Int).Neg(unscaled)
	n := (abs.BitLen() + 8) / 8 // room for the sign bit
	mod := new(big.Int).Lsh(big.NewInt(1), uint(n*8))
	b := new(big.Int).Sub(mod, abs).FillBytes(make([]byte, n))
	// Drop a redundant leading 0xFF (e.g. -128 fits in one byte).
	for len(b) > 1 && b[0] == 0xFF && b[1]&0x80 != 0 {
		b = b[1:]
	}
	return b
}

// DecimalFromBytes is the inverse of [DecimalBytes].
func DecimalFromBytes(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return v
}

func appendInt(dst []byte, v int64) []byte {
	if v < 0 {
		dst = append(dst, '-')
		return appendUint(dst, uint64(-v))
	}
	return appendUint(dst, uint64(v))
}

func appendUint(dst []byte, v uint64) []byte {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(dst, b[i:]...)
}

// AppendFrame appends a Confluent wire-format frame to dst: magic byte 0x00,
// the schema id as a big-endian uint32, then the Avro payload.
func AppendFrame(dst []byte, schemaID uint32, avro []byte) []byte {
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, schemaID)
	return append(dst, avro...)
}

// ParseFrame splits a Confluent wire-format frame into schema id and Avro
// payload. The payload aliases b. It returns [ErrShortFrame] when b is
// shorter than the 5-byte header and [ErrUnknownMagic] when the first byte
// is not 0x00 (e.g. 0x01 GUID frames or 0x03 AWS Glue frames).
func ParseFrame(b []byte) (id uint32, payload []byte, err error) {
	if len(b) < 5 {
		return 0, nil, fmt.Errorf("%w: got %d bytes", ErrShortFrame, len(b))
	}
	if b[0] != 0 {
		return 0, nil, fmt.Errorf("%w: 0x%02x", ErrUnknownMagic, b[0])
	}
	return binary.BigEndian.Uint32(b[1:5]), b[5:], nil
}
