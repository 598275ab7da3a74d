package decode

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/schemas/debezium"
)

// jsonKey is a JsonConverter key with one int32 id.
const jsonKey = `{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}]},"payload":{"id":1}}`

// jsonRecord is a JsonConverter envelope whose after image has the
// fields (Connect JSON schema field objects, after the id) and payload.
func jsonRecord(fields, after string) string {
	row := `{"type":"struct","optional":true,"name":"p.db.t.Value","field":"%s","fields":[{"type":"int32","optional":false,"field":"id"}` + fields + `]}`
	return fmt.Sprintf(`{"schema":{"type":"struct","name":"p.db.t.Envelope","fields":[`+row+`,`+row+`,{"type":"string","field":"op"}]},`+
		`"payload":{"before":null,"after":%s,"op":"c"}}`, "before", "after", after)
}

// jsonDecimal is a Connect Decimal field of the given parameters.
func jsonDecimal(prec, scale string) string {
	return `,{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"` + scale +
		`","connect.decimal.precision":"` + prec + `"},"field":"d"}`
}

// avroEnvelope is a Debezium-shaped Avro envelope whose Value record has
// a long id and the given fields (Avro field objects), and a skipped
// last field "extra" of type extra.
func avroEnvelope(fields, extra string) string {
	return `{"type":"record","name":"Envelope","namespace":"p.db.t","fields":[` +
		`{"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"long"}` + fields + `]}],"default":null},` +
		`{"name":"after","type":["null","Value"],"default":null},{"name":"op","type":"string"},{"name":"extra","type":` + extra + `}]}`
}

// avroBody is an envelope body with before null, after {id 1}, op "c",
// then extra.
func avroBody(extra ...byte) []byte { return append([]byte{0, 2, 2, 2, 'c'}, extra...) }

// nestedRecords is an Avro record type nesting depth levels of two fields
// of one named record type each: 2^depth null leaves in a value that
// takes no bytes.
func nestedRecords(depth int, leafFields string) string {
	t := `{"type":"record","name":"L` + fmt.Sprint(depth) + `","fields":[` + leafFields + `]}`
	for k := depth - 1; k >= 0; k-- {
		t = fmt.Sprintf(`{"type":"record","name":"L%d","fields":[{"name":"a","type":%s},{"name":"b","type":"L%d"}]}`, k, t, k+1)
	}
	return t
}

// nestedStructs is a Connect JSON field nesting depth structs.
func nestedStructs(depth int) string {
	t := `{"type":"int32","optional":true,"field":"x"}`
	for range depth {
		t = `{"type":"struct","optional":true,"field":"s","fields":[` + t + `]}`
	}
	return "," + t
}

// manyColumns is n optional int32 Connect JSON fields.
func manyColumns(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,{"type":"int32","optional":true,"field":"c%d"}`, i)
	}
	return b.String()
}

// crafted is a record made to crash or exhaust the decoder, and the errors
// decoding it must wrap.
type crafted struct {
	name       string
	key, value []byte
	want       []error
}

func craftedRecords(t testing.TB, reg *sr.Client) []crafted {
	t.Helper()
	avro := func(schema string, body []byte) []byte {
		s, err := reg.CreateSchema(context.Background(), fmt.Sprintf("s%d", len(schema)), sr.Schema{Schema: schema, Type: sr.TypeAvro})
		if err != nil {
			t.Fatalf("registering %s: %v", schema, err)
		}
		return debezium.AppendFrame(nil, uint32(s.ID), body)
	}
	// A 4 KB record of 3-byte block headers each claiming 4,000 items.
	var blocks []byte
	for len(blocks) < 4000 {
		blocks = debezium.AppendLong(blocks, 4000)
	}
	zeroSizeSkipped := avro(avroEnvelope("", `{"type":"array","items":{"type":"record","name":"E","fields":[]}}`), avroBody(blocks...))
	zeroFixed := avro(avroEnvelope(`,{"name":"a","type":["null",{"type":"array","items":{"type":"fixed","name":"F","size":0}}]}`, `["null","int"]`),
		append([]byte{0, 2, 2, 2}, append(blocks, 0, 2, 'c', 0)...))
	avroDecimal := avro(avroEnvelope(`,{"name":"d","type":["null",{"type":"bytes","connect.name":"org.apache.kafka.connect.data.Decimal","connect.parameters":{"scale":"11","connect.decimal.precision":"10"}}],"default":null}`, `["null","int"]`),
		[]byte{0, 2, 2, 0, 2, 'c', 0})
	// Empty leaves take no bytes: skipping the field is 2^40 steps over
	// nothing. The row's leaves have a field (a column of an empty record
	// is refused as such, below).
	fanOut := avro(avroEnvelope("", nestedRecords(40, "")), avroBody())
	fanOutRow := avro(avroEnvelope(`,{"name":"n","type":`+nestedRecords(40, `{"name":"x","type":"int"}`)+`}`, `["null","int"]`), avroBody(0))
	emptyRecord := avro(avroEnvelope(`,{"name":"n","type":{"type":"record","name":"E","fields":[]}}`, `["null","int"]`), avroBody(0))
	countBeyond := avro(avroEnvelope("", `{"type":"array","items":"long"}`), avroBody(debezium.AppendLong(nil, 1000)...))

	key := []byte(jsonKey)
	js := func(fields, after string) []byte { return []byte(jsonRecord(fields, after)) }
	return []crafted{
		{"json decimal scale over precision", key, js(jsonDecimal("10", "11"), `{"id":1,"d":null}`), []error{ErrBadSchema, schemamap.ErrLimit}},
		{"json decimal precision 0", key, js(jsonDecimal("0", "0"), `{"id":1,"d":null}`), []error{ErrBadSchema, schemamap.ErrLimit}},
		{"json decimal negative scale", key, js(jsonDecimal("10", "-1"), `{"id":1,"d":null}`), []error{ErrBadSchema, schemamap.ErrLimit}},
		{"json decimal scale 200000", key, js(jsonDecimal("300000", "200000"), `{"id":1,"d":"AQ=="}`), []error{ErrBadSchema, schemamap.ErrLimit}},
		{"json decimal exponent", key, js(jsonDecimal("20", "2"), `{"id":1,"d":1e999999}`), []error{ErrLimit}},
		{"json duplicate column", key, js(`,{"type":"int32","optional":true,"field":"id"}`, `{"id":1}`), []error{ErrBadSchema, schemamap.ErrLimit}},
		{"json empty column name", key, js(`,{"type":"int32","optional":true,"field":""}`, `{"id":1}`), []error{ErrBadSchema, schemamap.ErrLimit}},
		{"json long column name", key, js(`,{"type":"int32","optional":true,"field":"`+strings.Repeat("n", 2000)+`"}`, `{"id":1}`), []error{ErrBadSchema, schemamap.ErrLimit}},
		{"json nested 70 levels", key, js(nestedStructs(70), `{"id":1}`), []error{ErrBadSchema}},
		{"json 10001 columns", key, js(manyColumns(schemamap.MaxFields), `{"id":1}`), []error{ErrBadSchema, schemamap.ErrLimit}},
		{"json key decimal scale over precision", []byte(`{"schema":{"type":"struct","fields":[{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"5","connect.decimal.precision":"2"},"field":"id"}]},"payload":{"id":"AQ=="}}`),
			js("", `{"id":1}`), []error{ErrBadSchema, schemamap.ErrLimit}},
		{"avro decimal scale over precision", key, avroDecimal, []error{ErrBadSchema, schemamap.ErrLimit}},
		{"avro array of empty records", key, zeroSizeSkipped, []error{ErrBadSchema, ErrLimit}},
		{"avro array of fixed(0)", key, zeroFixed, []error{ErrBadSchema, ErrLimit}},
		{"avro 2^40 fields in a skipped field", key, fanOut, []error{ErrLimit}},
		{"avro 2^40 fields in the row", key, fanOutRow, []error{ErrBadSchema, schemamap.ErrLimit}},
		{"avro column of an empty record", key, emptyRecord, []error{ErrBadSchema, schemamap.ErrUnsupported}},
		{"avro block count beyond the data", key, countBeyond, []error{ErrMalformed}},
	}
}

// TestCraftedRecordsRefused: every record made to crash the decoder or to
// make it work without bound is refused, promptly, with a *Error naming the
// record and wrapping the sentinels that say why.
func TestCraftedRecordsRefused(t *testing.T) {
	reg := newRegistry(t)
	d := New(reg)
	for _, c := range craftedRecords(t, reg) {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := d.Decode(t.Context(), "p.db.t", 2, 41, c.key, c.value)
			var de *Error
			if !errors.As(err, &de) || de.Topic != "p.db.t" || de.Partition != 2 || de.Offset != 41 {
				t.Fatalf("err = %v, want a *Error naming p.db.t/2 at 41", err)
			}
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want it to wrap %v", err, w)
				}
			}
			if errors.Is(err, ErrPanic) {
				t.Errorf("err = %v: a panic recovered, not a refusal", err)
			}
			t.Logf("%v (%s)", err, time.Since(start).Round(time.Microsecond))
		})
	}
}

// panicRegistry panics when asked for a schema.
type panicRegistry struct{}

func (panicRegistry) SchemaByID(context.Context, int) (sr.Schema, error) { panic("registry bug") }

// TestPanicIsARecordError: a panic while decoding a record becomes that
// record's *Error (ErrPanic), not a crash of ingest.
func TestPanicIsARecordError(t *testing.T) {
	_, err := New(panicRegistry{}).Decode(t.Context(), "p.db.t", 1, 9, []byte(jsonKey), debezium.AppendFrame(nil, 5, []byte{0}))
	var de *Error
	if !errors.Is(err, ErrPanic) || !errors.As(err, &de) || de.Offset != 9 || de.Partition != 1 {
		t.Fatalf("err = %v, want ErrPanic in a *Error naming p.db.t/1 at 9", err)
	}
}

// TestJSONSchemaCacheBounded: the compiled JSON schemas held stay within
// Limits.JSONSchemaCacheBytes, and a schema met again after being dropped
// still decodes.
func TestJSONSchemaCacheBounded(t *testing.T) {
	const bound = 8 << 10
	d := New(nil, WithLimits(Limits{JSONSchemaCacheBytes: bound}))
	first := []byte(jsonRecord(manyColumns(1), `{"id":1}`))
	for i := range 200 {
		v := []byte(jsonRecord(manyColumns(1+i%50), `{"id":1}`))
		if _, err := d.Decode(t.Context(), "p.db.t", 0, int64(i), []byte(jsonKey), v); err != nil {
			t.Fatal(err)
		}
		d.mu.RLock()
		held, n := d.jsonBytes, 0
		for k := range d.json {
			n += len(k)
		}
		d.mu.RUnlock()
		if held > bound || n != held {
			t.Fatalf("after %d schemas: %d bytes held (counted %d), bound %d", i+1, n, held, bound)
		}
	}
	if _, err := d.Decode(t.Context(), "p.db.t", 0, 999, []byte(jsonKey), first); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeWorst prints, for the worst record of each kind, its size and
// what decoding it cost (DECODE_WORST lines; figures, no timed
// assertion): refused ones, and the largest of each kind still accepted.
func TestDecodeWorst(t *testing.T) {
	reg := newRegistry(t)
	d := New(reg)
	measure := func(kind string, key, value []byte, wantErr bool) {
		t.Helper()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := d.Decode(t.Context(), "p.db.t", 0, 1, key, value)
		ns := time.Since(start).Nanoseconds()
		runtime.ReadMemStats(&after)
		if (err != nil) != wantErr {
			t.Errorf("%s: err = %v, want an error: %v", kind, err, wantErr)
		}
		res := "accepted"
		if err != nil {
			res = "refused"
		}
		t.Logf("DECODE_WORST kind=%s result=%s bytes=%d ns=%d alloc_bytes=%d", kind, res, len(key)+len(value), ns, after.TotalAlloc-before.TotalAlloc)
	}
	for _, c := range craftedRecords(t, reg) {
		measure(strings.ReplaceAll(c.name, " ", "-"), c.key, c.value, true)
	}
	key := []byte(jsonKey)
	// The largest decimal still accepted: precision 1000, scale 38, a
	// 418-byte unscaled value, formatted as a string.
	big := make([]byte, 418)
	for i := range big {
		big[i] = 0x7f
	}
	measure("decimal-precision-1000-scale-38", key, []byte(jsonRecord(jsonDecimal("1000", "38"),
		fmt.Sprintf(`{"id":1,"d":%q}`, b64(big)))), false)
	measure("nested-60-levels", key, []byte(jsonRecord(nestedStructs(60), `{"id":1}`)), false)
	measure("schema-10000-columns", key, []byte(jsonRecord(manyColumns(schemamap.MaxFields-1), `{"id":1}`)), false)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
