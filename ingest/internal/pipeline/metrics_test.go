package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
)

// TestConsumerLagForgetsRevokedPartitions: after a rebalance takes a
// partition away, this member stops reporting its lag (the new owner does),
// while the partitions it keeps are still reported.
func TestConsumerLagForgetsRevokedPartitions(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.setStable("p.db.t", 0, 100)
	m.setStable("p.db.t", 1, 50)
	m.freshnessMu.Lock()
	m.next[tp{"p.db.t", 0}] = 40 // the table holds offsets up to 40
	m.freshnessMu.Unlock()
	want := `
# HELP ingest_consumer_lag Records (read_committed last stable offset) not yet committed to the table, per partition.
# TYPE ingest_consumer_lag gauge
ingest_consumer_lag{partition="0",topic="p.db.t"} 60
ingest_consumer_lag{partition="1",topic="p.db.t"} 50
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ingest_consumer_lag"); err != nil {
		t.Fatal(err)
	}
	m.forget(map[string][]int32{"p.db.t": {0}})
	want = `
# HELP ingest_consumer_lag Records (read_committed last stable offset) not yet committed to the table, per partition.
# TYPE ingest_consumer_lag gauge
ingest_consumer_lag{partition="1",topic="p.db.t"} 50
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ingest_consumer_lag"); err != nil {
		t.Fatalf("after partition 0 was revoked: %v", err)
	}
}

// TestStaleDropsCountedAndLogged: a commit that dropped changes below the
// table's truncate watermark adds them to ingest_stale_dropped_total and
// logs one line naming the table, topic, the first drop's partition,
// offset and order, and the watermark; a commit without drops creates the
// table's series at 0 and logs nothing.
func TestStaleDropsCountedAndLogged(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	var logs syncBuffer
	p := &Pipeline{cfg: Config{Metrics: m}, log: slog.New(slog.NewTextHandler(&logs, nil))}
	ident := table.Identifier{"shop", "orders"}
	w := &worker{p: p, topic: "p.shop.orders", ident: ident, log: p.log.With("table", "shop.orders", "topic", "p.shop.orders")}
	buf := batch.NewAppend([]string{"a"}, batch.Limits{})

	m.committed(ident, buf, commit.Result{}, w.topic)
	want := `
# HELP ingest_stale_dropped_total Change events committed as consumed but dropped because their source order is below the table's truncate watermark: a truncate later in the source erased them.
# TYPE ingest_stale_dropped_total counter
ingest_stale_dropped_total{table="shop.orders"} %d
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(want, 0)), "ingest_stale_dropped_total"); err != nil {
		t.Fatal(err)
	}

	mark := int64(3<<33 | 9000)
	res := commit.Result{StaleEvents: 1800, Watermark: mark, StaleFirst: []batch.StaleEvent{
		{Position: batch.Position{Topic: w.topic, Partition: 2, Offset: 41}, Order: 3<<33 | 8999},
		{Position: batch.Position{Topic: w.topic, Partition: 2, Offset: 42}, Order: 3<<33 | 9001}}}
	m.committed(ident, buf, res, w.topic)
	w.logStale(res)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(want, 1800)), "ingest_stale_dropped_total"); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, s := range []string{"level=WARN", "table=shop.orders", "topic=p.shop.orders", "stale=1800", "watermark=3:9000",
		"partition=2", "offset=41", "order=3:8999", "p.shop.orders/2/42@3:9001"} {
		if !strings.Contains(out, s) {
			t.Errorf("log line lacks %s:\n%s", s, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 1 {
		t.Errorf("%d log lines, want 1:\n%s", n, out)
	}

	// A truncate in the batch erased them: its normal work, at Info;
	// unless some follow it in its partition, which says the order is
	// wrong.
	for _, tc := range []struct {
		after int
		want  string
	}{{0, `level=INFO msg="dropped changes that precede the batch's truncate in source order"`},
		{2, `level=WARN msg="dropped changes that follow the batch's truncate in their partition but sort below it: the source order is wrong"`}} {
		logs.b.Reset()
		res.Truncated, res.StaleAfterTruncate = true, tc.after
		w.logStale(res)
		if out := logs.String(); !strings.Contains(out, tc.want) || !strings.Contains(out, fmt.Sprintf("after_truncate=%d", tc.after)) {
			t.Errorf("with %d after the truncate: log\n%s\nwant %s", tc.after, out, tc.want)
		}
	}
}

// TestRewriteMetrics: a commit's rewrite is counted by result, with its
// files, rows (live moved, dead dropped) and time.
func TestRewriteMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	ident := table.Identifier{"shop", "orders"}
	m.commitDone(ident, commit.Result{Events: 1, Rewrite: commit.RewriteResult{Files: 3, Rows: 70, DeadRows: 30, Duration: 2 * time.Second}}, time.Second, nil)
	m.commitDone(ident, commit.Result{Events: 1, Rewrite: commit.RewriteResult{Conflict: true, Duration: time.Second}}, time.Second, nil)
	m.commitDone(ident, commit.Result{Events: 1, RewriteErr: errors.New("boom")}, time.Second, nil)
	want := `
# HELP ingest_rewrite_files_total Data files rewritten by in-ingest rewrites (their delete files removed with them).
# TYPE ingest_rewrite_files_total counter
ingest_rewrite_files_total{table="shop.orders"} 3
# HELP ingest_rewrite_rows_total Rows of data files rewritten by in-ingest rewrites, by kind: live (moved to new files) or dead (dropped).
# TYPE ingest_rewrite_rows_total counter
ingest_rewrite_rows_total{kind="dead",table="shop.orders"} 30
ingest_rewrite_rows_total{kind="live",table="shop.orders"} 70
# HELP ingest_rewrite_seconds_total Time spent in in-ingest rewrites (planning included), which the table's next commit waits for.
# TYPE ingest_rewrite_seconds_total counter
ingest_rewrite_seconds_total{table="shop.orders"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ingest_rewrite_files_total", "ingest_rewrite_rows_total", "ingest_rewrite_seconds_total"); err != nil {
		t.Fatal(err)
	}
	for result, n := range map[string]float64{"ok": 1, "conflict": 1, "failed": 1} {
		if got := testutil.ToFloat64(m.rewrites.WithLabelValues("shop.orders", result)); got != n {
			t.Errorf("ingest_rewrites_total{result=%q} = %v, want %v", result, got, n)
		}
	}
}
