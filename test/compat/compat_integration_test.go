//go:build integration

package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// allowed lists the only fields that may differ, with the reason. Paths are
// "key.<field>", "value.<field>...", "keyschema" / "valueschema" paths, or
// "header.<name>".
var allowed = map[string]string{
	"value.ts_ms":                     "processing time of each connector",
	"value.ts_us":                     "processing time of each connector",
	"value.ts_ns":                     "processing time of each connector",
	"value.source.version":            "the producer's own version string",
	"header.__debezium.context.runId": "Debezium's per-run id, not part of the event",
}

// TestCompatWithDebezium runs the Debezium MariaDB connector and capture on
// the same database, applies the same workload (a table per type family;
// inserts, updates, deletes, a primary-key update, truncate, ALTER TABLE),
// and compares every event: key and value schemas and values.
func TestCompatWithDebezium(t *testing.T) {
	m := testenv.MariaDBEnv(t)
	brokers := testenv.KafkaBrokers(t)
	ctx := t.Context()
	db := testenv.Unique(t, "compat")
	dbzPrefix, capPrefix := "dbz_"+db, "cap_"+db
	admin := m.AdminDB(t, "")
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+db+" CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE IF EXISTS " + db) })

	// Debezium, streaming only; settings of the golden run (see schemas/testdata/debezium).
	debezium.Run(t, debezium.Config{Database: db, TopicPrefix: dbzPrefix, ServerID: 5400 + uint32(time.Now().Unix()%1000),
		SnapshotMode: "no_data", Extra: map[string]string{"skipped.operations": "none", "include.schema.changes": "false"}})

	// capture, as a process.
	bin := filepath.Join(t.TempDir(), "capture")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/binlake/binlake/capture").CombinedOutput(); err != nil {
		t.Fatalf("building capture: %v\n%s", err, out)
	}
	logPath := filepath.Join(t.TempDir(), "capture.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"CAPTURE_MYSQL_ADDR="+m.Addr, "CAPTURE_MYSQL_USER="+m.CaptureUser, "CAPTURE_MYSQL_PASSWORD="+m.CapturePassword,
		"CAPTURE_KAFKA_BROKERS="+strings.Join(brokers, ","), "CAPTURE_SCHEMA_REGISTRY_URL="+testenv.RegistryURL(t),
		"CAPTURE_TOPIC_PREFIX="+capPrefix, "CAPTURE_DATABASE_INCLUDE_LIST="+db, "CAPTURE_METRICS_ADDR=off")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logf.Close() })
	testenv.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "Connected to server")
	}, "capture to connect")

	workload, err := os.ReadFile(filepath.Join(debezium.RepoRoot(), "schemas/testdata/debezium/workload.sql"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, stmt := range statements(string(workload)) {
		if strings.HasPrefix(strings.ToUpper(stmt), "CREATE DATABASE") {
			continue
		}
		stmt = strings.ReplaceAll(stmt, "USE golden", "USE "+db)
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// A last change on a marker table tells when both have caught up.
	for _, s := range []string{"CREATE TABLE zz_marker (id INT PRIMARY KEY)", "INSERT INTO zz_marker VALUES (1)"} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.ReadAll(t, brokers, dec, dbzPrefix+"."+db+".zz_marker", 1, 0, 2*time.Minute)
	kafkatest.ReadAll(t, brokers, dec, capPrefix+"."+db+".zz_marker", 1, 0, 2*time.Minute)

	dbzTopics := debezium.ReadPrefixUntilIdle(t, brokers, dbzPrefix+".", 3*time.Second)
	var tables []string
	for topic := range dbzTopics {
		tables = append(tables, strings.TrimPrefix(topic, dbzPrefix+"."))
	}
	sort.Strings(tables)
	if len(tables) < 7 {
		t.Fatalf("Debezium wrote %d table topics (%v), want every workload table", len(tables), tables)
	}

	var events, fields int
	var mismatches []string
	for _, tbl := range tables {
		want := kafkatest.ReadAll(t, brokers, dec, dbzPrefix+"."+tbl, len(dbzTopics[dbzPrefix+"."+tbl]), time.Second, time.Minute)
		got := kafkatest.ReadAll(t, brokers, dec, capPrefix+"."+tbl, 0, 2*time.Second, time.Minute)
		if len(got) != len(want) {
			mismatches = append(mismatches, fmt.Sprintf("%s: %d events from capture, %d from Debezium", tbl, len(got), len(want)))
		}
		for i := range min(len(got), len(want)) {
			events++
			n, diffs := compareRecord(ctx, t, dec, dbzPrefix, capPrefix, want[i], got[i])
			fields += n
			for _, d := range diffs {
				mismatches = append(mismatches, fmt.Sprintf("%s #%d (%s): %s", tbl, i, want[i].Op(), d))
			}
		}
	}
	for _, mm := range mismatches {
		t.Log(mm)
	}
	fmt.Printf("COMPAT events=%d fields=%d mismatches=%d\n", events, fields, len(mismatches))
	if len(mismatches) > 0 {
		t.Fatalf("%d mismatches between capture and Debezium", len(mismatches))
	}
}

// compareRecord compares one pair of records; it returns the number of
// fields compared and the differences not in allowed.
func compareRecord(ctx context.Context, t *testing.T, dec *kafkatest.Decoder, dbzPrefix, capPrefix string, want, got kafkatest.Record) (int, []string) {
	t.Helper()
	norm := func(prefix string) func(any) any {
		return func(v any) any {
			if s, ok := v.(string); ok {
				return strings.ReplaceAll(s, prefix, "P")
			}
			return v
		}
	}
	w, g := map[string]string{}, map[string]string{}
	flatten("key", want.Key, w, norm(dbzPrefix))
	flatten("key", got.Key, g, norm(capPrefix))
	flatten("value", want.Value, w, norm(dbzPrefix))
	flatten("value", got.Value, g, norm(capPrefix))
	for k, v := range want.Headers {
		w["header."+k] = strings.ReplaceAll(v, dbzPrefix, "P")
	}
	for k, v := range got.Headers {
		g["header."+k] = strings.ReplaceAll(v, capPrefix, "P")
	}
	schemas := func(r kafkatest.Record, prefix string, out map[string]string) {
		for _, s := range []struct {
			name string
			id   int
			set  bool
		}{{"keyschema", r.KeyID, r.Key != nil}, {"valueschema", r.ValueID, r.Value != nil}} {
			if !s.set {
				continue
			}
			text, err := dec.Schema(ctx, s.id)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal([]byte(strings.ReplaceAll(text, prefix, "P")), &v); err != nil {
				t.Fatalf("schema %d is not JSON: %v", s.id, err)
			}
			flatten(s.name, v, out, func(x any) any { return x })
		}
	}
	schemas(want, dbzPrefix, w)
	schemas(got, capPrefix, g)

	var diffs []string
	keys := map[string]bool{}
	for k := range w {
		keys[k] = true
	}
	for k := range g {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if _, ok := allowed[k]; ok {
			continue
		}
		wv, wok := w[k]
		gv, gok := g[k]
		if wok != gok || wv != gv {
			diffs = append(diffs, fmt.Sprintf("%s: debezium=%s capture=%s", k, show(wv, wok), show(gv, gok)))
		}
	}
	return len(sorted), diffs
}

func show(v string, ok bool) string {
	if !ok {
		return "<absent>"
	}
	if len(v) > 300 {
		return v[:300] + "..."
	}
	return v
}

// flatten writes every leaf of v under path into out.
func flatten(path string, v any, out map[string]string, norm func(any) any) {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			out[path] = "null"
			return
		}
		for k, inner := range x {
			flatten(path+"."+k, inner, out, norm)
		}
	case []any:
		for i, inner := range x {
			flatten(fmt.Sprintf("%s[%d]", path, i), inner, out, norm)
		}
	case nil:
		out[path] = "null"
	case *big.Rat:
		out[path] = "decimal:" + x.RatString()
	case []byte:
		out[path] = fmt.Sprintf("bytes:%x", x)
	default:
		out[path] = fmt.Sprintf("%T:%v", x, norm(x))
	}
}
