// Package stream turns binlog events into Debezium change events and
// publishes them, with capture's position, in Kafka transactions.
//
// Guarantees: a Kafka transaction always ends at a binlog transaction
// boundary and carries the position after that transaction, so after any
// crash capture resumes exactly after the last change a read_committed
// consumer can see. Events of one key keep binlog order: they go to one
// partition (murmur2 of the key) in the order they were read.
package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/filter"
	"github.com/binlake/binlake/capture/internal/mysqltype"
	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/schemas/debezium"
)

// Registry registers schemas and returns how their records are framed:
// *publish.Registry (the Confluent API) or *publish.GlueRegistry (AWS Glue
// Schema Registry).
type Registry interface {
	Frame(ctx context.Context, subject string, schema []byte) (publish.Frame, error)
}

// Source is where the loop reads the binlog: a *binlog.Reader, or in
// tests recorded or generated events. Events come in binlog order, whole
// transactions (KindBegin … KindCommit, or one KindQuery) one after the
// other, and each KindCommit and KindQuery carries the position after
// its transaction.
type Source interface {
	// Position is the position after the last transaction returned in
	// full: where the loop starts.
	Position() binlog.Position
	// Next returns the next event, blocking until one arrives or ctx
	// ends. An error other than ctx's is final.
	Next(ctx context.Context) (binlog.Event, error)
}

var _ Source = (*binlog.Reader)(nil)

// Config configures a Stream.
type Config struct {
	Prefix  string          // topic.prefix
	RunID   string          // identifies this run in the __debezium.context.runId header
	Flavor  debezium.Flavor // source block flavor
	Version string          // source.version
	Types   mysqltype.Options
	// Naming adjusts schema and field names (Debezium's
	// schema.name.adjustment.mode and field.name.adjustment.mode; zero
	// value: none for both).
	Naming schemahist.Naming
	Filter *filter.Filter
	// KeyColumns is message.key.columns: columns keying the events of the
	// tables it names in place of their primary key (nil: none).
	KeyColumns *schemahist.KeyColumns
	// Tombstones: a null-value record follows each delete (tombstones.on.delete).
	Tombstones bool
	// SkipTruncate drops TRUNCATE events (skipped.operations=t).
	SkipTruncate bool
	// PositionKey is the key of this capture's position record.
	PositionKey string
	// HistoryTopic receives the table definitions as they change.
	HistoryTopic string
	// CommitInterval and MaxTxnRecords bound a Kafka transaction; it also
	// ends whenever the binlog goes idle.
	CommitInterval time.Duration
	MaxTxnRecords  int
	// ShutdownTimeout bounds committing or aborting the open transaction
	// when Run stops (default 30s).
	ShutdownTimeout time.Duration
	Logger          *slog.Logger
	Metrics         *Metrics
	// Now is the processing clock (envelope ts_*); nil means time.Now.
	Now func() time.Time
	// Snapshot, if set, runs an initial snapshot while streaming.
	Snapshot *SnapshotConfig
	// SchemaChanges writes schema-change events on topic Prefix
	// (include.schema.changes).
	SchemaChanges bool
	// TxMetadata writes BEGIN/END records on Prefix.transaction and fills
	// the envelope's transaction block (provide.transaction.metadata).
	TxMetadata bool
	// HeartbeatInterval is the period of heartbeat records on
	// HeartbeatPrefix.Prefix (heartbeat.interval.ms); 0 writes none.
	HeartbeatInterval time.Duration
	HeartbeatPrefix   string
}

// Stream is the loop that turns binlog transactions into Kafka
// transactions: it reads a Source, encodes each change as a Debezium
// event of its table, and lets the snapshot reconciler (snapshot.go), the
// ad-hoc snapshot signals (incremental.go) and the metadata writer
// (meta.go) act between binlog transactions.
//
// Rules:
//   - A Kafka transaction is committed only at a binlog transaction
//     boundary (no source transaction is open), with the position after
//     that transaction as its last record (State, through
//     publish.Commit); so a source transaction is visible whole or not at
//     all, whatever its size against max-buffered-bytes.
//   - It commits when max-txn-records is reached or commit-interval has
//     passed, at the next boundary; an idle binlog ends the interval too.
//   - On return the open Kafka transaction is committed if the loop
//     stopped cleanly at a boundary and aborted otherwise; any commit
//     error (ErrFenced included) stops it.
type Stream struct {
	cfg  Config
	pub  *publish.Publisher
	reg  Registry
	defs Definitions
	log  *slog.Logger

	tables map[string]*table     // db.table → compiled definition
	colls  schemahist.Collations // collation id → charset (nil: not loaded or not available)
	// headers Debezium 3 adds to every record (extended headers).
	contextHeaders []kgo.RecordHeader
	// open Kafka transaction
	txnRecords int
	txnStart   time.Time
	pendingPos *binlog.Position // position after the last complete binlog transaction
	atBoundary bool             // no binlog transaction is open
	wait       readWait         // what a binlog read at a boundary waits for besides the binlog

	readPos binlog.Position // after the last complete binlog transaction read
	snap    *reconciler     // nil: no snapshot (snapshot.go)
	incr    *adhoc          // nil: no ad-hoc snapshots (incremental.go)

	meta           *metaWriter                  // schema-change, transaction and heartbeat topics (meta.go)
	models         map[string]*schemahist.Model // db.table → Debezium's table model
	charsets       map[string]string            // database → default charset
	lastRow        int32                        // Debezium's source.row of DDL and TRUNCATE: the last row event's last row
	nextSignalPoll time.Time
	arena          recordArena // bytes of change-event keys and values (emit)
}

// New returns a Stream. history holds the definitions recorded before the
// start position (from LoadHistory).
func New(cfg Config, pub *publish.Publisher, reg Registry, defs Definitions, history map[string]schemahist.Definition) (*Stream, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.HeartbeatPrefix == "" {
		cfg.HeartbeatPrefix = "__debezium-heartbeat"
	}
	s := &Stream{cfg: cfg, pub: pub, reg: reg, defs: defs, log: cfg.Logger, tables: map[string]*table{},
		models: map[string]*schemahist.Model{}, charsets: map[string]string{}}
	if cfg.Snapshot != nil && !cfg.Snapshot.Progress.Done() {
		s.snap = newReconciler(*cfg.Snapshot, s)
	}
	s.contextHeaders = []kgo.RecordHeader{
		{Key: "__debezium.context.connectorLogicalName", Value: []byte(cfg.Prefix)},
		{Key: "__debezium.context.taskId", Value: []byte("0")},
		{Key: "__debezium.context.connectorName", Value: []byte(cfg.Flavor)},
		{Key: "__debezium.context.runId", Value: []byte(cfg.RunID)},
	}
	s.meta = newMetaWriter(cfg, reg, pub, s.contextHeaders, s.produce)
	for key, def := range history {
		if !cfg.Filter.Table(def.DB, def.Table) {
			continue
		}
		if def.Model != nil {
			s.models[key] = def.Model
		}
		t, err := s.compile(def)
		if err != nil {
			return nil, err
		}
		s.tables[key] = t
	}
	return s, nil
}

// Run reads r until ctx ends or an error occurs. On return the open
// Kafka transaction has been committed (clean stop at a boundary) or
// aborted.
func (s *Stream) Run(ctx context.Context, r Source) (err error) {
	defer func() {
		s.wait.stop()
		if s.snap != nil {
			s.snap.stopFetch()
		}
		if !s.pub.InTxn() {
			return
		}
		// Finish cleanly on shutdown: commit what is complete, drop the rest.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
		defer cancel()
		if err == nil || errors.Is(err, context.Canceled) {
			if s.pendingPos != nil && s.atBoundary {
				if cerr := s.commit(fctx); cerr != nil {
					err = errors.Join(err, cerr)
				}
				return
			}
		}
		if aerr := s.pub.Abort(fctx); aerr != nil {
			err = errors.Join(err, aerr)
		}
	}()
	s.atBoundary = true
	s.readPos = r.Position()
	for {
		if s.atBoundary {
			if err := s.incr.step(ctx); err != nil {
				return err
			}
		}
		if s.snap != nil && s.atBoundary {
			did, err := s.snap.step(ctx)
			if err != nil {
				return err
			}
			if s.snap != nil && s.snap.done && !s.snap.incremental && s.cfg.Snapshot != nil && s.cfg.Snapshot.StopWhenDone {
				return s.commit(ctx)
			}
			if did {
				if s.txnRecords >= s.cfg.MaxTxnRecords || time.Since(s.txnStart) >= s.cfg.CommitInterval {
					if err := s.commit(ctx); err != nil {
						return err
					}
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				continue
			}
		}
		readCtx := s.readContext(ctx)
		ev, err := r.Next(readCtx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if readCtx == ctx || readCtx.Err() == nil {
				return err
			}
			if errors.Is(context.Cause(readCtx), errChunkReady) {
				continue
			}
			// A deadline passed while idle at a boundary: the commit
			// window, a heartbeat, or a look at the signals (at the top).
			hb := s.meta.heartbeatDue()
			if hb {
				if err := s.heartbeat(ctx); err != nil {
					return err
				}
			}
			if hb || time.Since(s.txnStart) >= s.cfg.CommitInterval {
				if err := s.commit(ctx); err != nil {
					return err
				}
			}
			continue
		}
		if err := s.handle(ctx, ev); err != nil {
			return err
		}
	}
}

// readContext returns the context of the next binlog read. Inside a
// binlog transaction it is ctx: nothing else can happen before the
// transaction is read. At a boundary the read must also end when the loop
// has something else to do: at the next deadline (the commit window of
// an open Kafka transaction, the next heartbeat, the next look at the
// signal channel) or when the snapshot chunk waited for is ready.
func (s *Stream) readContext(ctx context.Context) context.Context {
	if !s.atBoundary {
		return ctx
	}
	var at time.Time
	earliest := func(t time.Time) {
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	if s.pendingPos != nil {
		earliest(s.txnStart.Add(s.cfg.CommitInterval))
	}
	if s.cfg.HeartbeatInterval > 0 {
		earliest(s.meta.nextHeartbeat)
	}
	if s.pollsSignals() {
		if now := time.Now(); !now.Before(s.nextSignalPoll) {
			s.nextSignalPoll = now.Add(signalPollInterval)
		}
		earliest(s.nextSignalPoll)
	}
	return s.wait.context(ctx, at, s.snap.wake())
}

// errReadDeadline ends a binlog read at the loop's next deadline.
var errReadDeadline = errors.New("read deadline")

// readWait is the context of binlog reads at boundaries: it ends at a
// deadline or when a channel is ready, with cause errReadDeadline or
// errChunkReady. One is kept for as long as its deadline and channel stay
// the same (they change with the Kafka transaction, the heartbeat, the
// signal poll or the snapshot chunk), so reading a busy binlog costs no
// context, timer or goroutine per event.
type readWait struct {
	parent, ctx context.Context
	cancel      context.CancelCauseFunc
	timer       *time.Timer
	at          time.Time
	ch          <-chan struct{}
}

// context returns parent itself when there is neither a deadline (zero
// at) nor a channel.
func (w *readWait) context(parent context.Context, at time.Time, ch <-chan struct{}) context.Context {
	if at.IsZero() && ch == nil {
		return parent
	}
	if w.ctx != nil && w.parent == parent && w.at.Equal(at) && w.ch == ch && w.ctx.Err() == nil {
		return w.ctx
	}
	w.stop()
	ctx, cancel := context.WithCancelCause(parent)
	*w = readWait{parent: parent, ctx: ctx, cancel: cancel, at: at, ch: ch}
	if !at.IsZero() {
		w.timer = time.AfterFunc(time.Until(at), func() { cancel(errReadDeadline) })
	}
	if ch != nil {
		go func() { // ends with the context: ch ready, deadline, replaced
			select {
			case <-ch:
				cancel(errChunkReady)
			case <-ctx.Done():
			}
		}()
	}
	return ctx
}

// stop releases the context's timer and goroutine.
func (w *readWait) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.cancel != nil {
		w.cancel(nil)
	}
	*w = readWait{}
}

// emitRead produces a snapshot row (the reconciler's snapLoop).
func (s *Stream) emitRead(ctx context.Context, t *table, after debezium.Struct, src debezium.Source) error {
	return s.emit(ctx, t, debezium.OpRead, nil, after, src, s.cfg.Now(), nil)
}

// current is the compiled table "db.table" now (the reconciler's snapLoop).
func (s *Stream) current(key string) *table { return s.tables[key] }

// readPosition is the position after the last binlog transaction read.
func (s *Stream) readPosition() binlog.Position { return s.readPos }

// storeRead makes the next commit store the position read so far.
func (s *Stream) storeRead() {
	pos := s.readPos
	s.pendingPos = &pos
}

var _ snapLoop = (*Stream)(nil)

// produce puts a record into the open Kafka transaction, opening one if
// none is open, and counts it.
func (s *Stream) produce(ctx context.Context, r *kgo.Record) error {
	if err := s.begin(); err != nil {
		return err
	}
	s.pub.Produce(ctx, r)
	s.txnRecords++
	return nil
}

func (s *Stream) begin() error {
	if s.pub.InTxn() {
		return nil
	}
	if err := s.pub.Begin(); err != nil {
		return err
	}
	s.txnRecords = 0
	s.txnStart = time.Now()
	return nil
}

func (s *Stream) commit(ctx context.Context) error {
	if !s.pub.InTxn() || s.pendingPos == nil {
		return nil
	}
	pos := *s.pendingPos
	b, err := s.stateBytes(pos)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := s.pub.Commit(ctx, s.cfg.PositionKey, b); err != nil {
		s.cfg.Metrics.Commits.WithLabelValues("error").Inc()
		return err
	}
	s.cfg.Metrics.Commits.WithLabelValues("ok").Inc()
	s.cfg.Metrics.CommitSeconds.Observe(time.Since(start).Seconds())
	s.cfg.Metrics.setPosition(pos)
	s.pendingPos = nil
	s.log.Debug("committed", "gtid", pos.GTIDSet, "binlog_file", pos.File, "binlog_pos", pos.Pos, "records", s.txnRecords)
	return nil
}

func (s *Stream) handle(ctx context.Context, ev binlog.Event) error {
	s.cfg.Metrics.received(s.cfg.Now())
	switch ev.Kind {
	case binlog.KindBegin:
		s.atBoundary = false
		if err := s.begin(); err != nil {
			return err
		}
		return s.meta.txBegin(ctx, ev)
	case binlog.KindRows:
		s.atBoundary = false
		if err := s.begin(); err != nil {
			return err
		}
		return s.rows(ctx, ev)
	case binlog.KindCommit:
		if err := s.meta.txEnd(ctx, ev); err != nil {
			return err
		}
		return s.boundary(ctx, ev)
	case binlog.KindQuery:
		if err := s.begin(); err != nil {
			return err
		}
		if ev.GTID != "" && s.cfg.Flavor == debezium.FlavorMariaDB {
			// MariaDB: Debezium begins a transaction at every GTID event,
			// DDL included (and never ends it: there is no commit event).
			if err := s.meta.txBegin(ctx, ev); err != nil {
				return err
			}
		}
		if err := s.query(ctx, ev); err != nil {
			return err
		}
		return s.boundary(ctx, ev)
	case binlog.KindHeartbeat:
		s.cfg.Metrics.observeSource(ev.Timestamp, s.cfg.Now())
		if s.pendingPos != nil && s.atBoundary {
			return s.commit(ctx)
		}
	}
	return nil
}

func (s *Stream) boundary(ctx context.Context, ev binlog.Event) error {
	pos := ev.Position
	s.pendingPos = &pos
	s.atBoundary = true
	s.readPos = pos
	s.snap.boundary()
	s.cfg.Metrics.observeSource(ev.Timestamp, s.cfg.Now())
	if s.meta.heartbeatDue() {
		if err := s.heartbeat(ctx); err != nil {
			return err
		}
	}
	if s.txnRecords >= s.cfg.MaxTxnRecords || time.Since(s.txnStart) >= s.cfg.CommitInterval {
		return s.commit(ctx)
	}
	if err := s.pub.Err(); err != nil {
		return err
	}
	return nil
}

func (s *Stream) source(ev binlog.Event, db, tbl string, row int) debezium.Source {
	sec := int64(ev.Timestamp)
	thread := ev.Thread
	if s.cfg.Flavor == debezium.FlavorMariaDB {
		thread = 0 // Debezium's MariaDB connector leaves source.thread null
	}
	return debezium.Source{
		Version:   s.cfg.Version,
		Connector: s.cfg.Flavor,
		Name:      s.cfg.Prefix,
		TsMs:      sec * 1000,
		TsUs:      sec * 1000_000,
		TsNs:      sec * 1000_000_000,
		DB:        db,
		Table:     tbl,
		ServerID:  int64(ev.ServerID),
		GTID:      ev.GTID,
		File:      ev.File,
		Pos:       int64(ev.Pos),
		Row:       int32(row),
		Thread:    thread,
	}
}

func (s *Stream) rows(ctx context.Context, ev binlog.Event) error {
	db, tbl := string(ev.Table.Schema), string(ev.Table.Table)
	if !s.cfg.Filter.Table(db, tbl) {
		return nil
	}
	prev := s.tables[tableKey(db, tbl)]
	t, err := s.lookup(ctx, db, tbl, ev.Table)
	if err != nil {
		// A table whose rows capture cannot publish as they are stops
		// capture here, before any of its rows: nothing is published
		// altered, and a restart meets the same event.
		return fmt.Errorf("rows of %s.%s at binlog %s:%d (gtid %s): %w%s", db, tbl, ev.File, ev.Pos, ev.GTID, err, unpublishableHint(err))
	}
	if prev != nil && prev.ready && t != prev {
		// No DDL in the binlog told capture of the change (an ALTER run
		// with sql_log_bin=0, say): the rows are decoded with the
		// structure their table map gives, never with the stale one.
		s.log.Warn("table definition changed with no DDL in the binlog (an ALTER with sql_log_bin=0?): decoding its rows with the structure the binlog gives for them",
			"table", tableKey(db, tbl), "binlog_file", ev.File, "binlog_pos", ev.Pos, "gtid", ev.GTID, "columns", len(t.Def.Columns))
	}
	if s.snap.keylessAhead(t) {
		return nil
	}
	now := s.cfg.Now()
	step := 1
	if ev.RowsType == binlog.Update {
		step = 2
	}
	for i := 0; i+step-1 < len(ev.Rows); i += step {
		row := ev.RowIndex(i / step)
		src := s.source(ev, db, tbl, int(row))
		s.lastRow = row
		switch ev.RowsType {
		case binlog.Insert:
			after, err := s.convert(t, nil, ev.Rows[i])
			if err != nil {
				return err
			}
			s.snap.trackChange(t, after)
			if err := s.emit(ctx, t, debezium.OpCreate, nil, after, src, now, nil); err != nil {
				return err
			}
		case binlog.Delete:
			before, err := s.convert(t, nil, ev.Rows[i])
			if err != nil {
				return err
			}
			s.snap.trackChange(t, before)
			if err := s.emit(ctx, t, debezium.OpDelete, before, nil, src, now, nil); err != nil {
				return err
			}
		case binlog.Update:
			before, err := s.convert(t, nil, ev.Rows[i])
			if err != nil {
				return err
			}
			after, err := s.convert(t, nil, ev.Rows[i+1])
			if err != nil {
				return err
			}
			s.snap.trackChange(t, before)
			s.snap.trackChange(t, after)
			if t.Key != nil && !sameKey(t, before, after) {
				// A primary-key change: delete (+ tombstone) of the old key,
				// then a create of the new one, as Debezium does.
				oldKey, newKey := keyString(t, before), keyString(t, after)
				if err := s.emit(ctx, t, debezium.OpDelete, before, nil, src, now, []kgo.RecordHeader{{Key: "__debezium.newkey", Value: []byte(newKey)}}); err != nil {
					return err
				}
				if err := s.emit(ctx, t, debezium.OpCreate, nil, after, src, now, []kgo.RecordHeader{{Key: "__debezium.oldkey", Value: []byte(oldKey)}}); err != nil {
					return err
				}
				continue
			}
			if err := s.emit(ctx, t, debezium.OpUpdate, before, after, src, now, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// convert converts a row of t into dst (nil: a new Struct), which must
// have room for t's columns to be used (cap).
func (s *Stream) convert(t *table, dst debezium.Struct, row []any) (debezium.Struct, error) {
	if t.ColumnIdx != nil {
		proj := make([]any, len(t.ColumnIdx))
		for i, j := range t.ColumnIdx {
			proj[i] = row[j]
		}
		row = proj
	}
	out, err := t.Conv.ConvertRow(dst, row)
	if err != nil {
		return nil, fmt.Errorf("converting a row of %s.%s: %w", t.Def.DB, t.Def.Table, err)
	}
	return out, nil
}

// appendKey appends the Avro encoding of row's key: the bytes of
// debezium.AppendAvro(dst, t.Key, keyStruct(t, row)), without building
// and boxing the key struct for every event. The key schema is a required
// struct, whose encoding is its fields' one after the other; anything else,
// and any error (for its message), takes the general path.
func appendKey(dst []byte, t *table, row debezium.Struct) ([]byte, error) {
	if t.Key.Type == debezium.STRUCT && !t.Key.Optional && len(t.Key.Fields) == len(t.KeyIdx) {
		out := dst
		var err error
		for i, j := range t.KeyIdx {
			if out, err = debezium.AppendAvro(out, t.Key.Fields[i].Schema, row[j]); err != nil {
				break
			}
		}
		if err == nil {
			return out, nil
		}
	}
	return debezium.AppendAvro(dst, t.Key, keyStruct(t, row))
}

func keyStruct(t *table, row debezium.Struct) debezium.Struct {
	k := make(debezium.Struct, len(t.KeyIdx))
	for i, j := range t.KeyIdx {
		k[i] = row[j]
	}
	return k
}

// sameKey compares the key columns of two converted rows. Converted
// values are scalars or []byte (decimals, binary), so this needs no
// formatting: it runs for every update.
func sameKey(t *table, a, b debezium.Struct) bool {
	for _, j := range t.KeyIdx {
		x, y := a[j], b[j]
		if xb, ok := x.([]byte); ok {
			yb, ok := y.([]byte)
			if !ok || !bytes.Equal(xb, yb) {
				return false
			}
			continue
		}
		if _, ok := y.([]byte); ok || !scalarEqual(x, y) {
			return false
		}
	}
	return true
}

// scalarEqual is == for comparable values (all key column types) and a
// deep comparison otherwise, so that it never panics.
func scalarEqual(x, y any) bool {
	if x == nil || y == nil {
		return x == y
	}
	if reflect.TypeOf(x).Comparable() && reflect.TypeOf(y).Comparable() {
		return x == y
	}
	return reflect.DeepEqual(x, y)
}

// recordDesc describes a record for publish's error messages, rendering
// the key only if the record fails. It holds the key's values, not the
// row: a record waits in the producer's buffer (max-buffered-bytes of
// encoded records) until Kafka acknowledges it, and the converted row
// it came from, several times the size of its encoding, need not.
type recordDesc struct {
	t   *table
	key debezium.Struct // the key columns' values (keyStruct); nil without a key
}

// describe is the recordDesc of a change of row of t.
func describe(t *table, row debezium.Struct) recordDesc {
	if t.Key == nil {
		return recordDesc{t: t}
	}
	return recordDesc{t: t, key: keyStruct(t, row)}
}

// Describe returns the table and the rendered key (publish.Describer).
func (d recordDesc) Describe() (string, string) {
	key := "(none)"
	if d.t.Key != nil {
		key = renderKey(d.t, d.key, nil)
	}
	return d.t.Def.DB + "." + d.t.Def.Table, key
}

// keyString renders a key as Debezium's primary-key-change headers carry
// it: the key struct as JSON ({"id":20}).
func keyString(t *table, row debezium.Struct) string { return renderKey(t, row, t.KeyIdx) }

// renderKey is keyString of the key values vals[idx[i]], or vals[i] when
// idx is nil (a keyStruct).
func renderKey(t *table, vals debezium.Struct, idx []int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range t.Key.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		j := i
		if idx != nil {
			j = idx[i]
		}
		name, _ := json.Marshal(t.Key.Fields[i].Name)
		b.Write(name)
		b.WriteByte(':')
		// Kafka Connect's JSON form; []byte (decimals, binary keys) as base64.
		v, err := json.Marshal(vals[j])
		if err != nil {
			v = []byte("null")
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

// frame returns the wire header of f, with room for the Avro data after
// it; pass the record to f.Seal.
func frame(f publish.Frame) []byte {
	return f.AppendHeader(make([]byte, 0, 256))
}

// recordArena hands out the bytes of change-event keys and values from
// shared chunks, so that a record costs no allocation of its own for them
// (two per event before, with a third when a value outgrew its first
// guess). A record's bytes are never written again once handed out, and
// a chunk is freed when the last record in it is (acknowledged by Kafka:
// the producer's buffer bounds what chunks stay alive).
type recordArena struct{ chunk []byte }

// recordChunk is the size of an arena chunk. A key or value larger than
// what is left of the chunk grows out of it into a slice of its own, as
// append does, and the chunk is kept for the next one.
const recordChunk = 64 << 10

// frame returns the wire header of f in the free part of the chunk, to
// append the Avro data to; pass the result to done, then to f.Seal.
func (a *recordArena) frame(f *publish.Frame) []byte {
	if cap(a.chunk)-len(a.chunk) < 512 {
		a.chunk = make([]byte, 0, recordChunk)
	}
	return f.AppendHeader(a.chunk[len(a.chunk):])
}

// done takes b, appended to from frame's result, out of the free part of
// the chunk (if it stayed there) and returns it with its capacity cut to
// its length, so that no append to it can ever write into the chunk.
func (a *recordArena) done(b []byte) []byte {
	free := a.chunk[len(a.chunk):cap(a.chunk)]
	if len(b) > 0 && len(free) >= len(b) && &free[0] == &b[0] {
		a.chunk = a.chunk[:len(a.chunk)+len(b)]
	}
	return b[:len(b):len(b)]
}

func (s *Stream) emit(ctx context.Context, t *table, op debezium.Op, before, after debezium.Struct, src debezium.Source, now time.Time, headers []kgo.RecordHeader) error {
	row := after
	if row == nil {
		row = before
	}
	var key []byte
	if t.Key != nil {
		var err error
		key, err = appendKey(s.arena.frame(&t.keyFrame), t, row)
		if err != nil {
			return fmt.Errorf("encoding a key of %s: %w", t.topic, err)
		}
		if key, err = t.keyFrame.Seal(s.arena.done(key)); err != nil {
			return fmt.Errorf("encoding a key of %s: %w", t.topic, err)
		}
	}
	env := debezium.Envelope{Before: before, After: after, Source: src, Op: op,
		TsMs: now.UnixMilli(), TsUs: now.UnixMicro(), TsNs: now.UnixNano(), Transaction: s.meta.txEvent(t, op)}
	val, err := env.AppendAvro(s.arena.frame(&t.valueFrame), t.Envelope)
	if err != nil {
		return fmt.Errorf("encoding a change of %s: %w", t.topic, err)
	}
	if val, err = t.valueFrame.Seal(s.arena.done(val)); err != nil {
		return fmt.Errorf("encoding a change of %s: %w", t.topic, err)
	}
	rctx := publish.WithDescriber(ctx, describe(t, row))
	// Records only read their headers: share the context headers unless
	// this record has its own (primary-key changes).
	hs := s.contextHeaders
	if len(headers) > 0 {
		hs = append(headers[:len(headers):len(headers)], s.contextHeaders...)
	}
	s.pub.Produce(rctx, &kgo.Record{Topic: t.topic, Key: key, Value: val, Headers: hs})
	s.txnRecords++
	s.cfg.Metrics.event(t, op, len(key)+len(val))
	if op == debezium.OpDelete && s.cfg.Tombstones {
		// Debezium follows every delete with a tombstone, with the same key
		// (null for tables without a primary key) and the same headers.
		s.pub.Produce(rctx, &kgo.Record{Topic: t.topic, Key: key, Headers: hs})
		s.txnRecords++
	}
	return nil
}

// unpublishableHint is the way on for an error that says a table's rows
// cannot be published as they are (a column type or character set capture
// has no converter for, rows that match no definition); "" for others.
func unpublishableHint(err error) string {
	if errors.Is(err, mysqltype.ErrUnsupportedType) || errors.Is(err, mysqltype.ErrUnsupportedCharset) || errors.Is(err, schemahist.ErrSchemaMismatch) {
		return " (capture cannot publish this table's rows as they are: leave the table out with table-exclude-list, " +
			"or change the column at the source and re-snapshot the table)"
	}
	return ""
}
