//go:build integration

package debezium_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

var update = flag.Bool("update", false, "regenerate schemas/testdata/debezium from the real Debezium connector")

const (
	goldenDB         = "golden"
	goldenPrefix     = "dbzgolden"     // streaming run (snapshot.mode=no_data)
	goldenSnapPrefix = "dbzgoldensnap" // snapshot run (snapshot.mode=initial)
	goldenServerID   = 223344
)

func goldenDir() string {
	return filepath.Join(debezium.RepoRoot(), "schemas", "testdata", "debezium")
}

// goldenExtra are the connector settings of both golden runs on top of
// debezium.Properties: emit TRUNCATE events (skipped by default).
var goldenExtra = map[string]string{"skipped.operations": "none"}

// TestRecordGoldens regenerates the golden Debezium events under
// schemas/testdata/debezium: run with
//
//	go test -tags integration ./test/debezium -run TestRecordGoldens -update
//
// A streaming run (snapshot.mode=no_data, started before workload.sql creates
// the tables) records c/u/d/t events; a second run with snapshot.mode=initial
// records the op=r events of the final table contents.
func TestRecordGoldens(t *testing.T) {
	if !*update {
		t.Skip("regenerates the golden files; run with -update")
	}
	m := testenv.MariaDBEnv(t)
	brokers := testenv.KafkaBrokers(t)
	reg := debezium.NewRegistry(testenv.RegistryURL(t))
	reg.RawLogical = true
	ctx := t.Context()

	admin := m.AdminDB(t, "")
	if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+goldenDB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE IF EXISTS " + goldenDB) })
	streamEnds := endOffsets(t, brokers, goldenPrefix+".")
	snapEnds := endOffsets(t, brokers, goldenSnapPrefix+".")

	sqlText, err := os.ReadFile(filepath.Join(goldenDir(), "workload.sql"))
	if err != nil {
		t.Fatal(err)
	}

	// Streaming run.
	stream := debezium.Config{Database: goldenDB, TopicPrefix: goldenPrefix, ServerID: goldenServerID,
		SnapshotMode: "no_data", Extra: goldenExtra}
	c := debezium.Run(t, stream)
	runWorkload(t, admin, string(sqlText))
	waitMarker(t, brokers, goldenPrefix, streamEnds)
	recs := since(debezium.ReadPrefix(t, brokers, goldenPrefix+".", time.Minute), streamEnds)
	writeGoldens(t, reg, "streaming", recs)
	writeProperties(t, "streaming.properties", c.Props)
	c.Stop(t)

	// Snapshot run over the final contents.
	snap := debezium.Config{Database: goldenDB, TopicPrefix: goldenSnapPrefix, ServerID: goldenServerID + 1,
		SnapshotMode: "initial", Extra: goldenExtra}
	c = debezium.Run(t, snap)
	waitSnapshotEnd(t, brokers, reg, goldenSnapPrefix, snapEnds)
	recs = since(debezium.ReadPrefix(t, brokers, goldenSnapPrefix+".", time.Minute), snapEnds)
	writeGoldens(t, reg, "snapshot", recs)
	writeProperties(t, "snapshot.properties", c.Props)
}

// endOffsets returns the end offset of every partition of the topics that
// start with prefix: the records a run must skip (topics are not deleted, as
// Kafka deletes asynchronously and Connect may then fail to recreate one).
func endOffsets(t *testing.T, brokers []string, prefix string) map[string]map[int32]int64 {
	t.Helper()
	return kafkatest.EndOffsets(t, brokers, func(n string) bool { return strings.HasPrefix(n, prefix) })
}

// since drops the records before the recorded end offsets and renumbers the
// rest from 0 (so that the golden offsets do not depend on earlier runs).
func since(recs map[string][]debezium.Record, ends map[string]map[int32]int64) map[string][]debezium.Record {
	out := map[string][]debezium.Record{}
	for topic, rs := range recs {
		for _, r := range rs {
			base := ends[topic][r.Partition]
			if r.Offset < base {
				continue
			}
			r.Offset -= base
			out[topic] = append(out[topic], r)
		}
	}
	return out
}

// runWorkload executes the statements of workload.sql one by one on a single
// connection (USE and SET persist). A statement ends with ';' at the end of a
// line; lines starting with "--" are comments.
func runWorkload(t *testing.T, pool *sql.DB, text string) {
	t.Helper()
	conn, err := pool.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var stmt strings.Builder
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		stmt.WriteString(line)
		stmt.WriteString("\n")
		if !strings.HasSuffix(trimmed, ";") {
			continue
		}
		q := strings.TrimSuffix(strings.TrimSpace(stmt.String()), ";")
		stmt.Reset()
		if _, err := conn.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if strings.TrimSpace(stmt.String()) != "" {
		t.Fatalf("workload.sql ends without ';': %s", stmt.String())
	}
}

type goldenHeader struct {
	Key string `json:"key"`
	// Value is the header value as a string when it is valid UTF-8 (Connect's
	// SimpleHeaderConverter writes text), else ValueBase64 holds its bytes.
	Value       *string `json:"value,omitempty"`
	ValueBase64 []byte  `json:"value_base64,omitempty"`
}

type goldenRecord struct {
	Topic       string         `json:"topic"`
	Partition   int32          `json:"partition"`
	Offset      int64          `json:"offset"`
	KeySchema   *string        `json:"key_schema"`   // the registered Avro schema, verbatim; null for a null key
	ValueSchema *string        `json:"value_schema"` // null for a null value (tombstone)
	Key         any            `json:"key"`
	Value       any            `json:"value"`
	Headers     []goldenHeader `json:"headers"`
}

// writeGoldens decodes the records of each topic and writes them to
// <dir>/<topic>.json, replacing the folder.
func writeGoldens(t *testing.T, reg *debezium.Registry, dir string, byTopic map[string][]debezium.Record) {
	t.Helper()
	out := filepath.Join(goldenDir(), dir)
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		var recs []goldenRecord
		for _, r := range byTopic[topic] {
			g := goldenRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Headers: []goldenHeader{}}
			k, err := reg.Decode(t.Context(), r.Key)
			if err != nil {
				t.Fatalf("%s@%d key: %v", topic, r.Offset, err)
			}
			v, err := reg.Decode(t.Context(), r.Value)
			if err != nil {
				t.Fatalf("%s@%d value: %v", topic, r.Offset, err)
			}
			if r.Key != nil {
				g.KeySchema, g.Key = &k.Schema, k.Native
			}
			if r.Value != nil {
				g.ValueSchema, g.Value = &v.Schema, v.Native
			}
			for _, h := range r.Headers {
				gh := goldenHeader{Key: h.Key}
				if utf8.Valid(h.Value) {
					s := string(h.Value)
					gh.Value = &s
				} else {
					gh.ValueBase64 = h.Value
				}
				g.Headers = append(g.Headers, gh)
			}
			recs = append(recs, g)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(recs); err != nil {
			t.Fatalf("%s: %v", topic, err)
		}
		file := filepath.Join(out, topic+".json")
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d records to %s", len(recs), file)
	}
}

func writeProperties(t *testing.T, name string, props map[string]string) {
	t.Helper()
	text := "# Connector properties of the golden run (written by TestRecordGoldens).\n" +
		"# @DIR@ is the worker directory, which deploy/local/debezium.sh substitutes.\n" +
		debezium.FormatProperties(props)
	if err := os.WriteFile(filepath.Join(goldenDir(), name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitMarker waits for the marker table's event of this run.
func waitMarker(t *testing.T, brokers []string, prefix string, ends map[string]map[int32]int64) {
	t.Helper()
	topic := prefix + "." + goldenDB + ".marker"
	debezium.ReadTopic(t, brokers, topic, int(ends[topic][0])+1, 2*time.Minute)
}

// waitSnapshotEnd waits until the snapshot run has published the record
// that Debezium marks source.snapshot=last, the end of its snapshot (the
// marker table is not the last one snapshotted).
func waitSnapshotEnd(t *testing.T, brokers []string, reg *debezium.Registry, prefix string, ends map[string]map[int32]int64) {
	t.Helper()
	testenv.CheckFor(t, 2*time.Minute, time.Second, func() error {
		n := 0
		for _, rs := range since(debezium.ReadPrefix(t, brokers, prefix+".", time.Minute), ends) {
			for _, r := range rs {
				n++
				v, err := reg.Decode(t.Context(), r.Value)
				if err != nil {
					t.Fatalf("%s@%d value: %v", r.Topic, r.Offset, err)
				}
				if snapshotMark(v.Native) == "last" {
					return nil
				}
			}
		}
		return fmt.Errorf("%d records under %s., none with source.snapshot=last", n, prefix)
	})
}

// snapshotMark returns the source.snapshot field of a decoded envelope, ""
// for a tombstone; goavro wraps a union's value in a one-entry map.
func snapshotMark(native any) string {
	unwrap := func(v any) any {
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for _, inner := range m {
				return inner
			}
		}
		return v
	}
	env, _ := native.(map[string]any)
	src, _ := unwrap(env["source"]).(map[string]any)
	mark, _ := unwrap(src["snapshot"]).(string)
	return mark
}
