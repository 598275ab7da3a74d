package schemamap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// goldenSchemas are the distinct Avro key and value schemas real Debezium
// registered (schemas/testdata/debezium).
func goldenSchemas(t testing.TB) [][]byte {
	t.Helper()
	files, err := filepath.Glob("../../../schemas/testdata/debezium/*/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	seen := map[string]bool{}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var gs []struct {
			KeySchema   *string `json:"key_schema"`
			ValueSchema *string `json:"value_schema"`
		}
		if err := json.NewDecoder(bytes.NewReader(b)).Decode(&gs); err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			for _, s := range []*string{g.KeySchema, g.ValueSchema} {
				if s != nil && !seen[*s] {
					seen[*s] = true
					out = append(out, []byte(*s))
				}
			}
		}
	}
	return out
}

// mapSeeds are FuzzMap's seeds: the golden schemas, and schemas at and
// past the limits.
func mapSeeds(t testing.TB) [][]byte {
	dec := func(prec, scale string) []byte {
		return fmt.Appendf(nil, `{"type":"record","name":"Value","fields":[{"name":"id","type":"long"},{"name":"d","type":["null",{"type":"bytes",`+
			`"connect.name":"org.apache.kafka.connect.data.Decimal","connect.parameters":{"scale":%q,"connect.decimal.precision":%q}}]}]}`, scale, prec)
	}
	return append(goldenSchemas(t),
		dec("10", "11"), dec("65", "30"), dec("38", "38"), dec("0", "0"),
		[]byte(`{"type":"record","name":"Value","fields":[{"name":"id","type":"long"},{"name":"self","type":["null","Value"]}]}`),
		[]byte(`{"type":"record","name":"Value","fields":[{"name":"id","type":"long"},{"name":"a","type":{"type":"array","items":{"type":"map","values":"string"}}}]}`),
	)
}

// FuzzMap maps mutated Avro schemas as a registered schema is mapped:
// ParseAvro, Map (keyed on the first column), ChangeLog, WithSourceOrder,
// LowerColumns and EvolveMapping onto itself. Errors are fine; a panic (or
// ErrPanic, a panic recovered) is a bug, and a schema that maps evolves
// onto itself with no change.
func FuzzMap(f *testing.F) {
	for _, s := range mapSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		check := func(what string, err error) bool {
			t.Helper()
			if errors.Is(err, ErrPanic) {
				t.Fatalf("%s: %v", what, err)
			}
			return err == nil
		}
		cs, err := ParseAvro(schema)
		if !check("ParseAvro", err) {
			return
		}
		row, err := RowSchema(cs)
		if !check("RowSchema", err) {
			return
		}
		var key []string
		if len(row.Fields) > 0 {
			key = []string{row.Fields[0].Name}
		}
		if _, lkey, err := LowerColumns(row, key, nil); check("LowerColumns", err) && len(lkey) != len(key) {
			t.Fatalf("LowerColumns: key %v from %v", lkey, key)
		}
		if m, err := ChangeLog(row); check("ChangeLog", err) {
			_, err := WithSourceOrder(m)
			check("WithSourceOrder", err)
		}
		for _, k := range [][]string{nil, key} {
			m, err := Map(row, k)
			if !check("Map", err) {
				continue
			}
			if len(m.Columns) != len(row.Fields) {
				t.Fatalf("Map: %d columns for %d fields", len(m.Columns), len(row.Fields))
			}
			changes, err := EvolveMapping(m.Schema, m)
			if check("EvolveMapping", err) && len(changes) != 0 {
				t.Fatalf("a schema evolved onto itself: %v", changes)
			}
		}
	})
}

// TestWriteMapFuzzSeeds rewrites testdata/fuzz/FuzzMap from mapSeeds when
// UPDATE_FUZZ_SEEDS=1.
func TestWriteMapFuzzSeeds(t *testing.T) {
	if os.Getenv("UPDATE_FUZZ_SEEDS") != "1" {
		t.Skip("set UPDATE_FUZZ_SEEDS=1 to rewrite the seeds")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzMap")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range mapSeeds(t) {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
