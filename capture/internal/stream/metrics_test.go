package stream

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/binlake/binlake/capture/internal/binlog"
)

// TestReceivedAtFollowsHeartbeats: a heartbeat after the last transaction
// moves capture_binlog_received_timestamp_seconds to the time it came,
// while capture_source_lag_seconds keeps the last event's lag (a
// heartbeat carries no timestamp), so an idle binlog is told apart from a
// stalled connection.
func TestReceivedAtFollowsHeartbeats(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_700_000_010, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	m := NewMetrics(nil)
	e := newLoopEnv(t)
	e.cfg = func(c *Config) { c.Metrics, c.Now = m, clock }
	tx := txn(1, 1)
	hb := withKind(binlog.Event{ServerID: 1, File: "bin.000001", Pos: 1100}, binlog.KindHeartbeat)
	src := genBinlog{tx}.from(posAfter(0))
	src.events = append(src.events, hb)
	src.hold = func(_ context.Context, i int) error {
		if i == len(tx) { // the heartbeat comes 60 s after the transaction
			mu.Lock()
			now = now.Add(time.Minute)
			mu.Unlock()
		}
		return nil
	}
	done := make(chan struct{})
	src.end = func() { close(done) }
	r := e.start(e.publisher(), src)
	<-done
	r.cancel()
	_ = r.wait(t)
	if got, want := testutil.ToFloat64(m.ReceivedAt), float64(1_700_000_070); got != want {
		t.Errorf("capture_binlog_received_timestamp_seconds = %v, want %v (the heartbeat's arrival)", got, want)
	}
	if got, want := testutil.ToFloat64(m.LagSeconds), float64(10); got != want {
		t.Errorf("capture_source_lag_seconds = %v, want %v (the transaction's lag, unchanged by the heartbeat)", got, want)
	}
}
