package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/deadletter"
	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/schemamap"
)

type ctlKind uint8

const (
	ctlFlush  ctlKind = iota + 1 // commit the buffer now
	ctlDrop                      // abandon the buffer
	ctlRename                    // carry out a rename of the topic's table (msg.job)
)

// msg is a record or a control request, in one queue so that a request
// is handled after every record sent before it.
type msg struct {
	rec  *kgo.Record
	ctl  ctlKind
	ctx  context.Context //nolint:containedctx // the request's deadline travels with it
	done chan error
	job  *renameJob
	at   time.Time // when the poll returned the record
}

// worker owns one table: its buffer, its Committer and its schema.
type worker struct {
	p        *Pipeline
	topic    string
	ident    table.Identifier
	identErr error // the topic cannot name a table
	// nullableKey are the nullable key columns of the last change (which
	// make it keyless; decode.Change.NullableKey).
	nullableKey []string
	// names are the topic's prefix, database and table. ambiguous marks a
	// topic with dots in its names: ident and names are then set by the
	// first change record (resolve).
	names     topicNames
	ambiguous bool
	in        chan msg
	log       *slog.Logger
	skipped   map[string]int64 // records that are not changes, by value schema name
	// skippedTo is, on a topic that names no table, the next offset by
	// partition past the records skipped since the last group commit:
	// only the consumer group can remember them (see adjustOffsets).
	skippedTo map[int32]int64

	committer *commit.Committer
	// tableUUID is the table w commits to, pinned by its first Committer
	// (openCommitter); "" until w has opened one on its current name.
	tableUUID string
	// born is when w was created: a rename another process carried out
	// before w existed is nothing w has to catch up with (adoptJob).
	born   time.Time
	schema *decode.Schema
	key    []string
	// keptLog: the lake table is an append-only change log although the
	// source table has gained a key since (see adopt).
	keptLog bool
	buf     *batch.Buffer // append-only for a keyless table's change log

	// seen is the next offset by partition past the records (control
	// records included) handled, for a rename's cut.
	seen map[int32]int64
	// held are messages received while waiting (see waitFor), handled
	// before the queue.
	held []msg
	// job is the rename of this topic's table in progress; lastJob the
	// last one taken on (a rename is taken on once).
	job, lastJob *renameJob
	// schemaTopic marks a schema-change topic's worker: its records are
	// read by the followers (follower.go), and its offsets are theirs to
	// commit.
	schemaTopic bool
	// chPos is the source position of the change in hand.
	chPos decode.SourcePos
	// recAt is when the poll returned the record in hand.
	recAt time.Time
	// inHand is the record being added (handle), and inHandGone is set
	// when a drop while add waited for the schema topic (waitFor) let go
	// of its partition or rewound it to the record or before: the record
	// comes again (to this worker, from the rewound offset, or to the
	// partition's next owner), so add must not buffer it. Buffered, it
	// marked the records of its partition between the rewound offset and
	// itself as held, and they were skipped when fetched again: lost.
	inHand     *kgo.Record
	inHandGone bool
	// changeAt is the source position of the change whose schema is being
	// adopted: the column renames before it apply first (colrename.go).
	changeAt decode.SourcePos
	// schemaOf is the schema topic whose renames apply to this topic, ""
	// when it is not consumed; nil until first needed.
	schemaOf *string

	// flight is the commit running beside the worker (flushAsync), nil
	// when none is: until settle, the committer and the batch it commits
	// are the flight's, and the worker fills buf, a fresh batch. spare is
	// a committed batch kept for its capacity.
	flight *flight
	spare  *batch.Buffer
}

// flight is one commit of a table's batch, run by its own goroutine while
// the worker goes on decoding and buffering the records after it. At most
// one is in flight per table, so commits land in offset order.
type flight struct {
	buf    *batch.Buffer
	reason string
	start  time.Time
	done   chan struct{} // closed when the commit has ended

	// Set by the goroutine before done is closed.
	res       commit.Result
	committer *commit.Committer // the one to use next: a failed attempt replaces it
	err       error
}

// commitConfig is the table's Committer configuration: the pipeline's, in
// the table's delete mode.
func (w *worker) commitConfig() commit.Config {
	cfg := w.p.cfg.Commit
	cfg.DeleteMode = w.p.cfg.DeleteModes.For(w.names.db, w.names.table)
	cfg.TableUUID = w.tableUUID
	return cfg
}

// openCommitter (re)opens w's Committer on w.ident. The first one pins the
// table it found under the name (w.tableUUID): every later one, and every
// reload of a commit, fails with commit.ErrTableReplaced when a rename
// gave the name to another table, so that nothing buffered for one table
// is ever committed to another (see worker.tableReplaced).
func (w *worker) openCommitter(ctx context.Context) error {
	c, err := commit.New(ctx, w.p.cat, w.ident, w.commitConfig())
	if err != nil {
		return err
	}
	w.committer, w.tableUUID = c, c.TableUUID()
	return nil
}

// changeLog reports whether the table is the append-only change log of a
// source table without a primary key.
func (w *worker) changeLog() bool { return w.buf != nil && w.schema != nil && w.buf.AppendOnly() }

// send queues m, waiting while the queue is full. It returns false when
// ctx ends or the pipeline failed.
func (w *worker) send(ctx context.Context, m msg) bool {
	select {
	case w.in <- m:
		return true
	case <-ctx.Done():
		return false
	case <-w.p.failed:
		return false
	}
}

// request asks the worker to flush or drop its buffer and waits for it.
func (w *worker) request(ctx context.Context, kind ctlKind) error {
	done := make(chan error, 1)
	select {
	case w.in <- msg{ctl: kind, ctx: ctx, done: done}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (w *worker) run(ctx context.Context) (err error) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	defer w.setBuffered()
	defer func() {
		// No commit outlives its worker: wait for the one in flight (the
		// shutdown deadline cancels ctx, and with it a commit that hangs).
		if serr := w.settle(); err == nil && serr != nil {
			err = serr
		}
	}()
	for {
		if len(w.held) > 0 {
			m := w.held[0]
			w.held = w.held[1:]
			if err := w.handle(ctx, m); err != nil {
				if errors.Is(err, errStopped) {
					return nil
				}
				return err
			}
			continue
		}
		select {
		case m, ok := <-w.in:
			if !ok {
				return nil
			}
			if err := w.handle(ctx, m); err != nil {
				if errors.Is(err, errStopped) {
					return nil
				}
				return err
			}
		case <-w.flightDone():
			if err := w.settle(); err != nil {
				return err
			}
		case <-w.jobRenamed():
			if err := w.checkRename(ctx); err != nil {
				return err
			}
		case <-tick.C:
			// A rename of this table the follower is at: an idle worker
			// commits what it holds before it, so that the rename can go on.
			if w.adoptJob() {
				if err := w.checkRename(ctx); err != nil {
					return err
				}
			}
			if w.buf != nil && w.buf.Full(time.Now()) {
				if err := w.flushAsync(ctx, "age"); err != nil {
					return err
				}
			}
			w.commitSkipped(ctx)
		}
	}
}

// flightDone is closed when the commit in flight ends; nil (never ready)
// when none is.
func (w *worker) flightDone() <-chan struct{} {
	if w.flight == nil {
		return nil
	}
	return w.flight.done
}

// handle handles one message: a record, or a control request.
func (w *worker) handle(ctx context.Context, m msg) error {
	if m.rec != nil {
		pos := batch.Position{Topic: m.rec.Topic, Partition: m.rec.Partition, Offset: m.rec.Offset}
		if (w.buf != nil && w.buf.Holds(pos)) || (w.flight != nil && w.flight.buf.Holds(pos)) {
			// Fetched again while the open batch holds it: a handoff that
			// gave up waiting keeps the batch (see ctlDrop), and the
			// partitions assigned back resume from the table's offsets,
			// below the batch's. Adding it again would apply it twice in
			// one commit (the chaos workload's change log, after a
			// rebalance during an ambiguous commit). A batch in flight
			// commits the record, or fails the table.
			return nil
		}
		w.recAt = m.at
		w.inHand, w.inHandGone = m.rec, false
		err := w.add(ctx, m.rec)
		gone := w.inHandGone
		w.inHand, w.inHandGone = nil, false
		if err != nil {
			return err
		}
		if gone {
			return w.checkRename(ctx)
		}
		if w.seen == nil {
			w.seen = map[int32]int64{}
		}
		next := m.rec.Offset + 1
		w.seen[m.rec.Partition] = max(w.seen[m.rec.Partition], next)
		return w.checkRename(ctx)
	}
	// A request sees the table as committed so far: like a commit made in
	// line, the one in flight ends before it is handled.
	if err := w.settle(); err != nil {
		if m.done != nil {
			m.done <- err
		}
		return err
	}
	var err error
	switch m.ctl {
	case ctlFlush:
		err = w.flush(m.ctx, "handoff")
		w.commitSkipped(m.ctx)
	case ctlDrop:
		// A drop whose callback gave up waiting (the worker was busy) is
		// stale: the partitions may be anyone's by now, so no rewind is
		// safe. Keeping the batch is: a commit skips what another owner
		// committed first, and vice versa.
		if m.ctx.Err() == nil {
			w.forgetDropped(w.drop())
		}
	case ctlRename:
		if w.job == nil {
			w.takeJob(m.job)
		}
		return w.checkRename(ctx)
	}
	m.done <- err
	return err
}

func (w *worker) add(ctx context.Context, rec *kgo.Record) error {
	if rec.Attrs.IsControl() { // a transaction marker: only its offset counts
		w.skip(rec)
		return nil
	}
	ch, err := w.p.dec.Decode(ctx, rec.Topic, rec.Partition, rec.Offset, rec.Key, rec.Value)
	if err != nil {
		return w.reject(ctx, rec, deadletter.StageDecode, err)
	}
	if ch.NotChange == "" && !ch.Tombstone && w.ambiguous {
		if err := w.resolve(rec, &ch); err != nil {
			return err
		}
	}
	if ch.NotChange == "" && !ch.Tombstone && w.identErr == nil {
		// Nothing is buffered ahead of the schema topic: a rename before
		// this change must be known first (see rename.go).
		w.chPos = ch.Source
		if err := w.awaitSchema(ctx, ch.Source); err != nil {
			return err
		}
		if w.inHandGone {
			w.log.Info("let go of the record in hand: a drop while it waited for the schema topic rewound or revoked its partition; it is fetched again",
				"partition", rec.Partition, "offset", rec.Offset)
			return nil
		}
	}
	if job := w.job; job != nil {
		// A change after the rename belongs to a table that took the old
		// name: it waits until the rename is done. Later records of its
		// partition wait too, to keep their order.
		_, heldPart := job.held[rec.Partition]
		if heldPart || (ch.Source.Known() && ch.Source.Compare(job.pos) > 0) {
			if !heldPart {
				job.held[rec.Partition] = rec.Offset
			}
			job.later = append(job.later, msg{rec: rec, at: w.recAt})
			return nil
		}
	}
	if ch.SchemaChange != nil {
		// The followers read it, and commit the topic's offsets past it
		// once its renames are done: this worker, if the group assigned
		// the topic here, neither handles nor commits it (skip notes
		// nothing on a schema topic); it is logged as skipped below.
		w.schemaTopic, w.skippedTo = true, nil
		if ch.NotChange == "" {
			return nil
		}
	}
	if ch.NotChange != "" {
		// A schema change, transaction metadata or heartbeat record on a
		// topic the regex matched: no row to apply. Logged on the first
		// one of each kind, and every 10,000 after.
		if w.skipped == nil {
			w.skipped = map[string]int64{}
		}
		if w.skipped[ch.NotChange]%10_000 == 0 {
			w.log.Info("skipping records that are not row changes", "schema", ch.NotChange, "skipped", w.skipped[ch.NotChange]+1, "offset", rec.Offset)
		}
		w.skipped[ch.NotChange]++
		w.skip(rec)
		return nil
	}
	if ch.Tombstone {
		w.skip(rec)
		return nil
	}
	if w.identErr != nil {
		return fmt.Errorf("change event at %s/%d/%d: %w", rec.Topic, rec.Partition, rec.Offset, w.identErr)
	}
	keyless := ch.Keyless
	if ch.Event.Op == batch.OpTruncate || w.keptLog { // a truncate has no key: the table stays what it was
		keyless = w.changeLog()
	}
	if ch.Keyless && !w.p.cfg.KeylessAppend {
		if len(ch.NullableKey) > 0 {
			return fmt.Errorf("table %v: %c event at %s/%d/%d is keyed on nullable column(s) %s (Debezium keys a table without a primary key on its first UNIQUE column, nullable or not), which cannot be an Iceberg identifier: keyless-tables=reject; set keyless-tables=append to keep it as an append-only change log, or declare the column NOT NULL or add a primary key at the source",
				w.ident, ch.Event.Op, rec.Topic, rec.Partition, rec.Offset, strings.Join(ch.NullableKey, ", "))
		}
		return fmt.Errorf("table %v: %c event with a null key at %s/%d/%d: the table has no primary key and keyless-tables=reject; set keyless-tables=append to keep it as an append-only change log, or add a primary key",
			w.ident, ch.Event.Op, rec.Topic, rec.Partition, rec.Offset)
	}
	w.nullableKey = ch.NullableKey
	key := ch.KeyFields
	if key == nil && !ch.Keyless { // a truncate: the key stays what it was
		key = w.key
	}
	if ch.Schema != w.schema || keyless != w.changeLog() || (ch.KeyFields != nil && !slices.Equal(key, w.key)) {
		if err := w.flush(ctx, "schema"); err != nil {
			return err
		}
		w.changeAt = ch.Source // for the column renames before it (colrename.go)
		if err := w.adopt(ctx, ch.Schema, key, keyless); err != nil {
			return w.reject(ctx, rec, deadletter.StageMap, err)
		}
	}
	if w.buf == nil { // a truncate of a table never seen: nothing to empty
		return nil
	}
	now := time.Now()
	if w.buf.AppendOnly() {
		if err := w.addChangeLog(&ch, now); err != nil {
			return w.reject(ctx, rec, deadletter.StageMap, err)
		}
	} else {
		ev := ch.Event
		if ev.Row != nil {
			ev.Row = append(ev.Row, orderValue(ev.Order))
		}
		if err := w.buf.Add(ev, now); err != nil {
			return w.reject(ctx, rec, deadletter.StageMap, err)
		}
	}
	if w.p.cfg.Metrics != nil {
		w.p.cfg.Metrics.buffer(w.ident, 1, int64(ch.Event.Size))
	}
	w.p.buffered.Add(int64(ch.Event.Size))
	if w.buf.Full(now) {
		return w.flushAsync(ctx, "limit")
	}
	if w.p.buffered.Load() > w.p.cfg.MaxBufferedBytes {
		// The batch in flight still counts: once it has landed the bound
		// may hold again, and this batch need not be cut short.
		if w.flight != nil {
			if err := w.settle(); err != nil {
				return err
			}
			if w.p.buffered.Load() <= w.p.cfg.MaxBufferedBytes {
				return nil
			}
		}
		return w.flushAsync(ctx, "memory")
	}
	return nil
}

// resolve names the table of a topic with dots in its names from the
// source block of its change records: the first one sets it, every later
// one must agree, and so must the table that held the topic's offsets at
// assignment (Pipeline.heldIdent).
func (w *worker) resolve(rec *kgo.Record, ch *decode.Change) error {
	at := fmt.Sprintf("%s/%d/%d", rec.Topic, rec.Partition, rec.Offset)
	if ch.SourceDB == "" || ch.SourceTable == "" {
		return fmt.Errorf("change event at %s: topic %s has more than three dot-separated parts, so its database and table must come from the record's source block, which has no db and table: consume only topics <prefix>.<db>.<table> of Debezium change records (settings topics / topic-regex), or give the table and its prefix names without dots",
			at, w.topic)
	}
	names, ok := namesFor(w.topic, ch.SourceDB, ch.SourceTable)
	if !ok {
		return fmt.Errorf("change event at %s: topic %s has more than three dot-separated parts, so its database and table are taken from the record's source block, but source.db=%q source.table=%q do not end the topic as .<db>.<table>: consume only topics <prefix>.<db>.<table> of Debezium-compatible records (settings topics / topic-regex)",
			at, w.topic, ch.SourceDB, ch.SourceTable)
	}
	if w.ident != nil {
		if names != w.names {
			return fmt.Errorf("change event at %s: topic %s has records of %s.%s and of %s.%s, and with dots in its name only its records can tell its table: give each table its own topic <prefix>.<db>.<table> (settings topics / topic-regex)",
				at, w.topic, w.names.db, w.names.table, names.db, names.table)
		}
		return nil
	}
	if err := w.setNames(names); err != nil {
		return fmt.Errorf("change event at %s: %w", at, err)
	}
	return nil
}

// setNames sets the table of a topic with dots in its names, which must
// be the table that held the topic's offsets at assignment, if any.
func (w *worker) setNames(names topicNames) error {
	ident := w.p.identOf(names.prefix, names.db, names.table)
	w.p.mu.Lock()
	held, ok := w.p.heldBy[w.topic]
	w.p.mu.Unlock()
	if ok && slices.ContainsFunc(w.p.namerFor(names.prefix).Candidates(names.db, names.table), func(id table.Identifier) bool { return slices.Equal(id, held) }) {
		ident = held // one of its names: resolved at assignment
	}
	if ok && !slices.Equal(held, ident) {
		return fmt.Errorf("topic %s is of table %s.%s (lake table %v), but table %v holds the topic's offsets: it was written from this topic under a name guessed from the topic's dots; drop %v to have ingest re-read the topic into %v",
			w.topic, names.db, names.table, ident, held, held, ident)
	}
	if !slices.Equal(w.ident, ident) {
		w.tableUUID = ""
	}
	w.names, w.ident = names, ident
	w.log = w.p.log.With("table", strings.Join(ident, "."), "topic", w.topic)
	return nil
}

// addChangeLog appends the rows of a keyless table's change event to the
// append-only buffer: the after image of c, r and u, the before image of u
// and d (marked before), and a row of NULLs for t, each with the op,
// source time and Kafka position.
func (w *worker) addChangeLog(ch *decode.Change, now time.Time) error {
	ev := ch.Event
	op := string(rune(ev.Op))
	var images [][]any
	var before []bool
	switch ev.Op {
	case batch.OpCreate, batch.OpRead:
		images, before = [][]any{ev.Row}, []bool{false}
	case batch.OpUpdate:
		if ch.Before != nil {
			images, before = append(images, ch.Before), append(before, true)
		}
		images, before = append(images, ev.Row), append(before, false)
	case batch.OpDelete:
		if ch.Before == nil {
			return fmt.Errorf("table %v: delete without a before image at %s/%d/%d: a keyless table's delete cannot be recorded", w.ident, ev.Topic, ev.Partition, ev.Offset)
		}
		images, before = [][]any{ch.Before}, []bool{true}
	case batch.OpTruncate:
		images, before = [][]any{make([]any, len(w.schema.Columns))}, []bool{false}
	}
	for i, img := range images {
		row := make([]any, 0, len(img)+6)
		row = append(row, img...)
		row = append(row, op, before[i], ev.TsMs, ev.Partition, ev.Offset, orderValue(ev.Order))
		// The images share the record's size, the first taking the
		// remainder: the buffer's bytes must add up to what the worker
		// counts in Pipeline.buffered, or every commit leaves a byte behind.
		size := ev.Size / len(images)
		if i == 0 {
			size += ev.Size % len(images)
		}
		e := ev
		e.Op, e.Key, e.Row, e.Size = batch.OpCreate, nil, row, size
		// Still a snapshot row for Buffer.Place, which must not take its
		// read time for a binlog time (a history of its own would sort
		// it after the changes of its second that follow it).
		e.SnapshotRead = ev.Op == batch.OpRead
		if err := w.buf.Add(e, now); err != nil {
			return err
		}
	}
	return nil
}

// orderValue is the source-order column's value: null when the event
// carried no binlog position.
func orderValue(o int64) any {
	if o == 0 {
		return nil
	}
	return o
}

// changeLogColumns are the source columns plus the change-log columns and
// the source-order column.
func changeLogColumns(cols []string) []string {
	return append(slices.Clone(cols), schemamap.ChangeOpColumn, schemamap.ChangeBeforeColumn,
		schemamap.ChangeTsMsColumn, schemamap.ChangePartitionColumn, schemamap.ChangeOffsetColumn, schemamap.SourceOrderColumn)
}

// keyedColumns are the source columns plus the source-order column.
func keyedColumns(cols []string) []string {
	return append(slices.Clone(cols), schemamap.SourceOrderColumn)
}

// adopt switches to a new source schema: it creates or evolves the table
// and starts a buffer with the new row layout. A keyless table (no primary
// key) is kept as an append-only change log (schemamap.ChangeLog).
func (w *worker) adopt(ctx context.Context, s *decode.Schema, key []string, keyless bool) error {
	if w.committer == nil {
		tbl, err := w.locate(ctx)
		switch {
		case err != nil:
			return err
		case tbl == nil:
			if key == nil && !keyless {
				return nil // a truncate before any row: nothing to do
			}
			ls, lkey, err := w.lakeNames(s, key, nil)
			if err != nil {
				return err
			}
			if err := w.create(ctx, ls, lkey, keyless); err != nil {
				return err
			}
		default:
			if key == nil && !keyless {
				key = identifierNames(tbl.Schema())
				_, log := tbl.Schema().FindFieldByName(schemamap.ChangeOpColumn)
				keyless = len(key) == 0 && log
			}
		}
		if err = w.openCommitter(ctx); err != nil {
			return err
		}
		if err := checkSpec(w.committer.Table().Spec(), w.committer.Table().Schema()); err != nil {
			return fmt.Errorf("table %v: %w", w.ident, err)
		}
	}
	if err := w.followColumnRenames(ctx); err != nil {
		return err
	}
	if key == nil && !keyless {
		key = identifierNames(w.committer.Table().Schema())
	}
	if keyed := identifierNames(w.committer.Table().Schema()); keyless && len(w.nullableKey) > 0 && len(keyed) > 0 {
		return fmt.Errorf("%w: table %v is keyed on %s, but its source key column(s) %s are nullable, and an Iceberg identifier field cannot hold NULL "+
			"(a version before this one wrote a NULL key as a zero value): rename or drop the lake table and re-snapshot the source table, and ingest creates it "+
			"as an append-only change log; or declare the column NOT NULL or add a primary key at the source",
			ErrIncompatible, w.ident, strings.Join(keyed, ", "), strings.Join(w.nullableKey, ", "))
	}
	if !keyless && isChangeLog(w.committer.Table().Schema()) {
		// The source table gained a key (ADD PRIMARY KEY, CREATE UNIQUE
		// INDEX: Debezium keys its events from then on). Equality deletes
		// on a key the table's rows were never written under would not
		// find them, so the table stays the change log it is: every
		// change is still recorded, in source order, and nothing is lost.
		if !w.keptLog {
			w.log.Warn("the source table has gained a key; its lake table stays an append-only change log "+
				"(to get a keyed table, let ingest create a new one: rename or drop this one and re-snapshot the source table)",
				"key", key)
		}
		w.keptLog, keyless = true, true
	}
	ls, lkey, err := w.lakeNames(s, key, w.committer.Table().Schema())
	if err != nil {
		return err
	}
	ls, lkey = w.renamedThrough(ls, lkey)
	m, err := mapping(ls, lkey, keyless)
	if err != nil {
		return fmt.Errorf("mapping the schema of %s (%s): %w", w.topic, s.ID, err)
	}
	for attempt := 1; ; attempt++ {
		changes, err := schemamap.EvolveMapping(w.committer.Table().Schema(), m)
		if err != nil {
			return fmt.Errorf("%w: table %v from topic %s: %w", ErrIncompatible, w.ident, w.topic, err)
		}
		if len(changes) == 0 {
			break
		}
		err = w.evolve(ctx, changes)
		if err == nil {
			break
		}
		// Another writer changed the table first: most often another
		// member of the group, consuming other partitions of the topic,
		// making the same schema change. Reload and look again: what is
		// left to change may be nothing.
		if !errors.Is(err, table.ErrCommitFailed) || attempt == maxEvolveAttempts {
			return err
		}
		w.log.Info("the table changed while its schema was being evolved; reloading it", "attempt", attempt, "error", err)
		if err = w.openCommitter(ctx); err != nil {
			return err
		}
	}
	if keyless {
		w.buf = batch.NewAppend(changeLogColumns(ls.Columns), w.p.cfg.Limits)
	} else if w.buf, err = batch.New(keyedColumns(ls.Columns), lkey, w.p.cfg.Limits); err != nil {
		return fmt.Errorf("table %v: %w", w.ident, err)
	}
	// The columns as the table names them now, by field id: a commit
	// after another process renamed one finds it by its id.
	sch := w.committer.Table().Schema()
	ids := make([]int, len(w.buf.Columns()))
	for i, c := range w.buf.Columns() {
		if f, ok := sch.FindFieldByName(c); ok {
			ids[i] = f.ID
		}
	}
	w.buf.SetFieldIDs(ids)
	w.schema, w.key = s, key // as the records give them: compared with the next record's
	return nil
}

// lakeNames are the source schema s and key under the table's column
// names: unchanged, or with LowerCaseColumns lower-cased
// (schemamap.LowerColumns), a column existing has under its source name
// keeping it.
func (w *worker) lakeNames(s *decode.Schema, key []string, existing *iceberg.Schema) (*decode.Schema, []string, error) {
	if !w.p.cfg.LowerCaseColumns {
		return s, key, nil
	}
	var keep func(string) bool
	if existing != nil {
		keep = func(name string) bool { _, ok := existing.FindFieldByName(name); return ok }
	}
	row, lkey, err := schemamap.LowerColumns(s.Row, key, keep)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: table %v from topic %s: %w", ErrIncompatible, w.ident, w.topic, err)
	}
	if row == s.Row {
		return s, lkey, nil
	}
	rename := make(map[string]string, len(row.Fields))
	for i, f := range s.Row.Fields {
		rename[f.Name] = row.Fields[i].Name
	}
	ls := &decode.Schema{ID: s.ID, Row: row, Columns: make([]string, len(s.Columns))}
	for i, c := range s.Columns {
		if l, ok := rename[c]; ok {
			c = l
		}
		ls.Columns[i] = c
	}
	return ls, lkey, nil
}

// mapping is the table schema for s: a change log or a keyed table, with
// the source-order column either way.
func mapping(s *decode.Schema, key []string, keyless bool) (*schemamap.Mapping, error) {
	var m *schemamap.Mapping
	var err error
	if keyless {
		m, err = schemamap.ChangeLog(s.Row)
	} else {
		m, err = schemamap.Map(s.Row, key)
	}
	if err != nil {
		return nil, err
	}
	return schemamap.WithSourceOrder(m)
}

// isChangeLog reports whether sch is an append-only change log
// (schemamap.ChangeLog): no identifier fields, the change-op column.
func isChangeLog(sch *iceberg.Schema) bool {
	_, log := sch.FindFieldByName(schemamap.ChangeOpColumn)
	return len(sch.IdentifierFieldIDs) == 0 && log
}

func identifierNames(sch *iceberg.Schema) []string {
	var out []string
	for _, id := range sch.IdentifierFieldIDs {
		if f, ok := sch.FindFieldByID(id); ok {
			out = append(out, f.Name)
		}
	}
	return out
}

func (w *worker) create(ctx context.Context, s *decode.Schema, key []string, keyless bool) error {
	m, err := mapping(s, key, keyless)
	if err != nil {
		return fmt.Errorf("mapping the schema of %s (%s): %w", w.topic, s.ID, err)
	}
	part, explicit := w.p.cfg.Partitions.For(w.names.db, w.names.table)
	if keyless && !explicit {
		part = nil // "*" partitions tables by their key; a change log has none
	}
	if part != nil && part.Column != "" && w.p.cfg.LowerCaseColumns {
		b := *part
		b.Column = schemamap.LowerColumn(b.Column)
		part = &b
	}
	spec, err := part.Spec(m.Schema, key)
	if err != nil {
		return fmt.Errorf("creating table %v from topic %s: %w", w.ident, w.topic, err)
	}
	version := strconv.Itoa(w.p.cfg.FormatVersion)
	props := iceberg.Properties{"format-version": version}
	for k, v := range w.p.cfg.TableProperties {
		props[k] = v
	}
	props["format-version"] = version
	for k, v := range w.p.sourceProps(w.names) {
		props[k] = v
	}
	if w.chPos.Known() {
		props[NameSinceProperty] = nameMark{w.chPos, -1, 0}.String()
	}
	w.columnRenameProps(props)
	created, err := w.createTable(ctx, func(ident table.Identifier) error { return w.createAt(ctx, ident, m.Schema, spec, props) })
	if err != nil || !created {
		return err
	}
	if keyless {
		w.log.Info("created table as an append-only change log: the source table has no primary key", "columns", len(m.Columns), "partition", specText(spec, m.Schema))
		return nil
	}
	w.log.Info("created table", "columns", len(m.Columns), "key", key, "partition", specText(spec, m.Schema))
	return nil
}

// createAt creates the table ident (and its namespace). An answer that it
// exists counts as created: the caller checks whose it is.
func (w *worker) createAt(ctx context.Context, ident table.Identifier, sch *iceberg.Schema, spec iceberg.PartitionSpec, props iceberg.Properties) error {
	ns := table.Identifier{ident[0]}
	// Tables of one namespace are created one at a time (the reference
	// catalog answers a concurrent duplicate with a 500, not a 409), and
	// a failure is checked against what exists before it counts: another
	// process, or our own earlier attempt, may have created it.
	w.p.createMu.Lock()
	err := retryCatalog(ctx, func() error {
		err := w.p.cat.CreateNamespace(ctx, ns, nil)
		if err == nil || errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return nil
		}
		if ok, cerr := w.p.cat.CheckNamespaceExists(ctx, ns); cerr == nil && ok {
			return nil
		}
		return fmt.Errorf("creating namespace %v: %w", ns, err)
	})
	w.p.createMu.Unlock()
	if err != nil {
		return err
	}
	return retryCatalog(ctx, func() error {
		_, err := w.p.cat.CreateTable(ctx, ident, sch, catalog.WithProperties(props), catalog.WithPartitionSpec(&spec))
		if err == nil || errors.Is(err, catalog.ErrTableAlreadyExists) {
			return nil
		}
		if ok, cerr := w.p.cat.CheckTableExists(ctx, ident); cerr == nil && ok {
			return nil
		}
		return fmt.Errorf("creating table %v: %w", ident, err)
	})
}

// maxEvolveAttempts bounds the schema changes retried after another
// writer's commit (each attempt reloads the table first).
const maxEvolveAttempts = 10

func (w *worker) evolve(ctx context.Context, changes []schemamap.Change) error {
	tbl := w.committer.Table()
	tx := tbl.NewTransaction()
	version, backfill := tbl.Metadata().Version(), w.p.cfg.BackfillDefaults
	if err := schemamap.Apply(tx.UpdateSchema(true, false), changes, version, backfill).Commit(); err != nil {
		return fmt.Errorf("staging the schema change of %v: %w", w.ident, err)
	}
	if backfill {
		if err := backfillDefaults(ctx, tbl, tx, changes); err != nil {
			return fmt.Errorf("backfilling the defaults of the columns added to %v: %w", w.ident, err)
		}
	}
	if _, err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("evolving the schema of %v: %w", w.ident, err)
	}
	var err error
	if err = w.openCommitter(ctx); err != nil {
		return err
	}
	for _, c := range changes {
		w.log.Info("evolved table schema", "change", c.String())
	}
	return nil
}

// drop abandons the buffer. The partitions of the topic this member still
// owns are rewound to their first abandoned record, so that only the
// revoked or lost partitions are left to their next owner. It runs while
// the revoke (or lost) callback waits for it, so no other revoke can run
// during the rewind.
func (w *worker) drop() map[int32]int64 {
	w.skippedTo = nil // no longer ours to commit
	// Callers settle the commit in flight first: what it held is the
	// table's, or the table has failed.
	if w.buf == nil || w.buf.Pending() == 0 {
		return nil
	}
	first := map[int32]int64{}
	for _, ev := range w.buf.Events() {
		if n, ok := first[ev.Partition]; !ok || ev.Offset < n {
			first[ev.Partition] = ev.Offset
		}
	}
	for _, pos := range w.buf.Passed() {
		if n, ok := first[pos.Partition]; !ok || pos.Offset < n {
			first[pos.Partition] = pos.Offset
		}
	}
	kept := w.p.ownedOnly(w.topic, first)
	if len(kept) > 0 {
		eo := map[string]map[int32]kgo.EpochOffset{w.topic: {}}
		for part, n := range kept {
			eo[w.topic][part] = kgo.EpochOffset{Epoch: -1, Offset: n}
		}
		w.p.cl.SetOffsets(eo)
		w.log.Info("rewound the partitions kept to the abandoned batch's first records", "partitions", kept)
	}
	w.log.Info("abandoning the open batch; the next owner re-reads it", "events", w.buf.Len(), "dead_lettered", len(w.buf.Passed()))
	w.p.buffered.Add(-w.buf.Bytes())
	w.buf.Reset()
	w.setBuffered()
	return kept
}

// forgetDropped lets go, after a drop, of the records w holds (waiting, or
// held back by a rename, or in hand: see inHand) of partitions it no
// longer owns or that were rewound to before them: they come again, to
// this worker or to their next owner. Those of partitions kept and not rewound are kept: nothing
// fetches them again. A rename's held-back partitions are recomputed, so
// that a rewound partition's records before the rename are applied, not
// held behind records after it that were let go.
func (w *worker) forgetDropped(rewound map[int32]int64) {
	gone := func(m msg) bool {
		if m.rec == nil {
			return false
		}
		part := m.rec.Partition
		if !w.p.owns(w.topic, part) {
			return true
		}
		from, ok := rewound[part]
		return ok && m.rec.Offset >= from
	}
	w.held = slices.DeleteFunc(w.held, gone)
	if w.inHand != nil && gone(msg{rec: w.inHand}) {
		w.inHandGone = true
	}
	for part := range w.seen {
		if !w.p.owns(w.topic, part) {
			delete(w.seen, part)
		} else if from, ok := rewound[part]; ok && w.seen[part] > from {
			w.seen[part] = from
		}
	}
	if job := w.job; job != nil {
		job.later = slices.DeleteFunc(job.later, gone)
		clear(job.held)
		for _, m := range job.later {
			if _, ok := job.held[m.rec.Partition]; !ok {
				job.held[m.rec.Partition] = m.rec.Offset
			}
		}
	}
}

func (w *worker) flush(ctx context.Context, reason string) error {
	if err := w.settle(); err != nil {
		return err
	}
	if w.buf == nil || w.buf.Pending() == 0 {
		return nil
	}
	f := w.launch(ctx, reason)
	<-f.done
	return w.settle()
}

// flushAsync commits the buffer beside the worker, which goes on filling
// a fresh one: decoding and buffering do not stop for the catalog, the
// object store and the position-delete lookups of a commit, so polling
// does not either. It first settles the commit in flight (one per table).
// Memory stays bounded: a batch in flight counts toward
// max-buffered-bytes until it has landed.
func (w *worker) flushAsync(ctx context.Context, reason string) error {
	if err := w.settle(); err != nil {
		return err
	}
	if w.buf == nil || w.buf.Pending() == 0 {
		return nil
	}
	w.launch(ctx, reason)
	return nil
}

// launch starts committing w.buf and gives the worker an empty batch of
// the same layout. The flight owns the batch and the committer until
// settle.
func (w *worker) launch(ctx context.Context, reason string) *flight {
	f := &flight{buf: w.buf, reason: reason, start: time.Now(), done: make(chan struct{})}
	next := w.spare
	if next == nil || !next.SameLayout(w.buf) {
		next = w.buf.Empty()
	}
	w.buf, w.spare, w.flight = next, nil, f
	// The goroutine reads only what the worker does not change until
	// settle: the flight's batch, committer and this table's identity.
	c, ident, log, cfg := w.committer, w.ident, w.log, w.commitConfig()
	go func() {
		defer close(f.done)
		f.res, f.committer, f.err = w.p.commitLoop(ctx, c, f.buf, ident, log, cfg)
	}()
	return f
}

// settle waits for the commit in flight, if any, and takes its outcome:
// the batch is released, progress is reported and the consumer group is
// told; a failed commit fails the table.
func (w *worker) settle() error {
	f := w.flight
	if f == nil {
		return nil
	}
	<-f.done
	w.flight = nil
	w.committer = f.committer
	if errors.Is(f.err, commit.ErrTableReplaced) {
		return w.tableReplaced(f)
	}
	if f.err != nil {
		return f.err
	}
	elapsed := time.Since(f.start)
	res := f.res
	if met := w.p.cfg.Metrics; met != nil {
		met.commitDone(w.ident, res, elapsed, nil)
		met.committed(w.ident, f.buf, res, w.topic)
	}
	w.log.Info("committed", "reason", f.reason, "events", res.Events, "skipped", res.SkippedEvents, "dead_lettered", res.Passed,
		"rows", res.Rows, "deletes", res.Deletes, "truncated", res.Truncated,
		"snapshot_id", res.SnapshotID, "commit_id", res.CommitID, "attempts", res.Attempts, "duration", elapsed)
	if res.StaleEvents > 0 {
		w.logStale(res)
	}
	w.p.buffered.Add(-f.buf.Bytes())
	f.buf.Reset()
	if w.buf != nil && f.buf.SameLayout(w.buf) {
		w.spare = f.buf
	}
	w.setBuffered()
	// Advisory group commit, after the table holds the offsets.
	if offs := res.Offsets[w.topic]; len(offs) > 0 {
		w.commitGroup(context.Background(), offs)
	}
	return nil
}

// tableReplaced handles a commit that found its table's name holding
// another table, or none (commit.ErrTableReplaced). During a rename of
// the table (a job in hand, or found done by the follower) the batch is
// dropped: the rename happened, and a rename happens only once the old
// table holds every change before it, this batch's included, so the batch
// must not go to the table that took the name. Otherwise the table was
// replaced behind ingest's back (dropped, or renamed without the schema
// topic followed) and ingest stops: a restart resumes every topic from the
// offsets its table holds.
func (w *worker) tableReplaced(f *flight) error {
	if w.adoptJob() {
		w.log.Info("the table was renamed while a batch for it was being committed: the renamed table holds its events; dropping the batch",
			"events", f.buf.Len(), "error", f.err)
		// The committer stays pinned to the renamed table: a batch
		// launched before the job is finished fails the same way.
		w.p.buffered.Add(-f.buf.Bytes())
		f.buf.Reset()
		w.setBuffered()
		return nil
	}
	return fmt.Errorf("table %v: %w; no rename of it was followed (schema-change topic not consumed, or the table was dropped or renamed in the catalog by hand): ingest stops, and a restart resumes from the offsets the tables hold", w.ident, f.err)
}

// logStale reports the events a commit dropped as older than the table's
// truncate watermark: one line per commit, with the count, the watermark
// and the first few events (batch.MaxStaleSamples) by topic, partition,
// offset and source order. Drops that a truncate of the same batch erased
// are the truncate's normal work (Info), unless some follow the truncate
// in its own partition, which a sound order never does (Warn); drops below
// an earlier commit's truncate are changes that arrived after it (Warn): a
// partition that lagged behind the truncate's, or orders that do not
// compare with the truncate's (a source whose binlog history changed).
func (w *worker) logStale(res commit.Result) {
	level, msg := slog.LevelWarn, "dropped changes whose source order is below the table's truncate watermark (an earlier commit's truncate)"
	switch {
	case res.StaleAfterTruncate > 0:
		msg = "dropped changes that follow the batch's truncate in their partition but sort below it: the source order is wrong"
	case res.Truncated:
		level, msg = slog.LevelInfo, "dropped changes that precede the batch's truncate in source order"
	}
	first := make([]string, 0, len(res.StaleFirst))
	for _, e := range res.StaleFirst {
		first = append(first, fmt.Sprintf("%s/%d/%d@%s", e.Topic, e.Partition, e.Offset, batch.FormatOrder(e.Order)))
	}
	attrs := []any{"stale", res.StaleEvents, "after_truncate", res.StaleAfterTruncate, "watermark", batch.FormatOrder(res.Watermark), "first", first}
	if len(res.StaleFirst) > 0 {
		e := res.StaleFirst[0]
		attrs = append(attrs, "partition", e.Partition, "offset", e.Offset, "order", batch.FormatOrder(e.Order))
	}
	w.log.Log(context.Background(), level, msg, attrs...)
}

// commitLoop commits buf with c, retrying until it lands, the batch is
// found invalid or ctx ends. It returns the committer to use next: after
// a failed attempt a new one, which reloads the table and its offsets, so
// that events the table already holds are skipped and none is applied
// twice.
func (p *Pipeline) commitLoop(ctx context.Context, c *commit.Committer, buf *batch.Buffer, ident table.Identifier, log *slog.Logger, cfg commit.Config) (commit.Result, *commit.Committer, error) {
	start := time.Now()
	met := p.cfg.Metrics
	for round := 1; ; round++ {
		release, err := p.lockCommits(ctx, ident)
		if err != nil {
			return commit.Result{}, c, fmt.Errorf("committing %d events to %v: waiting for the table's maintenance: %w", buf.Len(), ident, err)
		}
		res, err := c.Commit(ctx, buf)
		release()
		if err == nil {
			return res, c, nil
		}
		if met != nil {
			met.commitDone(ident, res, time.Since(start), err)
		}
		if errors.Is(err, batch.ErrInvalidEvent) {
			return res, c, fmt.Errorf("table %v: %w", ident, err)
		}
		if ctx.Err() != nil || errors.Is(err, commit.ErrTableReplaced) {
			return res, c, fmt.Errorf("committing %d events to %v: %w", buf.Len(), ident, err)
		}
		// The batch may or may not have landed: start over from the
		// table's offsets (a new Committer reloads them), so events it
		// already holds are skipped and none is applied twice.
		log.Warn("commit failed, retrying from the table's offsets", "round", round, "error", err)
		t := time.NewTimer(retryPause(round))
		select {
		case <-ctx.Done():
			t.Stop()
			return res, c, fmt.Errorf("committing %d events to %v: %w", buf.Len(), ident, err)
		case <-t.C:
		}
		cfg.TableUUID = c.TableUUID()
		nc, err := commit.New(ctx, p.cat, ident, cfg)
		if errors.Is(err, commit.ErrTableReplaced) {
			return res, c, fmt.Errorf("committing %d events to %v: %w", buf.Len(), ident, err)
		}
		if err == nil {
			c = nc
		}
	}
}

// skip notes a record skipped on a topic that names no table, for
// commitSkipped. A table's topic needs no note: its table holds its
// offsets.
func (w *worker) skip(rec *kgo.Record) {
	if w.identErr == nil || w.schemaTopic {
		return
	}
	if w.skippedTo == nil {
		w.skippedTo = map[int32]int64{}
	}
	w.skippedTo[rec.Partition] = rec.Offset + 1
}

// commitSkipped commits to the consumer group the offsets past the records
// skipped on a topic that names no table, so that a restart resumes there
// rather than re-reading the topic from its start. It is safe: such a
// topic's records are all skipped, and its first change record stops
// ingest before any offset past it is noted.
func (w *worker) commitSkipped(ctx context.Context) {
	if len(w.skippedTo) == 0 {
		return
	}
	w.commitGroup(ctx, w.skippedTo)
	if w.p.cfg.Metrics != nil {
		w.p.cfg.Metrics.advanced(w.topic, w.skippedTo)
	}
	w.skippedTo = nil
}

// commitGroup commits next offsets of the worker's topic to the consumer
// group, asynchronously, for the partitions this member owns. The commit
// is advisory for a table's topic (the table holds the real offsets) and
// the only record of progress for a topic that names no table.
func (w *worker) commitGroup(ctx context.Context, next map[int32]int64) {
	if next = w.p.ownedOnly(w.topic, next); len(next) == 0 {
		return
	}
	eo := map[string]map[int32]kgo.EpochOffset{w.topic: {}}
	for p, n := range next {
		eo[w.topic][p] = kgo.EpochOffset{Epoch: -1, Offset: n}
	}
	w.p.cl.CommitOffsets(ctx, eo, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			w.log.Debug("group offset commit failed", "error", err)
		}
	})
}

func (w *worker) setBuffered() {
	if w.p.cfg.Metrics == nil || w.ident == nil {
		return
	}
	var n int
	var b int64
	if w.buf != nil {
		n, b = w.buf.Len(), w.buf.Bytes()
	}
	w.p.cfg.Metrics.setBuffer(w.ident, n, b)
}

// retryCatalog retries a catalog call for up to a minute with backoff: a
// REST catalog's 5xx answers (S3 Tables throttling, a busy reference
// catalog) are usually passing. Cancellation wins.
//
// When ctx ends first it returns ctx's cause, not the last attempt's error:
// that attempt (errLookAgain, say) is no outcome, and the caller stops
// quietly on a cancelled context (a SIGTERM during a rename's second look
// at the catalog made ingest exit 1 with "looking at the catalog again").
func retryCatalog(ctx context.Context, f func() error) error {
	wait := 200 * time.Millisecond
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err != nil && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// retryPause is how long a retry loop that goes on until it succeeds
// (commitLoop, the follower) waits before round+1: 2 s more each round, at
// most 30 s.
func retryPause(round int) time.Duration {
	return min(time.Duration(round)*2*time.Second, 30*time.Second)
}

// errorsToleranceHint ends the error of a record that stops ingest with
// errors-tolerance=none: what the setting does and the way on.
const errorsToleranceHint = "errors-tolerance=none stops ingest at a record that cannot be decoded or mapped; " +
	"fix or remove what produced it, or set errors-tolerance=dlq and dlq-topic to send such records to a dead-letter topic and go on"

// reject handles a record that failed at stage with err. A failure that
// is not the record's own (a catalog or registry outage, cancellation), or
// any failure without a dead-letter topic, is returned and stops ingest;
// the record's own is sent to the dead-letter topic and passed: the
// table's next commit records its offset (or, with no table yet, the
// consumer group does, as for a topic without a table).
func (w *worker) reject(ctx context.Context, rec *kgo.Record, stage deadletter.Stage, err error) error {
	if stage == deadletter.StageMap {
		err = fmt.Errorf("mapping the record at %s/%d/%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
	}
	if !recordFault(err) {
		return err
	}
	dl := w.p.cfg.DeadLetter
	if dl == nil {
		return fmt.Errorf("%w (%s)", err, errorsToleranceHint)
	}
	sent, serr := dl.Send(ctx, rec, stage, err)
	if serr != nil {
		return serr
	}
	if sent {
		w.log.Warn("sent a record to the dead-letter topic", "dlq_topic", dl.Topic(), "partition", rec.Partition, "offset", rec.Offset, "stage", string(stage), "error", err.Error())
		if w.p.cfg.Metrics != nil {
			w.p.cfg.Metrics.deadLettered(rec.Topic, string(stage))
		}
	} else {
		w.log.Info("record already on the dead-letter topic, passing it", "dlq_topic", dl.Topic(), "partition", rec.Partition, "offset", rec.Offset, "stage", string(stage))
	}
	return w.pass(ctx, rec)
}

// pass records that rec was consumed without an event: in the buffer, so
// that the table's next commit passes it; with no table yet, for the
// consumer group (commitSkipped), which a topic whose table does not exist
// resumes from (Pipeline.adjustOffsets).
func (w *worker) pass(ctx context.Context, rec *kgo.Record) error {
	pos := batch.Position{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}
	now := time.Now()
	if err := w.settle(); err != nil {
		return err
	}
	if w.buf == nil && w.committer == nil && w.identErr == nil && w.ident != nil {
		tbl, err := w.locate(ctx)
		if err != nil {
			return err
		}
		if tbl != nil {
			if err = w.openCommitter(ctx); err != nil {
				return err
			}
		}
	}
	if w.buf == nil && w.committer != nil {
		// A buffer of passed records only: the next change's schema
		// replaces it (after committing it).
		w.buf = batch.NewAppend(nil, w.p.cfg.Limits)
	}
	if w.buf == nil {
		if w.skippedTo == nil {
			w.skippedTo = map[int32]int64{}
		}
		w.skippedTo[rec.Partition] = rec.Offset + 1
		return nil
	}
	w.buf.Pass(pos, now)
	if w.buf.Full(now) {
		return w.flush(ctx, "limit")
	}
	return nil
}

// recordFault reports whether err is the record's own fault, which no
// retry can mend: it cannot be decoded, or its schema cannot be mapped
// onto the table. A schema id the registry does not answer with 404 for
// (the registry unreachable, say) is not; nor is a Glue schema version id
// AWS Glue Schema Registry does not answer EntityNotFoundException for.
func recordFault(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, decode.ErrRegistryUnavailable) {
		return false
	}
	if errors.Is(err, decode.ErrGlueNotFound) {
		return true
	}
	if errors.Is(err, decode.ErrUnknownSchema) {
		var re *sr.ResponseError
		return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
	}
	var de *decode.Error
	return errors.As(err, &de) || errors.Is(err, ErrIncompatible) || errors.Is(err, schemamap.ErrUnsupported) ||
		errors.Is(err, schemamap.ErrInvalidAvro) || errors.Is(err, batch.ErrInvalidEvent)
}
