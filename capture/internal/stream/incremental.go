package stream

import (
	"context"
	"database/sql"
	"errors"
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
	// Tables lists the tables the filter captures now, "db.table", to
	// resolve a signal's data-collections.
	Tables func(ctx context.Context) ([]string, error)
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

// incrState is the Stream's ad-hoc snapshot state outside the running snapRun.
type incrState struct {
	cfg          IncrementalConfig
	queued       *snapshot.Progress // waits for the initial snapshot
	paused       bool
	signalOffset *int64
}

// EnableIncremental turns on ad-hoc snapshots; call it before Run. A
// stored incremental snapshot resumes after the initial snapshot, if one
// runs.
func (s *Stream) EnableIncremental(cfg IncrementalConfig) {
	if cfg.ChunkRows <= 0 {
		cfg.ChunkRows = 10000
	}
	in := &incrState{cfg: cfg, paused: cfg.Resume.IncrementalPaused, signalOffset: cfg.Resume.SignalOffset}
	s.incr = in
	if p := cfg.Resume.Incremental; p != nil && !p.Done() {
		prog := *p
		if s.snap != nil && !s.snap.done {
			in.queued = &prog
		} else {
			s.snap = s.newIncrementalRun(prog)
			s.log.Info("incremental snapshot: resuming", "tables", len(prog.Tables), "table_index", prog.Table,
				"rows_emitted", prog.Rows, "paused", in.paused)
		}
	}
}

func (s *Stream) newIncrementalRun(p snapshot.Progress) *snapRun {
	r := newSnapRun(SnapshotConfig{DB: s.incr.cfg.DB, Progress: p, ChunkRows: s.incr.cfg.ChunkRows, ReadAhead: s.incr.cfg.ReadAhead})
	r.incremental = true
	return r
}

// incrementalRunning returns the running incremental snapshot, if any.
func (s *Stream) incrementalRunning() *snapRun {
	if s.snap != nil && s.snap.incremental && !s.snap.done {
		return s.snap
	}
	return nil
}

// incrPaused reports whether the incremental snapshot must not read chunks.
func (s *Stream) incrPaused() bool { return s.incr != nil && s.incr.paused }

// pollsSignals reports whether the loop must wake up for signals when idle.
func (s *Stream) pollsSignals() bool { return s.incr != nil && s.incr.cfg.Signals != nil }

// signalStep runs at a binlog transaction boundary: it acts on the signals
// received and starts a queued incremental snapshot once the initial one
// is done.
func (s *Stream) signalStep(ctx context.Context) error {
	in := s.incr
	if in == nil {
		return nil
	}
loop:
	for in.cfg.Signals != nil {
		select {
		case rec, ok := <-in.cfg.Signals:
			if !ok {
				in.cfg.Signals = nil
				break loop
			}
			if err := s.onSignal(ctx, rec); err != nil {
				return err
			}
		default:
			break loop
		}
	}
	if in.queued != nil && (s.snap == nil || s.snap.done) {
		p := *in.queued
		in.queued = nil
		s.snap = s.newIncrementalRun(p)
		s.log.Info("incremental snapshot: starting", "tables", len(p.Tables), "paused", in.paused)
	}
	if in.queued == nil && s.incrementalRunning() == nil {
		in.paused = false // a pause applies to the snapshot it paused
	}
	return nil
}

// onSignal acts on one signal record and stores its offset with the next
// commit. A signal that cannot be parsed or names nothing captured is
// logged and skipped; only a failure to reach the source is an error (the
// signal is then read again after the restart).
func (s *Stream) onSignal(ctx context.Context, rec signal.Record) error {
	sig, err := signal.Parse(s.cfg.Prefix, rec.Key, rec.Value)
	switch {
	case errors.Is(err, signal.ErrOtherConnector):
		s.log.Info("signal skipped: it is for another connector", "offset", rec.Offset, "reason", err.Error())
	case err != nil:
		s.log.Warn("signal skipped", "offset", rec.Offset, "signal_id", sig.ID, "signal_type", sig.Type, "error", err.Error())
	default:
		if err := s.applySignal(ctx, rec.Offset, sig); err != nil {
			return err
		}
	}
	off := rec.Offset
	s.incr.signalOffset = &off
	return s.markDirty()
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

func (s *Stream) applySignal(ctx context.Context, offset int64, sig signal.Signal) error {
	attrs := []any{"offset", offset, "signal_id", sig.ID}
	switch sig.Type {
	case signal.TypeExecuteSnapshot:
		m, err := signal.NewMatcher(sig.Collections)
		if err != nil {
			s.log.Warn("signal skipped", append(attrs, "error", err.Error())...)
			return nil
		}
		all, err := s.incr.cfg.Tables(ctx)
		if err != nil {
			return err
		}
		var tables []string
		for _, t := range all {
			if m.Match(t) {
				tables = append(tables, t)
			}
		}
		if miss := m.Unmatched(all); len(miss) > 0 {
			s.log.Warn("signal: data-collections entries match no captured table", append(attrs, "entries", miss)...)
		}
		if len(tables) == 0 {
			s.log.Warn("signal skipped: execute-snapshot matches no captured table", attrs...)
			return nil
		}
		s.log.Info("signal: execute-snapshot", append(attrs, "tables", tables)...)
		s.addIncremental(tables)
	case signal.TypeStopSnapshot:
		s.log.Info("signal: stop-snapshot", append(attrs, "data_collections", sig.Collections)...)
		return s.stopIncremental(sig.Collections)
	case signal.TypePauseSnapshot:
		if s.incr.queued == nil && s.incrementalRunning() == nil {
			s.log.Warn("signal skipped: pause-snapshot while no incremental snapshot runs", attrs...)
			return nil
		}
		s.log.Info("signal: pause-snapshot", attrs...)
		s.incr.paused = true
	case signal.TypeResumeSnapshot:
		s.log.Info("signal: resume-snapshot", attrs...)
		s.incr.paused = false
	case signal.TypeLog:
		s.log.Info("signal: log", append(attrs, "message", sig.Message)...)
	}
	return nil
}

// addIncremental adds tables to the running incremental snapshot, or to
// the queued one; a table already waiting to be read is not added twice.
func (s *Stream) addIncremental(tables []string) {
	in := s.incr
	if r := s.incrementalRunning(); r != nil {
		rest := r.prog.Tables[r.start():]
		for _, t := range tables {
			if !slices.Contains(rest, t) {
				r.prog.Tables = append(r.prog.Tables, t)
				rest = r.prog.Tables[r.start():]
				r.tables[t] = true
			}
		}
		s.log.Info("incremental snapshot: tables added", "tables", tables, "pending_tables", len(rest))
		return
	}
	if in.queued == nil {
		in.queued = &snapshot.Progress{}
	}
	for _, t := range tables {
		if !slices.Contains(in.queued.Tables[in.queued.Table:], t) {
			in.queued.Tables = append(in.queued.Tables, t)
		}
	}
	s.log.Info("incremental snapshot: requested", "tables", tables)
}

// start is the index of the first table not finished: the one being read.
func (r *snapRun) start() int {
	i := r.cur
	if r.pending != nil && r.pending.idx < i {
		i = r.pending.idx
	}
	return min(i, len(r.prog.Tables))
}

// stopIncremental stops the incremental snapshot of the tables matching
// collections (all of it when empty). Rows already emitted stay emitted.
func (s *Stream) stopIncremental(collections []string) error {
	in := s.incr
	var m signal.Matcher
	if len(collections) > 0 {
		var err error
		if m, err = signal.NewMatcher(collections); err != nil {
			s.log.Warn("signal skipped", "error", err.Error())
			return nil
		}
	}
	keep := func(tables []string) []string {
		if m == nil {
			return nil
		}
		var out []string
		for _, t := range tables {
			if !m.Match(t) {
				out = append(out, t)
			}
		}
		return out
	}
	if in.queued != nil {
		rest := keep(in.queued.Tables[in.queued.Table:])
		if len(rest) == 0 {
			in.queued = nil
		} else {
			in.queued = &snapshot.Progress{Tables: rest}
		}
	}
	r := s.incrementalRunning()
	if r == nil {
		return s.markDirty()
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
	s.snap = nil
	if len(rest) > 0 {
		s.snap = s.newIncrementalRun(p)
	}
	s.log.Info("incremental snapshot: stopped", "tables_left", len(rest))
	return s.markDirty()
}

// addIncrementalState adds the ad-hoc snapshot state to a state to store.
func (s *Stream) addIncrementalState(st *State) {
	if s.incr == nil {
		return
	}
	if s.incr.queued != nil {
		p := *s.incr.queued
		st.Incremental = &p
	}
	st.IncrementalPaused = s.incr.paused && (st.Incremental != nil)
	st.SignalOffset = s.incr.signalOffset
	st.Lists = s.incr.cfg.Lists
}
