package stream

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/signal"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/schemas/debezium"
)

// signalFixture is a Stream on an in-process Kafka (kfake) with the
// signal channel fed by the test.
type signalFixture struct {
	s      *Stream
	pub    *publish.Publisher
	ch     chan signal.Record
	logs   *bytes.Buffer
	tables []snapshot.TableID
	tblErr error
	next   int64
}

func newSignalFixture(t *testing.T, initial *SnapshotConfig) *signalFixture {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "offsets"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	pub, err := publish.New(t.Context(), publish.Config{
		Brokers: c.ListenAddrs(), ID: "c1", OffsetsTopic: "offsets", TopicPartitions: 1, TopicReplication: 1,
		MaxRecordBytes: 1 << 20, TransactionTimeout: time.Minute, MaxBufferedBytes: 4 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	f := &signalFixture{pub: pub, ch: make(chan signal.Record, 64), logs: &bytes.Buffer{},
		tables: ids("db.a", "db.b", "db.c")}
	s, err := New(Config{
		Prefix: "p", Flavor: debezium.FlavorMariaDB, PositionKey: "c1", CommitInterval: time.Hour, MaxTxnRecords: 1000,
		Logger: slog.New(slog.NewTextHandler(f.logs, nil)), Snapshot: initial,
	}, pub, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.readPos = binlog.Position{Flavor: binlog.FlavorMariaDB, GTIDSet: "0-1-5", File: "bin.000001", Pos: 400}
	s.atBoundary = true
	s.EnableIncremental(IncrementalConfig{
		Signals: f.ch,
		Tables:  func(context.Context) ([]snapshot.TableID, error) { return f.tables, f.tblErr },
		Lists:   &TableLists{DatabaseInclude: "db"},
	})
	f.s = s
	return f
}

// send queues a signal record at the next offset.
func (f *signalFixture) send(key, value string) int64 {
	off := f.next
	f.next++
	f.ch <- signal.Record{Offset: off, Key: []byte(key), Value: []byte(value)}
	return off
}

func (f *signalFixture) state(t *testing.T) State {
	t.Helper()
	b, err := f.s.stateBytes(f.s.readPos)
	if err != nil {
		t.Fatal(err)
	}
	st, err := UnmarshalState(b)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func runningTables(s *Stream) []string {
	var out []string
	if r := s.incr.running(); r != nil {
		for _, t := range r.prog.Tables[r.start():] {
			out = append(out, t.String())
		}
	}
	return out
}

// ids names tables "db.table" (no dot in the database) as TableIDs.
func ids(names ...string) []snapshot.TableID {
	out := make([]snapshot.TableID, 0, len(names))
	for _, n := range names {
		db, tbl := snapshot.SplitTable(n)
		out = append(out, snapshot.TableID{DB: db, Table: tbl})
	}
	return out
}

// TestSignalsBadOnesSkipped: bad signals are logged and skipped, never
// stop the stream, and their offsets are stored like those acted on.
func TestSignalsBadOnesSkipped(t *testing.T) {
	f := newSignalFixture(t, nil)
	f.send("p", `not json`)
	f.send("other", `{"type":"execute-snapshot","data":{"data-collections":["db.a"]}}`)
	f.send("p", `{"type":"execute-snapshot","data":{"data-collections":["db.a"],"type":"blocking"}}`)
	f.send("p", `{"type":"execute-snapshot","data":{"data-collections":["nodb.x"]}}`)
	f.send("p", `{"type":"teleport"}`)
	f.send("p", `{"type":"pause-snapshot"}`) // nothing runs: skipped
	last := f.send("p", `{"type":"execute-snapshot","data":{"data-collections":["db.(b"]}}`)
	if err := f.s.incr.step(t.Context()); err != nil {
		t.Fatalf("bad signals stopped the stream: %v", err)
	}
	if f.s.snap != nil {
		t.Fatalf("a bad signal started a snapshot of %v", f.s.snap.prog.Tables)
	}
	st := f.state(t)
	if st.SignalOffset == nil || *st.SignalOffset != last {
		t.Fatalf("stored signal offset %v, want %d", st.SignalOffset, last)
	}
	logs := f.logs.String()
	for _, want := range []string{"value is not a JSON signal document", "for another connector", "blocking", "match no captured table",
		"teleport", "pause-snapshot while no incremental snapshot runs", "db.(b"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if f.s.pendingPos == nil || !f.pub.InTxn() {
		t.Fatal("skipped signals' offset not pending a commit")
	}
}

// TestSignalsExecuteStopPause follows a snapshot through its signals and
// checks what each stores.
func TestSignalsExecuteStopPause(t *testing.T) {
	f := newSignalFixture(t, nil)
	f.send("p", `{"id":"s1","type":"execute-snapshot","data":{"data-collections":["db.a","missing.x"],"type":"incremental"}}`)
	if err := f.s.incr.step(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := runningTables(f.s); !slices.Equal(got, []string{"db.a"}) {
		t.Fatalf("running %v, want [db.a]", got)
	}
	if !strings.Contains(f.logs.String(), "missing.x") {
		t.Errorf("no warning names the unmatched entry:\n%s", f.logs)
	}
	// More tables join the running snapshot, db.a not twice.
	f.send("p", `{"type":"execute-snapshot","data":{"data-collections":["db\\.[a-c]"]}}`)
	f.send("p", `{"type":"pause-snapshot"}`)
	if err := f.s.incr.step(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := runningTables(f.s); !slices.Equal(got, []string{"db.a", "db.b", "db.c"}) {
		t.Fatalf("running %v, want [db.a db.b db.c]", got)
	}
	st := f.state(t)
	if st.Incremental == nil || !slices.Equal(st.Incremental.Tables, ids("db.a", "db.b", "db.c")) || !st.IncrementalPaused {
		t.Fatalf("stored %+v", st.IncrementalState)
	}
	if st.Lists == nil || st.Lists.DatabaseInclude != "db" {
		t.Fatalf("lists not stored: %+v", st.Lists)
	}
	if did, err := f.s.snap.step(t.Context()); did || err != nil {
		t.Fatalf("a paused snapshot read a chunk (did=%v err=%v)", did, err)
	}
	// Committed with the position, in one transaction.
	if err := f.s.commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, found, err := f.pub.LoadPosition(t.Context(), "c1")
	if err != nil || !found {
		t.Fatalf("LoadPosition: found=%v err=%v", found, err)
	}
	stored, err := UnmarshalState(b)
	if err != nil {
		t.Fatal(err)
	}
	if stored.SignalOffset == nil || *stored.SignalOffset != 2 || stored.Incremental == nil || len(stored.Incremental.Tables) != 3 {
		t.Fatalf("committed state %+v", stored.IncrementalState)
	}

	f.send("p", `{"type":"resume-snapshot"}`)
	f.send("p", `{"type":"stop-snapshot","data":{"data-collections":["db.b"],"type":"incremental"}}`)
	if err := f.s.incr.step(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := runningTables(f.s); !slices.Equal(got, []string{"db.a", "db.c"}) {
		t.Fatalf("after stopping db.b: running %v, want [db.a db.c]", got)
	}
	if f.s.incrPaused() {
		t.Fatal("resume-snapshot did not resume")
	}
	f.send("p", `{"type":"stop-snapshot","data":{"type":"incremental"}}`)
	if err := f.s.incr.step(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f.s.snap != nil {
		t.Fatalf("stop-snapshot left %v running", f.s.snap.prog.Tables)
	}
	st = f.state(t)
	if st.Incremental != nil || *st.SignalOffset != 5 {
		t.Fatalf("after stop: stored %+v offset %d", st.Incremental, *st.SignalOffset)
	}
}

// TestSignalsWaitForInitialSnapshot: tables requested during the initial
// snapshot are stored as queued and start once it is done.
func TestSignalsWaitForInitialSnapshot(t *testing.T) {
	f := newSignalFixture(t, &SnapshotConfig{Progress: snapshot.Progress{Tables: ids("db.z")}})
	f.send("p", `{"type":"execute-snapshot","data":{"data-collections":["db.b"]}}`)
	if err := f.s.incr.step(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f.s.snap == nil || f.s.snap.incremental {
		t.Fatal("the signal replaced the initial snapshot")
	}
	st := f.state(t)
	if st.Snapshot == nil || st.Incremental == nil || !slices.Equal(st.Incremental.Tables, ids("db.b")) {
		t.Fatalf("stored snapshot %+v incremental %+v", st.Snapshot, st.Incremental)
	}
	f.s.snap.done = true
	if err := f.s.incr.step(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := runningTables(f.s); !slices.Equal(got, []string{"db.b"}) {
		t.Fatalf("after the initial snapshot: running %v, want [db.b]", got)
	}
}

// TestSignalsSourceDown: when the tables cannot be listed the stream stops
// without storing the signal's offset, so the restarted capture reads it again.
func TestSignalsSourceDown(t *testing.T) {
	f := newSignalFixture(t, nil)
	f.tblErr = errors.New("connection refused")
	f.send("p", `{"type":"execute-snapshot","data":{"data-collections":["db.a"]}}`)
	if err := f.s.incr.step(t.Context()); err == nil {
		t.Fatal("no error")
	}
	if st := f.state(t); st.SignalOffset != nil {
		t.Fatalf("offset %d stored for a signal not acted on", *st.SignalOffset)
	}
}

// TestIncrementalReadAhead: an ad-hoc snapshot reads as many chunks ahead
// as configured.
func TestIncrementalReadAhead(t *testing.T) {
	s, err := New(Config{Prefix: "p"}, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.EnableIncremental(IncrementalConfig{ReadAhead: 5, Resume: IncrementalState{Incremental: &snapshot.Progress{Tables: ids("db.a")}}})
	if r := s.incr.running(); r == nil || r.cfg.ReadAhead != 5 {
		t.Fatalf("incremental snapshot %+v, want one reading 5 chunks ahead", r)
	}
}
