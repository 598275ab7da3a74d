package stream

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/schemas/debezium"
)

// The initial snapshot runs inside the stream loop (DBLog watermarks).
//
// A chunkFetcher reads the chunks of the table being snapshotted ahead of
// the loop (SELECT ... WHERE pk > last ORDER BY pk LIMIT n, then the high
// watermark: the executed GTID set and binlog offset after the SELECT) and
// converts them on other goroutines. The loop counts the binlog
// transactions it reads (seq) and remembers, per key of a snapshotted
// table, the seq of its last change. Between binlog transactions it takes
// the next chunk; once the stream has read up to the chunk's high
// watermark, the rows whose key the stream changed after the chunk's low
// mark are dropped (the stream emitted their newer state, with full row
// images) and the rest are emitted as op=r. The low mark is the seq
// sampled before the previous SELECT rather than this one, so that a
// transaction already in the binlog but not yet visible to the SELECT
// (binlog write precedes the engine commit) cannot let an older snapshot
// row overwrite a newer streamed one.
//
// Rows and the snapshot's Progress go into the stream's Kafka transaction
// with the binlog position, so a crash resumes at the chunk after the last
// one emitted. One row is held back until the next one survives, so the
// last row of each table and of the snapshot can carry Debezium's
// last_in_data_collection and last markers.

// errChunkReady ends a binlog read when the chunk the snapshot waits for
// has been read.
var errChunkReady = errors.New("snapshot chunk ready")

// SnapshotConfig configures the initial snapshot of a Stream.
type SnapshotConfig struct {
	// DB reads the rows; its session time_zone must be '+00:00' and it
	// should use the text protocol (interpolateParams), so that values
	// reach the converter as they would from a binlog-less query.
	DB *sql.DB
	// Progress is where the snapshot is (new or resumed).
	Progress snapshot.Progress
	// ChunkRows is the rows per SELECT (default 10000).
	ChunkRows int
	// ReadAhead is how many chunks are read and converted ahead of the one
	// being emitted, converted in parallel (default 2). With ChunkRows it
	// bounds the snapshot's memory.
	ReadAhead int
	// StopWhenDone makes Run return nil once the snapshot is committed
	// (snapshot.mode=initial_only).
	StopWhenDone bool
}

// State is the record stored under the capture id: the binlog position
// and, while a snapshot runs, its progress.
type State struct {
	binlog.Position
	Snapshot *snapshot.Progress `json:"snapshot,omitempty"`
	IncrementalState
}

// MarshalState encodes a state for the offsets topic.
func MarshalState(s State) ([]byte, error) { return json.Marshal(s) }

// UnmarshalState decodes a stored state (a bare position decodes too).
func UnmarshalState(b []byte) (State, error) {
	p, err := binlog.UnmarshalPosition(b)
	if err != nil {
		return State{}, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("%w: %v", binlog.ErrInvalidPosition, err)
	}
	s.Position = p
	return s, nil
}

type snapRun struct {
	cfg    SnapshotConfig
	prog   snapshot.Progress // as of the last row emitted
	tables map[string]bool
	index  map[string]int // position of each table in Progress.Tables

	// read cursor: the next chunk starts after key `after` of table cur
	cur   int
	after [][]byte

	// seq counts the binlog transactions the loop has read; the fetcher
	// samples it. changes holds, per snapshotted table, the seq of the last
	// change of each key, and tableChanged the seq of the last TRUNCATE or
	// DDL of a table. Entries older than every chunk still to be emitted
	// are pruned.
	seq          atomic.Int64
	changes      map[string]map[string]int64
	tableChanged map[string]int64
	fetch        *chunkFetcher
	lastLow      int64           // low mark of the last chunk taken from a fetcher
	fetchWait    <-chan struct{} // ready when the fetcher may have the next chunk

	pending *pendingChunk
	held    *heldRow

	tableStart time.Time
	tableRows  int64
	done       bool
	// incremental: an ad-hoc snapshot (incremental.go): every row is
	// marked "incremental" and none is held back.
	incremental bool
}

type pendingChunk struct {
	t          *table
	idx        int
	startAfter [][]byte
	chunk      snapshot.Chunk
	rows       []debezium.Struct // converted (chunks from the fetcher)
	low        int64             // key changes with a seq above it invalidate rows
	tableLow   int64             // a TRUNCATE or DDL with a seq above it invalidates the chunk
	high       binlog.Position
	checked    bool                 // the watermark was compared since the stream last moved
	consistent *snapshot.Consistent // tables without a primary key
}

type heldRow struct {
	t        *table
	idx      int
	key      [][]byte
	low      int64 // the low marks of its chunk
	tableLow int64
	after    debezium.Struct
	src      debezium.Source
}

func newSnapRun(cfg SnapshotConfig) *snapRun {
	if cfg.ChunkRows <= 0 {
		cfg.ChunkRows = 10000
	}
	if cfg.ReadAhead <= 0 {
		cfg.ReadAhead = 2
	}
	r := &snapRun{cfg: cfg, prog: cfg.Progress, tables: map[string]bool{},
		cur: cfg.Progress.Table, after: cfg.Progress.After,
		changes: map[string]map[string]int64{}, tableChanged: map[string]int64{}, tableStart: time.Now()}
	r.index = map[string]int{}
	for i, t := range cfg.Progress.Tables {
		r.tables[t] = true
		r.index[t] = i
	}
	return r
}

// snapshotting reports whether the stream must track changes of db.table.
func (s *Stream) snapshotting(key string) bool {
	return s.snap != nil && !s.snap.done && s.snap.tables[key]
}

// trackChange remembers that the stream changed a key of a snapshotted table.
// It runs for every row: without a snapshot it must not build the table's
// name.
func (s *Stream) trackChange(t *table, row debezium.Struct) {
	if s.snap == nil || s.snap.done || t.Key == nil {
		return
	}
	key := tableKey(t.Def.DB, t.Def.Table)
	if !s.snap.tables[key] {
		return
	}
	m := s.snap.changes[key]
	if m == nil {
		m = map[string]int64{}
		s.snap.changes[key] = m
	}
	// The transaction being read: one more than those read completely.
	m[keyString(t, row)] = s.snap.seq.Load() + 1
}

// trackTable remembers that a snapshotted table was truncated or altered.
func (s *Stream) trackTable(db, tbl string) {
	key := tableKey(db, tbl)
	if s.snapshotting(key) {
		s.snap.tableChanged[key] = s.snap.seq.Load() + 1
	}
}

// snapKeylessAhead reports whether t is a table without a primary key
// whose snapshot has not been emitted yet. Its changes are not streamed
// until then: the snapshot, consistent with a later binlog position,
// already holds them, and rows without a key cannot be reconciled.
func (s *Stream) snapKeylessAhead(t *table) bool {
	if t.Key != nil || s.snap == nil || s.snap.done {
		return false
	}
	i, ok := s.snap.index[tableKey(t.Def.DB, t.Def.Table)]
	return ok && i >= s.snap.prog.Table
}

// trackBoundary counts a binlog transaction read completely.
func (s *Stream) trackBoundary() {
	if s.snap != nil && !s.snap.done {
		s.snap.seq.Add(1)
	}
}

// keyChangedSince reports whether the stream changed the key of row h
// after h's low mark.
func (r *snapRun) keyChangedSince(h *heldRow) bool {
	m := r.changes[tableKey(h.t.Def.DB, h.t.Def.Table)]
	return len(m) > 0 && h.t.Key != nil && m[keyString(h.t, h.after)] > h.low
}

// heldTableChanged reports whether the held row's table was truncated or
// altered after the row was read.
func (r *snapRun) heldTableChanged() bool {
	return r.held != nil && r.tableChanged[tableKey(r.held.t.Def.DB, r.held.t.Def.Table)] > r.held.tableLow
}

// rewind makes the snapshot read table idx again from the row after the
// last one emitted: everything read after it (the held row, the pending
// chunk, what the fetcher read) is dropped. It follows a TRUNCATE or DDL
// of the table while it was read: after a TRUNCATE the rows are gone,
// after an ALTER they are still there, unchanged, with no binlog event
// to carry them, so they must be read again.
func (r *snapRun) rewind(idx int) {
	r.stopFetch()
	if r.pending != nil && r.pending.consistent != nil {
		r.pending.consistent.Close()
	}
	r.pending = nil
	if r.held != nil && r.held.idx >= idx {
		r.held = nil
	}
	r.cur, r.after = idx, nil
	if r.prog.Table == idx {
		r.after = r.prog.After
	}
}

// prune forgets changes no chunk still to be emitted can be invalidated by.
func (r *snapRun) prune(low int64) {
	if r.held != nil {
		low = min(low, r.held.low)
	}
	for _, m := range r.changes {
		for k, seq := range m {
			if seq <= low {
				delete(m, k)
			}
		}
	}
}

// stopFetch stops the chunk fetcher, if one runs, dropping what it read.
func (r *snapRun) stopFetch() {
	if r.fetch != nil {
		r.fetch.stop()
		r.fetch = nil
	}
}

// snapWake returns a channel that is ready when the chunk the snapshot
// waits for has been read, or nil if it waits for nothing: the loop must
// not sit in a read of an idle binlog meanwhile.
func (s *Stream) snapWake() <-chan struct{} {
	r := s.snap
	if r == nil || r.done || r.pending != nil || r.fetch == nil || (r.incremental && s.incrPaused()) {
		// A paused snapshot takes no chunk: waking up for one would spin.
		return nil
	}
	return r.fetchWait
}

// snapStep advances the snapshot by at most one chunk read or emission.
// It returns whether it did anything.
func (s *Stream) snapStep(ctx context.Context) (bool, error) {
	r := s.snap
	if r == nil || r.done {
		return false, nil
	}
	if r.fetch != nil && r.tableChanged[tableKey(r.fetch.t.Def.DB, r.fetch.t.Def.Table)] > r.fetch.start {
		// Truncated or altered: what the fetcher read, and the chunk taken
		// from it, may use the old definition.
		r.rewind(r.fetch.idx)
	}
	if r.pending == nil {
		if r.incremental && s.incrPaused() {
			return false, nil
		}
		if r.cur >= len(r.prog.Tables) {
			return true, s.snapFinish(ctx)
		}
		return s.snapRead(ctx)
	}
	if !s.readMoved && r.pending.checked {
		return false, nil
	}
	s.readMoved, r.pending.checked = false, true
	if !snapshot.Reached(s.readPos, r.pending.high) {
		return false, nil
	}
	return true, s.snapEmit(ctx)
}

func (s *Stream) snapRead(ctx context.Context) (bool, error) {
	r := s.snap
	name := r.prog.Tables[r.cur]
	db, tbl := snapshot.SplitTable(name)
	t, err := s.lookup(ctx, db, tbl, nil)
	if errors.Is(err, schemahist.ErrNoTable) {
		s.log.Warn("snapshot: table no longer exists, skipped", "table", name)
		r.cur, r.after = r.cur+1, nil
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if r.fetch != nil && (r.fetch.idx != r.cur || r.fetch.t != t) {
		r.stopFetch()
	}
	if r.fetch == nil && r.after == nil && r.tableRows == 0 {
		r.tableStart = time.Now()
		s.cfg.Metrics.SnapshotRowsEstimated.WithLabelValues(name).Set(float64(snapshot.EstimateRows(ctx, r.cfg.DB, db, tbl)))
	}
	if len(t.Def.PrimaryKey) > 0 {
		return s.snapTake(ctx, t, name)
	}
	// Tables without a primary key: one consistent read, on the loop.
	p := &pendingChunk{t: t, idx: r.cur, startAfter: r.after, low: r.seq.Load()}
	p.tableLow = p.low
	c, err := snapshot.OpenConsistent(ctx, r.cfg.DB, s.readPos.Flavor)
	if err != nil {
		return false, fmt.Errorf("snapshot of %s: %w", name, err)
	}
	if snapshot.Reached(s.readPos, c.At) && !snapshot.Same(s.readPos, c.At) {
		// The stream already read past the snapshot's position (a
		// transaction in the binlog not yet committed in the engine):
		// try again at the next boundary.
		c.Close()
		return false, nil
	}
	p.consistent, p.high = c, c.At
	p.chunk.Last = true
	r.pending = p
	r.cur, r.after = r.cur+1, nil
	return true, nil
}

// snapTake takes the next chunk of table t from the fetcher (starting one
// at the read cursor if none runs), if it is ready.
func (s *Stream) snapTake(ctx context.Context, t *table, name string) (bool, error) {
	r := s.snap
	if r.fetch == nil {
		r.fetch = startFetcher(ctx, fetchConfig{
			db: r.cfg.DB, t: t, idx: r.cur, after: r.after, chunkRows: r.cfg.ChunkRows, readAhead: r.cfg.ReadAhead,
			flavor: s.readPos.Flavor, seq: &r.seq, low0: r.lastLow, rowsRead: s.cfg.Metrics.SnapshotRows.WithLabelValues(name), convert: s.convert,
		})
	}
	fc, wait := r.fetch.next()
	if fc == nil {
		r.fetchWait = wait
		return false, nil
	}
	r.fetchWait = nil
	r.lastLow = fc.low
	if fc.err != nil {
		return false, fmt.Errorf("snapshot of %s: %w", name, fc.err)
	}
	r.pending = &pendingChunk{t: t, idx: r.cur, startAfter: fc.startAfter, rows: fc.rows,
		chunk: snapshot.Chunk{Keys: fc.keys, Last: fc.last}, low: fc.low, tableLow: fc.tableLow, high: fc.high}
	if len(fc.keys) > 0 {
		r.after = fc.keys[len(fc.keys)-1]
	}
	if fc.last {
		r.stopFetch()
		r.cur, r.after = r.cur+1, nil
	}
	return true, nil
}

func (s *Stream) snapEmit(ctx context.Context) error {
	r := s.snap
	p := r.pending
	r.pending = nil
	name := tableKey(p.t.Def.DB, p.t.Def.Table)
	if err := s.begin(); err != nil {
		return err
	}
	if r.heldTableChanged() {
		r.pending = p
		r.rewind(r.held.idx)
		return nil
	}
	if r.tableChanged[name] > p.tableLow || (p.consistent == nil && s.tables[name] != p.t) {
		// Truncated or altered while read (or the definition was replaced):
		// read it again, from where the snapshot's emitted rows end.
		r.pending = p
		r.rewind(p.idx)
		return nil
	}
	if r.held != nil && r.keyChangedSince(r.held) {
		r.held = nil // the stream carried the key's newer state
	}
	// The current definition: a DDL in the window would have restarted the chunk.
	t := s.tables[name]
	if t == nil {
		t = p.t
	}
	readAt := time.Now()
	src := debezium.Source{
		Version: s.cfg.Version, Connector: s.cfg.Flavor, Name: s.cfg.Prefix,
		TsMs: readAt.UnixMilli(), TsUs: readAt.UnixMicro(), TsNs: readAt.UnixNano(),
		DB: t.Def.DB, Table: t.Def.Table, File: p.high.File, Pos: int64(p.high.Pos),
	}
	if p.consistent != nil {
		var rows int64
		err := p.consistent.Rows(ctx, t.Def.DB, t.Def.Table, columnNames(t), func(row []any) error {
			after, err := s.convert(t, row)
			if err != nil {
				return err
			}
			s.cfg.Metrics.SnapshotRows.WithLabelValues(name).Inc()
			rows++
			return s.snapSurvivor(ctx, &heldRow{t: t, idx: p.idx, low: p.low, tableLow: p.tableLow, after: after, src: src})
		})
		p.consistent.Close()
		if err != nil {
			return err
		}
		// Flush the held row so the table is done in this transaction: a
		// table without a key cannot resume part-way.
		if r.held != nil {
			if err := s.snapEmitHeld(ctx, r.held.idx == len(r.prog.Tables)-1, true); err != nil {
				return err
			}
		}
		r.prog.Table, r.prog.After, r.prog.TableRows = p.idx+1, nil, 0
		r.tableRows += rows
	} else {
		changes := r.changes[name]
		for i, after := range p.rows {
			// Keys are rendered only while the stream changes the table.
			if len(changes) > 0 && changes[keyString(t, after)] > p.low {
				continue
			}
			if err := s.snapSurvivor(ctx, &heldRow{t: t, idx: p.idx, key: p.chunk.Keys[i], low: p.low, tableLow: p.tableLow, after: after, src: src}); err != nil {
				return err
			}
		}
		r.prune(p.low)
	}
	r.tableRows += int64(len(p.chunk.Keys))
	if p.chunk.Last {
		el := time.Since(r.tableStart)
		s.log.Info("snapshot: table done", "table", name, "rows", r.tableRows,
			"rows_per_sec", int64(float64(r.tableRows)/max(el.Seconds(), 0.001)), "elapsed", el.Round(time.Millisecond))
		s.cfg.Metrics.SnapshotTableDone.WithLabelValues(name).Set(1)
		r.tableRows = 0
		r.tableStart = time.Now()
	}
	pos := s.readPos
	s.pendingPos = &pos
	return nil
}

func columnNames(t *table) []string {
	cols := make([]string, len(t.Def.Columns))
	for i, c := range t.Def.Columns {
		cols[i] = c.Name
	}
	return cols
}

// snapSurvivor emits the held row (now known not to be the last) and holds row.
func (s *Stream) snapSurvivor(ctx context.Context, row *heldRow) error {
	if s.snap.held != nil {
		if err := s.snapEmitHeld(ctx, false, s.snap.held.idx != row.idx); err != nil {
			return err
		}
	}
	s.snap.held = row
	if s.snap.incremental {
		return s.snapEmitHeld(ctx, false, false)
	}
	return nil
}

func (s *Stream) snapEmitHeld(ctx context.Context, lastOverall, lastInTable bool) error {
	r := s.snap
	h := r.held
	r.held = nil
	if r.prog.Table != h.idx {
		r.prog.Table, r.prog.TableRows = h.idx, 0
	}
	var m debezium.SnapshotMarker
	switch {
	case r.incremental:
		m = debezium.SnapshotIncremental
	case r.prog.Rows == 0 && !lastOverall:
		m = debezium.SnapshotFirst
	case lastOverall:
		m = debezium.SnapshotLast
	case r.prog.TableRows == 0:
		m = debezium.SnapshotFirstInDataCollection
	case lastInTable:
		m = debezium.SnapshotLastInDataCollection
	default:
		m = debezium.SnapshotTrue
	}
	src := h.src
	src.Snapshot = m
	if err := s.emit(ctx, h.t, debezium.OpRead, nil, h.after, src, s.cfg.Now(), nil); err != nil {
		return err
	}
	r.prog.After = h.key
	r.prog.Rows++
	r.prog.TableRows++
	return nil
}

func (s *Stream) snapFinish(ctx context.Context) error {
	r := s.snap
	if err := s.begin(); err != nil {
		return err
	}
	if r.heldTableChanged() {
		r.rewind(r.held.idx)
		return nil
	}
	if r.held != nil {
		if r.keyChangedSince(r.held) {
			r.held = nil
		} else if err := s.snapEmitHeld(ctx, true, true); err != nil {
			return err
		}
	}
	r.prog.Table, r.prog.After, r.prog.TableRows = len(r.prog.Tables), nil, 0
	r.done = true
	r.stopFetch()
	r.changes, r.tableChanged = nil, nil
	pos := s.readPos
	s.pendingPos = &pos
	if r.incremental {
		s.log.Info("incremental snapshot: finished", "tables", len(r.prog.Tables), "rows", r.prog.Rows)
		return nil
	}
	s.log.Info("snapshot: done", "tables", len(r.prog.Tables), "rows", r.prog.Rows)
	return nil
}

// stateBytes encodes pos with the snapshot's progress, if one runs.
func (s *Stream) stateBytes(pos binlog.Position) ([]byte, error) {
	st := State{Position: pos}
	if s.snap != nil && !s.snap.done {
		p := s.snap.prog
		if s.snap.incremental {
			st.Incremental = &p
		} else {
			st.Snapshot = &p
		}
	}
	s.addIncrementalState(&st)
	return MarshalState(st)
}
