//go:build integration

package binlog

// The cross-check of capture's MySQL 8 binary JSON text against the Java
// library Debezium's MySQL connector renders JSON columns with
// (test/jsonbinary: JsonBinary.parseAsString of
// io.debezium:mysql-binlog-connector-java, the version Debezium 3.5.0.Final
// depends on). Every document goes through capture's whole decoding path
// (a binlog event, go-mysql's parser with capture's settings, the reader,
// the converter) and its text must equal the library's byte for byte.
// Needs Java 17 and Maven, not the local stack.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/test/jsonbinary"
)

// jdecimal is an opaque DECIMAL(precision,scale) from digit strings.
func jdecimal(precision, scale int, neg bool, intDigits, fracDigits string) jopaque {
	return jopaque{typ: 246, data: append([]byte{byte(precision), byte(scale)}, decimalBin(precision, scale, neg, intDigits, fracDigits)...)}
}

// jdatetime is an opaque DATETIME (typ 12), TIMESTAMP (7) or DATE (10):
// MySQL's packed int64 (TIME_to_longlong_datetime_packed), little-endian.
func jdatetime(typ byte, y, mo, d, h, mi, s, micros int64) jopaque {
	ymd := (y*13+mo)<<5 | d
	hms := h<<12 | mi<<6 | s
	return jopaque{typ: typ, data: binary.LittleEndian.AppendUint64(nil, uint64((ymd<<17|hms)<<24+micros))}
}

// jtime is an opaque TIME: the packed int64 (TIME_to_longlong_time_packed),
// negated for negative times.
func jtime(neg bool, h, m, s, micros int64) jopaque {
	v := (h<<12|m<<6|s)<<24 + micros
	if neg {
		v = -v
	}
	return jopaque{typ: 11, data: binary.LittleEndian.AppendUint64(nil, uint64(v))}
}

// allowedDifference says why capture's text may differ from the library's
// for a document of v, or "" when it must be equal. These are the
// library's bugs capture does not copy (package mysqljson): the library
// prints a uint32 from 2^31 negative, prints nothing for a uint32 inlined
// in a large container ("[1,,2]", not JSON), and prints a negative TIME
// as "01:0-1:0-1". Capture prints the value.
func allowedDifference(v any, large bool) string {
	switch x := v.(type) {
	case uint32:
		if x >= 1<<31 || large {
			return "uint32"
		}
	case jopaque:
		if x.typ == 11 && int64(binary.LittleEndian.Uint64(x.data)) < 0 {
			return "negative TIME"
		}
	case jobj:
		for _, e := range x {
			if r := allowedDifference(e, large); r != "" {
				return r
			}
		}
	case []any:
		for _, e := range x {
			if r := allowedDifference(e, large); r != "" {
				return r
			}
		}
	}
	return ""
}

// fixedJSONValues are chosen edge cases of every type.
func fixedJSONValues() []any {
	negZero := math.Copysign(0, -1)
	doubles := []any{0.0, negZero, 1.0, -1.0, 0.5, 1.5, 100.0, 123.456, 0.001, -0.001, 0.0009999999999999998, 1e-4, 1.5e-5,
		9999999.0, 9999999.999999998, 1e7, -1e7, 1e10, 1e21, 1e22, 1e23, 1e300, math.MaxFloat64, math.SmallestNonzeroFloat64,
		2.2250738585072014e-308, 0.1, 0.2, 0.30000000000000004, 1.0 / 3, 2.0 / 3, 4.35, 9007199254740993.0, 1234567.125, math.Pi, -math.E * 1e-9,
		math.Inf(1), math.Inf(-1), math.NaN()}
	strs := []any{"", "plain", "a\"b\\c/d", "\b\t\n\f\r", "\x00\x01\x02\x07\x0b\x0e\x1a\x1b\x1f\x7f", "héllo 😀 𝄞 日本語", "\u2028\u2029\ufeff\uffff",
		strings.Repeat("λ", 100), strings.Repeat("x", 127), strings.Repeat("y", 128), strings.Repeat("z", 16384),
		"bad\xffx", "bad\xc3", "\xe2\x82x", "\xf0\x9f\x98", "\xed\xa0\x80", "\xed\xa0x", "\xed\xbf\xbf", "\xc0\xaf", "\xf4\x90\x80\x80", "\xe0\x80\x80", "\xf0\x80\x80\x80", "\xf8\x88\x80\x80\x80", "\x80\xbf", "\xf0\x9fx\x98"}
	decimals := []any{jdecimal(5, 2, false, "123", "45"), jdecimal(10, 4, true, "0", "0001"), jdecimal(5, 0, false, "100", ""),
		jdecimal(10, 0, true, "5", ""), jdecimal(10, 2, false, "0", "00"), jdecimal(10, 2, true, "0", "00"), jdecimal(4, 2, false, "0", "50"),
		jdecimal(30, 20, false, "0", "00000000000000000001"), jdecimal(30, 10, false, "12345678901234567890", "5"),
		jdecimal(65, 30, true, strings.Repeat("9", 35), strings.Repeat("9", 30)), jdecimal(65, 0, false, strings.Repeat("7", 65), ""),
		jdecimal(18, 9, false, "123456789", "987654321"), jdecimal(1, 1, false, "", "5"), jdecimal(1, 0, false, "0", "")}
	temporal := []any{jdatetime(12, 2015, 1, 15, 23, 24, 25, 456), jdatetime(12, 2015, 1, 15, 23, 24, 25, 0), jdatetime(12, 2015, 1, 15, 23, 24, 25, 500000),
		jdatetime(12, 0, 0, 0, 0, 0, 0, 0), jdatetime(12, 9999, 12, 31, 23, 59, 59, 999999), jdatetime(12, 1000, 1, 1, 0, 0, 0, 1),
		jdatetime(12, 2024, 2, 29, 12, 30, 0, 120000), jdatetime(7, 1970, 1, 1, 0, 0, 1, 0), jdatetime(7, 2038, 1, 19, 3, 14, 7, 999999),
		jdatetime(10, 2015, 1, 15, 0, 0, 0, 0), jdatetime(10, 5, 1, 2, 0, 0, 0, 0), jdatetime(10, 0, 0, 0, 0, 0, 0, 0), jdatetime(10, 9999, 12, 31, 0, 0, 0, 0),
		jtime(false, 0, 0, 0, 0), jtime(false, 12, 34, 56, 789), jtime(false, 838, 59, 59, 0), jtime(false, 1, 2, 3, 120000),
		jtime(true, 0, 0, 1, 0), jtime(true, 1, 2, 3, 500000), jtime(true, 838, 59, 59, 999999), jtime(true, 0, 0, 0, 1), jtime(true, 12, 0, 0, 0)}
	others := []any{jopaque{252, []byte("blob\x00\xff")}, jopaque{15, []byte("vc")}, jopaque{16, []byte{1, 2}}, jopaque{255, []byte{1}},
		jopaque{13, []byte{0xe1, 0x07}}, jopaque{254, nil}, jopaque{253, []byte(strings.Repeat("s", 300))}, jopaque{242, []byte{0, 0, 128, 63}},
		jopaque{245, []byte{4, 1}}, jopaque{1, []byte{7}}, jopaque{14, []byte{1, 2, 3}}}
	ints := []any{int16(0), int16(-1), int16(math.MinInt16), int16(math.MaxInt16), uint16(0), uint16(math.MaxUint16),
		int32(math.MinInt32), int32(math.MaxInt32), int32(70000), uint32(math.MaxUint32), int64(math.MinInt64), int64(math.MaxInt64), int64(0),
		uint64(math.MaxUint64), uint64(1 << 63)}
	vals := []any{
		jobj{}, []any{}, nil, true, false, "top", int16(5), 2.5, jdecimal(5, 2, false, "1", "5"), jtime(false, 1, 0, 0, 0),
		jobj{"bb": int16(2), "a": int16(1), "ccc": int16(3)},
		jobj{"zzz": "long", "b": "short", "aa": "mid", "": "empty", "B": "upper", "é": "two bytes", "ab": []any{}},
		jobj{"k\"\n\x01": "v", "é": int16(1), "😀": jobj{}},
		jobj{"a": []any{jobj{"b": jobj{}}, []any{}}, "c": jobj{"d": []any{nil, []any{[]any{}}}}},
		jobj{"sku": "A-1", "qty": int16(3), "gift": false, "price": jdecimal(10, 2, false, "19", "99"), "at": jdatetime(12, 2024, 2, 29, 13, 14, 15, 123456)},
		doubles, strs, decimals, temporal, others, ints,
	}
	for _, group := range [][]any{doubles, strs, decimals, temporal, others, ints} {
		vals = append(vals, group...)
	}
	return vals
}

// randomJSONValue builds a random document of every type.
func randomJSONValue(r *rand.Rand, depth int) any {
	n := 17
	if depth >= 4 {
		n = 15 // no more containers
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return int16(r.Uint32())
	case 3:
		return uint16(r.Uint32())
	case 4:
		return int32(r.Uint32())
	case 5:
		return uint32(r.Uint32())
	case 6:
		return int64(r.Uint64())
	case 7:
		return r.Uint64()
	case 8:
		switch r.IntN(4) {
		case 0:
			return math.Float64frombits(r.Uint64())
		case 1: // few digits
			f, _ := strconv.ParseFloat(strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(30)-12)), 'g', r.IntN(6)+1, 64), 64)
			return f
		case 2: // around the plain/exponent boundaries
			return math.Nextafter([]float64{1e-3, 1e7, -1e-3, -1e7}[r.IntN(4)], []float64{0, math.Inf(1)}[r.IntN(2)])
		}
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
	case 9:
		return randomJSONString(r)
	case 10:
		p := r.IntN(65) + 1
		s := r.IntN(min(p, 30) + 1)
		digits := func(k int) string {
			b := make([]byte, k)
			for i := range b {
				b[i] = byte('0' + r.IntN(10))
			}
			return string(b)
		}
		return jdecimal(p, s, r.IntN(2) == 0, digits(r.IntN(p-s+1)), digits(r.IntN(s+1)))
	case 11:
		typ := []byte{12, 7, 10}[r.IntN(3)]
		return jdatetime(typ, int64(r.IntN(10000)), int64(r.IntN(13)), int64(r.IntN(32)), int64(r.IntN(24)), int64(r.IntN(60)), int64(r.IntN(60)), int64(r.IntN(1000000)))
	case 12:
		return jtime(r.IntN(3) == 0, int64(r.IntN(839)), int64(r.IntN(60)), int64(r.IntN(60)), []int64{0, int64(r.IntN(1000000)), int64(r.IntN(10)) * 100000}[r.IntN(3)])
	case 13:
		types := []byte{1, 2, 3, 4, 5, 6, 8, 9, 13, 14, 15, 16, 242, 245, 247, 248, 249, 250, 251, 252, 253, 254, 255}
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return jopaque{typ: types[r.IntN(len(types))], data: b}
	case 14:
		return "s" + strconv.Itoa(r.IntN(1000))
	case 15:
		a := make([]any, r.IntN(8))
		for i := range a {
			a[i] = randomJSONValue(r, depth+1)
		}
		return a
	}
	o := jobj{}
	for range r.IntN(8) {
		o[randomJSONKey(r)] = randomJSONValue(r, depth+1)
	}
	return o
}

func randomJSONKey(r *rand.Rand) string {
	const alphabet = "abcXYZ_09 \"\\\n/é😀"
	rs := []rune(alphabet)
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteRune(rs[r.IntN(len(rs))])
	}
	return b.String()
}

func randomJSONString(r *rand.Rand) string {
	pool := []string{"a", "Z", " ", "\"", "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "日", "😀", "\u2028", "\ufffd"}
	if r.IntN(10) == 0 { // bytes MySQL never stores in JSON, to check the UTF-8 decoding
		pool = append(pool, "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\xf0\x9f", "\x80", "\xf4\x90")
	}
	var b strings.Builder
	n := r.IntN(20)
	if r.IntN(20) == 0 {
		n = 200 + r.IntN(400) // multi-byte varlen lengths
	}
	for range n {
		b.WriteString(pool[r.IntN(len(pool))])
	}
	return b.String()
}

// recordedJSONEvents are rows events with JSON columns written by real
// MySQL 5.7/8.0 servers, published in go-mysql v1.16.0's test suite
// (replication/row_event_test.go): table map body, then rows events (type,
// body). TestParseJson: (json, decimal(10,0)) rows with NULL,
// {"key1":"value1","key2":"value2"} and a 2.7 KB string member.
// TestJsonCompatibility: (int, varchar(100), json virtual, int) inserts and
// updates of {} and {"a":1234}.
var recordedJSONEvents = []struct {
	name     string
	tableMap string
	rows     []struct {
		typ  byte
		body string
	}
}{
	{"TestParseJson", "m\x00\x00\x00\x00\x00\x01\x00\x04test\x00\x03t10\x00\x02\xf5\xf6\x03\x04\n\x00\x03", []struct {
		typ  byte
		body string
	}{
		{evWriteRowsV2, "m\x00\x00\x00\x00\x00\x01\x00\x02\x00\x02\xff\xfd\x80\x00\x00\x00\x01"},
		{evWriteRowsV2, "m\x00\x00\x00\x00\x00\x01\x00\x02\x00\x02\xff\xfc)\x00\x00\x00\x00\x02\x00(\x00\x12\x00\x04\x00\x16\x00\x04\x00\f\x1a\x00\f!\x00key1key2\x06value1\x06value2\x80\x00\x00\x00\x01"},
		{evWriteRowsV2, "m\x00\x00\x00\x00\x00\x01\x00\x02\x00\x02\xff\xfc\xd0\n\x00\x00\x00\x01\x00\xcf\n\v\x00\x04\x00\f\x0f\x00text\xbe\x15" + loremJSON + "\x80\x00\x00\x00e"},
	}},
	{"TestJsonCompatibility", "l\x00\x00\x00\x00\x00\x01\x00\x04test\x00\x03t11\x00\x04\x03\x0f\xf5\x03\x03d\x00\x04\x0f", []struct {
		typ  byte
		body string
	}{
		{evWriteRowsV2, "l\x00\x00\x00\x00\x00\x01\x00\x02\x00\x04\xff\xf8\x01\x00\x00\x00\x02{}\x05\x00\x00\x00\x00\x00\x00\x04\x00"},
		{evUpdateRowsV2, "l\x00\x00\x00\x00\x00\x01\x00\x02\x00\x04\xff\xff\xf8\x01\x00\x00\x00\x02{}\x05\x00\x00\x00\x00\x00\x00\x04\x00\xf8\x01\x00\x00\x00\n{\"a\":1234}\r\x00\x00\x00\x00\x01\x00\x0c\x00\x0b\x00\x01\x00\x05\xd2\x04a"},
		{evUpdateRowsV2, "l\x00\x00\x00\x00\x00\x01\x00\x02\x00\x04\xff\xff\xf8\x01\x00\x00\x00\n{\"a\":1234}\r\x00\x00\x00\x00\x01\x00\x0c\x00\x0b\x00\x01\x00\x05\xd2\x04a\xf8\x01\x00\x00\x00\x02{}\x05\x00\x00\x00\x00\x00\x00\x04\x00"},
	}},
}

// loremJSON is the 2,750-byte string of go-mysql's TestParseJson vector.
const loremJSON = "Lorem ipsum dolor sit amet, consectetuer adipiscing elit. Aenean commodo ligula eget dolor. Aenean massa. Cum sociis natoque penatibus et magnis dis parturient montes, nascetur ridiculus mus. Donec quam felis, ultricies nec, pellentesque eu, pretium quis, sem. Nulla consequat massa quis enim. Donec pede justo, fringilla vel, aliquet nec, vulputate eget, arcu. In enim justo, rhoncus ut, imperdiet a, venenatis vitae, justo. Nullam dictum felis eu pede mollis pretium. Integer tincidunt. Cras dapibus. Vivamus elementum semper nisi. Aenean vulputate eleifend tellus. Aenean leo ligula, porttitor eu, consequat vitae, eleifend ac, enim. Aliquam lorem ante, dapibus in, viverra quis, feugiat a, tellus. Phasellus viverra nulla ut metus varius laoreet. Quisque rutrum. Aenean imperdiet. Etiam ultricies nisi vel augue. Curabitur ullamcorper ultricies nisi. Nam eget dui. Etiam rhoncus. Maecenas tempus, tellus eget condimentum rhoncus, sem quam semper libero, sit amet adipiscing sem neque sed ipsum. Nam quam nunc, blandit vel, luctus pulvinar, hendrerit id, lorem. Maecenas nec odio et ante tincidunt tempus. Donec vitae sapien ut libero venenatis faucibus. Nullam quis ante. Etiam sit amet orci eget eros faucibus tincidunt. Duis leo. Sed fringilla mauris sit amet nibh. Donec sodales sagittis magna. Sed consequat, leo eget bibendum sodales, augue velit cursus nunc, quis gravida magna mi a libero. Fusce vulputate eleifend sapien. Vestibulum purus quam, scelerisque ut, mollis sed, nonummy id, metus. Nullam accumsan lorem in dui. Cras ultricies mi eu turpis hendrerit fringilla. Vestibulum ante ipsum primis in faucibus orci luctus et ultrices posuere cubilia Curae; In ac dui quis mi consectetuer lacinia. Nam pretium turpis et arcu. Duis arcu tortor, suscipit eget, imperdiet nec, imperdiet iaculis, ipsum. Sed aliquam ultrices mauris. Integer ante arcu, accumsan a, consectetuer eget, posuere ut, mauris. Praesent adipiscing. Phasellus ullamcorper ipsum rutrum nunc. Nunc nonummy metus. Vestibulum volutpat pretium libero. Cras id dui. Aenean ut eros et nisl sagittis vestibulum. Nullam nulla eros, ultricies sit amet, nonummy id, imperdiet feugiat, pede. Sed lectus. Donec mollis hendrerit risus. Phasellus nec sem in justo pellentesque facilisis. Etiam imperdiet imperdiet orci. Nunc nec neque. Phasellus leo dolor, tempus non, auctor et, hendrerit quis, nisi. Curabitur ligula sapien, tincidunt non, euismod vitae, posuere imperdiet, leo. Maecenas malesuada. Praesent congue erat at massa. Sed cursus turpis vitae tortor. Donec posuere vulputate arcu. Phasellus accumsan cursus velit. Vestibulum ante ipsum primis in faucibus orci luctus et ultrices posuere cubilia Curae; Sed aliquam, nisi quis porttitor congue, elit erat euismod orci, ac"

// javaTexts runs the Java library over docs; a document it refuses has
// text "" and ok false.
func javaTexts(t *testing.T, docs [][]byte) []jsonbinary.Result {
	t.Helper()
	res, err := jsonbinary.ParseAsString(docs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestMySQL8JSONEqualsDebezium renders generated and recorded documents
// through capture and through Debezium's Java library and requires the
// same text, byte for byte.
func TestMySQL8JSONEqualsDebezium(t *testing.T) {
	r := rand.New(rand.NewPCG(20260401, 8))
	var docs [][]byte
	var allowed []string // why capture may differ from the library, per document ("" = it may not)
	add := func(v any, large bool) {
		docs = append(docs, jsonDoc(v, large))
		allowed = append(allowed, allowedDifference(v, large))
	}
	for _, v := range fixedJSONValues() {
		add(v, false)
		add(v, true)
	}
	fixed := len(docs)
	for range 4000 {
		add(randomJSONValue(r, 0), r.IntN(4) == 0)
	}
	// Over 64 KiB: the large format is required.
	add(jobj{"k": strings.Repeat("x", 70000), "n": int32(7), "d": 1e7, "e": jdecimal(5, 2, true, "1", "5"), "u": uint32(5)}, true)
	// A document the library takes as text already (first byte above 0x0f).
	docs = append(docs, []byte(`{"already": "text", "n": 1.0E10}`))
	allowed = append(allowed, "")

	got := decodeJSONDocs(t, docs...)
	want := javaTexts(t, docs)
	mismatches, differences := 0, 0
	for i := range docs {
		if want[i].Err != "" {
			t.Errorf("document %d (%x): the Java library refuses it: %s", i, docs[i], want[i].Err)
			continue
		}
		s, _ := got[i].(string)
		if s == want[i].Text {
			continue
		}
		if allowed[i] != "" {
			// A library bug capture does not copy: capture's text must be JSON.
			differences++
			if !json.Valid([]byte(s)) {
				mismatches++
				t.Errorf("document %d (%x): capture's text is not JSON: %q", i, docs[i], s)
			}
			continue
		}
		mismatches++
		if mismatches <= 20 {
			t.Errorf("document %d (%x):\ncapture  %q\ndebezium %q", i, docs[i], s, want[i].Text)
		}
	}

	// Recorded rows events, whole, through capture's path.
	recordedDocs := 0
	for _, rec := range recordedJSONEvents {
		w := newBinlogWriter()
		events := [][]byte{w.event(evFormatDescription, formatDescriptionBody("8.0.36"))}
		for _, re := range rec.rows { // each a statement of its own: a table map before it
			events = append(events, w.event(evTableMap, []byte(rec.tableMap)), w.event(re.typ, []byte(re.body)))
		}
		raw := rawJSONDocs(t, events)
		evs, err := feed(t, captureParser(t), mysqlReader(t, "", ""), events...)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, ev := range evs {
			for _, row := range ev.Rows {
				for i, v := range row {
					if s, ok := v.(string); ok && ev.Table.ColumnType[i] == 245 && s != "" {
						texts = append(texts, s)
					}
				}
			}
		}
		want := javaTexts(t, raw)
		if len(texts) != len(want) {
			t.Fatalf("%s: capture decoded %d JSON values, %d raw documents", rec.name, len(texts), len(want))
		}
		for i := range want {
			recordedDocs++
			if want[i].Err != "" || texts[i] != want[i].Text {
				mismatches++
				t.Errorf("%s document %d:\ncapture  %q\ndebezium %q %s", rec.name, i, texts[i], want[i].Text, want[i].Err)
			}
		}
	}
	fmt.Printf("JSONCHECK documents=%d fixed=%d random=%d recorded=%d library=mysql-binlog-connector-java-%s allowed_differences=%d mismatches=%d\n",
		len(docs)+recordedDocs, fixed, len(docs)-fixed, recordedDocs, jsonbinary.LibraryVersion, differences, mismatches)
	if differences == 0 {
		t.Error("no document exercised the allowed differences: the generator lost its uint32 or negative TIME values")
	}
}

// rawJSONDocs parses events leaving JSON documents raw, as the library
// receives them, in row order; NULL and empty documents are skipped.
func rawJSONDocs(t *testing.T, events [][]byte) [][]byte {
	t.Helper()
	p := replication.NewBinlogParser()
	p.SetVerifyChecksum(true)
	p.SetRowsEventDecodeFunc(func(e *replication.RowsEvent, data []byte) error {
		_, err := decodeRowsRawJSON(e, data)
		return err
	})
	var docs [][]byte
	for _, b := range events {
		ev, err := p.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		re, ok := ev.Event.(*replication.RowsEvent)
		if !ok {
			continue
		}
		for _, row := range re.Rows {
			for i, v := range row {
				if doc, ok := v.([]byte); ok && re.Table.ColumnType[i] == 245 && len(doc) > 0 {
					docs = append(docs, append([]byte(nil), doc...))
				}
			}
		}
	}
	return docs
}

// TestMySQL8JSONRefusedLikeDebezium feeds documents that are not valid
// binary JSON: where the library throws, capture must stop with an error
// rather than emit a text.
func TestMySQL8JSONRefusedLikeDebezium(t *testing.T) {
	good := jsonDoc(jobj{"a": []any{int32(1), "xy", 2.5}, "bb": jdecimal(5, 2, false, "1", "5")}, false)
	bad := [][]byte{
		{0x0d, 1, 2},               // unknown value type
		{0x0c, 0x85},               // string length never ends
		{0x0c, 5, 'a'},             // string shorter than its length
		{0x0f, 20, 1, 0},           // opaque of an unknown column type
		{0x04, 7},                  // unknown literal
		{0x0b, 1, 2, 3},            // truncated double
		good[:len(good)-3],         // truncated container
		append([]byte{0x02}, 1, 0), // array header cut short
	}
	want := javaTexts(t, bad)
	for i, doc := range bad {
		_, err := decodeJSONDocErr(doc)
		if want[i].Err != "" && err == nil {
			t.Errorf("document %x: the Java library throws %s; capture accepts it", doc, want[i].Err)
		}
		if want[i].Err == "" && err != nil {
			t.Errorf("document %x: the Java library renders %q; capture stops: %v", doc, want[i].Text, err)
		}
		t.Logf("%x: java %q %s; capture err %v", doc, want[i].Text, want[i].Err, err)
	}
}

// decodeJSONDocErr is decodeJSONDocs for one document, returning the
// decoding error.
func decodeJSONDocErr(doc []byte) (any, error) {
	w := newBinlogWriter()
	p := replication.NewBinlogParser()
	p.SetRowsEventDecodeFunc(decodeRows)
	for _, b := range [][]byte{
		w.event(evFormatDescription, formatDescriptionBody("8.4.3")),
		w.event(evTableMap, tableMapBody(7, "app", "docs", jsonTable, []int{0})),
	} {
		if _, err := p.Parse(b); err != nil {
			return nil, err
		}
	}
	ev, err := p.Parse(w.event(evWriteRowsV2, rowsBody(7, 2, [][][]byte{{le32(1), jsonColumn(doc)}}, false, false, nil, true)))
	if err != nil {
		return nil, err
	}
	return ev.Event.(*replication.RowsEvent).Rows[0][1], nil
}
