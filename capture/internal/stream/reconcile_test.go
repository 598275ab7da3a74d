package stream

import (
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/filter"
	"github.com/binlake/binlake/capture/internal/snapshot"
)

// scriptedChunks is a chunkReader over a table whose rows are ids: each
// start reads every chunk at once, as of that moment; chunk k of the n-th
// start has the high watermark high(n, k).
type scriptedChunks struct {
	mu     sync.Mutex
	ids    []int
	high   func(n, k int) binlog.Position
	starts []scriptedStart
}

// scriptedStart is what a start read from: after which key, with a
// definition of how many columns.
type scriptedStart struct {
	after   string
	columns int
}

func (c *scriptedChunks) estimate(context.Context, string, string) int64 { return int64(len(c.ids)) }

func (c *scriptedChunks) start(_ context.Context, cfg fetchConfig) chunkSource {
	c.mu.Lock()
	defer c.mu.Unlock()
	after := ""
	if len(cfg.after) > 0 {
		after = string(cfg.after[0])
	}
	n := len(c.starts)
	c.starts = append(c.starts, scriptedStart{after: after, columns: len(cfg.t.Def.Columns)})
	seq := cfg.seq.Load()
	src := &scriptedSource{}
	var rest []int
	for _, id := range c.ids {
		if a, _ := strconv.Atoi(after); after == "" || id > a {
			rest = append(rest, id)
		}
	}
	startAfter := cfg.after
	// As snapshot.ReadChunk, an empty read is one last chunk without rows.
	for first := true; first || len(rest) > 0; first = false {
		k := min(cfg.chunkRows, len(rest))
		fc := &fetchedChunk{done: make(chan struct{}), startAfter: startAfter, last: k == len(rest),
			low: min(cfg.low0, seq), tableLow: seq, high: c.high(n, len(src.chunks))}
		for _, id := range rest[:k] {
			// The text protocol's values: every column as bytes.
			row := make([]any, len(cfg.t.Def.Columns))
			for i := range row {
				row[i] = []byte(strconv.Itoa(id))
			}
			conv, err := cfg.convert(cfg.t, nil, row)
			if err != nil {
				fc.err = err
			}
			fc.rows = append(fc.rows, conv)
			fc.keys = append(fc.keys, [][]byte{[]byte(strconv.Itoa(id))})
		}
		close(fc.done)
		src.chunks = append(src.chunks, fc)
		if k > 0 {
			startAfter = fc.keys[k-1]
		}
		rest = rest[k:]
	}
	return src
}

// scriptedSource hands out chunks read in advance.
type scriptedSource struct{ chunks []*fetchedChunk }

func (s *scriptedSource) next() (*fetchedChunk, <-chan struct{}) {
	if len(s.chunks) == 0 {
		return nil, make(chan struct{})
	}
	fc := s.chunks[0]
	s.chunks = s.chunks[1:]
	return fc, nil
}

func (s *scriptedSource) stop() {}

// committedEvent is a committed change event of db.t: its key's id and
// its value's schema id.
type committedEvent struct {
	id     int
	schema int
}

// TestDDLBetweenChunks: a chunk read before an ALTER TABLE or TRUNCATE of
// its table, and the row held back from the chunk before, are never
// emitted once the loop has read the statement; the table is read again,
// as it is after the statement, from the row after the last one emitted.
// So every row is emitted once, in the structure it has after an ALTER,
// and none that a TRUNCATE removed after the snapshot read it.
func TestDDLBetweenChunks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		query string
		// apply makes the source as it is after the statement.
		apply func(e *loopEnv, c *scriptedChunks)
		cols  int   // the columns of db.t after the statement
		ids   []int // the committed events' ids (0: the TRUNCATE event)
		reads []scriptedStart
	}{
		{"alter", "ALTER TABLE t ADD COLUMN c2 INT", func(e *loopEnv, _ *scriptedChunks) { e.defs.set(tDef(2)) }, 3,
			[]int{100, 1, 101, 2, 3, 4}, []scriptedStart{{"", 2}, {"1", 3}}},
		{"truncate", "TRUNCATE TABLE t", func(_ *loopEnv, c *scriptedChunks) { c.ids = nil }, 2,
			[]int{100, 1, 0, 101}, []scriptedStart{{"", 2}, {"1", 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLoopEnv(t)
			// The first read's chunks: [1 2] consistent with transaction 1,
			// [3 4] read before the statement (transaction 2) and consistent
			// with transaction 3. The read after the rewind sees transaction 3.
			chunks := &scriptedChunks{ids: []int{1, 2, 3, 4}, high: func(n, k int) binlog.Position {
				if n == 0 && k == 0 {
					return posAfter(1)
				}
				return posAfter(3)
			}}
			e.chunks = chunks
			e.cfg = func(c *Config) {
				c.Snapshot = &SnapshotConfig{Progress: snapshot.Progress{Tables: ids("db.t")}, ChunkRows: 2}
			}
			stmt := binlog.Event{Kind: binlog.KindQuery, Timestamp: 1_700_000_000, ServerID: 1, File: "bin.000001", Pos: 1100,
				GTID: "0-1-2", Schema: "db", Query: tc.query, Position: posAfter(2)}
			after := txn(3, 101)
			after[1].Table = &replication.TableMapEvent{Schema: []byte("db"), Table: []byte("t"), ColumnCount: uint64(tc.cols)}
			after[1].Rows = [][]any{make([]any, tc.cols)}
			for i := range after[1].Rows[0] {
				after[1].Rows[0][i] = int32(101)
			}
			g := genBinlog{txn(1, 100), {stmt}, after}

			pub := e.publisher()
			src := g.from(posAfter(0))
			ctx, cancel := context.WithCancel(t.Context())
			src.end = cancel
			src.hold = func(_ context.Context, i int) error {
				if i == 3 { // the statement is done on the source
					chunks.mu.Lock()
					tc.apply(e, chunks)
					chunks.mu.Unlock()
				}
				return nil
			}
			if err := e.stream(pub).Run(ctx, src); err != context.Canceled {
				t.Fatalf("Run: %v", err)
			}

			var got []committedEvent
			err := pub.ReadCommitted(t.Context(), loopTopic, func(r *kgo.Record) {
				var id int64
				if r.Key != nil {
					id, _ = binary.Varint(r.Key[5:])
				}
				got = append(got, committedEvent{int(id), int(binary.BigEndian.Uint32(r.Value[1:5]))})
			})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int
			for _, ev := range got {
				ids = append(ids, ev.id)
			}
			if !slices.Equal(ids, tc.ids) {
				t.Fatalf("committed ids %v, want %v", ids, tc.ids)
			}
			// Rows read again are written with the schema of the table after
			// the statement, as the stream's own rows after it are.
			for _, ev := range got[3:] {
				if want := got[2].schema; ev.schema != want && tc.name == "alter" {
					t.Errorf("id %d written with value schema %d, want %d (the one after the ALTER)", ev.id, ev.schema, want)
				}
			}
			if tc.name == "alter" && got[0].schema == got[2].schema {
				t.Errorf("the ALTER did not change the value schema (%d)", got[0].schema)
			}
			if !slices.Equal(chunks.starts, tc.reads) {
				t.Errorf("chunk reads %v, want %v: the second from the last row emitted, with the definition after the statement", chunks.starts, tc.reads)
			}
			if st, _ := e.stored(pub); st.Position != posAfter(3) || st.Snapshot != nil {
				t.Errorf("stored %v with snapshot %+v, want the position after transaction 3 and no snapshot left", st.Position, st.Snapshot)
			}
		})
	}
}

// TestSnapshotRowOfAKeyTheStreamChanged: a snapshot row whose key the loop
// changed after the row's chunk was read is dropped, whether it is in the
// chunk being emitted or the row held back from the chunk before: the
// stream's event carries the key's newer state, and a snapshot row after
// it would overwrite that state with an older one.
func TestSnapshotRowOfAKeyTheStreamChanged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changed int
		ids     []int
	}{
		{"row of the chunk", 3, []int{100, 1, 3, 2, 4}},
		{"held row", 2, []int{100, 1, 2, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLoopEnv(t)
			// Both chunks are read before transaction 1; [1 2] is consistent
			// with transaction 1, [3 4] with transaction 2, which changes a key.
			chunks := &scriptedChunks{ids: []int{1, 2, 3, 4}, high: func(_, k int) binlog.Position { return posAfter(k + 1) }}
			e.chunks = chunks
			e.cfg = func(c *Config) {
				c.Snapshot = &SnapshotConfig{Progress: snapshot.Progress{Tables: ids("db.t")}, ChunkRows: 2}
			}
			g := genBinlog{txn(1, 100), txn(2, tc.changed)}
			pub := e.publisher()
			src := g.from(posAfter(0))
			ctx, cancel := context.WithCancel(t.Context())
			src.end = cancel
			if err := e.stream(pub).Run(ctx, src); err != context.Canceled {
				t.Fatalf("Run: %v", err)
			}
			if got := e.committedIDs(pub); !slices.Equal(got, tc.ids) {
				t.Fatalf("committed ids %v, want %v: the snapshot row of key %d dropped, the stream's kept", got, tc.ids, tc.changed)
			}
		})
	}
}

// tableRecorder records the tables a snapshot starts reading.
type tableRecorder struct {
	chunkReader
	mu     sync.Mutex
	tables []string
}

func (r *tableRecorder) start(ctx context.Context, cfg fetchConfig) chunkSource {
	r.mu.Lock()
	r.tables = append(r.tables, cfg.t.Def.DB+"."+cfg.t.Def.Table)
	r.mu.Unlock()
	return r.chunkReader.start(ctx, cfg)
}

// TestSnapshotProgressOutsideFilters: snapshot progress comes from the
// offsets topic, which others may be able to write. A stored progress
// naming tables the include and exclude lists leave out (mysql.user, a
// database not included) reads none of them: only the captured table is
// read and emitted.
func TestSnapshotProgressOutsideFilters(t *testing.T) {
	e := newLoopEnv(t)
	for _, name := range [][2]string{{"mysql", "user"}, {"other", "secret"}} {
		def := tDef(1)
		def.DB, def.Table = name[0], name[1]
		e.defs.set(def)
	}
	rec := &tableRecorder{chunkReader: &scriptedChunks{ids: []int{1, 2}, high: func(int, int) binlog.Position { return posAfter(1) }}}
	e.chunks = rec
	filt, err := filter.New(filter.Lists{DatabaseInclude: "db"})
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = func(c *Config) {
		c.Filter = filt
		c.Snapshot = &SnapshotConfig{Progress: snapshot.Progress{Tables: ids("mysql.user", "other.secret", "db.t")}, ChunkRows: 2}
	}
	pub := e.publisher()
	src := genBinlog{txn(1, 100)}.from(posAfter(0))
	ctx, cancel := context.WithCancel(t.Context())
	src.end = cancel
	if err := e.stream(pub).Run(ctx, src); err != context.Canceled {
		t.Fatalf("Run: %v", err)
	}
	if !slices.Equal(rec.tables, []string{"db.t"}) {
		t.Errorf("tables read %v, want only db.t", rec.tables)
	}
	var ids []int
	if err := pub.ReadCommitted(t.Context(), loopTopic, func(r *kgo.Record) {
		if r.Key != nil {
			id, _ := binary.Varint(r.Key[5:])
			ids = append(ids, int(id))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ids, 1) || !slices.Contains(ids, 2) {
		t.Errorf("committed ids %v, want the snapshot rows 1 and 2 of db.t", ids)
	}
}
