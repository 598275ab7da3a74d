//go:build integration

package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/test/testenv"
)

// TestRenameThroughCatalogOutage: a table rename read while the catalog
// answers 503 is done once the catalog is back, and the process keeps
// running. Before, the follower's first failed catalog call stopped the
// process (the chaos run's catalog restart took ingest2 down this way:
// "following the rename of …: finding the table of …: REST error: server
// error").
func TestRenameThroughCatalogOutage(t *testing.T) {
	ctx := t.Context()
	env := testenv.IcebergEnv(t)
	db := testenv.Unique(t, "ro")
	prefix := "p" + db
	topicA, topicB := prefix+"."+db+".a", prefix+"."+db+".b"
	namer := schemamap.Namer{Prefix: prefix}
	identA, identB := namer.Ident(db, "a"), namer.Ident(db, "b")

	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, prefix, topicA, topicB); err != nil {
		t.Fatalf("creating topics: %v", err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(ctx), prefix, topicA, topicB) })
	direct, err := rest.NewCatalog(ctx, "direct", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_ = direct.DropTable(ctx, identA)
		_ = direct.DropTable(ctx, identB)
		_ = direct.DropNamespace(ctx, table.Identifier{identA[0]})
	})

	// The catalog, behind a switch: down, every request gets a 503.
	var down atomic.Bool
	var refused atomic.Int64
	proxy := proxied(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() {
				refused.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				http.Error(w, `{"error":{"message":"catalog restarting","type":"ServiceUnavailableException","code":503}}`, http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	cat, err := rest.NewCatalog(ctx, "ingest", proxy.URL, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	r := &running{log: &syncBuffer{}, done: make(chan error, 1)}
	r.p, err = New(Config{Brokers: testenv.KafkaBrokers(t), Group: testenv.Unique(t, "g"), Topics: []string{prefix, topicA, topicB},
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
	produce := func(tbl, topic string, pos int64, ids ...int64) {
		t.Helper()
		for _, id := range ids {
			rec := colChange(db, tbl, cols, map[string]any{"id": id, "v": fmt.Sprintf("v-%d", id)}, pos)
			rec.Topic = topic
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

	produce("a", topicA, 100, 1, 2, 3)
	waitIDs(identA, 1, 2, 3)

	down.Store(true)
	rec := schemaChangeRecord(db, "b", "RENAME TABLE a TO b", 200)
	rec.Topic = prefix
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	produce("b", topicB, 300, 4, 5)
	// The follower meets the outage: several refused calls, and ingest
	// still running.
	testenv.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		alive()
		if n := refused.Load(); n < 3 {
			return fmt.Errorf("the catalog refused %d calls, want 3 or more", n)
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	alive()
	down.Store(false)

	waitIDs(identB, 1, 2, 3, 4, 5)
	if _, err := direct.LoadTable(ctx, identA); err == nil {
		t.Errorf("table %v still exists after the rename", identA)
	}
	t.Logf("the catalog refused %d calls during the outage", refused.Load())
}
