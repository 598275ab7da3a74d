package mysqljson

import (
	"errors"
	"math"
	"testing"
)

// The expected texts were printed by JsonBinary.parseAsString of
// io.debezium:mysql-binlog-connector-java 0.40.6 (test/jsonbinary) for
// the same bytes; the integration test in capture/internal/binlog checks
// thousands more against the library itself.
func TestJavaDouble(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{1, "1.0"}, {-2.5, "-2.5"}, {100, "100.0"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"},
		{0.001, "0.001"}, {9999999, "9999999.0"}, {1234567.125, "1234567.125"}, {0.30000000000000004, "0.30000000000000004"},
		{1e7, "10000000"}, {-1e7, "-10000000"}, {1e10, "10000000000"}, {1e21, "1000000000000000000000"},
		{1e-4, "0.000100000000000000004792173602385929598312941379845142364501953125"},
		{0.0009999, "0.00099989999999999996417587855290776133188046514987945556640625"},
		{math.NaN(), "NaN"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"},
	} {
		if got := string(appendJavaDouble(nil, c.x)); got != c.want {
			t.Errorf("%v: %s, want %s", c.x, got, c.want)
		}
	}
}

func TestText(t *testing.T) {
	le := func(v int64) []byte {
		b := make([]byte, 8)
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		return b
	}
	packed := func(h, m, s, us int64) int64 { return (h<<12|m<<6|s)<<24 + us }
	opaque := func(typ byte, v int64) []byte { return append([]byte{typeOpaque, typ, 8}, le(v)...) }
	timeDoc := func(v int64) []byte { return opaque(11, v) }
	packedDatetime := func(y, mo, d, h, mi, s, us int64) int64 {
		return (((y*13+mo)<<5|d)<<17|h<<12|mi<<6|s)<<24 + us
	}
	for _, c := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"time", timeDoc(packed(12, 34, 56, 789)), `"12:34:56.000789"`},
		{"time fraction trimmed", timeDoc(packed(1, 2, 3, 120000)), `"01:02:03.12"`},
		{"negative time (the library prints \"01:0-1:0-1\")", timeDoc(-packed(0, 0, 1, 0)), `"-00:00:01"`},
		{"negative time with fraction", timeDoc(-packed(1, 2, 3, 500000)), `"-01:02:03.5"`},
		{"negative time over 24 hours", timeDoc(-packed(838, 59, 59, 0)), `"-838:59:59"`},
		{"date", opaque(10, packedDatetime(2024, 2, 29, 0, 0, 0, 0)), `"2024-02-29"`},
		{"datetime", opaque(12, packedDatetime(999, 12, 31, 23, 59, 58, 100)), `"0999-12-31 23:59:58.0001"`},
		{"timestamp", opaque(7, packedDatetime(2001, 1, 2, 3, 4, 5, 0)), `"2001-01-02 03:04:05"`},
		{"string escapes", []byte{typeString, 6, '"', '\\', '\n', 0x01, 0x1f, 0x7f}, `"\"\\\n\u0001\u001F` + "\x7f" + `"`},
		{"invalid UTF-8", []byte{typeString, 6, 0xff, 'x', 0xed, 0xa0, 0x80, 0xc3}, `"�x��"`},
		{"int16", []byte{typeInt16, 0x00, 0x80}, `-32768`},
		{"uint16", []byte{typeUint16, 0xff, 0xff}, `65535`},
		{"int32", []byte{typeInt32, 0xfe, 0xff, 0xff, 0xff}, `-2`},
		{"int64", []byte{typeInt64, 0, 0, 0, 0, 0, 0, 0, 0x80}, `-9223372036854775808`},
		{"uint64", []byte{typeUint64, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, `18446744073709551615`},
		{"uint32 unsigned (the library prints -1)", []byte{typeUint32, 0xff, 0xff, 0xff, 0xff}, `4294967295`},
		{"uint32 inlined in a large array (the library prints [,])", []byte{typeLargeArray, 1, 0, 0, 0, 13, 0, 0, 0, typeUint32, 0x00, 0x00, 0x00, 0x80}, `[2147483648]`},
		{"text already", []byte(`{"a": 1}`), `{"a": 1}`},
		{"small object", []byte{typeSmallObject, 1, 0, 12, 0, 11, 0, 1, 0, typeInt16, 0xd2, 0x04, 'a'}, `{"a":1234}`},
	} {
		got, err := Text(c.doc)
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		}
	}
	for _, bad := range [][]byte{{}, {0x0d}, {typeString, 0x85}, {typeOpaque, 20, 1, 0}, {typeLiteral, 7}, {typeSmallArray, 1, 0}, {typeInt16, 1}, {typeUint32, 1, 2, 3}, {typeInt64, 1, 2, 3, 4, 5, 6, 7}} {
		if _, err := Text(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("%x: %v, want ErrMalformed", bad, err)
		}
	}
}
