package keyindex

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Type tags of the key encoding. Integers of every width (and dates,
// times, timestamps) share one tag so that a key column widened from int
// to long keeps its keys; strings and binaries of every Arrow layout share
// theirs.
const (
	tagNull byte = iota
	tagBool
	tagInt
	tagFloat
	tagString
	tagBytes
	tagDecimal
)

// EncodeKeys encodes the key of every row of cols (the key columns, in the
// table's identifier-field order) into a byte string: the same values give
// the same bytes whichever Arrow layout holds them, and different values
// give different bytes.
func EncodeKeys(cols []arrow.Array) ([][]byte, error) {
	if len(cols) == 0 {
		return nil, fmt.Errorf("keyindex: no key columns")
	}
	n := cols[0].Len()
	out := make([][]byte, n)
	var buf []byte
	for i := range n {
		buf = buf[:0]
		for _, c := range cols {
			var err error
			if buf, err = appendValue(buf, c, i); err != nil {
				return nil, err
			}
		}
		out[i] = append([]byte(nil), buf...)
	}
	return out, nil
}

func appendValue(dst []byte, arr arrow.Array, i int) ([]byte, error) {
	if arr.IsNull(i) {
		return append(dst, tagNull), nil
	}
	putInt := func(v int64) []byte { return binary.BigEndian.AppendUint64(append(dst, tagInt), uint64(v)) }
	putBytes := func(b []byte) []byte {
		return append(binary.AppendUvarint(append(dst, tagBytes), uint64(len(b))), b...)
	}
	putString := func(s string) []byte {
		return append(binary.AppendUvarint(append(dst, tagString), uint64(len(s))), s...)
	}
	switch a := arr.(type) {
	case *array.Boolean:
		b := byte(0)
		if a.Value(i) {
			b = 1
		}
		return append(dst, tagBool, b), nil
	case *array.Int8:
		return putInt(int64(a.Value(i))), nil
	case *array.Int16:
		return putInt(int64(a.Value(i))), nil
	case *array.Int32:
		return putInt(int64(a.Value(i))), nil
	case *array.Int64:
		return putInt(a.Value(i)), nil
	case *array.Date32:
		return putInt(int64(a.Value(i))), nil
	case *array.Time64:
		return putInt(int64(a.Value(i))), nil
	case *array.Timestamp:
		return putInt(int64(a.Value(i))), nil
	case *array.Float32:
		return binary.BigEndian.AppendUint64(append(dst, tagFloat), math.Float64bits(float64(a.Value(i)))), nil
	case *array.Float64:
		return binary.BigEndian.AppendUint64(append(dst, tagFloat), math.Float64bits(a.Value(i))), nil
	case *array.String:
		return putString(a.Value(i)), nil
	case *array.LargeString:
		return putString(a.Value(i)), nil
	case *array.StringView:
		return putString(a.Value(i)), nil
	case *array.Binary:
		return putBytes(a.Value(i)), nil
	case *array.LargeBinary:
		return putBytes(a.Value(i)), nil
	case *array.BinaryView:
		return putBytes(a.Value(i)), nil
	case *array.FixedSizeBinary:
		return putBytes(a.Value(i)), nil
	case *array.Decimal128:
		v := a.Value(i)
		dst = binary.BigEndian.AppendUint64(append(dst, tagDecimal), uint64(v.HighBits()))
		return binary.BigEndian.AppendUint64(dst, v.LowBits()), nil
	}
	return nil, fmt.Errorf("keyindex: key column of Arrow type %s is not supported", arr.DataType())
}

// AppendKey appends to dst the encoded key of row i of cols, as EncodeKeys
// encodes it, without allocating a slice per row.
func AppendKey(dst []byte, cols []arrow.Array, i int) ([]byte, error) {
	for _, c := range cols {
		var err error
		if dst, err = appendValue(dst, c, i); err != nil {
			return nil, err
		}
	}
	return dst, nil
}
