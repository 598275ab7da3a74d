//go:build integration

package commit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/ingest/internal/testtable"
	"github.com/binlake/binlake/schemas/debezium"
	"github.com/binlake/binlake/test/testenv"
)

const topic = "it.db.orders"

func connect(t *testing.T, uri string) catalog.Catalog {
	t.Helper()
	env := testenv.IcebergEnv(t)
	if uri == "" {
		uri = env.URI
	}
	cat, err := rest.NewCatalog(t.Context(), "ingest", uri, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatalf("connecting to the REST catalog: %v", err)
	}
	return cat
}

// createTable creates a v2 table whose schema comes from schemamap, the
// way ingest will create it.
func createTable(t *testing.T, cat catalog.Catalog) table.Identifier {
	t.Helper()
	return createMapped(t, cat, "ingest", false)
}

// createMapped creates the orders table (id long key, name string) from
// schemamap in a namespace of its own, with the source-order column when
// ordered (as the pipeline creates tables since it keeps source order).
func createMapped(t *testing.T, cat catalog.Catalog, nsPrefix string, ordered bool) table.Identifier {
	t.Helper()
	ctx := t.Context()
	row := &debezium.Schema{Type: debezium.STRUCT, Name: "it.db.orders.Value", Fields: []debezium.Field{
		{Name: "id", Schema: &debezium.Schema{Type: debezium.INT64}},
		{Name: "name", Schema: &debezium.Schema{Type: debezium.STRING, Optional: true}},
	}}
	m, err := schemamap.Map(row, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	if ordered {
		if m, err = schemamap.WithSourceOrder(m); err != nil {
			t.Fatal(err)
		}
	}
	ns := table.Identifier{testenv.Unique(t, nsPrefix)}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	ident := table.Identifier{ns[0], "orders"}
	if _, err := cat.CreateTable(ctx, ident, m.Schema, catalog.WithProperties(iceberg.Properties{"format-version": testFormatVersion()})); err != nil {
		t.Fatalf("creating table: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = cat.DropTable(ctx, ident)
		_ = cat.DropNamespace(ctx, ns)
	})
	return ident
}

// fill makes a buffer of ops on topic at consecutive offsets from first.
func fill(t *testing.T, first int64, ops ...op) *batch.Buffer {
	t.Helper()
	return fillOn(t, topic, first, ops...)
}

func expect(t *testing.T, cat catalog.Catalog, ident table.Identifier, want map[int64]string) {
	t.Helper()
	if d := cmp.Diff(want, testtable.Scan(t, cat, ident)); d != "" {
		t.Fatalf("table rows (-want +got):\n%s", d)
	}
}

func mustCommit(t *testing.T, c *Committer, b *batch.Buffer) Result {
	t.Helper()
	res, err := c.Commit(t.Context(), b)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return res
}

func TestCommitUpsertsDeletesTruncate(t *testing.T) {
	cat := connect(t, "")
	ident := createTable(t, cat)
	c, err := New(t.Context(), cat, ident, modeConfig(t, Config{}))
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := c.Offsets(); len(off) != 0 {
		t.Fatalf("new table has offsets %v", off)
	}

	// Batch 1: inserts, one updated within the batch.
	res := mustCommit(t, c, fill(t, 0,
		op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}, op{batch.OpCreate, 3, "c"},
		op{batch.OpCreate, 4, "d"}, op{batch.OpUpdate, 1, "a2"}))
	if res.Attempts != 1 || res.Rows != 4 || res.Events != 5 {
		t.Errorf("result %+v", res)
	}
	expect(t, cat, ident, map[int64]string{1: "a2", 2: "b", 3: "c", 4: "d"})

	// Batch 2: update, delete, PK change 4→40, insert+update, insert+delete.
	b2 := fill(t, 5,
		op{batch.OpUpdate, 2, "b2"}, op{batch.OpDelete, 3, ""},
		op{batch.OpDelete, 4, ""}, op{batch.OpCreate, 40, "d"},
		op{batch.OpCreate, 6, "e"}, op{batch.OpUpdate, 6, "e2"},
		op{batch.OpCreate, 7, "f"}, op{batch.OpDelete, 7, ""})
	res = mustCommit(t, c, b2)
	expect(t, cat, ident, map[int64]string{1: "a2", 2: "b2", 40: "d", 6: "e2"})

	// Offsets and the other summary keys round-trip through the table.
	snap := c.Table().CurrentSnapshot()
	if snap.SnapshotID != res.SnapshotID {
		t.Errorf("result snapshot %d, table at %d", res.SnapshotID, snap.SnapshotID)
	}
	p := snap.Summary.Properties
	if p[CommitIDKey] != res.CommitID || p[SourceGTIDKey] != "0-1-12" || p[SourceTsKey] != "1700000000012" {
		t.Errorf("summary %v", p)
	}
	switch c.cfg.DeleteMode {
	case DeletePosition, DeleteDV:
		if p["added-position-delete-files"] == "" || p["added-equality-delete-files"] != "" {
			t.Errorf("want position and no equality delete files in %v", p)
		}
	default:
		if p["added-equality-delete-files"] == "" {
			t.Errorf("no equality delete files in %v", p)
		}
	}
	fresh, err := New(t.Context(), cat, ident, modeConfig(t, Config{}))
	if err != nil {
		t.Fatal(err)
	}
	off, err := fresh.Offsets()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(batch.Offsets{topic: {0: 13}}, off); d != "" {
		t.Errorf("recovered offsets (-want +got):\n%s", d)
	}

	// Replaying an already-committed batch is detected and skipped.
	res, err = fresh.Commit(t.Context(), b2)
	if err != nil {
		t.Fatal(err)
	}
	if !res.AlreadyCommitted || res.SkippedEvents != 8 || res.SnapshotID != 0 {
		t.Errorf("replay result %+v", res)
	}
	if fresh.Table().CurrentSnapshot().SnapshotID != snap.SnapshotID {
		t.Error("replay created a snapshot")
	}

	// A snapshot without our keys (another writer's append, like a
	// maintenance job) is skipped when recovering offsets.
	conv, err := batch.NewConverter(fresh.Table().Schema(), columns, []string{"id"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	foreign := []*batch.Event{{Op: batch.OpCreate, Key: []any{int64(500)}, Row: []any{int64(500), "foreign"}}}
	var recs []arrow.RecordBatch
	for r, err := range conv.Rows(foreign) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	rdr, err := array.NewRecordReader(conv.Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Table().Append(t.Context(), rdr, nil); err != nil {
		t.Fatalf("foreign append: %v", err)
	}
	rdr.Release()
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	if off, err := Offsets(tbl); err != nil || off[topic][0] != 13 {
		t.Errorf("offsets behind a foreign snapshot: %v, %v", off, err)
	}

	// Batch 3: a partial replay (offsets 11..14) commits only the new part.
	res = mustCommit(t, fresh, fill(t, 11, op{batch.OpCreate, 7, "f-again"}, op{batch.OpUpdate, 6, "stale"}, op{batch.OpCreate, 8, "g"}, op{batch.OpUpdate, 8, "g2"}))
	if res.SkippedEvents != 2 || res.Events != 2 {
		t.Errorf("partial replay result %+v", res)
	}
	expect(t, cat, ident, map[int64]string{1: "a2", 2: "b2", 40: "d", 6: "e2", 8: "g2", 500: "foreign"})

	// Batch 4: truncate in the middle drops what came before it.
	res = mustCommit(t, fresh, fill(t, 15, op{batch.OpCreate, 9, "h"}, op{batch.OpTruncate, 0, ""}, op{batch.OpCreate, 100, "x"}, op{batch.OpUpdate, 100, "x2"}))
	if !res.Truncated {
		t.Errorf("result %+v", res)
	}
	expect(t, cat, ident, map[int64]string{100: "x2"})

	// Batch 5: a lone truncate empties the table and still records offsets.
	mustCommit(t, fresh, fill(t, 19, op{batch.OpTruncate, 0, ""}))
	expect(t, cat, ident, map[int64]string{})
	off, _ = fresh.Offsets()
	if off[topic][0] != 20 {
		t.Errorf("offsets after truncate %v", off)
	}

	// Batch 6: life goes on after the truncate.
	mustCommit(t, fresh, fill(t, 20, op{batch.OpCreate, 1, "new"}))
	expect(t, cat, ident, map[int64]string{1: "new"})
}

// TestCommitConflict: two writers load the same table state; the first
// commits, the second hits a 409, reloads, drops the events already
// committed and commits the rest once.
func TestCommitConflict(t *testing.T) {
	cat := connect(t, "")
	ident := createTable(t, cat)
	mustCommit(t, mustNew(t, cat, ident), fill(t, 0, op{batch.OpCreate, 1, "seed"}))

	a, b := mustNew(t, cat, ident), mustNew(t, cat, ident)
	var ops []op
	for i := range int64(10) {
		ops = append(ops, op{batch.OpCreate, 10 + i, "v1"})
	}
	resA := mustCommit(t, a, fill(t, 1, ops...))
	// B (a zombie or a second instance after a rebalance) holds the same
	// events plus five more.
	more := append(slices.Clone(ops), op{batch.OpUpdate, 10, "v2"}, op{batch.OpDelete, 11, ""}, op{batch.OpCreate, 50, "new"}, op{batch.OpUpdate, 1, "seed2"}, op{batch.OpUpdate, 12, "v2"})
	resB := mustCommit(t, b, fill(t, 1, more...))
	if resB.Attempts != 2 || resB.SkippedEvents != 10 || resB.Events != 5 {
		t.Errorf("loser result %+v (winner %+v)", resB, resA)
	}
	want := map[int64]string{1: "seed2", 10: "v2", 12: "v2", 50: "new"}
	for i := int64(13); i < 20; i++ {
		want[i] = "v1"
	}
	expect(t, cat, ident, want)
	off, _ := b.Offsets()
	if off[topic][0] != 16 {
		t.Errorf("offsets %v", off)
	}
}

func mustNew(t *testing.T, cat catalog.Catalog, ident table.Identifier) *Committer {
	t.Helper()
	c, err := New(t.Context(), cat, ident, modeConfig(t, Config{MinBackoff: 10 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCommitAmbiguous puts a proxy in front of the real REST catalog that
// forwards the first table commit and then answers 503, as a gateway that
// times out after the catalog committed. The committer must find its
// commit id in the table instead of committing the batch again.
func TestCommitAmbiguous(t *testing.T) {
	env := testenv.IcebergEnv(t)
	target, err := url.Parse(env.URI)
	if err != nil {
		t.Fatal(err)
	}
	cat := connect(t, "")
	ident := createTable(t, cat)
	mustCommit(t, mustNew(t, cat, ident), fill(t, 0, op{batch.OpCreate, 1, "seed"}))

	var injected atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		r := resp.Request
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/tables/"+ident[1]) &&
			resp.StatusCode == http.StatusOK && injected.Add(1) == 1 {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			resp.StatusCode = http.StatusServiceUnavailable
			resp.Status = "503 Service Unavailable"
			body := `{"error":{"message":"injected after commit","type":"ServiceUnavailableException","code":503}}`
			resp.Body = io.NopCloser(strings.NewReader(body))
			resp.ContentLength = int64(len(body))
			resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
			resp.Header.Del("Content-Encoding")
			resp.Header.Set("Content-Type", "application/json")
		}
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)

	c := mustNew(t, connect(t, srv.URL), ident)
	res := mustCommit(t, c, fill(t, 1, op{batch.OpCreate, 2, "x"}, op{batch.OpUpdate, 1, "seed2"}))
	if injected.Load() < 1 {
		t.Fatal("no commit went through the proxy")
	}
	if res.Attempts != 1 || res.SnapshotID == 0 {
		t.Errorf("result %+v", res)
	}
	expect(t, cat, ident, map[int64]string{1: "seed2", 2: "x"})

	// Exactly one snapshot carries the commit id.
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	_ = walk(tbl, -1, func(s *table.Snapshot) bool {
		if s.Summary != nil && s.Summary.Properties[CommitIDKey] == res.CommitID {
			n++
		}
		return true
	})
	if n != 1 {
		t.Errorf("%d snapshots carry commit %s", n, res.CommitID)
	}
}

// BenchmarkCommit measures the client side of a flush against the local
// stack: collapse, Arrow, Parquet data and equality-delete files to MinIO,
// and one REST commit. Each op commits 100,000 events (50,000 keys inserted
// and then updated) on top of the previous ops' data.
func BenchmarkCommit(b *testing.B) {
	env := testenv.IcebergEnv(b)
	cat, err := rest.NewCatalog(b.Context(), "ingest", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		b.Fatal(err)
	}
	ns := table.Identifier{testenv.Unique(b, "ingest")}
	if err := cat.CreateNamespace(b.Context(), ns, nil); err != nil {
		b.Fatal(err)
	}
	row := &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{
		{Name: "id", Schema: &debezium.Schema{Type: debezium.INT64}},
		{Name: "name", Schema: &debezium.Schema{Type: debezium.STRING, Optional: true}},
	}}
	m, _ := schemamap.Map(row, []string{"id"})
	ident := table.Identifier{ns[0], "orders"}
	if _, err := cat.CreateTable(b.Context(), ident, m.Schema, catalog.WithProperties(iceberg.Properties{"format-version": testFormatVersion()})); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx := context.WithoutCancel(b.Context())
		_ = cat.DropTable(ctx, ident)
		_ = cat.DropNamespace(ctx, ns)
	})
	c, err := New(b.Context(), cat, ident, modeConfig(b, Config{}))
	if err != nil {
		b.Fatal(err)
	}
	const n = 100_000
	var off int64
	names := make([]string, 64)
	for i := range names {
		names[i] = fmt.Sprintf("name-%040d", i)
	}
	b.ReportAllocs()
	b.ReportMetric(n, "events/op")
	for b.Loop() {
		b.StopTimer()
		buf, _ := batch.New(columns, []string{"id"}, batch.Limits{MaxRows: n})
		for i := range n {
			id := int64(i % (n / 2))
			op := batch.OpCreate
			if i >= n/2 {
				op = batch.OpUpdate
			}
			_ = buf.Add(batch.Event{Op: op, Key: []any{id}, Row: []any{id, names[i%len(names)]}, Topic: topic, Offset: off}, time.Time{})
			off++
		}
		b.StartTimer()
		if _, err := c.Commit(b.Context(), buf); err != nil {
			b.Fatal(err)
		}
	}
}
