//go:build integration

package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/test/testenv"
)

// TestSwapFoundDone is the race TestRenames met once with three processes:
// RENAME TABLE s1 TO s2, s3 TO s1 carried out by another process while
// this one's commit of old s1 changes was in flight. Its follower then
// finds both renames done, and its commit, answered 503 after it landed,
// reloads the table under s1: old s3 now. Before, the retry committed the
// old s1 changes into it (the table took the name; it holds no offsets of
// topic s1 to skip them by). The batch must be dropped (the old table,
// s2 now, holds it), the process must keep running, and the changes after
// the swap must reach the new s1.
func TestSwapFoundDone(t *testing.T) {
	ctx := t.Context()
	env := testenv.IcebergEnv(t)
	db := testenv.Unique(t, "sw")
	prefix := "p" + db
	topic := func(tb string) string { return prefix + "." + db + "." + tb }
	namer := schemamap.Namer{Prefix: prefix}
	s1, s2, s3 := namer.Ident(db, "s1"), namer.Ident(db, "s2"), namer.Ident(db, "s3")

	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	topics := []string{prefix, topic("s1"), topic("s2"), topic("s3")}
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, topics...); err != nil {
		t.Fatalf("creating topics: %v", err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(ctx), topics...) })
	direct, err := rest.NewCatalog(ctx, "direct", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		for _, id := range []table.Identifier{s1, s2, s3} {
			_ = direct.DropTable(ctx, id)
		}
		_ = direct.DropNamespace(ctx, table.Identifier{s1[0]})
	})

	// The catalog, behind a proxy that can let one commit to s1 land and
	// then hold its answer until released, answering 503.
	var armed atomic.Bool
	landed, release := make(chan struct{}), make(chan struct{})
	proxy := proxied(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/tables/"+s1[1]) || !armed.CompareAndSwap(true, false) {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			close(landed)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			_, _ = io.Copy(io.Discard, r.Body)
			http.Error(w, `{"error":{"message":"gateway timeout","type":"ServiceUnavailableException","code":503}}`, http.StatusServiceUnavailable)
		})
	})
	cat, err := rest.NewCatalog(ctx, "ingest", proxy.URL, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	r := &running{log: &syncBuffer{}, done: make(chan error, 1)}
	r.p, err = New(Config{Brokers: testenv.KafkaBrokers(t), Group: testenv.Unique(t, "g"), Topics: topics,
		Limits: batch.Limits{MaxAge: 300 * time.Millisecond}, ShutdownTimeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(r.log, nil))}, cat, decode.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	go func() { r.done <- r.p.Run(pctx) }()
	t.Cleanup(func() { cancel(); <-r.done })
	alive := func() {
		t.Helper()
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("the pipeline stopped: %v; log:\n%s", err, r.log.String())
		default:
		}
	}
	cols := []jcol{{"v", "string"}}
	produce := func(tb string, pos int64, ids ...int64) {
		t.Helper()
		for _, id := range ids {
			rec := colChange(db, tb, cols, map[string]any{"id": id, "v": fmt.Sprintf("%s-%d", tb, id)}, pos)
			rec.Topic = topic(tb)
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitIDs := func(ident table.Identifier, want ...int64) {
		t.Helper()
		testenv.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
			alive()
			if got := slices.Sorted(maps.Keys(lakeRows(t, direct, ident))); !slices.Equal(got, want) {
				return fmt.Errorf("table %v holds ids %v, want %v", ident, got, want)
			}
			return nil
		})
	}

	produce("s1", 100, 1, 2)
	produce("s3", 110, 30)
	waitIDs(s1, 1, 2)
	waitIDs(s3, 30)

	// Old s1's last changes: their commit lands, its answer waits.
	armed.Store(true)
	produce("s1", 120, 3, 4)
	select {
	case <-landed:
	case <-time.After(60 * time.Second):
		t.Fatalf("no commit of s1 reached the catalog; log:\n%s", r.log.String())
	}

	// Another process carries out the swap (renameLake, setSource).
	const pos = 200
	if _, err := direct.RenameTable(ctx, s1, s2); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.RenameTable(ctx, s3, s1); err != nil {
		t.Fatal(err)
	}
	mark := func(off int64) string { return fmt.Sprintf("mysql-bin.000001:%d:%d:0", pos, off) }
	setTableProps(t, direct, s2, iceberg.Properties{schemamap.SourceProperty: namer.Source(db, "s2"), schemamap.SourcePrefixProperty: prefix, NameSinceProperty: mark(0)})
	setTableProps(t, direct, s1, iceberg.Properties{schemamap.SourceProperty: namer.Source(db, "s1"), schemamap.SourcePrefixProperty: prefix, NameSinceProperty: mark(1)})
	// Its schema-change records, one per new name, as capture and
	// Debezium write a statement that renames two tables.
	for _, tb := range []string{"s2", "s1"} {
		rec := schemaChangeRecord(db, tb, "RENAME TABLE s1 TO s2, s3 TO s1", pos)
		rec.Topic = prefix
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		alive()
		if n := strings.Count(r.log.String(), "rename already done"); n < 2 {
			return fmt.Errorf("the follower found %d of the 2 renames done", n)
		}
		return nil
	})
	close(release)
	produce("s1", 300, 5)

	waitIDs(s1, 5, 30)
	waitIDs(s2, 1, 2, 3, 4)
	time.Sleep(2 * time.Second) // a late commit of 3 and 4 would land by now
	waitIDs(s1, 5, 30)
	if !strings.Contains(r.log.String(), "dropping the batch") {
		t.Errorf("no batch was dropped; log:\n%s", r.log.String())
	}
}

// setTableProps sets table properties, as another ingest process would.
func setTableProps(t *testing.T, cat *rest.Catalog, ident table.Identifier, props iceberg.Properties) {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(props); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatalf("setting properties of %v: %v", ident, err)
	}
}
