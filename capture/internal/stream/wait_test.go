package stream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/schemas/debezium"
)

func newWaitStream(t testing.TB, commit time.Duration) *Stream {
	t.Helper()
	s, err := New(Config{Prefix: "p", Flavor: debezium.FlavorMariaDB, CommitInterval: commit, MaxTxnRecords: 1000}, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.wait.stop)
	return s
}

// waiting makes s's snapshot wait for a chunk the fetcher has not read.
func waiting(s *Stream) chan struct{} {
	ch := make(chan struct{})
	s.snap = newReconciler(SnapshotConfig{Progress: snapshot.Progress{Tables: ids("db.a")}}, s)
	s.snap.fetch = &fetching{chunkSource: &chunkFetcher{}}
	s.snap.fetchWait = ch
	return ch
}

// TestReadContext checks what a binlog read waits for: nothing but ctx
// inside a binlog transaction, the commit window and the snapshot chunk at
// a boundary, and that one context serves reads while those stay the same.
func TestReadContext(t *testing.T) {
	ctx := t.Context()
	s := newWaitStream(t, 50*time.Millisecond)
	ch := waiting(s)

	s.atBoundary = false
	s.pendingPos = &binlog.Position{}
	s.txnStart = time.Now()
	if got := s.readContext(ctx); got != ctx {
		t.Fatal("inside a binlog transaction the read waits for more than ctx")
	}

	s.atBoundary = true
	s.pendingPos = nil
	s.snap = nil
	if got := s.readContext(ctx); got != ctx {
		t.Fatal("at a boundary with nothing to wait for, the read waits for more than ctx")
	}

	// The commit window of an open Kafka transaction.
	s.pendingPos = &binlog.Position{}
	s.txnStart = time.Now()
	rc := s.readContext(ctx)
	if again := s.readContext(ctx); again != rc {
		t.Error("a new context for the same wait")
	}
	select {
	case <-rc.Done():
		if c := context.Cause(rc); !errors.Is(c, errReadDeadline) {
			t.Errorf("cause %v, want the read deadline", c)
		}
		if el := time.Since(s.txnStart); el < 50*time.Millisecond {
			t.Errorf("ended %v after the transaction began, before the commit window", el)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read did not end at the end of the commit window")
	}

	// A snapshot chunk being read.
	s.pendingPos = nil
	ch = waiting(s)
	rc = s.readContext(ctx)
	if rc == ctx {
		t.Fatal("the read does not wait for the snapshot chunk")
	}
	close(ch)
	select {
	case <-rc.Done():
		if c := context.Cause(rc); !errors.Is(c, errChunkReady) {
			t.Errorf("cause %v, want the chunk", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read did not end when the chunk was ready")
	}

	// A paused incremental snapshot takes no chunk: no wake-up for one.
	s.snap.incremental = true
	s.incr = &adhoc{paused: true}
	if got := s.readContext(ctx); got != ctx {
		t.Error("a paused incremental snapshot wakes the loop for a chunk it will not take")
	}
}

// BenchmarkReadContext reads a busy binlog while a snapshot waits for a
// chunk: per op, one binlog transaction of five events (the first read at
// a boundary of an open Kafka transaction).
func BenchmarkReadContext(b *testing.B) {
	s := newWaitStream(b, time.Hour)
	waiting(s)
	s.pendingPos = &binlog.Position{}
	s.txnStart = time.Now()
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		for i := range 5 {
			s.atBoundary = i == 0
			if rc := s.readContext(ctx); rc.Err() != nil {
				b.Fatal(rc.Err())
			}
		}
	}
}
