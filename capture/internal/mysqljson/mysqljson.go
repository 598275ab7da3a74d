// Package mysqljson renders MySQL 8 binary JSON (the JSON column format of
// the binlog) as the exact text Debezium's MySQL connector emits for it.
//
// Debezium 3.5.0.Final converts a binlog JSON value with
// JsonBinary.parseAsString of io.debezium:mysql-binlog-connector-java
// 0.40.6. Its text differs from MySQL's own (JSON_EXTRACT, mysqlbinlog):
// no spaces, doubles through java.lang.Double.toString, DECIMAL as a plain
// number, dates and times in the library's own layout, other opaque values
// as base64. This package produces that text from the documented binary
// format (MySQL sql-common/json_binary.h) and the library's observable
// output; test/jsonbinary runs the Java library itself and the
// integration test in capture/internal/binlog compares the two byte for
// byte. The rules:
//
//   - Objects keep the stored key order (MySQL sorts keys by length, then
//     bytewise), arrays their order; separators "," and ":" with no spaces.
//   - Integers (int16 … uint64) print in decimal. The library has two bugs
//     here that capture does not copy (allowed differences, listed in the
//     cross-check test): it reads a uint32 into a Java int (4294967295
//     prints "-1") and prints nothing for a uint32 inlined in a large (over
//     64 KiB) container ("[1,,2]", not JSON). MySQL writes uint32 only for
//     unsigned values put into JSON from SQL (JSON_OBJECT('k', unsigned_col));
//     parsed JSON text uses int16, int32, int64 and uint64 only.
//   - A double prints as Java's Double.toString when that has no exponent
//     (1e-3 ≤ |x| < 1e7, zero: "1.0", "0.001", "-0.0", "1234567.5");
//     otherwise as the exact decimal expansion of the binary value
//     (BigDecimal(double).toPlainString: 1e10 → "10000000000",
//     1e-4 → "0.000100000000000000004792…", no exponent ever).
//   - A string is decoded as UTF-8 (malformed bytes become U+FFFD as
//     Java's decoder does) and escaped: '"', '\\', \b \t \n \f \r, other
//     controls below 0x20 as \u00XX with upper-case hex; nothing else.
//   - Opaque DECIMAL/NEWDECIMAL: the number with its scale ("0.50", "-5"),
//     no quotes, no sign on zero. DATE "yyyy-mm-dd", DATETIME/TIMESTAMP
//     "yyyy-mm-dd hh:mm:ss[.ffffff]" and TIME "[-]hh:mm:ss[.ffffff]" in
//     quotes, fraction without trailing zeros; the fields are taken from the
//     packed value with Java's 32-bit int arithmetic, so out-of-range
//     values print as the library prints them. A negative TIME is the one
//     exception: the library prints -00:00:01 as "01:0-1:0-1"; capture
//     prints "-00:00:01" (an allowed difference). Any other opaque type: standard base64
//     of its bytes, in quotes.
//   - A document whose first byte is above 0x0f is taken to be JSON text
//     already and returned as it is (decoded as UTF-8).
package mysqljson

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrMalformed reports a document that is not valid binary JSON.
var ErrMalformed = errors.New("mysqljson: malformed binary JSON")

// Value types of json_binary.h.
const (
	typeSmallObject = 0x00
	typeLargeObject = 0x01
	typeSmallArray  = 0x02
	typeLargeArray  = 0x03
	typeLiteral     = 0x04
	typeInt16       = 0x05
	typeUint16      = 0x06
	typeInt32       = 0x07
	typeUint32      = 0x08
	typeInt64       = 0x09
	typeUint64      = 0x0a
	typeDouble      = 0x0b
	typeString      = 0x0c
	typeOpaque      = 0x0f
)

// maxDepth bounds nesting; MySQL allows 100 levels.
const maxDepth = 1000

// Text renders one binary JSON document (a JSON column value without its
// length prefix) as Debezium's text. An empty document is an error: callers
// decide what an empty value means (Debezium: null, or "{}" when NOT NULL).
func Text(doc []byte) (string, error) {
	b, err := AppendText(nil, doc)
	return string(b), err
}

// AppendText appends the text of doc to dst.
func AppendText(dst, doc []byte) ([]byte, error) {
	if len(doc) == 0 {
		return dst, fmt.Errorf("%w: empty document", ErrMalformed)
	}
	if int8(doc[0]) > 0x0f { // the library's test for a document that is text already
		return appendUTF8(dst, doc, false), nil
	}
	return appendValue(dst, doc[0], doc[1:], 0)
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// appendValue renders a value of type typ whose bytes start at b[0] (b
// runs to the end of the enclosing container).
func appendValue(dst []byte, typ byte, b []byte, depth int) ([]byte, error) {
	switch typ {
	case typeSmallObject, typeLargeObject, typeSmallArray, typeLargeArray:
		if depth >= maxDepth {
			return dst, malformed("nesting deeper than %d", maxDepth)
		}
		return appendContainer(dst, b, typ == typeSmallObject || typeLargeObject == typ, typ == typeLargeObject || typ == typeLargeArray, depth+1)
	case typeLiteral:
		if len(b) < 1 {
			return dst, malformed("truncated literal")
		}
		return appendLiteral(dst, b[0])
	case typeInt16, typeUint16, typeInt32, typeUint32, typeInt64, typeUint64:
		return appendInteger(dst, typ, b)
	case typeDouble:
		if len(b) < 8 {
			return dst, malformed("truncated double")
		}
		return appendJavaDouble(dst, math.Float64frombits(binary.LittleEndian.Uint64(b))), nil
	case typeString:
		n, w, err := varLen(b)
		if err != nil {
			return dst, err
		}
		if len(b)-w < n {
			return dst, malformed("string of %d bytes, %d left", n, len(b)-w)
		}
		dst = appendUTF8(append(dst, '"'), b[w:w+n], true)
		return append(dst, '"'), nil
	case typeOpaque:
		return appendOpaque(dst, b)
	}
	return dst, malformed("unknown value type 0x%02x", typ)
}

// appendInteger renders a little-endian integer of type typ in decimal.
// A uint32 prints unsigned, as stored (the library prints values from 2^31
// negative).
func appendInteger(dst []byte, typ byte, b []byte) ([]byte, error) {
	width, signed := 8, typ == typeInt64
	switch typ {
	case typeInt16, typeUint16:
		width, signed = 2, typ == typeInt16
	case typeInt32, typeUint32:
		width, signed = 4, typ == typeInt32
	}
	if len(b) < width {
		return dst, malformed("truncated %d-byte integer", width)
	}
	var u uint64
	for i := width - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	if signed {
		shift := 64 - 8*width // sign-extend
		return strconv.AppendInt(dst, int64(u<<shift)>>shift, 10), nil
	}
	return strconv.AppendUint(dst, u, 10), nil
}

func appendLiteral(dst []byte, v byte) ([]byte, error) {
	switch v {
	case 0:
		return append(dst, "null"...), nil
	case 1:
		return append(dst, "true"...), nil
	case 2:
		return append(dst, "false"...), nil
	}
	return dst, malformed("unknown literal 0x%02x", v)
}

// varLen reads a string or opaque length: 7 bits a byte, low bits first,
// the high bit set on every byte but the last (at most 5 bytes).
func varLen(b []byte) (n, width int, err error) {
	var v uint64
	for i := 0; i < 5 && i < len(b); i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if v > math.MaxInt32 {
				return 0, 0, malformed("length %d", v)
			}
			return int(v), i + 1, nil
		}
	}
	return 0, 0, malformed("bad variable-length integer")
}

// appendContainer renders an object or array: element count and byte size
// (2-byte fields in the small format, 4-byte in the large), key entries
// (offset, 2-byte length) for objects, value entries (type byte and an
// offset, or the value itself when it fits: literals, int16, uint16, and
// int32/uint32 in the large format), then keys and values. Offsets count
// from the container's first byte.
func appendContainer(dst []byte, b []byte, object, large bool, depth int) ([]byte, error) {
	osz := 2
	if large {
		osz = 4
	}
	field := func(p []byte) int {
		if large {
			return int(binary.LittleEndian.Uint32(p))
		}
		return int(binary.LittleEndian.Uint16(p))
	}
	if len(b) < 2*osz {
		return dst, malformed("truncated container header")
	}
	count, size := field(b), field(b[osz:])
	if size > len(b) || size < 2*osz {
		return dst, malformed("container of %d bytes, %d available", size, len(b))
	}
	b = b[:size]
	keyEntry := 0
	if object {
		keyEntry = osz + 2
	}
	valueEntry := 1 + osz
	header := 2*osz + count*(keyEntry+valueEntry)
	if header > size {
		return dst, malformed("%d elements in a container of %d bytes", count, size)
	}
	open, end := byte('['), byte(']')
	if object {
		open, end = '{', '}'
	}
	dst = append(dst, open)
	for i := range count {
		if i > 0 {
			dst = append(dst, ',')
		}
		if object {
			k := b[2*osz+i*keyEntry:]
			off, n := field(k), int(binary.LittleEndian.Uint16(k[osz:]))
			if off < 0 || off > size || n > size-off {
				return dst, malformed("key %d out of bounds", i)
			}
			dst = appendUTF8(append(dst, '"'), b[off:off+n], true)
			dst = append(dst, '"', ':')
		}
		e := b[2*osz+count*keyEntry+i*valueEntry:]
		typ := e[0]
		var err error
		switch {
		case typ == typeLiteral:
			dst, err = appendLiteral(dst, e[1])
		case typ == typeInt16, typ == typeUint16, large && (typ == typeInt32 || typ == typeUint32):
			// Inlined in the entry. (The library prints nothing for an
			// inlined uint32: "[1,,2]"; capture prints the value.)
			dst, err = appendValue(dst, typ, e[1:1+osz], depth)
		default:
			off := field(e[1:])
			if off < header || off >= size {
				return dst, malformed("value %d at offset %d of a %d-byte container", i, off, size)
			}
			dst, err = appendValue(dst, typ, b[off:], depth)
		}
		if err != nil {
			return dst, err
		}
	}
	return append(dst, end), nil
}

// appendUTF8 decodes s as UTF-8 the way Java's String(bytes, UTF_8) does
// (each maximal ill-formed part becomes one U+FFFD, except that a
// three-byte sequence led by 0xED takes any continuation byte second and a
// complete encoded surrogate becomes a single U+FFFD) and, with escape,
// escapes it for the inside of a JSON string.
func appendUTF8(dst, s []byte, escape bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if escape {
				dst = appendEscapedASCII(dst, c)
			} else {
				dst = append(dst, c)
			}
			i++
			continue
		}
		n := validPrefix(s[i:])
		switch {
		case n < 0: // a complete but rejected sequence (surrogate)
			dst = append(dst, "\uFFFD"...)
			i += -n
		case n > 0 && fullLen(c) == n:
			dst = append(dst, s[i:i+n]...)
			i += n
		default:
			dst = append(dst, "\uFFFD"...)
			i += max(n, 1)
		}
	}
	return dst
}

func appendEscapedASCII(dst []byte, c byte) []byte {
	const hex = "0123456789ABCDEF"
	switch c {
	case '"':
		return append(dst, '\\', '"')
	case '\\':
		return append(dst, '\\', '\\')
	case '\b':
		return append(dst, '\\', 'b')
	case '\t':
		return append(dst, '\\', 't')
	case '\n':
		return append(dst, '\\', 'n')
	case '\f':
		return append(dst, '\\', 'f')
	case '\r':
		return append(dst, '\\', 'r')
	}
	if c < 0x20 {
		return append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
	}
	return append(dst, c)
}

// fullLen is the length of a sequence led by c (0: not a lead byte).
func fullLen(c byte) int {
	switch {
	case c >= 0xc2 && c <= 0xdf:
		return 2
	case c >= 0xe0 && c <= 0xef:
		return 3
	case c >= 0xf0 && c <= 0xf4:
		return 4
	}
	return 0
}

// validPrefix returns how many bytes at the start of s belong to one
// sequence: its full length when well formed, the length of the part
// that could still start a sequence when not (0 for a bad lead byte), or
// minus the full length of a complete encoded surrogate.
func validPrefix(s []byte) int {
	c := s[0]
	want := fullLen(c)
	if want == 0 {
		return 0
	}
	lo, hi := byte(0x80), byte(0xbf) // range of the second byte
	switch c {
	case 0xe0:
		lo = 0xa0
	case 0xf0:
		lo = 0x90
	case 0xf4:
		hi = 0x8f
	}
	n := 1
	for ; n < want && n < len(s); n++ {
		b := s[n]
		if n == 1 && (b < lo || b > hi) || n > 1 && (b < 0x80 || b > 0xbf) {
			break
		}
	}
	if n == want && c == 0xed && s[1] >= 0xa0 {
		return -3
	}
	return n
}

// appendOpaque renders a MySQL value stored in JSON: its column type,
// a variable length and the bytes.
func appendOpaque(dst, b []byte) ([]byte, error) {
	if len(b) < 1 {
		return dst, malformed("truncated opaque value")
	}
	typ := b[0]
	n, w, err := varLen(b[1:])
	if err != nil {
		return dst, err
	}
	data := b[1+w:]
	if !knownColumnType(typ) {
		return dst, malformed("unknown column type %d in an opaque value", typ)
	}
	switch typ {
	case 0, 246: // DECIMAL, NEWDECIMAL
		if len(data) < n || n < 2 {
			return dst, malformed("truncated opaque decimal")
		}
		return appendDecimal(dst, int(data[0]), int(data[1]), data[2:n])
	case 10, 11, 19, 12, 18, 7, 17: // DATE, TIME, TIME2, DATETIME, DATETIME2, TIMESTAMP, TIMESTAMP2
		if len(data) < 8 {
			return dst, malformed("truncated opaque temporal value")
		}
		v := int64(binary.LittleEndian.Uint64(data))
		if typ == 11 || typ == 19 {
			return appendJavaTime(dst, v), nil
		}
		return appendJavaDatetime(dst, v, typ != 10), nil
	}
	if len(data) < n {
		return dst, malformed("opaque value of %d bytes, %d left", n, len(data))
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, data[:n])
	return append(dst, '"'), nil
}

// knownColumnType says whether the library knows a column type code
// (it refuses opaque values of other codes).
func knownColumnType(t byte) bool { return t <= 19 || t == 242 || t >= 245 }

// appendDecimal decodes MySQL's decimal2bin layout (groups of 9 digits
// in 4 big-endian bytes, leading and trailing partial groups in 1-4
// bytes, the sign in the top bit, negative values bitwise inverted) and
// prints the number with exactly scale fraction digits.
func appendDecimal(dst []byte, precision, scale int, b []byte) ([]byte, error) {
	if scale > precision || precision == 0 {
		return dst, malformed("decimal(%d,%d)", precision, scale)
	}
	dig2bytes := [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}
	intg := precision - scale
	size := intg/9*4 + dig2bytes[intg%9] + scale/9*4 + dig2bytes[scale%9]
	if len(b) < size {
		return dst, malformed("decimal(%d,%d) in %d bytes", precision, scale, len(b))
	}
	buf := make([]byte, size)
	copy(buf, b)
	neg := buf[0]&0x80 == 0
	buf[0] ^= 0x80
	if neg {
		for i := range buf {
			buf[i] = ^buf[i]
		}
	}
	var digits strings.Builder
	pos := 0
	group := func(ndig int) {
		nb := dig2bytes[ndig]
		if ndig == 9 {
			nb = 4
		}
		var v uint64
		for _, x := range buf[pos : pos+nb] {
			v = v<<8 | uint64(x)
		}
		pos += nb
		s := strconv.FormatUint(v, 10)
		for len(s) < ndig {
			s = "0" + s
		}
		digits.WriteString(s)
	}
	if lead := intg % 9; lead > 0 {
		group(lead)
	}
	for range intg / 9 {
		group(9)
	}
	for range scale / 9 {
		group(9)
	}
	if rest := scale % 9; rest > 0 {
		group(rest)
	}
	all := digits.String()
	ip, fp := strings.TrimLeft(all[:len(all)-scale], "0"), all[len(all)-scale:]
	if ip == "" {
		ip = "0"
	}
	if neg && strings.Trim(ip+fp, "0") != "" {
		dst = append(dst, '-')
	}
	dst = append(dst, ip...)
	if scale > 0 {
		dst = append(append(dst, '.'), fp...)
	}
	return dst, nil
}

// appendJavaDouble appends x as the library prints a JSON double:
// Double.toString when it has no exponent, else the exact decimal value.
func appendJavaDouble(dst []byte, x float64) []byte {
	switch {
	case math.IsNaN(x):
		return append(dst, "NaN"...)
	case math.IsInf(x, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(x, -1):
		return append(dst, "-Infinity"...)
	case x == 0:
		if math.Signbit(x) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if a := math.Abs(x); a >= 1e-3 && a < 1e7 {
		// Java's Double.toString: the shortest digits that round-trip,
		// plain notation in this range, at least one fraction digit.
		start := len(dst)
		dst = strconv.AppendFloat(dst, x, 'f', -1, 64)
		if !strings.Contains(string(dst[start:]), ".") {
			dst = append(dst, '.', '0')
		}
		return dst
	}
	// BigDecimal(double).toPlainString(): every digit of the binary
	// value (a double has at most 1074 fraction digits).
	s := new(big.Float).SetFloat64(x).Text('f', 1074)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	return append(dst, s...)
}

// The temporal layouts: the packed int64 of MySQL's my_time.h
// (TIME_to_longlong_*_packed), split into fields with Java's 32-bit int
// truncation and remainder, as the library does; see the package comment.

// appendJavaDatetime renders a packed DATE (withTime false), DATETIME or
// TIMESTAMP.
func appendJavaDatetime(dst []byte, v int64, withTime bool) []byte {
	x := v >> 24
	ym := int32(x>>22) % 131072
	dst = appendDate(append(dst, '"'), ym/13, ym%13, int32(x>>17)%32)
	if withTime {
		dst = appendTime(append(dst, ' '), int32(x>>12)%32, int32(x>>6)%64, int32(x%64), int32(v%16777216))
	}
	return append(dst, '"')
}

func appendJavaTime(dst []byte, v int64) []byte {
	dst = append(dst, '"')
	if v < 0 { // a negative TIME is the negated packed value of its magnitude
		dst = append(dst, '-')
		v = -v
	}
	x := v >> 24
	dst = appendTime(dst, int32(x>>12)%1024, int32(x>>6)%64, int32(x)%64, int32(v%16777216))
	return append(dst, '"')
}

func appendDate(dst []byte, y, m, d int32) []byte {
	if y < 0 {
		dst = append(dst, '-')
		y = -y
	}
	switch {
	case y < 10:
		dst = append(dst, "000"...)
	case y < 100:
		dst = append(dst, "00"...)
	case y < 1000:
		dst = append(dst, '0')
	}
	dst = strconv.AppendInt(dst, int64(y), 10)
	dst = appendTwo(append(dst, '-'), m)
	return appendTwo(append(dst, '-'), d)
}

func appendTime(dst []byte, h, m, s, frac int32) []byte {
	dst = appendTwo(dst, h)
	dst = appendTwo(append(dst, ':'), m)
	dst = appendTwo(append(dst, ':'), s)
	if frac == 0 {
		return dst
	}
	dst = append(dst, '.')
	switch {
	case frac < 10:
		dst = append(dst, "00000"...)
	case frac < 100:
		dst = append(dst, "0000"...)
	case frac < 1000:
		dst = append(dst, "000"...)
	case frac < 10000:
		dst = append(dst, "00"...)
	case frac < 100000:
		dst = append(dst, '0')
	}
	for range 6 { // up to six trailing zeros dropped
		if frac%10 == 0 {
			frac /= 10
		}
	}
	return strconv.AppendInt(dst, int64(frac), 10)
}

// appendTwo pads to two digits with a leading zero below 10 (also for
// negative values, which the library prints as "0-5").
func appendTwo(dst []byte, n int32) []byte {
	if n < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(n), 10)
}
