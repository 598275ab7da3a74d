package stream

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/binlake/binlake/capture/internal/signal"
	"github.com/binlake/binlake/capture/internal/snapshot"
)

// Ad-hoc (incremental) snapshots run in the stream loop exactly as the
// initial snapshot does (snapshot.go: primary-key chunks reconciled with the
// binlog between watermarks), with Debezium's incremental semantics: every
// row is an op=r event with source.snapshot "incremental", and streaming
// goes on between chunks. They are requested by signals (Debezium's
// execute-snapshot on the kafka signal channel) or, at start, for tables
// that the include lists newly capture.
//
// One snapshot runs at a time: tables requested while the initial snapshot
// runs wait for it, and tables requested while an incremental snapshot runs
// are appended to it. Its progress, the offset of the last signal acted on
// and the table filter lists are stored with the position, in the same
// Kafka transaction as the rows and the changes they cover, so a signal is
// acted on once and a crash resumes at the chunk after the last one
// committed.

// signalPollInterval bounds how long the loop waits for the binlog before
// looking at the signal channel again when the source is idle.
const signalPollInterval = 500 * time.Millisecond

// IncrementalConfig configures ad-hoc incremental snapshots of a Stream.
type IncrementalConfig struct {
	// DB reads the rows, as SnapshotConfig.DB.
	DB *sql.DB
	// ChunkRows is the rows per SELECT (default 10000) and ReadAhead the
	// chunks read ahead (default 2), as in SnapshotConfig.
	ChunkRows, ReadAhead int
	// Signals delivers the signal topic's records in offset order; nil
	// when no signal channel is enabled.
	Signals <-chan signal.Record
	// Tables lists the tables the filter captures now, to resolve a
	// signal's data-collections (regexes over "db.table").
	Tables func(ctx context.Context) ([]snapshot.TableID, error)
	// Resume is the stored state: an incremental snapshot to resume, the
	// offset of the last signal acted on.
	Resume IncrementalState
	// Lists are the current table filter lists, stored with the position so
	// that a restart with wider lists can tell which tables are new.
	Lists *TableLists
}

// IncrementalState is what the stored State keeps of ad-hoc snapshots.
type IncrementalState struct {
	// Incremental is the ad-hoc snapshot running or waiting for the
	// initial snapshot.
	Incremental *snapshot.Progress `json:"incremental_snapshot,omitempty"`
	// IncrementalPaused: a pause-snapshot signal paused it.
	IncrementalPaused bool `json:"incremental_snapshot_paused,omitempty"`
	// SignalOffset is the offset of the last signal record acted on (or
	// skipped) in partition 0 of the signal topic (Debezium:
	// incremental_snapshot_signal_offset).
	SignalOffset *int64 `json:"signal_offset,omitempty"`
	// Lists are the table filter lists in force when this state was written.
	Lists *TableLists `json:"table_lists,omitempty"`
}

// TableLists are the filter lists that decide which tables are captured.
type TableLists struct {
	DatabaseInclude string `json:"database_include,omitempty"`
	DatabaseExclude string `json:"database_exclude,omitempty"`
	TableInclude    string `json:"table_include,omitempty"`
	TableExclude    string `json:"table_exclude,omitempty"`
}

// adhoc decides which ad-hoc snapshot runs: it acts on the signals
// received (execute-, stop-, pause- and resume-snapshot, log), queues the
// tables requested while the initial snapshot runs, and keeps the offset
// of the last signal acted on. The reconciler of the running snapshot does
// the reading.
//
// Rules:
//   - Signals are acted on only at binlog transaction boundaries, and each
//     signal's effect (the snapshot's tables, its pause) and its offset
//     are stored with the same commit (markDirty), so a signal is acted on
//     once, after a crash too; a signal that cannot be acted on is skipped
//     and its offset stored all the same, except when the source cannot be
//     reached (then it is read again after the restart).
//   - One snapshot runs at a time: tables requested during the initial
//     snapshot wait for it; tables requested during an ad-hoc one join it
//     (none twice).
//   - A pause applies to the snapshot it paused.
type adhoc struct {
	cfg          IncrementalConfig
	loop         adhocLoop
	log          *slog.Logger
	prefix       string             // topic.prefix: the connector signals are for
	queued       *snapshot.Progress // waits for the initial snapshot
	paused       bool
	signalOffset *int64
}

// adhocLoop is what adhoc needs of the loop.
type adhocLoop interface {
	// snapshot is the snapshot running (nil: none), setSnapshot replaces it.
	snapshot() *reconciler
	setSnapshot(r *reconciler)
	// newReconciler returns a reconciler of cfg's snapshot in the loop.
	newReconciler(cfg SnapshotConfig) *reconciler
	// markDirty makes the next commit store the state, opening a
	// transaction if none is open.
	markDirty() error
}

// EnableIncremental turns on ad-hoc snapshots; call it before Run. A
// stored incremental snapshot resumes after the initial snapshot, if one
// runs.
func (s *Stream) EnableIncremental(cfg IncrementalConfig) {
	if cfg.ChunkRows <= 0 {
		cfg.ChunkRows = 10000
	}
	in := &adhoc{cfg: cfg, loop: s, log: s.log, prefix: s.cfg.Prefix, paused: cfg.Resume.IncrementalPaused, signalOffset: cfg.Resume.SignalOffset}
	s.incr = in
	if p := cfg.Resume.Incremental; p != nil && !p.Done() {
		prog := *p
		if s.snap != nil && !s.snap.done {
			in.queued = &prog
		} else {
			s.snap = in.newRun(prog)
			s.log.Info("incremental snapshot: resuming", "tables", len(prog.Tables), "table_index", prog.Table,
				"rows_emitted", prog.Rows, "paused", in.paused)
		}
	}
}

func (a *adhoc) newRun(p snapshot.Progress) *reconciler {
	r := a.loop.newReconciler(SnapshotConfig{DB: a.cfg.DB, Progress: p, ChunkRows: a.cfg.ChunkRows, ReadAhead: a.cfg.ReadAhead})
	r.incremental = true
	return r
}

// running returns the running incremental snapshot, if any.
func (a *adhoc) running() *reconciler {
	if r := a.loop.snapshot(); r != nil && r.incremental && !r.done {
		return r
	}
	return nil
}

// incrPaused reports whether the incremental snapshot must not read chunks.
func (s *Stream) incrPaused() bool { return s.incr != nil && s.incr.paused }

// snapshotPaused is incrPaused (the reconciler's snapLoop).
func (s *Stream) snapshotPaused() bool { return s.incrPaused() }

func (s *Stream) captures(db, tbl string) bool { return s.cfg.Filter.Table(db, tbl) }

// pollsSignals reports whether the loop must wake up for signals when idle.
func (s *Stream) pollsSignals() bool { return s.incr != nil && s.incr.cfg.Signals != nil }

// snapshot is the snapshot running (adhoc's adhocLoop).
func (s *Stream) snapshot() *reconciler { return s.snap }

// setSnapshot replaces the snapshot running (adhoc's adhocLoop).
func (s *Stream) setSnapshot(r *reconciler) { s.snap = r }

// newReconciler returns a reconciler in this loop (adhoc's adhocLoop).
func (s *Stream) newReconciler(cfg SnapshotConfig) *reconciler { return newReconciler(cfg, s) }

var _ adhocLoop = (*Stream)(nil)

// step runs at a binlog transaction boundary: it acts on the signals
// received and starts a queued incremental snapshot once the initial one
// is done. a may be nil (no ad-hoc snapshots).
func (a *adhoc) step(ctx context.Context) error {
	if a == nil {
		return nil
	}
loop:
	for a.cfg.Signals != nil {
		select {
		case rec, ok := <-a.cfg.Signals:
			if !ok {
				a.cfg.Signals = nil
				break loop
			}
			if err := a.onSignal(ctx, rec); err != nil {
				return err
			}
		default:
			break loop
		}
	}
	if r := a.loop.snapshot(); a.queued != nil && (r == nil || r.done) {
		p := *a.queued
		a.queued = nil
		a.loop.setSnapshot(a.newRun(p))
		a.log.Info("incremental snapshot: starting", "tables", len(p.Tables), "paused", a.paused)
	}
	if a.queued == nil && a.running() == nil {
		a.paused = false // a pause applies to the snapshot it paused
	}
	return nil
}

// onSignal acts on one signal record and stores its offset with the next
// commit. A signal that cannot be parsed or names nothing captured is
// logged and skipped; only a failure to reach the source is an error (the
// signal is then read again after the restart).
func (a *adhoc) onSignal(ctx context.Context, rec signal.Record) error {
	sig, err := signal.Parse(a.prefix, rec.Key, rec.Value)
	switch {
	case errors.Is(err, signal.ErrOtherConnector):
		a.log.Info("signal skipped: it is for another connector", "offset", rec.Offset, "reason", err.Error())
	case err != nil:
		a.log.Warn("signal skipped", "offset", rec.Offset, "signal_id", sig.ID, "signal_type", sig.Type, "error", err.Error())
	default:
		if err := a.apply(ctx, rec.Offset, sig); err != nil {
			return err
		}
	}
	off := rec.Offset
	a.signalOffset = &off
	return a.loop.markDirty()
}

// markDirty opens a transaction so the state is stored with the next commit.
func (s *Stream) markDirty() error {
	if err := s.begin(); err != nil {
		return err
	}
	pos := s.readPos
	s.pendingPos = &pos
	return nil
}

func (a *adhoc) apply(ctx context.Context, offset int64, sig signal.Signal) error {
	attrs := []any{"offset", offset, "signal_id", sig.ID}
	switch sig.Type {
	case signal.TypeExecuteSnapshot:
		m, err := signal.NewMatcher(sig.Collections)
		if err != nil {
			a.log.Warn("signal skipped", append(attrs, "error", err.Error())...)
			return nil
		}
		all, err := a.cfg.Tables(ctx)
		if err != nil {
			return err
		}
		var tables []snapshot.TableID
		names := make([]string, 0, len(all))
		for _, t := range all {
			names = append(names, t.String())
			if m.Match(t.String()) {
				tables = append(tables, t)
			}
		}
		if miss := m.Unmatched(names); len(miss) > 0 {
			a.log.Warn("signal: data-collections entries match no captured table", append(attrs, "entries", miss)...)
		}
		if len(tables) == 0 {
			a.log.Warn("signal skipped: execute-snapshot matches no captured table", attrs...)
			return nil
		}
		a.log.Info("signal: execute-snapshot", append(attrs, "tables", tables)...)
		a.add(tables)
	case signal.TypeStopSnapshot:
		a.log.Info("signal: stop-snapshot", append(attrs, "data_collections", sig.Collections)...)
		return a.stop(sig.Collections)
	case signal.TypePauseSnapshot:
		if a.queued == nil && a.running() == nil {
			a.log.Warn("signal skipped: pause-snapshot while no incremental snapshot runs", attrs...)
			return nil
		}
		a.log.Info("signal: pause-snapshot", attrs...)
		a.paused = true
	case signal.TypeResumeSnapshot:
		a.log.Info("signal: resume-snapshot", attrs...)
		a.paused = false
	case signal.TypeLog:
		a.log.Info("signal: log", append(attrs, "message", sig.Message)...)
	}
	return nil
}

// addIncremental adds tables to the running incremental snapshot, or to
// the queued one; a table already waiting to be read is not added twice.
func (a *adhoc) add(tables []snapshot.TableID) {
	if r := a.running(); r != nil {
		rest := r.prog.Tables[r.start():]
		for _, t := range tables {
			if !slices.Contains(rest, t) {
				r.prog.Tables = append(r.prog.Tables, t)
				rest = r.prog.Tables[r.start():]
				r.tables[t] = true
			}
		}
		a.log.Info("incremental snapshot: tables added", "tables", tables, "pending_tables", len(rest))
		return
	}
	if a.queued == nil {
		a.queued = &snapshot.Progress{}
	}
	for _, t := range tables {
		if !slices.Contains(a.queued.Tables[a.queued.Table:], t) {
			a.queued.Tables = append(a.queued.Tables, t)
		}
	}
	a.log.Info("incremental snapshot: requested", "tables", tables)
}

// start is the index of the first table not finished: the one being read.
func (r *reconciler) start() int {
	i := r.cur
	if r.pending != nil && r.pending.idx < i {
		i = r.pending.idx
	}
	return min(i, len(r.prog.Tables))
}

// stopIncremental stops the incremental snapshot of the tables matching
// collections (all of it when empty). Rows already emitted stay emitted.
func (a *adhoc) stop(collections []string) error {
	var m signal.Matcher
	if len(collections) > 0 {
		var err error
		if m, err = signal.NewMatcher(collections); err != nil {
			a.log.Warn("signal skipped", "error", err.Error())
			return nil
		}
	}
	keep := func(tables []snapshot.TableID) []snapshot.TableID {
		if m == nil {
			return nil
		}
		var out []snapshot.TableID
		for _, t := range tables {
			if !m.Match(t.String()) {
				out = append(out, t)
			}
		}
		return out
	}
	if a.queued != nil {
		rest := keep(a.queued.Tables[a.queued.Table:])
		if len(rest) == 0 {
			a.queued = nil
		} else {
			a.queued = &snapshot.Progress{Tables: rest}
		}
	}
	r := a.running()
	if r == nil {
		return a.loop.markDirty()
	}
	start := r.start()
	rest := keep(r.prog.Tables[start:])
	if len(rest) == len(r.prog.Tables)-start {
		return nil // nothing of this snapshot is stopped
	}
	if r.pending != nil && r.pending.consistent != nil {
		r.pending.consistent.Close()
	}
	// Continue with the tables left: from the last key emitted if the table
	// being read is kept, else from the next table's start.
	p := snapshot.Progress{Tables: rest, Rows: r.prog.Rows}
	if start < len(r.prog.Tables) && len(rest) > 0 && rest[0] == r.prog.Tables[start] && r.prog.Table == start {
		p.After, p.TableRows = r.prog.After, r.prog.TableRows
	}
	a.loop.setSnapshot(nil)
	if len(rest) > 0 {
		a.loop.setSnapshot(a.newRun(p))
	}
	a.log.Info("incremental snapshot: stopped", "tables_left", len(rest))
	return a.loop.markDirty()
}

// addState adds the ad-hoc snapshot state to a state to store. a may be
// nil (no ad-hoc snapshots).
func (a *adhoc) addState(st *State) {
	if a == nil {
		return
	}
	if a.queued != nil {
		p := *a.queued
		st.Incremental = &p
	}
	st.IncrementalPaused = a.paused && (st.Incremental != nil)
	st.SignalOffset = a.signalOffset
	st.Lists = a.cfg.Lists
}
