package mysqltype

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/binlake/binlake/schemas/debezium"
)

// ---- integers ----

// tinyToInt16 carries a signed TINYINT in an INT16, as Debezium does.
func tinyToInt16(i int64) (any, bool) { return int16(i), i >= math.MinInt8 && i <= math.MaxInt8 }
func toInt16(i int64) (any, bool)     { return int16(i), i >= math.MinInt16 && i <= math.MaxInt16 }
func toInt32(i int64) (any, bool)     { return int32(i), i >= math.MinInt32 && i <= math.MaxInt32 }
func toInt64(i int64) (any, bool)     { return i, true }

// signedInput extracts an integer. For unsigned columns of width bits < 64,
// a negative signed Go value is reinterpreted as the unsigned value with the
// same bits: go-mysql returns signed types when the binlog carries no
// signedness metadata (binlog_row_metadata=MINIMAL).
func signedInput(v any, bits int, unsigned bool) (int64, error) {
	var i int64
	switch x := v.(type) {
	case int8:
		i = int64(x)
	case int16:
		i = int64(x)
	case int32:
		i = int64(x)
	case int64:
		i = x
	case int:
		i = int64(x)
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return 0, badValue(v, "integer")
		}
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, badValue(v, "integer")
		}
		return int64(x), nil
	case string:
		return parseIntText(x)
	case []byte:
		// Every integer of a snapshot row: parsed without copying the
		// text (ParseInt keeps no reference to it), copied for the error.
		// Returned as parseIntText's result is: text is never masked.
		if n, err := strconv.ParseInt(strings.TrimSpace(string(x)), 10, 64); err == nil {
			return n, nil
		}
		return parseIntText(string(x))
	default:
		return 0, badType(v, "integer")
	}
	if unsigned && i < 0 && bits < 64 {
		i &= 1<<bits - 1
	}
	return i, nil
}

func parseIntText(s string) (int64, error) {
	i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an integer", ErrInvalidValue, s)
	}
	return i, nil
}

func intConv(bits int, unsigned bool, narrow func(int64) (any, bool)) func(any) (any, error) {
	return func(v any) (any, error) {
		i, err := signedInput(v, bits, unsigned)
		if err != nil {
			return nil, err
		}
		out, ok := narrow(i)
		if !ok {
			return nil, fmt.Errorf("%w: %d out of range", ErrInvalidValue, i)
		}
		return out, nil
	}
}

// unsignedInput extracts a BIGINT UNSIGNED value; a signed int64 is
// reinterpreted bit for bit (go-mysql without signedness metadata).
func unsignedInput(v any) (uint64, error) {
	switch x := v.(type) {
	case uint64:
		return x, nil
	case int64:
		return uint64(x), nil
	case uint8, uint16, uint32, uint, int8, int16, int32, int:
		i, err := signedInput(v, 64, false)
		if err != nil || i < 0 {
			return 0, badValue(v, "BIGINT UNSIGNED")
		}
		return uint64(i), nil
	case string:
		return parseUintText(x)
	case []byte:
		// As signedInput: no copy of the text unless it is invalid.
		if u, err := strconv.ParseUint(strings.TrimSpace(string(x)), 10, 64); err == nil {
			return u, nil
		}
		return parseUintText(string(x))
	}
	return 0, badType(v, "BIGINT UNSIGNED")
}

func parseUintText(s string) (uint64, error) {
	u, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an unsigned integer", ErrInvalidValue, s)
	}
	return u, nil
}

// convUint64Long is the "long" mode: the unsigned value's bits as a signed
// long (values above 2^63-1 become negative), as Java's long conversion of
// the binlog value gives.
func convUint64Long(v any) (any, error) {
	u, err := unsignedInput(v)
	if err != nil {
		return nil, err
	}
	return int64(u), nil
}

func convUint64Decimal(v any) (any, error) {
	u, err := unsignedInput(v)
	if err != nil {
		return nil, err
	}
	if u <= math.MaxInt64 {
		return int64Bytes(int64(u)), nil
	}
	return debezium.DecimalBytes(new(big.Int).SetUint64(u)), nil
}

// int64Bytes is debezium.DecimalBytes for an int64 without big.Int.
func int64Bytes(v int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	i := 0
	for i < 7 && ((b[i] == 0 && b[i+1]&0x80 == 0) || (b[i] == 0xff && b[i+1]&0x80 != 0)) {
		i++
	}
	return append([]byte(nil), b[i:]...)
}

// ---- booleans and bits ----

func convBool(v any) (any, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	}
	i, err := signedInput(v, 64, false)
	if err != nil {
		return nil, err
	}
	return i != 0, nil
}

func convBitBool(v any) (any, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case []byte:
		return anyNonZero(x), nil
	case string:
		return anyNonZero([]byte(x)), nil
	case uint64:
		return x != 0, nil
	}
	i, err := signedInput(v, 64, false)
	if err != nil {
		return nil, err
	}
	return i != 0, nil
}

func anyNonZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return true
		}
	}
	return false
}

// bitsConv returns io.debezium.data.Bits values: n little-endian bytes. The
// binlog gives the bits as an integer; a snapshot gives big-endian bytes.
func bitsConv(n int) func(any) (any, error) {
	return func(v any) (any, error) {
		out := make([]byte, n)
		var be []byte
		switch x := v.(type) {
		case []byte:
			be = x
		case string:
			be = []byte(x)
		default:
			u, err := unsignedInput(v)
			if err != nil {
				return nil, err
			}
			for i := 0; i < n && i < 8; i++ {
				out[i] = byte(u >> (8 * i))
			}
			if n < 8 && u>>(8*n) != 0 {
				return nil, badValue(v, fmt.Sprintf("BIT(%d bytes)", n))
			}
			return out, nil
		}
		for i := range be {
			j := len(be) - 1 - i
			if i >= n {
				if be[j] != 0 {
					return nil, badValue(be, fmt.Sprintf("BIT(%d bytes)", n))
				}
				continue
			}
			out[i] = be[j]
		}
		return out, nil
	}
}

// ---- floating point ----

func convFloat32(v any) (any, error) {
	switch x := v.(type) {
	case float32:
		return x, nil
	case float64:
		return float32(x), nil
	case string:
		return parseFloatText(x, 32)
	case []byte:
		return parseFloatText(string(x), 32)
	}
	return nil, badType(v, "FLOAT")
}

func convFloat64(v any) (any, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil // Java's float-to-double widening
	case string:
		return parseFloatText(x, 64)
	case []byte:
		return parseFloatText(string(x), 64)
	case fmt.Stringer: // shopspring decimal.Decimal (go-mysql UseDecimal)
		return parseFloatText(x.String(), 64)
	}
	return nil, badType(v, "DOUBLE")
}

func parseFloatText(s string, bits int) (any, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), bits)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not a number", ErrInvalidValue, s)
	}
	if bits == 32 {
		return float32(f), nil
	}
	return f, nil
}

// ---- DECIMAL ----

// decimalText returns the plain decimal text of a DECIMAL input.
func decimalText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	case fmt.Stringer: // shopspring decimal.Decimal (go-mysql UseDecimal)
		return x.String(), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case int64, int32, int, uint64:
		return fmt.Sprint(x), nil
	}
	return "", badType(v, "DECIMAL")
}

// parsedDecimal is a decimal rescaled to a column scale: the unscaled digits
// (no sign, no leading zeros) and the sign.
type parsedDecimal struct {
	neg    bool
	digits string // unscaled digits, "0" for zero
	scale  int
}

// parseDecimal rescales text to scale digits; it rejects text with more
// non-zero fraction digits than the scale (MySQL never produces those).
func parseDecimal(s string, scale int) (parsedDecimal, error) {
	orig := s
	s = strings.TrimSpace(s)
	d := parsedDecimal{scale: scale}
	if s != "" && (s[0] == '-' || s[0] == '+') {
		d.neg = s[0] == '-'
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return d, fmt.Errorf("%w: %q is not a decimal", ErrInvalidValue, orig)
	}
	if len(frac) > scale {
		if strings.Trim(frac[scale:], "0") != "" {
			return d, fmt.Errorf("%w: %q has more than %d fraction digits", ErrInvalidValue, orig, scale)
		}
		frac = frac[:scale]
	}
	var b strings.Builder
	b.Grow(len(intPart) + scale)
	b.WriteString(intPart)
	b.WriteString(frac)
	for i := len(frac); i < scale; i++ {
		b.WriteByte('0')
	}
	d.digits = strings.TrimLeft(b.String(), "0")
	if d.digits == "" {
		d.digits = "0"
		d.neg = false
	}
	return d, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (d parsedDecimal) bytes() []byte {
	if len(d.digits) <= 18 {
		u, _ := strconv.ParseInt(d.digits, 10, 64)
		if d.neg {
			u = -u
		}
		return int64Bytes(u)
	}
	n, _ := new(big.Int).SetString(d.digits, 10)
	if d.neg {
		n.Neg(n)
	}
	return debezium.DecimalBytes(n)
}

// String is BigDecimal.toPlainString at the column scale.
func (d parsedDecimal) String() string {
	digits := d.digits
	for len(digits) <= d.scale {
		digits = "0" + digits
	}
	var b strings.Builder
	if d.neg {
		b.WriteByte('-')
	}
	b.WriteString(digits[:len(digits)-d.scale])
	if d.scale > 0 {
		b.WriteByte('.')
		b.WriteString(digits[len(digits)-d.scale:])
	}
	return b.String()
}

// smallDecimal is parseDecimal(s, scale).bytes()'s value for the common
// case, a decimal of at most 18 significant digits at the column scale,
// computed without building the digit string; ok is false for any other
// text (longer, or not one parseDecimal accepts), which takes that path.
func smallDecimal(s string, scale int) (n int64, ok bool) {
	s = strings.TrimSpace(s)
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" && frac == "" {
		return 0, false
	}
	if len(frac) > scale {
		if strings.Trim(frac[scale:], "0") != "" {
			return 0, false // more fraction digits than the scale: parseDecimal's error
		}
		frac = frac[:scale]
	}
	digits := 0 // significant digits so far
	for _, part := range [2]string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			c := part[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			if digits == 0 && c == '0' {
				continue
			}
			if digits++; digits > 18 {
				return 0, false
			}
			n = n*10 + int64(c-'0')
		}
	}
	for i := len(frac); i < scale; i++ {
		if n != 0 {
			if digits++; digits > 18 {
				return 0, false
			}
		}
		n *= 10
	}
	if neg {
		n = -n
	}
	return n, true
}

func decimalBytesConv(scale int) func(any) (any, error) {
	return func(v any) (any, error) {
		if x, ok := v.([]byte); ok {
			// A snapshot's DECIMAL text: no copy, no digit string.
			if n, ok := smallDecimal(string(x), scale); ok {
				return int64Bytes(n), nil
			}
		}
		s, err := decimalText(v)
		if err != nil {
			return nil, err
		}
		d, err := parseDecimal(s, scale)
		if err != nil {
			return nil, err
		}
		return d.bytes(), nil
	}
}

func decimalStringConv(scale int) func(any) (any, error) {
	return func(v any) (any, error) {
		s, err := decimalText(v)
		if err != nil {
			return nil, err
		}
		d, err := parseDecimal(s, scale)
		if err != nil {
			return nil, err
		}
		return d.String(), nil
	}
}

// ---- strings ----

// stringConv decodes a string column's bytes from its character set.
func stringConv(cs *charset) func(any) (any, error) {
	return func(v any) (any, error) {
		switch x := v.(type) {
		case string:
			d, err := cs.decodeString(x)
			if err == nil && len(d) == len(x) && d == x {
				return v, nil // valid as it came: not boxed again
			}
			return d, err
		case []byte:
			return cs.decode(x)
		}
		return nil, badType(v, "string column")
	}
}

func jsonConv(nullable bool) func(any) (any, error) {
	return func(v any) (any, error) {
		var s string
		switch x := v.(type) {
		case string:
			if x != "" {
				return v, nil // the value as it came, not boxed again
			}
		case []byte:
			s = string(x)
		default:
			return nil, badType(v, "JSON") // e.g. go-mysql *JsonDiff (partial JSON)
		}
		if s == "" { // an invalid empty document, as Debezium treats it
			if nullable {
				return nil, nil
			}
			return "{}", nil
		}
		return s, nil
	}
}

// enumConv: the binlog gives the member's index into labels (UTF-8); a
// snapshot gives the member's bytes in the column's character set.
func enumConv(labels []string, cs *charset) func(any) (any, error) {
	boxed := make([]any, len(labels)) // the labels boxed once, not per value
	// A snapshot gives the member's text: one that is an ASCII label of a
	// set where ASCII stands for itself decodes to that label (charset's
	// asciiSafe), so the boxed label is the value, without a copy.
	ascii := map[string]any{}
	for i, l := range labels {
		boxed[i] = l
		if cs.asciiSafe && isASCIIString(l) {
			ascii[l] = boxed[i]
		}
	}
	return func(v any) (any, error) {
		switch x := v.(type) {
		case string:
			return cs.decodeString(x)
		case []byte:
			if l, ok := ascii[string(x)]; ok {
				return l, nil
			}
			return cs.decode(x)
		}
		i, err := signedInput(v, 64, false)
		if err != nil {
			return nil, err
		}
		switch {
		case i == 0:
			return "", nil // MySQL's error value for invalid members
		case i > 0 && i <= int64(len(labels)):
			return boxed[i-1], nil
		}
		return nil, badValue(v, "ENUM index")
	}
}

// setConv: the binlog gives the members' bitmask over labels (UTF-8); a
// snapshot gives the members' bytes in the column's character set.
func setConv(labels []string, cs *charset) func(any) (any, error) {
	return func(v any) (any, error) {
		switch x := v.(type) {
		case string:
			return cs.decodeString(x)
		case []byte:
			return cs.decode(x)
		}
		u, err := unsignedInput(v)
		if err != nil {
			return nil, err
		}
		if len(labels) < 64 && u>>len(labels) != 0 {
			return nil, badValue(v, "SET bitmask")
		}
		var b strings.Builder
		for i, l := range labels {
			if u&(1<<i) != 0 {
				if b.Len() > 0 {
					b.WriteByte(',')
				}
				b.WriteString(l)
			}
		}
		return b.String(), nil
	}
}

// ---- spatial and vector ----

func spatialBytes(v any) ([]byte, error) {
	switch x := v.(type) {
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	}
	return nil, badType(v, "geometry")
}

// splitGeometry splits MySQL's internal geometry value: a 4-byte
// little-endian SRID, then WKB. SRID 0 is reported as null, as Debezium does.
func splitGeometry(v any) (wkb []byte, srid any, err error) {
	b, err := spatialBytes(v)
	if err != nil {
		return nil, nil, err
	}
	if len(b) < 5 {
		return nil, nil, badValue(b, "geometry (need SRID and WKB)")
	}
	if s := int32(binary.LittleEndian.Uint32(b)); s != 0 {
		srid = s
	}
	return b[4:], srid, nil
}

func convGeometry(v any) (any, error) {
	wkb, srid, err := splitGeometry(v)
	if err != nil {
		return nil, err
	}
	return debezium.Struct{wkb, srid}, nil
}

func convPoint(v any) (any, error) {
	wkb, srid, err := splitGeometry(v)
	if err != nil {
		return nil, err
	}
	if len(wkb) < 21 {
		return nil, badValue(wkb, "POINT WKB")
	}
	var order binary.ByteOrder = binary.LittleEndian
	if wkb[0] == 0 {
		order = binary.BigEndian
	}
	if order.Uint32(wkb[1:]) != 1 {
		return nil, badValue(wkb, "POINT WKB (not a point)")
	}
	x := math.Float64frombits(order.Uint64(wkb[5:]))
	y := math.Float64frombits(order.Uint64(wkb[13:]))
	return debezium.Struct{x, y, wkb, srid}, nil
}

func convVector(v any) (any, error) {
	b, err := spatialBytes(v)
	if err != nil {
		return nil, err
	}
	if len(b)%4 != 0 {
		return nil, badValue(len(b), "VECTOR byte length")
	}
	out := make([]any, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// ---- temporal ----

// daysFromCivil returns days since 1970-01-01 of a proleptic Gregorian date.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// civil is a wall-clock date and time.
type civil struct {
	y, mo, d, h, mi, s int
	micros             int // fraction of second in µs
}

func (c civil) zeroDate() bool { return c.mo == 0 || c.d == 0 }

// epochSecond reports the text of a TIMESTAMP stored as second 0:
// "0000-00-00 00:00:00[.ffffff]". That is the zero TIMESTAMP (what
// non-strict mode stores for out-of-range input; SELECT shows
// 0000-00-00 00:00:00, UNIX_TIMESTAMP gives 0) or, with a non-zero
// fraction, second 0 plus that fraction (1970-01-01 00:00:00.999999 UTC,
// which SELECT shows as that instant and go-mysql's binlog text shows as
// 0000-00-00 00:00:00.999999). The binlog holds the instant 0.ffffff in
// both cases, and Debezium 3.5 emits it as 1970-01-01T00:00:00[.fff]Z
// with the column's fsp digits, nullable column or not.
func (c civil) epochSecond() bool {
	return c.y == 0 && c.mo == 0 && c.d == 0 && c.h == 0 && c.mi == 0 && c.s == 0
}

func (c civil) epochMicros() int64 {
	secs := daysFromCivil(c.y, c.mo, c.d)*86400 + int64(c.h*3600+c.mi*60+c.s)
	return secs*1_000_000 + int64(c.micros)
}

func civilFromTime(t time.Time) civil {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return civil{y, int(mo), d, h, mi, s, t.Nanosecond() / 1000}
}

// parseCivil parses "YYYY-MM-DD[( |T)hh:mm:ss[.ffffff]]". It runs for
// every DATE, DATETIME and TIMESTAMP value of every row (go-mysql hands
// them over as text), so it allocates nothing: the parts are cut in place
// rather than split into slices.
func parseCivil(s string) (civil, bool) {
	if c, ok := parseCivilFixed(s); ok {
		return c, true
	}
	var c civil
	num := func(p string) (int, bool) {
		if p == "" || !allDigits(p) {
			return 0, false
		}
		n, err := strconv.Atoi(p)
		return n, err == nil
	}
	date, clock, hasClock := strings.Cut(strings.TrimSpace(s), " ")
	if !hasClock {
		date, clock, hasClock = strings.Cut(date, "T")
	}
	y, mo, d, ok := cut3(date, '-')
	if !ok {
		return c, false
	}
	var ok1, ok2, ok3 bool
	c.y, ok1 = num(y)
	c.mo, ok2 = num(mo)
	c.d, ok3 = num(d)
	if !ok1 || !ok2 || !ok3 || c.mo > 12 || c.d > 31 {
		return c, false
	}
	if !hasClock {
		return c, true
	}
	hms, frac, _ := strings.Cut(clock, ".")
	h, mi, sec, ok := cut3(hms, ':')
	if !ok {
		return c, false
	}
	c.h, ok1 = num(h)
	c.mi, ok2 = num(mi)
	c.s, ok3 = num(sec)
	if !ok1 || !ok2 || !ok3 || c.h > 23 || c.mi > 59 || c.s > 59 {
		return c, false
	}
	if frac != "" {
		if len(frac) > 6 || !allDigits(frac) {
			return c, false
		}
		f, _ := strconv.Atoi(frac)
		for i := len(frac); i < 6; i++ {
			f *= 10
		}
		c.micros = f
	}
	return c, true
}

// parseCivilFixed is parseCivil for the text the server writes:
// "YYYY-MM-DD", or "YYYY-MM-DD hh:mm:ss" (or T) with 1 to 6 fraction
// digits after a '.' or none, read at fixed offsets. ok is false for any
// other text and any value parseCivil rejects; parseCivil then decides.
func parseCivilFixed(s string) (c civil, ok bool) {
	// num reads the digits s[i:j]; -1 if one is not a digit.
	num := func(i, j int) int {
		n := 0
		for ; i < j; i++ {
			d := s[i] - '0'
			if d > 9 {
				return -1
			}
			n = n*10 + int(d)
		}
		return n
	}
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return c, false
	}
	c.y, c.mo, c.d = num(0, 4), num(5, 7), num(8, 10)
	if c.y < 0 || c.mo < 0 || c.d < 0 || c.mo > 12 || c.d > 31 {
		return c, false
	}
	if len(s) == 10 {
		return c, true
	}
	if len(s) < 19 || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':' {
		return c, false
	}
	c.h, c.mi, c.s = num(11, 13), num(14, 16), num(17, 19)
	if c.h < 0 || c.mi < 0 || c.s < 0 || c.h > 23 || c.mi > 59 || c.s > 59 {
		return c, false
	}
	switch {
	case len(s) == 19:
		return c, true
	case s[19] != '.' || len(s) == 20 || len(s) > 26:
		return c, false
	}
	if c.micros = num(20, len(s)); c.micros < 0 {
		return c, false
	}
	for i := len(s); i < 26; i++ {
		c.micros *= 10
	}
	return c, true
}

// cut3 splits s around exactly two sep bytes, as strings.Split would into
// three parts (ok false for any other count), without allocating.
func cut3(s string, sep byte) (a, b, c string, ok bool) {
	i := strings.IndexByte(s, sep)
	if i < 0 {
		return "", "", "", false
	}
	a, s = s[:i], s[i+1:]
	j := strings.IndexByte(s, sep)
	if j < 0 {
		return "", "", "", false
	}
	b, c = s[:j], s[j+1:]
	if strings.IndexByte(c, sep) >= 0 {
		return "", "", "", false
	}
	return a, b, c, true
}

// civilInput extracts a wall-clock value from a DATE/DATETIME input.
func civilInput(v any, what string) (civil, error) {
	var s string
	switch x := v.(type) {
	case time.Time:
		return civilFromTime(x), nil
	case string:
		s = x
	case []byte:
		// A snapshot's DATE, DATETIME and TIMESTAMP text: parsed without
		// copying it (parseCivil keeps no reference), copied for an error.
		if c, ok := parseCivil(string(x)); ok && c.dayValid() {
			return c, nil
		}
		s = string(x)
	default:
		return civil{}, badType(v, what)
	}
	c, ok := parseCivil(s)
	if !ok {
		return civil{}, badValue(v, what)
	}
	if err := c.checkDay(s, what); err != nil {
		return civil{}, err
	}
	return c, nil
}

// checkDay rejects a day the month does not have (2021-02-31, 2021-04-31).
// MariaDB and MySQL store such dates in DATE and DATETIME under sql_mode
// ALLOW_INVALID_DATES; no days-since-epoch value names them, and moving
// them to another day (2021-03-03) would alter the value silently.
// Debezium 3.5 stops on them too ("Invalid date 'FEBRUARY 31'"). Zero
// months and days (zeroDate) are not invalid here: they have Debezium's
// documented NULL/epoch value.
func (c civil) checkDay(text, what string) error {
	if c.dayValid() {
		return nil
	}
	if last := daysIn(c.y, c.mo); c.d > last {
		return fmt.Errorf("%w: %q for %s: %04d-%02d has %d days (a date stored under sql_mode ALLOW_INVALID_DATES has no Debezium value; correct the row in the source)",
			ErrInvalidValue, text, what, c.y, c.mo, last)
	}
	return nil
}

// dayValid reports whether checkDay accepts c.
func (c civil) dayValid() bool { return c.zeroDate() || c.d <= daysIn(c.y, c.mo) }

// daysIn returns the days of month mo (1-12) of proleptic Gregorian year y.
func daysIn(y, mo int) int {
	switch mo {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// dateConv: days since epoch. Zero dates are null when nullable, else the
// epoch.
func dateConv(nullable bool) func(any) (any, error) {
	return func(v any) (any, error) {
		c, err := civilInput(v, "DATE")
		if err != nil {
			return nil, err
		}
		if c.zeroDate() {
			if nullable {
				return nil, nil
			}
			return int32(0), nil
		}
		return int32(daysFromCivil(c.y, c.mo, c.d)), nil
	}
}

// datetimeConv: DATETIME as UTC wall clock, in µs or (floored) ms.
func datetimeConv(nullable, micros bool) func(any) (any, error) {
	return func(v any) (any, error) {
		c, err := civilInput(v, "DATETIME")
		if err != nil {
			return nil, err
		}
		if c.zeroDate() {
			if nullable {
				return nil, nil
			}
			return int64(0), nil
		}
		us := c.epochMicros()
		if micros {
			return us, nil
		}
		ms := us / 1000
		if us%1000 < 0 {
			ms--
		}
		return ms, nil
	}
}

// EpochZonedTimestamp is Debezium's fallback ZonedTimestamp for zero
// TIMESTAMP values in NOT NULL columns and for DEFAULT CURRENT_TIMESTAMP.
const EpochZonedTimestamp = "1970-01-01T00:00:00Z"

// timestampConv: ISO-8601 UTC text with exactly fsp fraction digits.
func timestampConv(nullable bool, fsp int, loc *time.Location) func(any) (any, error) {
	zero := func() (any, error) {
		if nullable {
			return nil, nil
		}
		return EpochZonedTimestamp, nil
	}
	return func(v any) (any, error) {
		var t time.Time
		switch x := v.(type) {
		case time.Time:
			if x.IsZero() {
				return zero()
			}
			t = x
		case string, []byte:
			c, err := civilInput(x, "TIMESTAMP")
			if err != nil {
				return nil, err
			}
			if c.epochSecond() {
				// Second 0: the instant it stores, 1970-01-01T00:00:00Z
				// plus the fraction, as Debezium's binlog reader gives it.
				t = time.Unix(0, int64(c.micros)*1000)
				break
			}
			if c.zeroDate() {
				return zero()
			}
			if loc == time.UTC && c.y <= 9999 {
				// A valid UTC wall clock (parseCivil and checkDay bound
				// every field) is the instant's own fields: no round trip
				// through time.Time (the binlog's case, every row).
				var buf [48]byte
				return string(appendZoned(buf[:0], c, int64(c.micros)*1000, fsp)), nil
			}
			t = time.Date(c.y, time.Month(c.mo), c.d, c.h, c.mi, c.s, c.micros*1000, loc)
		default:
			return nil, badType(v, "TIMESTAMP")
		}
		return formatZoned(t.UTC(), fsp), nil
	}
}

func appendPadded(dst []byte, n, width int) []byte {
	var b [20]byte
	s := strconv.AppendInt(b[:0], int64(n), 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// formatZoned is ZonedTimestamp.toIsoString for a UTC instant: fsp > 0
// gives exactly fsp fraction digits; fsp 0 gives ISO_OFFSET_DATE_TIME's
// shortest fraction (none for whole seconds). It runs for every TIMESTAMP
// value, so the text is built on the stack and allocated once, as the
// returned string.
func formatZoned(t time.Time, fsp int) string {
	var buf [48]byte // "+292277026596-12-04T15:30:07.999999999Z" at most
	return string(appendZoned(buf[:0], civilFromTime(t), int64(t.Nanosecond()), fsp))
}

// appendZoned appends formatZoned's text of the UTC wall clock c with ns
// nanoseconds (c.micros is not read).
func appendZoned(b []byte, c civil, ns int64, fsp int) []byte {
	b = appendPadded(b, c.y, 4)
	b = append(b, '-')
	b = appendPadded(b, c.mo, 2)
	b = append(b, '-')
	b = appendPadded(b, c.d, 2)
	b = append(b, 'T')
	b = appendPadded(b, c.h, 2)
	b = append(b, ':')
	b = appendPadded(b, c.mi, 2)
	b = append(b, ':')
	b = appendPadded(b, c.s, 2)
	switch {
	case fsp > 0:
		b = append(b, '.')
		n := len(b)
		b = appendPadded(b, int(ns), 9)
		b = b[:n+min(fsp, 9)]
	case ns != 0:
		b = append(b, '.')
		b = appendPadded(b, int(ns), 9)
		for b[len(b)-1] == '0' { // ns != 0: a non-zero digit stops it
			b = b[:len(b)-1]
		}
	}
	return append(b, 'Z')
}

// timeMicros parses a TIME input into signed µs. go-mysql gives
// "[-]hhh:mm:ss[.ffffff]"; snapshot drivers give the same text or a
// time.Duration.
func timeMicros(v any) (int64, error) {
	var s string
	switch x := v.(type) {
	case time.Duration:
		return int64(x / time.Microsecond), nil
	case string:
		s = x
	case []byte:
		s = string(x)
	default:
		return 0, badType(v, "TIME")
	}
	orig := s
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	hms, frac, _ := strings.Cut(s, ".")
	parts := strings.Split(hms, ":")
	if len(parts) != 3 || len(frac) > 6 || !allDigits(frac) {
		return 0, badValue(orig, "TIME")
	}
	var n [3]int64
	for i, p := range parts {
		if p == "" || !allDigits(p) {
			return 0, badValue(orig, "TIME")
		}
		n[i], _ = strconv.ParseInt(p, 10, 64)
	}
	if n[1] > 59 || n[2] > 59 {
		return 0, badValue(orig, "TIME")
	}
	var f int64
	if frac != "" {
		f, _ = strconv.ParseInt(frac, 10, 64)
		for i := len(frac); i < 6; i++ {
			f *= 10
		}
	}
	us := (n[0]*3600+n[1]*60+n[2])*1_000_000 + f
	if neg {
		us = -us
	}
	return us, nil
}

// convTimeMicros: io.debezium.time.MicroTime. Negative and ≥ 24h values
// (MySQL TIME spans -838:59:59 to 838:59:59) pass through as signed µs, as
// Debezium's binlog path does (Duration.toNanos()/1000).
func convTimeMicros(v any) (any, error) {
	us, err := timeMicros(v)
	if err != nil {
		return nil, err
	}
	return us, nil
}

// convTimeMillis: Connect Time as INT32 ms, truncated toward zero; values
// outside a day pass through like convTimeMicros. TIME beyond
// ±596:31:23.647 does not fit an INT32 and is an error, not a wrapped value.
func convTimeMillis(v any) (any, error) {
	us, err := timeMicros(v)
	if err != nil {
		return nil, err
	}
	ms := us / 1000
	if ms < math.MinInt32 || ms > math.MaxInt32 {
		return nil, fmt.Errorf("%w: TIME %v is %d ms, beyond the INT32 of time.precision.mode=connect (use adaptive_time_microseconds)", ErrInvalidValue, v, ms)
	}
	return int32(ms), nil
}

func convYear(v any) (any, error) {
	i, err := signedInput(v, 64, false)
	if err != nil {
		return nil, err
	}
	if i < 0 || i > 9999 {
		return nil, badValue(v, "YEAR")
	}
	return int32(i), nil
}
