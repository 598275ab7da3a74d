package binlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Kind is the kind of an Event.
type Kind uint8

// Event kinds.
const (
	// KindBegin starts a transaction; GTID is set when the server has one.
	KindBegin Kind = iota + 1
	// KindRows carries the rows of one rows event of the open transaction.
	KindRows
	// KindCommit ends a transaction; Position is where to resume after it.
	KindCommit
	// KindQuery is a statement outside a row transaction (DDL, TRUNCATE),
	// a transaction of its own; Position is where to resume after it.
	KindQuery
	// KindHeartbeat is an idle tick from the server: nothing happened.
	KindHeartbeat
)

// RowsType says what a rows event did.
type RowsType uint8

// Rows types.
const (
	Insert RowsType = iota + 1
	Update          // Rows holds before, after pairs
	Delete
)

// Event is one step of the binlog, in order.
type Event struct {
	Kind Kind
	// Timestamp is the event's header time (seconds since the epoch).
	Timestamp uint32
	// PrevTimestamp is the timestamp of the last event before this one
	// that had one (heartbeats and zero timestamps are skipped), and
	// BeginTimestamp that of the last event before the transaction's GTID
	// event: Debezium stamps transaction BEGIN and END records with them
	// (it updates its event time after handling each event).
	PrevTimestamp, BeginTimestamp uint32
	// ServerID is the server that wrote the event.
	ServerID uint32
	// File and Pos are the binlog file and the offset where the event starts.
	File string
	Pos  uint32
	// GTID is the current transaction's GTID ("" without GTIDs).
	GTID string
	// Thread is the session thread id of the transaction (0 if unknown).
	Thread int64

	// KindRows.
	Table    *replication.TableMapEvent
	RowsType RowsType
	Rows     [][]any
	// FirstRow is the source.row of the event's first row, and RowLimit
	// bounds source.row (see [Event.RowIndex]): rows inside a MySQL 8
	// transaction payload share the payload's Pos and are numbered across
	// its inner events, and a compressed event (payload, MariaDB
	// *_ROWS_COMPRESSED_EVENT) can hold more rows than bytes.
	FirstRow int32
	RowLimit uint32

	// KindQuery.
	Schema string // the session's default database
	Query  string

	// KindCommit and KindQuery: the position after this transaction.
	Position Position
}

// Config configures a Reader.
type Config struct {
	// Addr is the server, host:port.
	Addr     string
	User     string
	Password string
	// Flavor of the server.
	Flavor Flavor
	// ServerID identifies this replica to the server; it must be unique
	// among the server's replicas.
	ServerID uint32
	// HeartbeatPeriod asks the server for heartbeats when idle (0: 30s).
	HeartbeatPeriod time.Duration
	// EventBuffer is how many decoded events may wait for capture (0: 64).
	EventBuffer int
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Dial connects to the server (nil: plain TCP). capture passes
	// mysqltls.Dialer's, which brings TLS and the password guard.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Reader yields the binlog's events from a start position.
type Reader struct {
	syncer   *replication.BinlogSyncer
	streamer *replication.BinlogStreamer
	flavor   Flavor
	scfg     replication.BinlogSyncerConfig // to reconnect
	log      *slog.Logger
	lost     int // reconnections in a row without an event

	gset mysql.GTIDSet // executed up to the last commit
	file string
	pos  uint32 // end of the last commit

	gtid string // of the open transaction
	// Decoding a transaction payload's inner events, and the rows of
	// them so far (the next rows event's FirstRow).
	inPayload   bool
	payloadRows int32
	lastTs      uint32 // timestamp of the last event that had one
	beginTs     uint32 // lastTs when the open transaction's GTID event arrived
	thread      int64
	inTxn       bool
	pending     []Event // events decoded but not yet returned

	// The open transaction as capture has seen it, to resume it after a
	// lost connection: its events returned so far and its Begin.
	seen  int
	begun Event
	// Re-reading that transaction after a reconnection: the events of it
	// passed over so far (the first seen are not returned again).
	resuming bool
	replayed int
	resumed  int // transactions resumed after a reconnection inside them
}

// Open connects and starts streaming at start. A start with a GTID set
// streams the transactions not in the set; one with only a file and offset
// streams from there.
func Open(ctx context.Context, cfg Config, start Position) (*Reader, error) {
	host, portStr, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("parsing address %q: %w", cfg.Addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("parsing port of %q: %w", cfg.Addr, err)
	}
	hb := cfg.HeartbeatPeriod
	if hb == 0 {
		hb = 30 * time.Second
	}
	if cfg.EventBuffer <= 0 {
		cfg.EventBuffer = 64
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	r := &Reader{flavor: cfg.Flavor, file: start.File, pos: start.Pos, scfg: syncerConfig(cfg, host, uint16(port), hb, logger), log: logger}
	if start.GTIDSet != "" || (start.File == "" && cfg.Flavor == FlavorMariaDB) {
		if r.gset, err = ParseGTIDSet(cfg.Flavor, start.GTIDSet); err != nil {
			return nil, fmt.Errorf("starting binlog stream at %s: %w", start, err)
		}
	}
	if err := r.start(); err != nil {
		return nil, fmt.Errorf("starting binlog stream at %s: %w", start, err)
	}
	return r, nil
}

// start connects a new syncer and streams from the reader's position:
// the transactions not in its GTID set, or from its file and offset.
func (r *Reader) start() error {
	r.syncer = replication.NewBinlogSyncer(r.scfg)
	var err error
	if r.gset != nil {
		r.streamer, err = r.syncer.StartSyncGTID(r.gset.Clone())
	} else {
		r.streamer, err = r.syncer.StartSync(mysql.Position{Name: r.file, Pos: r.pos})
	}
	if err != nil {
		r.syncer.Close()
	}
	return err
}

// maxReconnects bounds the reconnections in a row that bring no event, a
// second apart.
const maxReconnects = 30

// reconnect streams again from the reader's position after the last
// commit once the connection was lost (inside a transaction, Next passes
// over what it handed on of it already). go-mysql's own retry is
// off: it resumed from its GTID set before the last transaction when the
// connection broke after that transaction's commit, and handed that
// transaction over a second time (a duplicate on the topics).
func (r *Reader) reconnect(ctx context.Context, cause error) error {
	r.syncer.Close()
	for {
		r.lost++
		if r.lost > maxReconnects {
			return fmt.Errorf("reading binlog after %s: %d reconnections failed: %w", r.Position(), maxReconnects, cause)
		}
		r.log.Warn("binlog connection lost; reconnecting", "position", r.Position().String(), "attempt", r.lost, "error", cause)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		r.gtid, r.thread = "", 0
		err := r.start()
		if err == nil {
			return nil
		}
		cause = err
	}
}

// ErrPurged reports that the server no longer has the binlog capture must
// read next: it was purged (binlog retention, PURGE BINARY LOGS) while
// capture was stopped or lagging, and the changes in it are lost to it.
var ErrPurged = errors.New("binlog: the server no longer has the binlog to read")

// erFatalReadingBinlog is the server's error 1236 (ER_MASTER_FATAL_ERROR_READING_BINLOG),
// which MySQL and MariaDB send when the requested file or GTID is gone.
const erFatalReadingBinlog = 1236

// readError explains an error of the binlog stream after position at.
func readError(at Position, err error) error {
	var me *mysql.MyError
	if errors.As(err, &me) && me.Code == erFatalReadingBinlog {
		return fmt.Errorf("%w after %s (server error %d: %s): the changes since are lost to this capture. "+
			"Restart it once with snapshot-mode=when_needed to take a new snapshot (or reset it with a new id), "+
			"and keep the binlog longer than capture may be stopped (RDS/Aurora MySQL: CALL mysql.rds_set_configuration('binlog retention hours', 168))",
			ErrPurged, at, me.Code, me.Message)
	}
	return fmt.Errorf("reading binlog after %s: %w", at, err)
}

// syncerConfig is how go-mysql connects and decodes. Tests build a parser
// with the same decoding settings from it.
func syncerConfig(cfg Config, host string, port uint16, hb time.Duration, logger *slog.Logger) replication.BinlogSyncerConfig {
	c := replication.BinlogSyncerConfig{
		ServerID:                cfg.ServerID,
		Flavor:                  string(cfg.Flavor),
		Host:                    host,
		Port:                    port,
		User:                    cfg.User,
		Password:                cfg.Password,
		HeartbeatPeriod:         hb,
		ReadTimeout:             3 * hb,
		TimestampStringLocation: time.UTC,
		Logger:                  logger.With("component", "binlog"),
		// Reader.reconnect resumes from capture's own position instead.
		DisableRetrySync: true,
		// Events decoded ahead of capture. A rows event holds up to
		// max_binlog_cache-sized batches of rows, so this bounds memory:
		// capture, not the syncer, owns back-pressure.
		EventCacheCount: cfg.EventBuffer,
		Dialer:          cfg.Dial,
	}
	if cfg.Flavor == FlavorMySQL {
		// MySQL binary JSON as Debezium's text (json.go). MariaDB has no
		// binary JSON (its JSON is LONGTEXT).
		c.RowsEventDecodeFunc = guardRows(decodeRows)
	} else {
		// go-mysql's values, with less CPU (rows.go).
		c.RowsEventDecodeFunc = guardRows(newRowsDecoder(c.TimestampStringLocation).decode)
	}
	return c
}

// ErrMalformedRows reports a rows event that could not be decoded: the
// bytes do not match the table map (a truncated or corrupt event).
var ErrMalformedRows = errors.New("binlog: malformed rows event")

// checkImages refuses a rows event none of whose row images has a column
// while bytes are left after its header (pos): go-mysql's DecodeData reads
// such rows as taking no bytes and loops appending them until memory runs
// out (found by FuzzRowsDecode). No server writes one: a before image,
// and a write's after image, always has a column.
func checkImages(e *replication.RowsEvent, pos int, data []byte) error {
	if pos >= len(data) || e.Type() == replication.EnumRowsEventTypeUnknown { // a partial update's images read an options byte each
		return nil
	}
	has := func(bitmap []byte) bool {
		for i := 0; i < int(e.ColumnCount) && i>>3 < len(bitmap); i++ {
			if bitmap[i>>3]&(1<<(uint(i)&7)) != 0 {
				return true
			}
		}
		return false
	}
	if !has(e.ColumnBitmap1) && (e.ColumnBitmap2 == nil || !has(e.ColumnBitmap2)) {
		return fmt.Errorf("%w: %d bytes of rows with no column in their images", ErrMalformedRows, len(data)-pos)
	}
	return nil
}

// guardRows makes a panic while decoding one rows event that event's
// ErrMalformedRows, as go-mysql's own RowsEvent.Decode does: its
// DecodeHeader, which the decoders here call, indexes the event unchecked
// and panics on a truncated one (found by FuzzRowsDecode). The syncer
// would recover it too, but as a bare "panic" closing the stream.
func guardRows(decode func(*replication.RowsEvent, []byte) error) func(*replication.RowsEvent, []byte) error {
	return func(e *replication.RowsEvent, data []byte) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%w: %v", ErrMalformedRows, r)
			}
		}()
		return decode(e, data)
	}
}

// Close stops streaming. It is safe to call more than once.
func (r *Reader) Close() { r.syncer.Close() }

// Position is the position after the last transaction returned in full.
func (r *Reader) Position() Position {
	p := Position{Flavor: r.flavor, File: r.file, Pos: r.pos}
	if r.gset != nil {
		p.GTIDSet = r.gset.String()
	}
	return p
}

// Next returns the next event. It blocks until one arrives or ctx ends.
// An error other than ctx's is final: the reader must be closed.
func (r *Reader) Next(ctx context.Context) (Event, error) {
	for {
		if len(r.pending) > 0 {
			ev := r.pending[0]
			r.pending = r.pending[1:]
			if r.resuming && ev.Kind != KindHeartbeat {
				if r.replayed < r.seen {
					if err := r.replay(ev); err != nil {
						return Event{}, err
					}
					continue
				}
				r.resuming = false
				r.resumed++
			}
			switch ev.Kind {
			case KindBegin:
				r.seen, r.begun = 1, ev
			case KindCommit:
				r.seen = 0
			case KindRows, KindQuery:
				if r.seen > 0 {
					r.seen++
				}
			}
			return ev, nil
		}
		raw, err := r.streamer.GetEvent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return Event{}, ctx.Err()
			}
			err = readError(r.Position(), err)
			if errors.Is(err, ErrPurged) {
				return Event{}, err
			}
			if r.inTxn && r.seen > 0 {
				// Part of the open transaction was returned. The server
				// sends it again from its start after the last commit: the
				// events capture has seen are passed over (and checked to
				// be that transaction's), the rest are returned.
				r.inTxn, r.resuming, r.replayed = false, true, 0
			}
			if err := r.reconnect(ctx, err); err != nil {
				return Event{}, err
			}
			continue
		}
		if raw.Header.EventType != replication.HEARTBEAT_EVENT {
			r.lost = 0
		}
		if err := r.decode(raw); err != nil {
			return Event{}, err
		}
	}
}

// replay passes over an event of the transaction being read again after a
// reconnection. Its first must be that transaction's Begin: a server that
// sends another transaction (a failover to a server with another history)
// stops capture rather than mix two transactions.
func (r *Reader) replay(ev Event) error {
	if r.replayed == 0 {
		if ev.Kind != KindBegin || ev.GTID != r.begun.GTID || (ev.GTID == "" && (ev.File != r.begun.File || ev.Pos != r.begun.Pos)) {
			return fmt.Errorf("reading binlog after %s: after reconnecting, the server sent an event of kind %d at %s:%d (GTID %q) where it was expected to send again the transaction at %s:%d (GTID %q) that was cut off: "+
				"the server's binlog is not the one capture was reading; restart capture (it resumes from its last committed position)",
				r.Position(), ev.Kind, ev.File, ev.Pos, ev.GTID, r.begun.File, r.begun.Pos, r.begun.GTID)
		}
		// The timestamps the transaction's events carry, as first read.
		r.beginTs = r.begun.BeginTimestamp
	}
	if ev.Kind == KindCommit {
		return fmt.Errorf("reading binlog after %s: the transaction cut off at %s:%d ended sooner when read again", r.Position(), r.begun.File, r.begun.Pos)
	}
	r.replayed++
	return nil
}

func (r *Reader) base(h *replication.EventHeader) Event {
	start := h.LogPos - h.EventSize
	if h.LogPos < h.EventSize {
		start = 0
	}
	return Event{Timestamp: h.Timestamp, ServerID: h.ServerID, File: r.file, Pos: start, GTID: r.gtid, Thread: r.thread,
		PrevTimestamp: r.lastTs, BeginTimestamp: r.beginTs}
}

func (r *Reader) decode(raw *replication.BinlogEvent) error {
	h := raw.Header
	defer func() {
		if h.Timestamp != 0 && h.EventType != replication.HEARTBEAT_EVENT && h.EventType != replication.HEARTBEAT_LOG_EVENT_V2 {
			r.lastTs = h.Timestamp
		}
	}()
	switch e := raw.Event.(type) {
	case *replication.RotateEvent:
		r.file = string(e.NextLogName)
		r.pos = uint32(e.Position)
	case *replication.MariadbGTIDEvent:
		r.gtid = e.GTID.String()
		r.thread = 0
		r.beginTs = r.lastTs
		r.inTxn = !e.IsStandalone()
		if r.inTxn {
			r.pending = append(r.pending, withKind(r.base(h), KindBegin))
		}
	case *replication.GTIDEvent:
		next, err := e.GTIDNext()
		if err != nil {
			return fmt.Errorf("decoding GTID event at %s:%d: %w", r.file, h.LogPos, err)
		}
		r.gtid = next.String()
		r.thread = 0
		r.beginTs = r.lastTs
	case *replication.QueryEvent:
		q := strings.TrimSpace(string(e.Query))
		switch strings.ToUpper(q) {
		case "BEGIN":
			r.thread = int64(e.SlaveProxyID)
			if !r.inTxn { // MySQL: BEGIN follows the GTID event
				r.inTxn = true
				r.pending = append(r.pending, withKind(r.base(h), KindBegin))
			}
			return nil
		case "COMMIT":
			return r.commit(h)
		}
		if r.inTxn {
			// A statement inside a row transaction (e.g. SAVEPOINT): not a change.
			return nil
		}
		r.thread = int64(e.SlaveProxyID)
		ev := r.base(h)
		ev.Kind, ev.Schema, ev.Query = KindQuery, string(e.Schema), q
		if err := r.advance(h); err != nil {
			return err
		}
		ev.Position = r.Position()
		r.pending = append(r.pending, ev)
	case *replication.XIDEvent:
		return r.commit(h)
	case *replication.RowsEvent:
		ev := r.base(h)
		ev.Kind, ev.Table, ev.Rows = KindRows, e.Table, e.Rows
		ev.RowLimit, ev.FirstRow = h.EventSize, r.payloadRows
		switch h.EventType {
		case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2,
			replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
			ev.RowsType = Insert
		case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2,
			replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1:
			ev.RowsType = Update
		case replication.PARTIAL_UPDATE_ROWS_EVENT:
			// binlog_row_value_options=PARTIAL_JSON. MySQL still writes
			// whole documents when it cannot log a diff; a diff is refused
			// (see ErrPartialJSON).
			if err := refusePartialJSON(e, r.file, h.LogPos); err != nil {
				return err
			}
			ev.RowsType = Update
		case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2,
			replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
			ev.RowsType = Delete
		default:
			return fmt.Errorf("unexpected rows event type %s at %s:%d", h.EventType, r.file, h.LogPos)
		}
		if r.inPayload {
			n := len(e.Rows)
			if ev.RowsType == Update {
				n /= 2
			}
			r.payloadRows += int32(n)
		}
		r.pending = append(r.pending, ev)
	case *replication.TransactionPayloadEvent:
		// MySQL 8 binlog_transaction_compression: the payload holds the
		// transaction's events, already decoded by go-mysql.
		r.inPayload, r.payloadRows = true, 0
		defer func() { r.inPayload, r.payloadRows = false, 0 }()
		for _, inner := range e.Events {
			// Inner events carry no log position of their own: keep the
			// payload's, so positions stay monotonic; their rows are
			// numbered across the payload (see Event.RowIndex).
			inner.Header.LogPos, inner.Header.EventSize = h.LogPos, h.EventSize
			if err := r.decode(inner); err != nil {
				return err
			}
		}
	case *replication.GenericEvent:
		if h.EventType == replication.HEARTBEAT_EVENT || h.EventType == replication.HEARTBEAT_LOG_EVENT_V2 {
			r.pending = append(r.pending, withKind(r.base(h), KindHeartbeat))
		}
	}
	return nil
}

func withKind(e Event, k Kind) Event { e.Kind = k; return e }

// RowIndex returns source.row of the event's row i (an update's before and
// after images are one row): FirstRow + i, so that every row of the binlog
// has its own (pos, row), increasing in binlog order, with pos + row below
// the next event's position (ingest's source order is pos + row, see
// ingest/internal/batch/order.go). An uncompressed event takes at least one
// byte per row, so that holds of Debezium's numbering (0, 1, ... within the
// event), which RowIndex returns for it. Two cases need more:
//
//   - The events inside a MySQL 8 transaction payload carry no position of
//     their own: Debezium gives them all the payload's and numbers each
//     rows event's rows from 0, so rows of two inner events share (pos,
//     row). Capture numbers the rows of all the payload's inner events
//     consecutively instead (FirstRow).
//   - A compressed event (a payload, a MariaDB *_ROWS_COMPRESSED_EVENT) may
//     hold more rows than it has bytes; Debezium's row then reaches the
//     next event's position. Capture caps row at RowLimit-1 (the event's
//     size less one): the rows past the cap share their order, all within
//     the event, rather than collide with a later event's.
//
// Both depart from Debezium's values only where Debezium's collide.
func (e Event) RowIndex(i int) int32 {
	row := int64(e.FirstRow) + int64(i)
	if e.RowLimit > 0 && row >= int64(e.RowLimit) {
		row = int64(e.RowLimit) - 1
	}
	return int32(row)
}

func (r *Reader) advance(h *replication.EventHeader) error {
	if r.gtid != "" && r.gset != nil {
		if err := r.gset.Update(r.gtid); err != nil {
			return fmt.Errorf("adding GTID %s to %s: %w", r.gtid, r.gset, err)
		}
	}
	if h.LogPos > 0 {
		r.pos = h.LogPos
	}
	return nil
}

func (r *Reader) commit(h *replication.EventHeader) error {
	if err := r.advance(h); err != nil {
		return err
	}
	ev := r.base(h)
	ev.Kind = KindCommit
	ev.Position = r.Position()
	r.pending = append(r.pending, ev)
	r.inTxn, r.gtid, r.thread = false, "", 0
	return nil
}

// ErrPartialJSON reports a JSON column logged as a diff
// (binlog_row_value_options=PARTIAL_JSON). Debezium does not rebuild such
// documents either (its MySQL setup requires the option unset). Capture
// could apply the diffs to the before image, but go-mysql v1.16.0 keeps
// only the first diff of each column, so the document cannot be rebuilt
// faithfully: capture stops rather than emit a wrong after image.
var ErrPartialJSON = errors.New("binlog: partial JSON update (binlog_row_value_options=PARTIAL_JSON)")

// refusePartialJSON fails on an update whose after image holds a JSON diff.
func refusePartialJSON(e *replication.RowsEvent, file string, pos uint32) error {
	for i := 1; i < len(e.Rows); i += 2 {
		for c, v := range e.Rows[i] {
			if _, ok := v.(*replication.JsonDiff); ok {
				name := strconv.Itoa(c)
				if names := e.Table.ColumnNameString(); c < len(names) {
					name = names[c]
				}
				return fmt.Errorf("%w: %s.%s column %s at %s:%d: set binlog_row_value_options='' (SET GLOBAL and in the server configuration) so updates carry whole documents, then restart capture from a position before this event",
					ErrPartialJSON, e.Table.Schema, e.Table.Table, name, file, pos)
			}
		}
	}
	return nil
}

// ErrNotReady reports a server whose binlog cannot feed capture.
var ErrNotReady = errors.New("binlog: server not ready for change capture")
