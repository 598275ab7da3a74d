package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/filter"
	"github.com/binlake/binlake/capture/internal/mysqltype"
	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/schemas/debezium"
)

// The loop's exactly-once rules, run in-process: a generated binlog
// (genSource) at the Source seam, table definitions from memory at the
// Definitions seam, and kfake for Kafka. Every id a test writes is
// unique, so "exactly once" is: the committed change topic holds the ids
// of the transactions the stored position covers, each once, in order.

const (
	loopTopic   = "p.db.t" // the change topic of db.t
	loopOffsets = "offsets"
	loopID      = "c1"
)

// fakeRegistry hands out one id per subject and schema.
type fakeRegistry struct {
	mu  sync.Mutex
	ids map[string]int
}

func (r *fakeRegistry) Register(_ context.Context, subject string, schema []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]int{}
	}
	k := subject + "\x00" + string(schema)
	if id, ok := r.ids[k]; ok {
		return id, nil
	}
	r.ids[k] = len(r.ids) + 1
	return r.ids[k], nil
}

func (r *fakeRegistry) Frame(ctx context.Context, subject string, schema []byte) (publish.Frame, error) {
	id, err := r.Register(ctx, subject, schema)
	return publish.ConfluentFrame(id), err
}

// fakeDefs is information_schema: the definitions of the tables that
// exist now, which a test may change (a DDL).
type fakeDefs struct {
	mu   sync.Mutex
	defs map[string]schemahist.Definition
}

func (d *fakeDefs) Load(_ context.Context, db, table string) (schemahist.Definition, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	def, ok := d.defs[tableKey(db, table)]
	if !ok {
		return schemahist.Definition{}, fmt.Errorf("%w: %s.%s", schemahist.ErrNoTable, db, table)
	}
	return def, nil
}

func (d *fakeDefs) set(def schemahist.Definition) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.defs[tableKey(def.DB, def.Table)] = def
}

// tDef is db.t: id INT PRIMARY KEY, then cols more INT columns.
func tDef(cols int) schemahist.Definition {
	def := schemahist.Definition{DB: "db", Table: "t", PrimaryKey: []string{"id"},
		Columns: []mysqltype.Column{{Name: "id", Type: "int(11)"}}}
	for i := range cols {
		def.Columns = append(def.Columns, mysqltype.Column{Name: fmt.Sprintf("c%d", i+1), Type: "int(11)", Nullable: true})
	}
	return def
}

// posAfter is the position after generated transaction n (0: before the first).
func posAfter(n int) binlog.Position {
	return binlog.Position{Flavor: binlog.FlavorMariaDB, GTIDSet: fmt.Sprintf("0-1-%d", n), File: "bin.000001", Pos: uint32(1000 + 100*n)}
}

// txn is generated transaction n: one insert into db.t per id, each
// row (id, n) with cols columns after id.
func txn(n int, ids ...int) []binlog.Event {
	gtid := fmt.Sprintf("0-1-%d", n)
	base := binlog.Event{Timestamp: 1_700_000_000, ServerID: 1, File: "bin.000001", Pos: uint32(1000 + 100*(n-1)), GTID: gtid}
	evs := []binlog.Event{withKind(base, binlog.KindBegin)}
	for _, id := range ids {
		ev := withKind(base, binlog.KindRows)
		ev.Table = &replication.TableMapEvent{Schema: []byte("db"), Table: []byte("t"), ColumnCount: 2}
		ev.RowsType = binlog.Insert
		ev.Rows = [][]any{{int32(id), int32(n)}}
		evs = append(evs, ev)
	}
	end := withKind(base, binlog.KindCommit)
	end.Position = posAfter(n)
	return append(evs, end)
}

func withKind(e binlog.Event, k binlog.Kind) binlog.Event { e.Kind = k; return e }

// genBinlog is a generated binlog of whole transactions.
type genBinlog [][]binlog.Event

// from returns a Source positioned after the transaction whose end
// position is at (the start of the binlog when none is).
func (g genBinlog) from(at binlog.Position) *genSource {
	src := &genSource{pos: posAfter(0)}
	for i, tx := range g {
		if src.pos == at {
			src.events = slices.Concat(g[i:]...)
			return src
		}
		src.pos = tx[len(tx)-1].Position
	}
	if src.pos == at {
		return src
	}
	src.pos = posAfter(0)
	src.events = slices.Concat(g...)
	return src
}

// genSource is a Source of generated events. Before returning event i it
// calls hold(ctx, i), which may block (a capture stopped there); when the
// events run out it calls end and waits for ctx.
type genSource struct {
	pos    binlog.Position
	events []binlog.Event
	next   int
	hold   func(ctx context.Context, i int) error
	end    func()
}

func (s *genSource) Position() binlog.Position { return s.pos }

func (s *genSource) Next(ctx context.Context) (binlog.Event, error) {
	if s.next >= len(s.events) {
		if s.end != nil {
			s.end()
		}
		<-ctx.Done()
		return binlog.Event{}, ctx.Err()
	}
	if s.hold != nil {
		if err := s.hold(ctx, s.next); err != nil {
			return binlog.Event{}, err
		}
	}
	ev := s.events[s.next]
	s.next++
	return ev, nil
}

var _ Source = (*genSource)(nil)

// loopEnv is one Kafka cluster and the captures a test runs on it.
type loopEnv struct {
	t    *testing.T
	c    *kfake.Cluster
	reg  *fakeRegistry
	defs *fakeDefs
	// maxBuffered is the publisher's max-buffered-bytes (default 4 MiB).
	maxBuffered int
	cfg         func(*Config) // adjusts each Stream's config
	chunks      chunkReader   // where the initial snapshot reads chunks, if one runs
}

func newLoopEnv(t *testing.T) *loopEnv {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, loopOffsets))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &loopEnv{t: t, c: c, reg: &fakeRegistry{},
		defs: &fakeDefs{defs: map[string]schemahist.Definition{"db.t": tDef(1)}}}
}

// publisher starts a capture's producer, which fences every older one
// with the same id and aborts its open transaction, as a restart does.
func (e *loopEnv) publisher() *publish.Publisher {
	e.t.Helper()
	buf := e.maxBuffered
	if buf == 0 {
		buf = 4 << 20
	}
	pub, err := publish.New(e.t.Context(), publish.Config{
		Brokers: e.c.ListenAddrs(), ID: loopID, OffsetsTopic: loopOffsets, TopicPartitions: 1, TopicReplication: 1,
		MaxRecordBytes: 16 << 10, TransactionTimeout: time.Minute, MaxBufferedBytes: buf,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(pub.Close)
	return pub
}

// stored is the committed state, and whether there is one.
func (e *loopEnv) stored(pub *publish.Publisher) (State, bool) {
	e.t.Helper()
	b, found, err := pub.LoadPosition(e.t.Context(), loopID)
	if err != nil {
		e.t.Fatal(err)
	}
	if !found {
		return State{}, false
	}
	st, err := UnmarshalState(b)
	if err != nil {
		e.t.Fatal(err)
	}
	return st, true
}

// stream returns a capture's loop on pub, with every source transaction
// committing at its boundary (max-txn-records 1) unless cfg says otherwise.
func (e *loopEnv) stream(pub *publish.Publisher) *Stream {
	e.t.Helper()
	filt, err := filter.New(filter.Lists{})
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := Config{Prefix: "p", Flavor: debezium.FlavorMariaDB, PositionKey: loopID, CommitInterval: time.Hour,
		MaxTxnRecords: 1, ShutdownTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler), Filter: filt}
	if e.cfg != nil {
		e.cfg(&cfg)
	}
	s, err := New(cfg, pub, e.reg, e.defs, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if s.snap != nil && e.chunks != nil {
		s.snap.chunks = e.chunks
	}
	return s
}

// running is a capture's loop running on its own goroutine.
type running struct {
	pub    *publish.Publisher
	cancel context.CancelFunc
	done   chan error
}

func (e *loopEnv) start(pub *publish.Publisher, src Source) *running {
	ctx, cancel := context.WithCancel(e.t.Context())
	r := &running{pub: pub, cancel: cancel, done: make(chan error, 1)}
	s := e.stream(pub)
	go func() { r.done <- s.Run(ctx, src) }()
	return r
}

// wait returns Run's error, failing the test if it takes more than 10s.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not stop")
		return nil
	}
}

// kill stops a capture as kill -9 does: its Kafka client goes away with
// whatever it had not sent, and it sends nothing more (no abort).
func (r *running) kill(t *testing.T) {
	t.Helper()
	r.pub.Close()
	r.cancel()
	_ = r.wait(t)
}

// resume starts a new capture the way run does after a crash: a new
// producer (fencing the old one), the stored position, and the binlog
// from there; it runs until the binlog is read and stops cleanly.
func (e *loopEnv) resume(g genBinlog) *publish.Publisher {
	e.t.Helper()
	pub := e.publisher()
	st, _ := e.stored(pub)
	src := g.from(st.Position)
	ctx, cancel := context.WithCancel(e.t.Context())
	src.end = cancel
	if err := e.stream(pub).Run(ctx, src); !errors.Is(err, context.Canceled) {
		e.t.Fatalf("resumed capture: %v", err)
	}
	return pub
}

// committedIDs are the ids of the committed change events of db.t, in offset order.
func (e *loopEnv) committedIDs(pub *publish.Publisher) []int {
	e.t.Helper()
	var ids []int
	err := pub.ReadCommitted(e.t.Context(), loopTopic, func(r *kgo.Record) {
		// Confluent framing (5 bytes), then the Avro key struct {id int}.
		id, n := binary.Varint(r.Key[5:])
		if n <= 0 {
			e.t.Errorf("undecodable key %x at offset %d", r.Key, r.Offset)
		}
		ids = append(ids, int(id))
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}

// topicID is the id of a topic of the cluster.
func (e *loopEnv) topicID(topic string) [16]byte {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.c.ListenAddrs()...))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(e.t.Context(), topic)
	if err != nil || td.Error() != nil {
		e.t.Fatalf("listing %s: %v %v", topic, err, td.Error())
	}
	return td[topic].ID
}

// endOffset is the change topic's high watermark: every record the
// broker holds, committed or not.
func (e *loopEnv) endOffset(pub *publish.Publisher) int64 {
	e.t.Helper()
	ends, err := kadm.NewClient(pub.Client()).ListEndOffsets(e.t.Context(), loopTopic)
	if err != nil {
		e.t.Fatal(err)
	}
	o, _ := ends.Lookup(loopTopic, 0)
	return o.Offset
}

// checkExactlyOnce checks that the committed change events are ids 1..n,
// each once and in order, and that the stored position is after
// transaction lastTxn.
func (e *loopEnv) checkExactlyOnce(pub *publish.Publisher, n, lastTxn int) {
	e.t.Helper()
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	if got := e.committedIDs(pub); !slices.Equal(got, want) {
		e.t.Errorf("committed ids %v, want %v", got, want)
	}
	st, ok := e.stored(pub)
	if !ok || st.Position != posAfter(lastTxn) {
		e.t.Errorf("stored position %v (found %v), want %v", st.Position, ok, posAfter(lastTxn))
	}
}

// holdAt returns a hold func that, at event index at, reports that the
// capture got there and blocks until ctx ends: the capture is stopped at
// that point for the test to kill it.
func holdAt(at int, reached chan<- struct{}) func(ctx context.Context, i int) error {
	return func(ctx context.Context, i int) error {
		if i != at {
			return nil
		}
		close(reached)
		<-ctx.Done()
		return ctx.Err()
	}
}

// fiveTxns is five source transactions of three rows each, ids 1..15.
func fiveTxns() genBinlog {
	var g genBinlog
	for n := 1; n <= 5; n++ {
		g = append(g, txn(n, 3*n-2, 3*n-1, 3*n))
	}
	return g
}

// TestCommitOnlyAtSourceTransactionBoundary: with max-txn-records 1 the
// loop wants to commit after every record, yet a Kafka transaction ends
// only where a source transaction does. A capture stopped in the middle of
// a source transaction, cleanly or not, has committed none of it.
func TestCommitOnlyAtSourceTransactionBoundary(t *testing.T) {
	g := fiveTxns()
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, r *running)
	}{
		{"clean stop", func(t *testing.T, r *running) {
			r.cancel()
			if err := r.wait(t); !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: %v, want context.Canceled", err)
			}
		}},
		{"kill", func(t *testing.T, r *running) { r.kill(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLoopEnv(t)
			src := g.from(posAfter(0))
			reached := make(chan struct{})
			// Event 7 is the second row of transaction 2 (5 events each).
			src.hold = holdAt(7, reached)
			r := e.start(e.publisher(), src)
			<-reached
			tc.stop(t, r)
			pub := e.publisher()
			if got := e.committedIDs(pub); !slices.Equal(got, []int{1, 2, 3}) {
				t.Fatalf("stopped inside transaction 2: committed ids %v, want transaction 1's [1 2 3]", got)
			}
			if st, _ := e.stored(pub); st.Position != posAfter(1) {
				t.Fatalf("stored position %v, want the one after transaction 1", st.Position)
			}
			pub.Close()
			e.checkExactlyOnce(e.resume(g), 15, 5)
		})
	}
}

// TestCrashAtEachPointOfTheCommitSequence kills capture at each step of
// committing source transaction 3 — its rows produced; the position record
// produced but not acknowledged; everything flushed but EndTxn not applied;
// the commit applied — and checks that the restarted capture ends with
// every change exactly once.
func TestCrashAtEachPointOfTheCommitSequence(t *testing.T) {
	g := fiveTxns()
	// hang answers nothing to the first request of key that want accepts,
	// after reporting it: the broker never applies it.
	hang := func(c *kfake.Cluster, key kmsg.Key, want func(kmsg.Request) bool, reached chan<- struct{}) {
		c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			if !want(req) {
				c.KeepControl()
				return nil, nil, false
			}
			close(reached)
			return nil, nil, true
		})
	}
	// producesPosition accepts the third request that produces to the
	// offsets topic (named, or by id in Produce v13+): commit 3's.
	producesPosition := func(offsetsID [16]byte) func(kmsg.Request) bool {
		n := 0
		return func(req kmsg.Request) bool {
			for _, tp := range req.(*kmsg.ProduceRequest).Topics {
				if tp.Topic == loopOffsets || (tp.Topic == "" && tp.TopicID == offsetsID) {
					n++
					return n == 3
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name string
		// arm makes the capture stop at the crash point, closing reached there.
		arm      func(e *loopEnv, src *genSource, reached chan struct{})
		wantPos  int // the transaction the position stored at the crash is after
		wantRows int
	}{
		{"rows of the source transaction produced", func(_ *loopEnv, src *genSource, reached chan struct{}) {
			src.hold = holdAt(14, reached) // the commit event of transaction 3
		}, 2, 6},
		{"position record produced, not acknowledged", func(e *loopEnv, _ *genSource, reached chan struct{}) {
			hang(e.c, kmsg.Produce, producesPosition(e.topicID(loopOffsets)), reached)
		}, 2, 6},
		{"flushed, EndTxn not applied", func(e *loopEnv, _ *genSource, reached chan struct{}) {
			n := 0
			hang(e.c, kmsg.EndTxn, func(kmsg.Request) bool { n++; return n == 3 }, reached)
		}, 2, 6},
		{"commit applied", func(_ *loopEnv, src *genSource, reached chan struct{}) {
			src.hold = holdAt(15, reached) // the begin event of transaction 4
		}, 3, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLoopEnv(t)
			src := g.from(posAfter(0))
			reached := make(chan struct{})
			tc.arm(e, src, reached)
			r := e.start(e.publisher(), src)
			select {
			case <-reached:
			case err := <-r.done:
				t.Fatalf("the capture stopped before the crash point: %v", err)
			}
			r.kill(t)
			pub := e.publisher()
			want := make([]int, tc.wantRows)
			for i := range want {
				want[i] = i + 1
			}
			if got := e.committedIDs(pub); !slices.Equal(got, want) {
				t.Fatalf("after the crash: committed ids %v, want %v", got, want)
			}
			if st, _ := e.stored(pub); st.Position != posAfter(tc.wantPos) {
				t.Fatalf("after the crash: stored position %v, want %v", st.Position, posAfter(tc.wantPos))
			}
			pub.Close()
			e.checkExactlyOnce(e.resume(g), 15, 5)
		})
	}
}

// TestTransactionLargerThanMaxBufferedBytes: a source transaction of more
// bytes than --max-buffered-bytes neither stalls the loop (records go to
// the broker inside the open Kafka transaction as the buffer fills) nor
// becomes visible in part: killed before its end, none of it is
// committed, although the broker holds its records; resumed, all of it is,
// once.
func TestTransactionLargerThanMaxBufferedBytes(t *testing.T) {
	const rows = 400
	e := newLoopEnv(t)
	e.maxBuffered = 32 << 10 // a record is about 200 bytes: the transaction is about 80 KiB
	ids := make([]int, rows)
	for i := range ids {
		ids[i] = i + 2
	}
	g := genBinlog{txn(1, 1), txn(2, ids...), txn(3, rows+2)}
	src := g.from(posAfter(0))
	reached := make(chan struct{})
	src.hold = holdAt(3+rows+1, reached) // transaction 2's commit event
	r := e.start(e.publisher(), src)
	select {
	case <-reached:
	case err := <-r.done:
		t.Fatalf("the loop stopped inside the large transaction: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the loop stalled inside a transaction larger than max-buffered-bytes")
	}
	r.kill(t)
	pub := e.publisher()
	if got := e.committedIDs(pub); !slices.Equal(got, []int{1}) {
		t.Fatalf("killed inside the large transaction: committed %d ids (%v...), want transaction 1's [1]", len(got), got[:min(len(got), 5)])
	}
	if end := e.endOffset(pub); end < rows/2 {
		t.Fatalf("the broker holds %d records: the transaction did not outgrow the producer's buffer", end)
	}
	pub.Close()
	e.checkExactlyOnce(e.resume(g), rows+2, 3)
}

// TestFencedCaptureCommitsNothing: a capture whose producer a newer one
// with the same id fenced stops with publish.ErrFenced at its next commit,
// and nothing of its open transaction becomes visible; the newer capture
// carries on exactly once.
func TestFencedCaptureCommitsNothing(t *testing.T) {
	e := newLoopEnv(t)
	g := fiveTxns()
	src := g.from(posAfter(0))
	reached, release := make(chan struct{}), make(chan struct{})
	src.hold = func(ctx context.Context, i int) error {
		if i == 8 { // inside transaction 2
			close(reached)
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	old := e.start(e.publisher(), src)
	<-reached
	newer := e.publisher() // fences the old producer and aborts its transaction
	close(release)
	if err := old.wait(t); !errors.Is(err, publish.ErrFenced) {
		t.Fatalf("the fenced capture stopped with %v, want publish.ErrFenced", err)
	}
	if got := e.committedIDs(newer); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("committed ids %v, want transaction 1's [1 2 3]", got)
	}
	newer.Close()
	e.checkExactlyOnce(e.resume(g), 15, 5)
}

// TestMetadataRecordsShareTheSourceTransaction: the transaction topic's
// BEGIN and END records of a source transaction are committed with its
// change events, or not at all.
func TestMetadataRecordsShareTheSourceTransaction(t *testing.T) {
	e := newLoopEnv(t)
	e.cfg = func(c *Config) { c.TxMetadata = true }
	g := fiveTxns()
	src := g.from(posAfter(0))
	reached := make(chan struct{})
	src.hold = holdAt(7, reached) // inside transaction 2
	r := e.start(e.publisher(), src)
	<-reached
	r.kill(t)
	pub := e.publisher()
	count := func(pub *publish.Publisher) (begins, ends int) {
		t.Helper()
		err := pub.ReadCommitted(t.Context(), "p.transaction", func(r *kgo.Record) {
			// The value's first field is the status string: Avro length, then "BEGIN" or "END".
			switch n, _ := binary.Varint(r.Value[5:]); n {
			case 5:
				begins++
			case 3:
				ends++
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return begins, ends
	}
	if b, en := count(pub); b != 1 || en != 1 {
		t.Fatalf("killed inside transaction 2: %d BEGIN and %d END records committed, want transaction 1's one each", b, en)
	}
	pub.Close()
	pub = e.resume(g)
	if b, en := count(pub); b != 5 || en != 5 {
		t.Fatalf("after the restart: %d BEGIN and %d END records, want 5 of each", b, en)
	}
	e.checkExactlyOnce(pub, 15, 5)
}
