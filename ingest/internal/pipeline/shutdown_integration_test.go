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
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/test/testenv"
)

// hangingProxy forwards to the REST catalog; while blocked, every request
// hangs until its client gives up, as behind a dead network path.
type hangingProxy struct {
	blocked atomic.Bool
	hung    atomic.Int64
	next    http.Handler
}

func (h *hangingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.blocked.Load() {
		h.hung.Add(1)
		// Read the body first: the server notices the client going away
		// (and ends r's context) only once the body is consumed.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		return
	}
	h.next.ServeHTTP(w, r)
}

func jsonRecord(id, version int64) *kgo.Record { return jsonRecordCols(id, version, false) }

// jsonRecordCols is jsonRecord's row, with extra the record after an
// ALTER TABLE … ADD COLUMN extra at the source.
func jsonRecordCols(id, version int64, extra bool) *kgo.Record {
	key := fmt.Sprintf(`{"schema":{"type":"struct","optional":false,"name":"bl.db.t.Key","fields":[{"type":"int64","optional":false,"field":"id"}]},"payload":{"id":%d}}`, id)
	fields, after := `{"type":"int64","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"}`, fmt.Sprintf(`{"id":%d,"name":"v%d"}`, id, version)
	if extra {
		fields += `,{"type":"string","optional":true,"field":"extra"}`
		after = fmt.Sprintf(`{"id":%d,"name":"v%d","extra":"x%d"}`, id, version, id)
	}
	row := `{"type":"struct","optional":true,"name":"bl.db.t.Value","fields":[` + fields + `],"field":"%s"}`
	value := fmt.Sprintf(`{"schema":{"type":"struct","optional":false,"name":"bl.db.t.Envelope","version":2,"fields":[`+row+`,`+row+`,`+
		`{"type":"struct","optional":false,"name":"io.debezium.connector.mysql.Source","field":"source","fields":[{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},{"type":"int32","optional":false,"field":"row"}]},`+
		`{"type":"string","optional":false,"field":"op"}]},`+
		`"payload":{"before":null,"after":%s,"source":{"ts_ms":1700000000000,"file":"mysql-bin.000001","pos":%d,"row":0},"op":"c"}}`,
		"before", "after", after, 1000*version+id)
	return &kgo.Record{Key: []byte(key), Value: []byte(value)}
}

// testTopic is a topic bl.<db>.t of jsonRecord changes and the table
// ingest makes of it, both dropped when the test ends.
type testTopic struct {
	db, topic string
	ident     table.Identifier
	cl        *kgo.Client   // produces to the topic
	direct    *rest.Catalog // the REST catalog itself, behind no proxy
}

func newTestTopic(t *testing.T, prefix string, partitions int32) *testTopic {
	t.Helper()
	env := testenv.IcebergEnv(t)
	ctx := t.Context()
	tt := &testTopic{db: testenv.Unique(t, prefix)}
	tt.topic = "bl." + tt.db + ".t"
	tt.ident = schemamap.Namer{Prefix: "bl"}.Ident(tt.db, "t")
	var err error
	if tt.cl, err = kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...), kgo.DefaultProduceTopic(tt.topic)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tt.cl.Close)
	adm := kadm.NewClient(tt.cl)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, tt.topic); err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(ctx), tt.topic) })
	if tt.direct, err = rest.NewCatalog(ctx, "direct", env.URI, rest.WithAdditionalProps(env.FileIOProps())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_ = tt.direct.DropTable(ctx, tt.ident)
		_ = tt.direct.DropNamespace(ctx, table.Identifier{tt.ident[0]})
	})
	return tt
}

// produce writes the changes of ids from to to at version, one by one,
// and returns the partition each id went to.
func (tt *testTopic) produce(t *testing.T, from, to, version int64) map[int64]int32 {
	t.Helper()
	parts := map[int64]int32{}
	for id := from; id <= to; id++ {
		r, err := tt.cl.ProduceSync(t.Context(), jsonRecord(id, version)).First()
		if err != nil {
			t.Fatal(err)
		}
		parts[id] = r.Partition
	}
	return parts
}

// rows reads the table as id → name (idNames).
func (tt *testTopic) rows(t *testing.T) map[int64]string { return idNames(t, tt.direct, tt.ident) }

// proxied serves h in front of the REST catalog for the test.
func proxied(t *testing.T, wrap func(next http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	target, err := url.Parse(testenv.IcebergEnv(t).URI)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(wrap(httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(srv.Close)
	return srv
}

// running is a pipeline started by startPipeline.
type running struct {
	p      *Pipeline
	cancel context.CancelFunc
	done   chan error
	log    *syncBuffer
}

func startPipeline(t *testing.T, catURI, group, topic, name string, shutdownTimeout time.Duration) *running {
	t.Helper()
	env := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(t.Context(), "ingest", catURI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	r := &running{log: &syncBuffer{}, done: make(chan error, 1)}
	r.p, err = New(Config{Brokers: testenv.KafkaBrokers(t), Group: group, Topics: []string{topic},
		Limits: batch.Limits{MaxAge: time.Second}, ShutdownTimeout: shutdownTimeout,
		Logger: slog.New(slog.NewTextHandler(r.log, nil)).With("run", name)}, cat, decode.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	var pctx context.Context
	pctx, r.cancel = context.WithCancel(t.Context())
	go func() { r.done <- r.p.Run(pctx) }()
	return r
}

// TestShutdownBoundedWhileCatalogHangs is finding 4 of issue 9: with the
// catalog unreachable (every request hangs), a stop must end within
// ShutdownTimeout, abandoning the open batch, and lose nothing: the next
// start commits it.
func TestShutdownBoundedWhileCatalogHangs(t *testing.T) {
	tt := newTestTopic(t, "sd", 3)
	db, topic := tt.db, tt.topic
	produce := func(from, to, version int64) { t.Helper(); tt.produce(t, from, to, version) }
	hp := &hangingProxy{}
	srv := proxied(t, func(next http.Handler) http.Handler { hp.next = next; return hp })

	const shutdownTimeout = 3 * time.Second
	start := func(name string) (cancel func(), done chan error, log *syncBuffer) {
		r := startPipeline(t, srv.URL, db, topic, name, shutdownTimeout)
		return r.cancel, r.done, r.log
	}
	rows := func() map[int64]string { return tt.rows(t) }
	want := func(n int, version string) func() bool {
		return func() bool {
			got := rows()
			if len(got) != n {
				return false
			}
			for id, v := range got {
				if id <= 10 && v != "v"+version {
					return false
				}
			}
			return true
		}
	}

	produce(1, 30, 1)
	cancel1, done1, log1 := start("first")
	testenv.Eventually(t, 60*time.Second, 200*time.Millisecond, want(30, "1"), "the first 30 rows in the table")

	// The catalog goes away; more changes arrive and a flush hangs on it.
	hp.blocked.Store(true)
	produce(1, 10, 2)
	produce(31, 40, 1)
	testenv.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool { return hp.hung.Load() > 0 }, "a catalog request hanging")

	stopAt := time.Now()
	cancel1() // SIGTERM
	select {
	case err := <-done1:
		took := time.Since(stopAt)
		t.Logf("SHUTDOWN catalog=hanging timeout=%s took=%s err=%v", shutdownTimeout, took.Round(time.Millisecond), err)
		if took > shutdownTimeout+5*time.Second {
			t.Errorf("stop took %s with shutdown timeout %s", took, shutdownTimeout)
		}
	case <-time.After(shutdownTimeout + 30*time.Second):
		t.Fatalf("ingest did not stop %s after SIGTERM with the catalog hanging (shutdown timeout %s); log:\n%s",
			time.Since(stopAt), shutdownTimeout, log1.String())
	}

	// The catalog is back: a new start commits what the first abandoned.
	hp.blocked.Store(false)
	cancel2, done2, log2 := start("second")
	defer func() {
		cancel2()
		if err := <-done2; err != nil {
			t.Errorf("second run: %v; log:\n%s", err, log2.String())
		}
	}()
	testenv.Eventually(t, 60*time.Second, 200*time.Millisecond, want(40, "2"), "all 40 rows, 1-10 updated, after the restart")
}

// TestRevokeBoundedWhileCatalogHangs is finding 4's revoke half: a member
// whose commit hangs on an unreachable catalog must still hand its
// partitions over when a second member joins (the revoke callback may not
// wait on the catalog), and nothing is lost once all is well again.
func TestRevokeBoundedWhileCatalogHangs(t *testing.T) {
	env := testenv.IcebergEnv(t)
	tt := newTestTopic(t, "rv", 2)
	db, topic := tt.db, tt.topic
	partOf := map[int64]int32{}
	produce := func(from, to, version int64) {
		t.Helper()
		maps.Copy(partOf, tt.produce(t, from, to, version))
	}
	hp := &hangingProxy{}
	srv := proxied(t, func(next http.Handler) http.Handler { hp.next = next; return hp })
	versions := func() map[int64]string { return tt.rows(t) }
	const shutdownTimeout = 3 * time.Second

	produce(1, 20, 1)
	first := startPipeline(t, srv.URL, db, topic, "first", shutdownTimeout)
	testenv.Eventually(t, 60*time.Second, 200*time.Millisecond, func() bool { return len(versions()) == 20 }, "the first 20 rows")
	hp.blocked.Store(true)
	produce(1, 20, 2)
	testenv.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool { return hp.hung.Load() > 0 }, "a catalog request hanging")

	// A second member joins, with a working catalog: it must get a
	// partition and commit its rows while the first still hangs.
	second := startPipeline(t, env.URI, db, topic, "second", shutdownTimeout)
	joined := time.Now()
	var mine int32 = -1
	ok := func() bool {
		second.p.ownMu.Lock()
		for part, own := range second.p.owned[topic] {
			if own {
				mine = part
			}
		}
		second.p.ownMu.Unlock()
		if mine < 0 {
			return false
		}
		got := versions()
		for id, part := range partOf {
			if part == mine && got[id] != "v2" {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(shutdownTimeout + 45*time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("the second member did not take over a partition within %s while the first hangs on the catalog (revoke blocked); first log:\n%s", time.Since(joined), first.log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("REVOKE catalog=hanging shutdown_timeout=%s second_member_committed_after=%s partition=%d", shutdownTimeout, time.Since(joined).Round(time.Millisecond), mine)

	// Everything back: stop the first (bounded), unblock, restart it.
	first.cancel()
	if err := <-first.done; err != nil {
		t.Errorf("first run: %v", err)
	}
	hp.blocked.Store(false)
	third := startPipeline(t, srv.URL, db, topic, "third", shutdownTimeout)
	testenv.Eventually(t, 60*time.Second, 200*time.Millisecond, func() bool {
		got := versions()
		if len(got) != 20 {
			return false
		}
		for _, v := range got {
			if v != "v2" {
				return false
			}
		}
		return true
	}, "all 20 rows at v2 after the restart")
	for _, r := range []*running{second, third} {
		r.cancel()
		if err := <-r.done; err != nil {
			t.Errorf("run: %v", err)
		}
	}
}

// idNames reads the test table (id long, name string) as id → name; nil
// while it has no table or no snapshot yet.
func idNames(t *testing.T, cat *rest.Catalog, ident table.Identifier) map[int64]string {
	t.Helper()
	ctx := t.Context()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil || tbl.CurrentSnapshot() == nil {
		return nil
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	out := map[int64]string{}
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		r := tr.RecordBatch()
		ids, names := r.Column(0).(*array.Int64), r.Column(1).(*array.String)
		for i := range int(r.NumRows()) {
			out[ids.Value(i)] = names.Value(i)
		}
	}
	return out
}
