//go:build integration

package status

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/renamecheck"
	"github.com/binlake/binlake/test/testenv"
)

// TestStatus builds two tables whose offsets, source time and GTID are
// known, against two transactional topics whose records carry known
// timestamps, and checks what ingest status prints: offsets, lag (a
// transaction marker alone is none), the age of the oldest waiting change,
// the cut, and the exit on --max-lag.
func TestStatus(t *testing.T) {
	ice := testenv.IcebergEnv(t)
	brokers := testenv.KafkaBrokers(t)
	ctx := t.Context()

	// Topics: t1 holds records 0-4 and its commit marker at 5; t2 records
	// 0-2 and the marker at 3. The records' times are known.
	t1, t2 := testenv.Unique(t, "status_a"), testenv.Unique(t, "status_b")
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopics(ctx, 1, 1, nil, t1, t2); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)
	pr, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(testenv.Unique(t, "status-tx")))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if err := pr.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		pr.Produce(ctx, &kgo.Record{Topic: t1, Value: []byte("x"), Timestamp: base.Add(time.Duration(i) * time.Second)}, nil)
	}
	for i := range 3 {
		pr.Produce(ctx, &kgo.Record{Topic: t2, Value: []byte("y"), Timestamp: base.Add(time.Duration(i) * time.Second)}, nil)
	}
	if err := pr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pr.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	// Tables: a has applied t1 up to offset 3 (records 3 and 4 wait), b
	// all of t2 (only the marker is past it).
	cat, err := rest.NewCatalog(ctx, "status", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	ns := table.Identifier{testenv.Unique(t, "status")}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	mk := func(name, topic string, next int64, gtid string, ts time.Time) {
		ident := append(table.Identifier{}, ns[0], name)
		t.Cleanup(func() { _ = cat.DropTable(context.WithoutCancel(ctx), ident) })
		schema := iceberg.NewSchemaWithIdentifiers(0, []int{1}, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
		tbl, err := cat.CreateTable(ctx, ident, schema, catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
		if err != nil {
			t.Fatal(err)
		}
		as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).Append(1)
		rec := b.NewRecordBatch()
		defer rec.Release()
		rdr, err := array.NewRecordReader(as, []arrow.RecordBatch{rec})
		if err != nil {
			t.Fatal(err)
		}
		if tbl, err = tbl.Append(ctx, rdr, iceberg.Properties{commit.CommitIDKey: "c-" + name,
			commit.SourceTsKey: fmt.Sprint(ts.UnixMilli()), commit.SourceGTIDKey: gtid}); err != nil {
			t.Fatal(err)
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{commit.OffsetsKeyPrefix + topic: fmt.Sprintf(`{"0":%d}`, next)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mk("a", t1, 3, "0-1-10", base.Add(2*time.Second))
	mk("b", t2, 3, "0-1-20", base.Add(2*time.Second))
	// A table that is no ingest table (no offsets) is left out.
	other := append(table.Identifier{}, ns[0], "other")
	t.Cleanup(func() { _ = cat.DropTable(context.WithoutCancel(ctx), other) })
	if _, err := cat.CreateTable(ctx, other, iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.DropNamespace(context.WithoutCancel(ctx), ns) })

	vars := map[string]string{"INGEST_CATALOG_URI": ice.URI, "INGEST_KAFKA_BROKERS": strings.Join(brokers, ",")}
	status := func(args ...string) (Report, string, error) {
		var out bytes.Buffer
		err := runArgs(ctx, append([]string{"--tables", ns[0] + `\..*`}, args...), env(vars), &out)
		var rep Report
		if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil && strings.Contains(strings.Join(args, " "), "json") {
			t.Fatalf("status output is not JSON: %v\n%s", jerr, out.String())
		}
		return rep, out.String(), err
	}
	rep, out, err := status("--format=json")
	if err != nil {
		t.Fatalf("ingest status: %v\n%s", err, out)
	}
	if len(rep.Tables) != 2 {
		t.Fatalf("status lists %d tables, want a and b:\n%s", len(rep.Tables), out)
	}
	a, b := rep.Tables[0], rep.Tables[1]
	if a.Table != ns[0]+".a" || b.Table != ns[0]+".b" {
		t.Fatalf("tables %s, %s; want %s.a and %s.b", a.Table, b.Table, ns[0], ns[0])
	}
	// a waits for records 3 and 4: the end is the marker's offset + 1.
	pa := a.Partitions[0]
	if pa.Topic != t1 || pa.Consumed != 3 || pa.End != 6 || pa.Lag != 3 || a.Lag != 3 {
		t.Errorf("a: %+v (lag %d), want topic %s consumed 3, end 6, lag 3", pa, a.Lag, t1)
	}
	// Its oldest waiting change is record 3, written at base+3s.
	if want := time.Since(base.Add(3 * time.Second)).Seconds(); math.Abs(pa.LagSeconds-want) > 30 {
		t.Errorf("a waits %.1f s, want about %.1f (record 3's time)", pa.LagSeconds, want)
	}
	if a.SourceGTID != "0-1-10" || a.SourceTime == nil || !a.SourceTime.Equal(base.Add(2*time.Second)) || a.LastCommit == nil || a.DataFiles != 1 {
		t.Errorf("a: gtid %q, source time %v, last commit %v, %d data files; want 0-1-10, %v, a time, 1", a.SourceGTID, a.SourceTime, a.LastCommit, a.DataFiles, base.Add(2*time.Second))
	}
	// b is past every record of t2; only the marker is beyond it.
	if pb := b.Partitions[0]; pb.Consumed != 3 || pb.End != 4 || pb.Lag != 0 || pb.LagSeconds != 0 {
		t.Errorf("b: %+v, want consumed 3, end 4 and no lag (a marker is no change)", pb)
	}
	if rep.Cut != "0-1-10" {
		t.Errorf("cut %q (%s), want 0-1-10: a waits and holds 0-1-10", rep.Cut, rep.CutReason)
	}

	if _, out, err := status("--max-lag=1m"); !errors.Is(err, ErrStale) || !strings.Contains(out, "stale: "+ns[0]+".a") {
		t.Errorf("--max-lag=1m with a change waiting 10 min: err %v, want ErrStale naming a:\n%s", err, out)
	}
	_, text, err := status("--max-lag=1h", "--max-lag-records=5")
	if err != nil {
		t.Errorf("--max-lag=1h --max-lag-records=5: %v\n%s", err, text)
	} else if !strings.Contains(text, "all tables complete up to GTID 0-1-10") || !strings.Contains(text, ns[0]+".a") {
		t.Errorf("the table output lacks the cut or table a:\n%s", text)
	}
	if _, out, err := status("--max-lag-records=2"); !errors.Is(err, ErrStale) {
		t.Errorf("--max-lag-records=2 with a 3 behind: err %v, want ErrStale:\n%s", err, out)
	}
	t.Logf("ingest status:\n%s", text)
}

// TestStatusRenames: ingest status says for each source prefix of the
// tables it reports whether renames are followed. Table a consumes
// <prefix>.db.t, whose schema-change topic <prefix> exists; table b
// <other>.db.u, whose prefix has no topic. With ingest's topic-regex
// leaving <prefix> out, a's source is NOT followed, with it included
// followed, and without ingest's topics unknown; b's source has no topic.
func TestStatusRenames(t *testing.T) {
	ice := testenv.IcebergEnv(t)
	brokers := testenv.KafkaBrokers(t)
	ctx := t.Context()
	prefix, tableTopic := renameTopics(t, brokers)
	other := testenv.Unique(t, "norename")
	quoted := strings.ReplaceAll(prefix, ".", `\.`)

	cat, err := rest.NewCatalog(ctx, "status", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	ns := table.Identifier{testenv.Unique(t, "status_ren")}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.DropNamespace(context.WithoutCancel(ctx), ns) })
	for name, topic := range map[string]string{"a": tableTopic, "b": other + ".db.u"} {
		ident := table.Identifier{ns[0], name}
		schema := iceberg.NewSchemaWithIdentifiers(0, []int{1}, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
		if _, err := cat.CreateTable(ctx, ident, schema, catalog.WithProperties(iceberg.Properties{
			"format-version": "2", commit.OffsetsKeyPrefix + topic: `{"0":0}`,
		})); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cat.DropTable(context.WithoutCancel(ctx), ident) })
	}

	vars := map[string]string{"INGEST_CATALOG_URI": ice.URI, "INGEST_KAFKA_BROKERS": strings.Join(brokers, ",")}
	status := func(t *testing.T, regex string) (map[string]renamecheck.State, string) {
		t.Helper()
		args := []string{"--tables", ns[0] + `\..*`}
		if regex != "" {
			args = append(args, "--topic-regex="+regex)
		}
		states := map[string]renamecheck.State{}
		var out bytes.Buffer
		if err := runArgs(ctx, append(args, "--format=json"), env(vars), &out); err != nil {
			t.Fatalf("ingest status: %v\n%s", err, out.String())
		}
		var rep Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("status output is not JSON: %v\n%s", err, out.String())
		}
		for _, r := range rep.Renames {
			if r.Topic != r.Prefix {
				t.Errorf("source %s: schema topic %s, want the prefix", r.Prefix, r.Topic)
			}
			states[r.Prefix] = r.State
		}
		out.Reset()
		if err := runArgs(ctx, args, env(vars), &out); err != nil {
			t.Fatalf("ingest status: %v\n%s", err, out.String())
		}
		return states, out.String()
	}
	for _, tc := range []struct {
		name, regex string
		want        renamecheck.State
		line        string
	}{
		{"left out", quoted + `\..*|` + other + `\..*`, renamecheck.NotFollowed,
			"source " + prefix + ": renames: NOT followed: schema-change topic " + prefix + " exists but is not in topics/topic-regex\n"},
		{"included", quoted + `(\..*)?|` + other + `\..*`, renamecheck.Followed,
			"source " + prefix + ": renames: followed (schema-change topic " + prefix + " consumed)\n"},
		{"ingest's topics not given", "", renamecheck.Unknown,
			"source " + prefix + ": renames: unknown: schema-change topic " + prefix + " exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			states, text := status(t, tc.regex)
			want := map[string]renamecheck.State{prefix: tc.want, other: renamecheck.NoTopic}
			if !maps.Equal(states, want) {
				t.Errorf("renames %v, want %v", states, want)
			}
			for _, line := range []string{tc.line, "source " + other + ": renames: not followed: no schema-change topic " + other + " on the cluster\n"} {
				if !strings.Contains(text, line) {
					t.Errorf("the table output lacks %q:\n%s", line, text)
				}
			}
		})
	}
}

// renameTopics creates, on the stack's Kafka, the schema-change topic of a
// new prefix and one table topic under it, removed when the test ends.
func renameTopics(t *testing.T, brokers []string) (prefix, tableTopic string) {
	t.Helper()
	prefix = testenv.Unique(t, "ren")
	tableTopic = prefix + ".db.t"
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopics(t.Context(), 1, 1, nil, prefix, tableTopic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(t.Context()), prefix, tableTopic) })
	return prefix, tableTopic
}
