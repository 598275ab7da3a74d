package decode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/binlake/binlake/ingest/internal/batch"
)

// checkDecoded fails the fuzz case on a recovered panic (a bug the recover
// in Decode keeps from crashing ingest, but a bug) and on an error that is
// not a *Error; a decoded change must be one the batch package accepts.
func checkDecoded(t *testing.T, ch Change, err error) {
	t.Helper()
	if err != nil {
		var de *Error
		if !errors.As(err, &de) {
			t.Fatalf("error is not a *Error: %v", err)
		}
		if errors.Is(err, ErrPanic) {
			t.Fatalf("decoding panicked: %v", err)
		}
		return
	}
	if ch.Tombstone || ch.NotChange != "" {
		return
	}
	buf, err := batch.New(ch.Schema.Columns, ch.KeyFields, batch.Limits{})
	if err != nil {
		return // e.g. key fields that are not columns
	}
	if err := buf.Add(ch.Event, timeNow()); err != nil && ch.Event.Op != batch.OpTruncate {
		if len(ch.Event.Key) == len(ch.KeyFields) && (ch.Event.Row == nil || len(ch.Event.Row) == len(ch.Schema.Columns)) {
			t.Fatalf("decoded event rejected: %v", err)
		}
	}
}

// jsonSeeds are JsonConverter key/value pairs: good records of several
// column types, and the crafted records of TestCraftedRecordsRefused.
func jsonSeeds(t testing.TB) [][2][]byte {
	out := [][2][]byte{
		{[]byte(jsonKey), []byte(jsonRecord(jsonDecimal("10", "2")+`,{"type":"string","optional":true,"field":"s"},{"type":"array","optional":true,"field":"a","items":{"type":"int64"}},`+
			`{"type":"map","optional":true,"field":"m","keys":{"type":"string"},"values":{"type":"double"}},{"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","field":"ts"}`,
			`{"id":1,"d":"AJY=","s":"x","a":[1,2],"m":{"k":1.5},"ts":1700000000000000}`))},
		{[]byte(jsonKey), []byte(jsonRecord(jsonDecimal("65", "30"), `{"id":2,"d":12.5}`))},
		{[]byte(jsonKey), []byte(jsonRecord(nestedStructs(3), `{"id":3,"s":{"s":{"s":{"x":1}}}}`))},
		{nil, []byte(jsonRecord(manyColumns(3), `{"id":4,"c0":1,"c1":null}`))},
		{[]byte(jsonKey), nil},
	}
	for _, c := range craftedRecords(t, newRegistry(t)) {
		if c.value[0] == '{' && len(c.value) < 20000 {
			out = append(out, [2][]byte{c.key, c.value})
		}
	}
	return out
}

// FuzzDecodeJSON feeds mutations of JsonConverter records, whose schemas
// travel with them, to the decoder.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range jsonSeeds(f) {
		f.Add(s[0], s[1])
	}
	d := New(nil, WithLimits(Limits{MaxElements: 100_000, JSONSchemaCacheBytes: 1 << 20}))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		ch, err := d.Decode(context.Background(), "p.db.t", 0, 1, key, value)
		checkDecoded(t, ch, err)
	})
}

// avroSeeds are Avro value schemas and payloads: the golden records and
// the crafted ones' schemas.
func avroSeeds(t testing.TB) [][2][]byte {
	reg := newRegistry(t)
	var out [][2][]byte
	for _, g := range loadGoldens(t, reg) {
		if g.value != nil {
			out = append(out, [2][]byte{mustSchema(t, reg, g.value), g.value[5:]})
		}
	}
	for _, c := range craftedRecords(t, reg) {
		if c.value[0] == 0 {
			out = append(out, [2][]byte{mustSchema(t, reg, c.value), c.value[5:]})
		}
	}
	return out
}

// FuzzAvro compiles a mutated Avro envelope schema, as one from the
// registry, and decodes a mutated payload with it: the schema is as much
// the producer's as the data.
func FuzzAvro(f *testing.F) {
	for _, s := range avroSeeds(f) {
		f.Add(s[0], s[1])
	}
	lim := Limits{MaxElements: 100_000}.withDefaults()
	f.Fuzz(func(t *testing.T, schema, payload []byte) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("panic: %v", r)
			}
		}()
		vc, err := compileValue("avro:1", schema)
		if err != nil {
			return
		}
		for _, before := range []bool{false, true} {
			ch, err := vc.decode(payload, before, lim.budget(len(payload)))
			if err != nil {
				if errors.Is(err, ErrPanic) {
					t.Fatal(err)
				}
				continue
			}
			checkDecoded(t, ch, nil)
		}
	})
}

// TestWriteDecodeFuzzSeeds rewrites testdata/fuzz/FuzzDecodeJSON and
// FuzzAvro from their seeds when UPDATE_FUZZ_SEEDS=1.
func TestWriteDecodeFuzzSeeds(t *testing.T) {
	if os.Getenv("UPDATE_FUZZ_SEEDS") != "1" {
		t.Skip("set UPDATE_FUZZ_SEEDS=1 to rewrite the seeds")
	}
	for name, seeds := range map[string][][2][]byte{"FuzzDecodeJSON": jsonSeeds(t), "FuzzAvro": avroSeeds(t)} {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\n", s[0], s[1])
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
