package stream

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

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
//
// The reconciler does all of this; the loop tells it about every change,
// DDL and binlog transaction boundary it reads (trackChange, trackTable,
// boundary) and lets it step between binlog transactions.

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

// reconciler runs one snapshot (the initial one, or an ad-hoc one) inside
// the loop and reconciles its chunks with the binlog.
//
// Rules:
//   - Watermarks: a chunk is emitted only once the loop has read the
//     binlog up to the chunk's high watermark (the server's position just
//     after its SELECT), and only at a binlog transaction boundary.
//   - Per-key drop: a chunk row whose key the loop changed after the
//     chunk's low mark (seq sampled before the previous SELECT) is
//     dropped: the loop already emitted the key's newer state.
//   - Table changes: a chunk read before a TRUNCATE or DDL of its table
//     that the loop read since is never emitted; the table is read again
//     from the row after the last one emitted (rewind).
//   - Held row: the last surviving row is held back until the next one
//     survives (or the table or snapshot ends), so the last row of each
//     table and of the snapshot carries Debezium's markers; a held row
//     whose key or table changed meanwhile is dropped like a chunk row.
//   - Progress (prog) counts only rows emitted; it is stored with the
//     position by the loop's next commit (storeRead), in the same Kafka
//     transaction as the rows.
type reconciler struct {
	cfg    SnapshotConfig
	loop   snapLoop
	chunks chunkReader
	log    *slog.Logger
	m      *Metrics
	src    debezium.Source // the source block's constant fields

	prog   snapshot.Progress // as of the last row emitted
	tables map[snapshot.TableID]bool
	index  map[snapshot.TableID]int // position of each table in Progress.Tables

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
	fetch        *fetching
	lastLow      int64           // low mark of the last chunk taken from a fetcher
	fetchWait    <-chan struct{} // ready when the fetcher may have the next chunk
	readMoved    bool            // the loop read a binlog transaction since the pending chunk was last checked

	pending *pendingChunk
	held    *heldRow // nil, or &heldBuf
	heldBuf heldRow  // the held row: one for the whole snapshot, not one per row

	tableStart time.Time
	tableRows  int64
	done       bool
	// incremental: an ad-hoc snapshot (incremental.go): every row is
	// marked "incremental" and none is held back.
	incremental bool
}

// snapLoop is what a reconciler needs of the loop.
type snapLoop interface {
	// captures reports whether the include and exclude lists capture
	// db.tbl: checked before each table a snapshot reads.
	captures(db, tbl string) bool
	// lookup returns the compiled table db.tbl, as the loop encodes it.
	lookup(ctx context.Context, db, tbl string, tm *replication.TableMapEvent) (*table, error)
	// current is the loop's compiled table "db.table" now (nil: none).
	current(key string) *table
	// convert converts a row into dst (nil: a new Struct; see Stream.convert).
	convert(t *table, dst debezium.Struct, row []any) (debezium.Struct, error)
	// emitRead produces a snapshot row (op=r) into the open Kafka transaction.
	emitRead(ctx context.Context, t *table, after debezium.Struct, src debezium.Source) error
	// begin opens a Kafka transaction if none is open.
	begin() error
	// readPosition is the position after the last binlog transaction read.
	readPosition() binlog.Position
	// storeRead makes the next commit store readPosition with the progress.
	storeRead()
	// snapshotPaused reports whether a pause-snapshot signal holds an
	// ad-hoc snapshot.
	snapshotPaused() bool
}

// chunkReader reads the chunks of a table with a primary key: from the
// source by default (sqlChunks), scripted in tests.
type chunkReader interface {
	// estimate is the server's estimate of a table's rows.
	estimate(ctx context.Context, db, table string) int64
	// start begins reading cfg.t's chunks after key cfg.after, ahead of the loop.
	start(ctx context.Context, cfg fetchConfig) chunkSource
}

// chunkSource hands out one table's chunks in key order (chunkFetcher).
type chunkSource interface {
	// next returns the next chunk if it is ready; if not, a channel that
	// is closed when the loop should look again.
	next() (*fetchedChunk, <-chan struct{})
	// stop ends the reading and drops what was read.
	stop()
}

// fetching is the chunk source of the table being read.
type fetching struct {
	chunkSource
	t     *table
	idx   int   // the table's index in Progress.Tables
	start int64 // seq when it started
}

// sqlChunks reads chunks from the source database.
type sqlChunks struct{ db *sql.DB }

func (c sqlChunks) estimate(ctx context.Context, db, table string) int64 {
	return snapshot.EstimateRows(ctx, c.db, db, table)
}

func (c sqlChunks) start(ctx context.Context, cfg fetchConfig) chunkSource {
	cfg.db = c.db
	return startFetcher(ctx, cfg)
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

// newReconciler returns a reconciler of the snapshot cfg describes, in
// loop s (nil in tests that call no step).
func newReconciler(cfg SnapshotConfig, s *Stream) *reconciler {
	if cfg.ChunkRows <= 0 {
		cfg.ChunkRows = 10000
	}
	if cfg.ReadAhead <= 0 {
		cfg.ReadAhead = 2
	}
	r := &reconciler{cfg: cfg, chunks: sqlChunks{cfg.DB}, prog: cfg.Progress, tables: map[snapshot.TableID]bool{},
		cur: cfg.Progress.Table, after: cfg.Progress.After,
		changes: map[string]map[string]int64{}, tableChanged: map[string]int64{}, tableStart: time.Now()}
	r.index = map[snapshot.TableID]int{}
	for i, t := range cfg.Progress.Tables {
		r.tables[t] = true
		r.index[t] = i
	}
	if s != nil {
		r.loop, r.log, r.m = s, s.log, s.cfg.Metrics
		r.src = debezium.Source{Version: s.cfg.Version, Connector: s.cfg.Flavor, Name: s.cfg.Prefix}
	}
	return r
}

// running reports whether r is a snapshot still running; r may be nil.
func (r *reconciler) running() bool { return r != nil && !r.done }

// trackChange remembers that the stream changed a key of a snapshotted table.
// It runs for every row: without a snapshot it must not build the table's
// name.
func (r *reconciler) trackChange(t *table, row debezium.Struct) {
	if !r.running() || t.Key == nil {
		return
	}
	if !r.tables[snapshot.TableID{DB: t.Def.DB, Table: t.Def.Table}] {
		return
	}
	key := tableKey(t.Def.DB, t.Def.Table)
	m := r.changes[key]
	if m == nil {
		m = map[string]int64{}
		r.changes[key] = m
	}
	// The transaction being read: one more than those read completely.
	m[keyString(t, row)] = r.seq.Load() + 1
}

// trackTable remembers that a snapshotted table was truncated or altered.
func (r *reconciler) trackTable(db, tbl string) {
	if !r.running() {
		return
	}
	if r.tables[snapshot.TableID{DB: db, Table: tbl}] {
		r.tableChanged[tableKey(db, tbl)] = r.seq.Load() + 1
	}
}

// keylessAhead reports whether t is a table without a primary key
// whose snapshot has not been emitted yet. Its changes are not streamed
// until then: the snapshot, consistent with a later binlog position,
// already holds them, and rows without a key cannot be reconciled.
func (r *reconciler) keylessAhead(t *table) bool {
	if t.Key != nil || !r.running() {
		return false
	}
	i, ok := r.index[snapshot.TableID{DB: t.Def.DB, Table: t.Def.Table}]
	return ok && i >= r.prog.Table
}

// boundary counts a binlog transaction read completely.
func (r *reconciler) boundary() {
	if r == nil {
		return
	}
	r.readMoved = true
	if !r.done {
		r.seq.Add(1)
	}
}

// keyChangedSince reports whether the stream changed the key of row h
// after h's low mark.
func (r *reconciler) keyChangedSince(h *heldRow) bool {
	m := r.changes[tableKey(h.t.Def.DB, h.t.Def.Table)]
	return len(m) > 0 && h.t.Key != nil && m[keyString(h.t, h.after)] > h.low
}

// heldTableChanged reports whether the held row's table was truncated or
// altered after the row was read.
func (r *reconciler) heldTableChanged() bool {
	return r.held != nil && r.tableChanged[tableKey(r.held.t.Def.DB, r.held.t.Def.Table)] > r.held.tableLow
}

// rewind makes the snapshot read table idx again from the row after the
// last one emitted: everything read after it (the held row, the pending
// chunk, what the fetcher read) is dropped. It follows a TRUNCATE or DDL
// of the table while it was read: after a TRUNCATE the rows are gone,
// after an ALTER they are still there, unchanged, with no binlog event
// to carry them, so they must be read again.
func (r *reconciler) rewind(idx int) {
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
func (r *reconciler) prune(low int64) {
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
func (r *reconciler) stopFetch() {
	if r.fetch != nil {
		r.fetch.stop()
		r.fetch = nil
	}
}

// wake returns a channel that is ready when the chunk the snapshot
// waits for has been read, or nil if it waits for nothing: the loop must
// not sit in a read of an idle binlog meanwhile. r may be nil.
func (r *reconciler) wake() <-chan struct{} {
	if !r.running() || r.pending != nil || r.fetch == nil || (r.incremental && r.loop.snapshotPaused()) {
		// A paused snapshot takes no chunk: waking up for one would spin.
		return nil
	}
	return r.fetchWait
}

// step advances the snapshot by at most one chunk read or emission. The
// loop calls it only at binlog transaction boundaries. It returns whether
// it did anything.
func (r *reconciler) step(ctx context.Context) (bool, error) {
	if !r.running() {
		return false, nil
	}
	if r.fetch != nil && r.tableChanged[tableKey(r.fetch.t.Def.DB, r.fetch.t.Def.Table)] > r.fetch.start {
		// Truncated or altered: what the fetcher read, and the chunk taken
		// from it, may use the old definition.
		r.rewind(r.fetch.idx)
	}
	if r.pending == nil {
		if r.incremental && r.loop.snapshotPaused() {
			return false, nil
		}
		if r.cur >= len(r.prog.Tables) {
			return true, r.finish(ctx)
		}
		return r.read(ctx)
	}
	if !r.readMoved && r.pending.checked {
		return false, nil
	}
	r.readMoved, r.pending.checked = false, true
	if !snapshot.Reached(r.loop.readPosition(), r.pending.high) {
		return false, nil
	}
	return true, r.emit(ctx)
}

func (r *reconciler) read(ctx context.Context) (bool, error) {
	id := r.prog.Tables[r.cur]
	db, tbl, name := id.DB, id.Table, id.String()
	if !r.loop.captures(db, tbl) {
		// The progress comes from the offsets topic: whoever can write it
		// must not make capture read a table the lists leave out.
		r.log.Warn("snapshot: table outside the include and exclude lists, skipped", "table", name)
		r.cur, r.after = r.cur+1, nil
		return true, nil
	}
	t, err := r.loop.lookup(ctx, db, tbl, nil)
	if errors.Is(err, schemahist.ErrNoTable) {
		r.log.Warn("snapshot: table no longer exists, skipped", "table", name)
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
		r.m.SnapshotRowsEstimated.WithLabelValues(name).Set(float64(r.chunks.estimate(ctx, db, tbl)))
	}
	if len(t.Def.PrimaryKey) > 0 {
		return r.take(ctx, t, name)
	}
	// Tables without a primary key: one consistent read, on the loop.
	p := &pendingChunk{t: t, idx: r.cur, startAfter: r.after, low: r.seq.Load()}
	p.tableLow = p.low
	readPos := r.loop.readPosition()
	c, err := snapshot.OpenConsistent(ctx, r.cfg.DB, readPos.Flavor)
	if err != nil {
		return false, fmt.Errorf("snapshot of %s: %w", name, err)
	}
	if snapshot.Reached(readPos, c.At) && !snapshot.Same(readPos, c.At) {
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

// take takes the next chunk of table t from the fetcher (starting one
// at the read cursor if none runs), if it is ready.
func (r *reconciler) take(ctx context.Context, t *table, name string) (bool, error) {
	if r.fetch == nil {
		r.fetch = &fetching{t: t, idx: r.cur, start: r.seq.Load()}
		r.fetch.chunkSource = r.chunks.start(ctx, fetchConfig{
			t: t, after: r.after, chunkRows: r.cfg.ChunkRows, readAhead: r.cfg.ReadAhead,
			flavor: r.loop.readPosition().Flavor, seq: &r.seq, low0: r.lastLow, rowsRead: r.m.SnapshotRows.WithLabelValues(name), convert: r.loop.convert,
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

func (r *reconciler) emit(ctx context.Context) error {
	p := r.pending
	r.pending = nil
	name := tableKey(p.t.Def.DB, p.t.Def.Table)
	if err := r.loop.begin(); err != nil {
		return err
	}
	if r.heldTableChanged() {
		r.pending = p
		r.rewind(r.held.idx)
		return nil
	}
	if r.tableChanged[name] > p.tableLow || (p.consistent == nil && r.loop.current(name) != p.t) {
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
	t := r.loop.current(name)
	if t == nil {
		t = p.t
	}
	readAt := time.Now()
	src := r.src
	src.TsMs, src.TsUs, src.TsNs = readAt.UnixMilli(), readAt.UnixMicro(), readAt.UnixNano()
	src.DB, src.Table, src.File, src.Pos = t.Def.DB, t.Def.Table, p.high.File, int64(p.high.Pos)
	if p.consistent != nil {
		var rows int64
		err := p.consistent.Rows(ctx, t.Def.DB, t.Def.Table, columnNames(t), func(row []any) error {
			after, err := r.loop.convert(t, nil, row)
			if err != nil {
				return err
			}
			r.m.SnapshotRows.WithLabelValues(name).Inc()
			rows++
			return r.survivor(ctx, heldRow{t: t, idx: p.idx, low: p.low, tableLow: p.tableLow, after: after, src: src})
		})
		p.consistent.Close()
		if err != nil {
			return err
		}
		// Flush the held row so the table is done in this transaction: a
		// table without a key cannot resume part-way.
		if r.held != nil {
			if err := r.emitHeld(ctx, r.held.idx == len(r.prog.Tables)-1, true); err != nil {
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
			if err := r.survivor(ctx, heldRow{t: t, idx: p.idx, key: p.chunk.Keys[i], low: p.low, tableLow: p.tableLow, after: after, src: src}); err != nil {
				return err
			}
		}
		r.prune(p.low)
	}
	r.tableRows += int64(len(p.chunk.Keys))
	if p.chunk.Last {
		el := time.Since(r.tableStart)
		r.log.Info("snapshot: table done", "table", name, "rows", r.tableRows,
			"rows_per_sec", int64(float64(r.tableRows)/max(el.Seconds(), 0.001)), "elapsed", el.Round(time.Millisecond))
		r.m.SnapshotTableDone.WithLabelValues(name).Set(1)
		r.tableRows = 0
		r.tableStart = time.Now()
	}
	r.loop.storeRead()
	return nil
}

func columnNames(t *table) []string {
	cols := make([]string, len(t.Def.Columns))
	for i, c := range t.Def.Columns {
		cols[i] = c.Name
	}
	return cols
}

// survivor emits the held row (now known not to be the last) and holds
// row, in heldBuf: emitHeld is done with the row held before.
func (r *reconciler) survivor(ctx context.Context, row heldRow) error {
	if r.held != nil {
		if err := r.emitHeld(ctx, false, r.held.idx != row.idx); err != nil {
			return err
		}
	}
	r.heldBuf = row
	r.held = &r.heldBuf
	if r.incremental {
		return r.emitHeld(ctx, false, false)
	}
	return nil
}

func (r *reconciler) emitHeld(ctx context.Context, lastOverall, lastInTable bool) error {
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
	if err := r.loop.emitRead(ctx, h.t, h.after, src); err != nil {
		return err
	}
	r.prog.After = h.key
	r.prog.Rows++
	r.prog.TableRows++
	return nil
}

func (r *reconciler) finish(ctx context.Context) error {
	if err := r.loop.begin(); err != nil {
		return err
	}
	if r.heldTableChanged() {
		r.rewind(r.held.idx)
		return nil
	}
	if r.held != nil {
		if r.keyChangedSince(r.held) {
			r.held = nil
		} else if err := r.emitHeld(ctx, true, true); err != nil {
			return err
		}
	}
	r.prog.Table, r.prog.After, r.prog.TableRows = len(r.prog.Tables), nil, 0
	r.done = true
	r.stopFetch()
	r.changes, r.tableChanged = nil, nil
	r.loop.storeRead()
	if r.incremental {
		r.log.Info("incremental snapshot: finished", "tables", len(r.prog.Tables), "rows", r.prog.Rows)
		return nil
	}
	r.log.Info("snapshot: done", "tables", len(r.prog.Tables), "rows", r.prog.Rows)
	return nil
}
