package stream

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/schemas/debezium"
)

// The initial snapshot runs inside the stream loop (DBLog watermarks).
//
// Between binlog transactions the loop reads one chunk of the table being
// snapshotted (SELECT ... WHERE pk > last ORDER BY pk LIMIT n), then takes
// the high watermark (the executed GTID set and binlog offset after the
// SELECT) and keeps streaming. Every key the stream changes is remembered.
// Once the stream has read up to the high watermark, the chunk's rows whose
// key the stream changed since the previous chunk's SELECT are dropped (the
// stream emitted their newer state, with full row images) and the rest are
// emitted as op=r. The window starts at the previous SELECT rather than at
// the low watermark so that a transaction already in the binlog but not yet
// visible to the SELECT (binlog write precedes the engine commit) cannot
// let an older snapshot row overwrite a newer streamed one.
//
// Rows and the snapshot's Progress go into the stream's Kafka transaction
// with the binlog position, so a crash resumes at the chunk after the last
// one emitted. One row is held back until the next one survives, so the
// last row of each table and of the snapshot can carry Debezium's
// last_in_data_collection and last markers.

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

	// read cursor: the next chunk starts after key `after` of table cur
	cur   int
	after [][]byte

	// keys the stream changed, "db.table\x00key"; "db.table\x00*" means the
	// whole table (TRUNCATE, DDL). prev: between the previous two SELECTs.
	prevChanged, changed map[string]struct{}

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
	high       binlog.Position
	checked    bool                 // the watermark was compared since the stream last moved
	consistent *snapshot.Consistent // tables without a primary key
}

type heldRow struct {
	t     *table
	idx   int
	key   [][]byte
	after debezium.Struct
	src   debezium.Source
}

func newSnapRun(cfg SnapshotConfig) *snapRun {
	if cfg.ChunkRows <= 0 {
		cfg.ChunkRows = 10000
	}
	r := &snapRun{cfg: cfg, prog: cfg.Progress, tables: map[string]bool{},
		cur: cfg.Progress.Table, after: cfg.Progress.After,
		prevChanged: map[string]struct{}{}, changed: map[string]struct{}{}, tableStart: time.Now()}
	for _, t := range cfg.Progress.Tables {
		r.tables[t] = true
	}
	return r
}

// snapshotting reports whether the stream must track changes of db.table.
func (s *Stream) snapshotting(key string) bool {
	return s.snap != nil && !s.snap.done && s.snap.tables[key]
}

// trackChange remembers that the stream changed a key of a snapshotted table.
func (s *Stream) trackChange(t *table, row debezium.Struct) {
	key := tableKey(t.Def.DB, t.Def.Table)
	if !s.snapshotting(key) || t.Key == nil {
		return
	}
	s.snap.changed[key+"\x00"+keyString(t, row)] = struct{}{}
}

// trackTable remembers that a snapshotted table was truncated or altered.
func (s *Stream) trackTable(db, tbl string) {
	key := tableKey(db, tbl)
	if s.snapshotting(key) {
		s.snap.changed[key+"\x00*"] = struct{}{}
	}
}

func (r *snapRun) changedKey(k string) bool {
	_, a := r.changed[k]
	_, b := r.prevChanged[k]
	return a || b
}

// snapStep advances the snapshot by at most one chunk read or emission.
// It returns whether it did anything.
func (s *Stream) snapStep(ctx context.Context) (bool, error) {
	r := s.snap
	if r == nil || r.done {
		return false, nil
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
	if r.after == nil && r.tableRows == 0 {
		r.tableStart = time.Now()
		s.cfg.Metrics.SnapshotRowsEstimated.WithLabelValues(name).Set(float64(snapshot.EstimateRows(ctx, r.cfg.DB, db, tbl)))
	}
	cols := make([]string, len(t.Def.Columns))
	for i, c := range t.Def.Columns {
		cols[i] = c.Name
	}
	// The window of changes that can invalidate this chunk starts now.
	r.prevChanged, r.changed = r.changed, map[string]struct{}{}
	p := &pendingChunk{t: t, idx: r.cur, startAfter: r.after}
	if len(t.Def.PrimaryKey) == 0 {
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
	ch, err := snapshot.ReadChunk(ctx, r.cfg.DB, db, tbl, cols, t.Def.PrimaryKey, r.after, r.cfg.ChunkRows)
	if err != nil {
		return false, err
	}
	high, err := snapshot.Watermark(ctx, r.cfg.DB, s.readPos.Flavor)
	if err != nil {
		return false, err
	}
	s.cfg.Metrics.SnapshotRows.WithLabelValues(name).Add(float64(len(ch.Rows)))
	p.chunk, p.high = ch, high
	r.pending = p
	if len(ch.Rows) > 0 {
		r.after = ch.Keys[len(ch.Rows)-1]
	}
	if ch.Last {
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
	if r.held != nil {
		hk := tableKey(r.held.t.Def.DB, r.held.t.Def.Table)
		if r.changedKey(hk+"\x00*") || r.changedKey(hk+"\x00"+keyString(r.held.t, r.held.after)) {
			r.held = nil
		}
	}
	if r.changedKey(name + "\x00*") {
		// Truncated or altered while read: read the chunk again, still
		// dropping the keys the stream changed since the earlier SELECT.
		for k := range r.prevChanged {
			r.changed[k] = struct{}{}
		}
		delete(r.changed, name+"\x00*")
		if p.consistent != nil {
			p.consistent.Close()
		}
		r.cur, r.after = p.idx, p.startAfter
		return nil
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
		err := p.consistent.Rows(ctx, t.Def.DB, t.Def.Table, columnNames(t), func(row []any) error {
			after, err := s.convert(t, row)
			if err != nil {
				return err
			}
			s.cfg.Metrics.SnapshotRows.WithLabelValues(name).Inc()
			return s.snapSurvivor(ctx, &heldRow{t: t, idx: p.idx, after: after, src: src})
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
	} else {
		for i, row := range p.chunk.Rows {
			after, err := s.convert(t, row)
			if err != nil {
				return err
			}
			if r.changedKey(name + "\x00" + keyString(t, after)) {
				continue
			}
			if err := s.snapSurvivor(ctx, &heldRow{t: t, idx: p.idx, key: p.chunk.Keys[i], after: after, src: src}); err != nil {
				return err
			}
		}
	}
	r.tableRows += int64(len(p.chunk.Rows))
	if p.chunk.Last {
		el := time.Since(r.tableStart)
		s.log.Info("snapshot: table done", "table", name, "rows", r.tableRows,
			"rows_per_sec", int64(float64(r.tableRows)/max(el.Seconds(), 0.001)), "elapsed", el.Round(time.Millisecond))
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
	if r.held != nil {
		hk := tableKey(r.held.t.Def.DB, r.held.t.Def.Table)
		if r.changedKey(hk+"\x00*") || r.changedKey(hk+"\x00"+keyString(r.held.t, r.held.after)) {
			r.held = nil
		} else if err := s.snapEmitHeld(ctx, true, true); err != nil {
			return err
		}
	}
	r.prog.Table, r.prog.After, r.prog.TableRows = len(r.prog.Tables), nil, 0
	r.done = true
	r.changed, r.prevChanged = nil, nil
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
