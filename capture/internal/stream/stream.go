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

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/filter"
	"github.com/binlake/binlake/capture/internal/mysqltype"
	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/schemas/debezium"
)

// Registry registers schemas and returns their ids (the Confluent API).
type Registry interface {
	Register(ctx context.Context, subject string, schema []byte) (int, error)
}

// Definitions loads table definitions from the source (information_schema).
type Definitions interface {
	Load(ctx context.Context, db, table string) (schemahist.Definition, error)
}

// CollationSource is implemented by Definitions that can list the
// server's collation ids; with it, the character set of each column is
// taken from the table map event its rows come with
// (binlog_row_metadata=FULL), so a charset-changing ALTER never makes rows
// decode with the wrong character set.
type CollationSource interface {
	Collations(ctx context.Context) (schemahist.Collations, error)
}

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

// Stream is the capture loop.
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

	readPos   binlog.Position // after the last complete binlog transaction read
	readMoved bool            // readPos changed since the snapshot last looked
	snap      *snapRun        // nil: no snapshot
	incr      *incrState      // nil: no ad-hoc snapshots (incremental.go)

	// schema-change, transaction and heartbeat topics (meta.go)
	schemaIDs, txIDs, hbIDs metaIDs
	models                  map[string]*schemahist.Model // db.table → Debezium's table model
	charsets                map[string]string            // database → default charset
	tx                      txState
	lastRow                 int32 // Debezium's source.row of DDL and TRUNCATE: the last row event's last row
	nextHeartbeat           time.Time
	nextSignalPoll          time.Time
}

type table struct {
	*schemahist.Table
	keyID, valueID int
	topic          string
	ready          bool
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
		models: map[string]*schemahist.Model{}, charsets: map[string]string{}, nextHeartbeat: time.Now().Add(cfg.HeartbeatInterval)}
	if cfg.Snapshot != nil && !cfg.Snapshot.Progress.Done() {
		s.snap = newSnapRun(*cfg.Snapshot)
	}
	s.contextHeaders = []kgo.RecordHeader{
		{Key: "__debezium.context.connectorLogicalName", Value: []byte(cfg.Prefix)},
		{Key: "__debezium.context.taskId", Value: []byte("0")},
		{Key: "__debezium.context.connectorName", Value: []byte(cfg.Flavor)},
		{Key: "__debezium.context.runId", Value: []byte(cfg.RunID)},
	}
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

func tableKey(db, tbl string) string { return db + "." + tbl }

// compile compiles a definition with the table model known for it (the
// model decides the key and the types of aliased columns, as Debezium's
// does).
func (s *Stream) compile(def schemahist.Definition) (*table, error) {
	if def.Model == nil {
		def.Model = s.models[tableKey(def.DB, def.Table)]
	}
	var include func(string) bool
	if s.cfg.Filter.HasColumnLists() {
		include = func(col string) bool { return s.cfg.Filter.Column(def.DB, def.Table, col) }
	}
	t, err := schemahist.Compile(def, s.cfg.Prefix, s.cfg.Flavor, s.cfg.Types, s.cfg.Naming, include, s.cfg.KeyColumns)
	if err != nil {
		return nil, err
	}
	return &table{Table: t, topic: t.ID.Topic()}, nil
}

// Run reads r until ctx ends or an error occurs. On return the open
// Kafka transaction has been committed (clean stop at a boundary) or
// aborted.
func (s *Stream) Run(ctx context.Context, r *binlog.Reader) (err error) {
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
			if err := s.signalStep(ctx); err != nil {
				return err
			}
		}
		if s.snap != nil && s.atBoundary {
			did, err := s.snapStep(ctx)
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
			hb := s.heartbeatDue()
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
		earliest(s.nextHeartbeat)
	}
	if s.pollsSignals() {
		if now := time.Now(); !now.Before(s.nextSignalPoll) {
			s.nextSignalPoll = now.Add(signalPollInterval)
		}
		earliest(s.nextSignalPoll)
	}
	return s.wait.context(ctx, at, s.snapWake())
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
	switch ev.Kind {
	case binlog.KindBegin:
		s.atBoundary = false
		if err := s.begin(); err != nil {
			return err
		}
		return s.txBegin(ctx, ev)
	case binlog.KindRows:
		s.atBoundary = false
		if err := s.begin(); err != nil {
			return err
		}
		return s.rows(ctx, ev)
	case binlog.KindCommit:
		if err := s.txEnd(ctx, ev); err != nil {
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
			if err := s.txBegin(ctx, ev); err != nil {
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
	s.readPos, s.readMoved = pos, true
	s.trackBoundary()
	s.cfg.Metrics.observeSource(ev.Timestamp, s.cfg.Now())
	if s.heartbeatDue() {
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

// lookup returns the compiled table for a rows event (tm) or a TRUNCATE
// (tm nil), loading its definition on first sight and checking it against
// the table map. When the definition held does not match the table map,
// the one in information_schema is tried, and if the table changed again
// since the event was written, the definition is derived from the table
// map itself (binlog_row_metadata=FULL), so rows are always decoded with
// the structure they were written with.
func (s *Stream) lookup(ctx context.Context, db, tbl string, tm *replication.TableMapEvent) (*table, error) {
	key := tableKey(db, tbl)
	t := s.tables[key]
	if tm != nil && s.colls == nil {
		if src, ok := s.defs.(CollationSource); ok {
			colls, err := src.Collations(ctx)
			if err != nil {
				return nil, err
			}
			s.colls = colls
		}
	}
	matches := func(t *schemahist.Table, tm *replication.TableMapEvent) error {
		if err := matches(t, tm); err != nil {
			return err
		}
		return t.MatchesCharsets(tm, s.colls)
	}
	if t != nil && (tm == nil || matches(t.Table, tm) == nil) {
		if !t.ready {
			if err := s.prepare(ctx, t); err != nil {
				return nil, err
			}
		}
		return t, nil
	}
	s.model(ctx, db, tbl) // Debezium's model of a table first seen: SHOW CREATE TABLE
	def, err := s.defs.Load(ctx, db, tbl)
	if err != nil && !(errors.Is(err, schemahist.ErrNoTable) && tm != nil) {
		return nil, err
	}
	nt, cerr := s.compile(def)
	if err != nil || cerr != nil || (tm != nil && matches(nt.Table, tm) != nil) {
		if tm == nil {
			return nil, errors.Join(err, cerr)
		}
		hint := def
		if t != nil && len(def.Columns) == 0 {
			hint = t.Def
		}
		derived, derr := schemahist.FromTableMapCharsets(tm, hint, s.colls)
		if derr != nil {
			return nil, derr
		}
		if nt, err = s.compile(derived); err != nil {
			return nil, err
		}
		def = derived
		s.log.Warn("table definition taken from the binlog: the table changed after this event was written; defaults and comments come from its current definition where the column still exists",
			"table", key)
	}
	if err := s.recordHistory(ctx, def); err != nil {
		return nil, err
	}
	s.tables[key] = nt
	if err := s.prepare(ctx, nt); err != nil {
		return nil, err
	}
	return nt, nil
}

// matches checks a compiled table against a table map event.
func matches(t *schemahist.Table, tm *replication.TableMapEvent) error {
	names := tm.ColumnNameString()
	if len(names) == 0 {
		if int(tm.ColumnCount) != len(t.Def.Columns) {
			return fmt.Errorf("%w: %s.%s has %d columns in the binlog and %d in the definition",
				schemahist.ErrSchemaMismatch, t.Def.DB, t.Def.Table, tm.ColumnCount, len(t.Def.Columns))
		}
		return nil
	}
	return t.MatchesMap(tm)
}

// prepare registers a table's schemas and creates its topic.
func (s *Stream) prepare(ctx context.Context, t *table) error {
	if t.Key != nil {
		ks, err := debezium.AvroSchema(t.Key)
		if err != nil {
			return err
		}
		if t.keyID, err = s.reg.Register(ctx, t.topic+"-key", ks); err != nil {
			return fmt.Errorf("registering the key schema of %s: %w", t.topic, err)
		}
	}
	vs, err := debezium.AvroSchema(t.Envelope)
	if err != nil {
		return err
	}
	if t.valueID, err = s.reg.Register(ctx, t.topic+"-value", vs); err != nil {
		return fmt.Errorf("registering the value schema of %s: %w", t.topic, err)
	}
	if err := s.pub.EnsureTopic(ctx, t.topic, nil, 0); err != nil {
		return err
	}
	t.ready = true
	return nil
}

// historyRecord is one entry of the schema history topic.
type historyRecord struct {
	Definition schemahist.Definition `json:"definition"`
	Dropped    bool                  `json:"dropped,omitempty"`
}

func (s *Stream) recordHistory(ctx context.Context, def schemahist.Definition) error {
	if m := s.models[tableKey(def.DB, def.Table)]; m != nil {
		def.Model = m
	}
	return s.writeHistory(ctx, historyRecord{Definition: def})
}

func (s *Stream) writeHistory(ctx context.Context, rec historyRecord) error {
	if s.cfg.HistoryTopic == "" {
		return nil
	}
	if err := s.begin(); err != nil {
		return err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	s.pub.Produce(ctx, &kgo.Record{Topic: s.cfg.HistoryTopic, Key: []byte(tableKey(rec.Definition.DB, rec.Definition.Table)), Value: b, Partition: 0})
	return nil
}

// LoadHistory reads the schema history topic: the latest definition of
// every table recorded before the committed position.
func LoadHistory(ctx context.Context, pub *publish.Publisher, topic string) (map[string]schemahist.Definition, error) {
	out := map[string]schemahist.Definition{}
	var bad error
	err := pub.ReadCommitted(ctx, topic, func(r *kgo.Record) {
		var rec historyRecord
		if err := json.Unmarshal(r.Value, &rec); err != nil {
			bad = fmt.Errorf("decoding schema history record at %s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err)
			return
		}
		key := tableKey(rec.Definition.DB, rec.Definition.Table)
		if rec.Dropped {
			delete(out, key)
		} else {
			out[key] = rec.Definition
		}
	})
	if err != nil {
		return nil, err
	}
	return out, bad
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
	t, err := s.lookup(ctx, db, tbl, ev.Table)
	if err != nil {
		return err
	}
	if s.snapKeylessAhead(t) {
		return nil
	}
	now := s.cfg.Now()
	step := 1
	if ev.RowsType == binlog.Update {
		step = 2
	}
	for i := 0; i+step-1 < len(ev.Rows); i += step {
		src := s.source(ev, db, tbl, i/step)
		s.lastRow = int32(i / step)
		switch ev.RowsType {
		case binlog.Insert:
			after, err := s.convert(t, ev.Rows[i])
			if err != nil {
				return err
			}
			s.trackChange(t, after)
			if err := s.emit(ctx, t, debezium.OpCreate, nil, after, src, now, nil); err != nil {
				return err
			}
		case binlog.Delete:
			before, err := s.convert(t, ev.Rows[i])
			if err != nil {
				return err
			}
			s.trackChange(t, before)
			if err := s.emit(ctx, t, debezium.OpDelete, before, nil, src, now, nil); err != nil {
				return err
			}
		case binlog.Update:
			before, err := s.convert(t, ev.Rows[i])
			if err != nil {
				return err
			}
			after, err := s.convert(t, ev.Rows[i+1])
			if err != nil {
				return err
			}
			s.trackChange(t, before)
			s.trackChange(t, after)
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

func (s *Stream) convert(t *table, row []any) (debezium.Struct, error) {
	if t.ColumnIdx != nil {
		proj := make([]any, len(t.ColumnIdx))
		for i, j := range t.ColumnIdx {
			proj[i] = row[j]
		}
		row = proj
	}
	out, err := t.Conv.ConvertRow(nil, row)
	if err != nil {
		return nil, fmt.Errorf("converting a row of %s.%s: %w", t.Def.DB, t.Def.Table, err)
	}
	return out, nil
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
// the key only if the record fails.
type recordDesc struct {
	t   *table
	row debezium.Struct
}

func (d recordDesc) Describe() (string, string) {
	key := "(none)"
	if d.t.Key != nil {
		key = keyString(d.t, d.row)
	}
	return d.t.Def.DB + "." + d.t.Def.Table, key
}

// keyString renders a key as Debezium's primary-key-change headers carry
// it: the key struct as JSON ({"id":20}).
func keyString(t *table, row debezium.Struct) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, j := range t.KeyIdx {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(t.Key.Fields[i].Name)
		b.Write(name)
		b.WriteByte(':')
		// Kafka Connect's JSON form; []byte (decimals, binary keys) as base64.
		v, err := json.Marshal(row[j])
		if err != nil {
			v = []byte("null")
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

func (s *Stream) frame(id int) []byte {
	b := make([]byte, 5, 256)
	b[1], b[2], b[3], b[4] = byte(id>>24), byte(id>>16), byte(id>>8), byte(id)
	return b
}

func (s *Stream) emit(ctx context.Context, t *table, op debezium.Op, before, after debezium.Struct, src debezium.Source, now time.Time, headers []kgo.RecordHeader) error {
	row := after
	if row == nil {
		row = before
	}
	var key []byte
	if t.Key != nil {
		ks := keyStruct(t, row)
		var err error
		key, err = debezium.AppendAvro(s.frame(t.keyID), t.Key, ks)
		if err != nil {
			return fmt.Errorf("encoding a key of %s: %w", t.topic, err)
		}
	}
	env := debezium.Envelope{Before: before, After: after, Source: src, Op: op,
		TsMs: now.UnixMilli(), TsUs: now.UnixMicro(), TsNs: now.UnixNano(), Transaction: s.txEvent(t, op)}
	val, err := env.AppendAvro(s.frame(t.valueID), t.Envelope)
	if err != nil {
		return fmt.Errorf("encoding a change of %s: %w", t.topic, err)
	}
	rctx := publish.WithDescriber(ctx, recordDesc{t: t, row: row})
	// Records only read their headers: share the context headers unless
	// this record has its own (primary-key changes).
	hs := s.contextHeaders
	if len(headers) > 0 {
		hs = append(headers[:len(headers):len(headers)], s.contextHeaders...)
	}
	s.pub.Produce(rctx, &kgo.Record{Topic: t.topic, Key: key, Value: val, Headers: hs})
	s.txnRecords++
	s.cfg.Metrics.event(t.topic, op, len(key)+len(val))
	if op == debezium.OpDelete && s.cfg.Tombstones {
		// Debezium follows every delete with a tombstone, with the same key
		// (null for tables without a primary key) and the same headers.
		s.pub.Produce(rctx, &kgo.Record{Topic: t.topic, Key: key, Headers: hs})
		s.txnRecords++
	}
	return nil
}

// query handles a statement outside row transactions: DDL and TRUNCATE.
// The names of the tables a DDL changes are checked before its
// schema-change event is written, so that a table capture cannot carry
// (a column name Avro rejects) stops capture before anything of the DDL
// is produced; their definitions are compiled after it, with the table
// model the event brought up to date.
func (s *Stream) query(ctx context.Context, ev binlog.Event) error {
	ddl := schemahist.ParseDDL(ev.Schema, ev.Query)
	tableDDL := false
	var defs map[string]*schemahist.Definition // the DDL's captured tables, nil: gone
	switch ddl.Kind {
	case schemahist.DDLCreateTable, schemahist.DDLAlterTable, schemahist.DDLRenameTable, schemahist.DDLDropTable:
		// Names first, so that a table capture cannot carry stops it
		// before anything of the DDL is produced; the tables are compiled
		// after the schema-change event, which brings their table model
		// (key, alias types, defaults) up to date.
		tableDDL = true
		var err error
		if defs, err = s.checkNames(ctx, ddl); err != nil {
			return err
		}
	}
	if err := s.ddlEvents(ctx, ev, ddl); err != nil {
		return err
	}
	if tableDDL {
		return s.reload(ctx, ddl, defs)
	}
	if ddl.Kind != schemahist.DDLTruncate {
		return nil
	}
	ref := ddl.Tables[0]
	s.trackTable(ref.DB, ref.Table)
	if !s.cfg.Filter.Table(ref.DB, ref.Table) || s.cfg.SkipTruncate {
		return nil
	}
	t, err := s.lookup(ctx, ref.DB, ref.Table, nil)
	if errors.Is(err, schemahist.ErrNoTable) {
		// A table capture never knew and that is gone by the time the
		// binlog is read (an ETL staging table created, truncated and
		// dropped while capture lagged): no definition to encode its
		// event with, and no row of it can be on its topic. Stopping
		// here would stop at the same event after every restart.
		s.log.Warn("truncate of a table that no longer exists and whose definition capture does not know: skipped",
			"table", tableKey(ref.DB, ref.Table), "binlog_file", ev.Position.File, "binlog_pos", ev.Position.Pos)
		return nil
	}
	if err != nil {
		return err
	}
	src := s.source(ev, ref.DB, ref.Table, int(s.lastRow))
	now := s.cfg.Now()
	env := debezium.Envelope{Source: src, Op: debezium.OpTruncate, TsMs: now.UnixMilli(), TsUs: now.UnixMicro(), TsNs: now.UnixNano(),
		Transaction: s.txEvent(t, debezium.OpTruncate)}
	val, err := env.AppendAvro(s.frame(t.valueID), t.Envelope)
	if err != nil {
		return err
	}
	s.pub.Produce(ctx, &kgo.Record{Topic: t.topic, Value: val, Headers: s.contextHeaders})
	s.txnRecords++
	s.cfg.Metrics.event(t.topic, debezium.OpTruncate, len(val))
	return nil
}

// reload reads and compiles the definitions of the tables a DDL statement
// creates, alters, renames or drops.
// defs holds the definitions checkNames read (nil for a table that is
// gone).
func (s *Stream) reload(ctx context.Context, ddl schemahist.DDL, defs map[string]*schemahist.Definition) error {
	if err := s.snapshotRenamedIn(ddl); err != nil {
		return err
	}
	for _, ref := range ddl.Tables {
		s.trackTable(ref.DB, ref.Table)
		if !s.cfg.Filter.Table(ref.DB, ref.Table) {
			continue
		}
		key := tableKey(ref.DB, ref.Table)
		d, ok := defs[key]
		if !ok {
			return fmt.Errorf("reloading %s: the definition was not read before the schema change", key)
		}
		if d == nil {
			if _, known := s.tables[key]; known {
				delete(s.tables, key)
				if err := s.writeHistory(ctx, historyRecord{Definition: schemahist.Definition{DB: ref.DB, Table: ref.Table}, Dropped: true}); err != nil {
					return err
				}
			}
			continue
		}
		def := *d
		t, err := s.compile(def)
		if err != nil {
			return err
		}
		s.tables[key] = t
		if err := s.recordHistory(ctx, def); err != nil {
			return err
		}
		s.log.Info("table definition changed", "table", key, "columns", len(def.Columns))
	}
	return nil
}

// Check loads the definitions of tables (db, table pairs) and checks their names
// without writing anything, so that a table capture cannot carry (see
// schemahist.CheckNames) stops it at start-up.
func (s *Stream) Check(ctx context.Context, tables [][2]string) error {
	for _, ref := range tables {
		def, err := s.defs.Load(ctx, ref[0], ref[1])
		if errors.Is(err, schemahist.ErrNoTable) {
			continue // dropped since it was listed
		}
		if err != nil {
			return err
		}
		if err := s.checkDef(def); err != nil {
			return err
		}
	}
	return nil
}

// checkNames reads the definitions of the captured tables a DDL statement
// creates, alters, renames or drops, and checks their names
// (schemahist.CheckNames). It returns them by db.table (nil: the table is
// gone) for reload, so that each is read once.
func (s *Stream) checkNames(ctx context.Context, ddl schemahist.DDL) (map[string]*schemahist.Definition, error) {
	defs := map[string]*schemahist.Definition{}
	for _, ref := range ddl.Tables {
		if !s.cfg.Filter.Table(ref.DB, ref.Table) {
			continue
		}
		key := tableKey(ref.DB, ref.Table)
		def, err := s.defs.Load(ctx, ref.DB, ref.Table)
		if errors.Is(err, schemahist.ErrNoTable) {
			defs[key] = nil
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := s.checkDef(def); err != nil {
			return nil, err
		}
		defs[key] = &def
	}
	return defs, nil
}

func (s *Stream) checkDef(def schemahist.Definition) error {
	var include func(string) bool
	if s.cfg.Filter.HasColumnLists() {
		include = func(col string) bool { return s.cfg.Filter.Column(def.DB, def.Table, col) }
	}
	return schemahist.CheckNames(def, s.cfg.Prefix, s.cfg.Naming, include, s.cfg.KeyColumns)
}

// snapshotRenamedIn queues an incremental snapshot of each table a rename
// moves into the include lists: its rows were never captured, and no
// change event will bring them. The queued snapshot is stored with the
// position in the transaction of this statement, so it runs once, after a
// crash too.
func (s *Stream) snapshotRenamedIn(ddl schemahist.DDL) error {
	if ddl.Kind != schemahist.DDLRenameTable || s.incr == nil {
		return nil
	}
	for i := 0; i+1 < len(ddl.Tables); i += 2 {
		from, to := ddl.Tables[i], ddl.Tables[i+1]
		if s.cfg.Filter.Table(from.DB, from.Table) || !s.cfg.Filter.Table(to.DB, to.Table) {
			continue
		}
		s.log.Info("table renamed into the include lists, snapshotting it", "table", tableKey(to.DB, to.Table), "from", tableKey(from.DB, from.Table))
		s.addIncremental([]string{to.DB + "." + to.Table})
		if err := s.markDirty(); err != nil {
			return err
		}
	}
	return nil
}
