//go:build integration

package pipeline

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/test/faults"
	"github.com/binlake/binlake/test/testenv"
)

// TestBuffersWhileCommitting: a table goes on decoding and buffering its
// next batch while its commit is in flight (worker.flushAsync), so a slow
// catalog or object store does not stop polling; the batches still land
// in order, each once. Committing in line, the worker took no record
// while its commit was held, and the second batch was never buffered.
func TestBuffersWhileCommitting(t *testing.T) {
	env := testenv.IcebergEnv(t)
	tt := newTestTopic(t, "fl", 1)
	ctx := t.Context()
	produce := func(from, to, version int64) { t.Helper(); tt.produce(t, from, to, version) }
	gate, err := faults.NewCommitFaults(env.URI, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gate)
	t.Cleanup(srv.Close)
	t.Cleanup(gate.Release)
	cat, err := rest.NewCatalog(ctx, "ingest", srv.URL, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	// A batch is 5 records; the queue holds one, so a worker that stops
	// for its commit stops polling at once.
	p, err := New(Config{Brokers: testenv.KafkaBrokers(t), Group: tt.db, Topics: []string{tt.topic},
		Limits: batch.Limits{MaxRows: 5, MaxAge: time.Hour}, QueueRecords: 1, ShutdownTimeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(log, nil))}, cat, decode.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v; log:\n%s", err, log.String())
		}
	}
	defer stop()
	rows := func() map[int64]string { return tt.rows(t) }

	// Ids 10-19, versions 1-2: every record has the same size.
	produce(10, 14, 1)
	testenv.Eventually(t, 60*time.Second, 200*time.Millisecond, func() bool { return len(rows()) == 5 }, "the first batch (ids 10-14) in the table")
	testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool { return p.buffered.Load() == 0 }, "nothing buffered after the first commit")

	gate.Arm(faults.Held, 1_000)
	produce(15, 19, 1)
	held := func() bool { inj, _ := gate.Injected(); return inj[faults.Held] > 0 }
	testenv.Eventually(t, 30*time.Second, 50*time.Millisecond, held, "the second batch's commit held at the catalog")
	one := p.buffered.Load()
	if one <= 0 {
		t.Fatalf("buffered %d bytes with a batch of 5 records in flight", one)
	}
	produce(10, 14, 2)
	testenv.Eventually(t, 15*time.Second, 50*time.Millisecond, func() bool { return p.buffered.Load() == 2*one },
		"the third batch (ids 10-14 at v2) buffered while the second's commit is held")
	if got := len(rows()); got != 5 {
		t.Fatalf("the table has %d rows while the second batch's commit is held, want 5", got)
	}

	gate.Disarm()
	gate.Release()
	testenv.Eventually(t, 60*time.Second, 200*time.Millisecond, func() bool {
		got := rows()
		if len(got) != 10 {
			return false
		}
		for id, v := range got {
			if want := map[bool]string{true: "v2", false: "v1"}[id <= 14]; v != want {
				return false
			}
		}
		return true
	}, "ids 10-14 at v2 and 15-19 at v1 once the catalog answers")
	testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool { return p.buffered.Load() == 0 }, "nothing buffered once every batch landed")
	stop()

	// Each batch is one snapshot, in order, holding its own offsets.
	tbl, err := tt.direct.LoadTable(ctx, tt.ident)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[commit.CommitIDKey] != "" {
			ids[s.Summary.Properties[commit.CommitIDKey]] = true
		}
	}
	if len(ids) != 3 {
		t.Errorf("the table has %d commits, want 3 (one per batch)", len(ids))
	}
	offs, err := commit.Offsets(tbl)
	if err != nil {
		t.Fatal(err)
	}
	if got := offs[tt.topic][0]; got != 15 {
		t.Errorf("the table holds offset %d of %s/0, want 15 (three batches of 5 records)", got, tt.topic)
	}
	t.Logf("FLIGHT commits=%d offsets=%v buffered_per_batch=%d", len(ids), offs[tt.topic], one)
}
