// Package batch buffers the change events of one Iceberg table between two
// commits and turns them into what one RowDelta needs: the last row image of
// every key (data rows) and every key touched (equality deletes), as Arrow
// record batches for iceberg-go.
//
// Guarantees:
//   - Events are kept in the order they were added, which for one key is
//     Kafka order (Debezium partitions by key). [Buffer.Collapse] keeps the
//     last change per key: a final delete leaves no data row but its key is
//     still deleted.
//   - Truncates follow source order, not arrival order: a truncate at source
//     position T (see [SourceOrder]) removes the changes whose position is
//     below T, wherever they sit in the batch (a truncate lands on any Kafka
//     partition, rows on their key's), and a change below the table's
//     truncate watermark arrives too late and is dropped. A truncate without
//     a source position empties the table in arrival order (the old rule).
//   - Collapse can skip the events a table already holds (offsets recovered
//     from Iceberg), so a batch can be rebuilt after a commit conflict
//     without duplicating or losing a change.
//   - A Buffer is bounded by rows, bytes and age ([Limits]); the caller
//     flushes when [Buffer.Full] says so.
//
// Row values are the converted values of schemamap (Column.Convert): bool,
// int32, int64, float32, float64, string, []byte, decimal128.Num, []any
// (struct, list), map[string]any; nil is null. A Buffer, a Collapsed and a
// Converter are not safe for concurrent use; hand them between goroutines.
package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Op is a Debezium envelope operation.
type Op byte

// Operations handled by ingest.
const (
	OpCreate   Op = 'c'
	OpRead     Op = 'r' // snapshot read, an upsert
	OpUpdate   Op = 'u'
	OpDelete   Op = 'd'
	OpTruncate Op = 't'
)

// ErrInvalidEvent reports an event that cannot be buffered.
var ErrInvalidEvent = errors.New("batch: invalid event")

// Event is one decoded change event.
type Event struct {
	Op Op
	// Key holds the record key's values in key-column order; nil for a
	// truncate.
	Key []any
	// Row holds the after image in the Buffer's column order; nil for a
	// delete or truncate.
	Row []any
	// Kafka position of the event.
	Topic     string
	Partition int32
	Offset    int64
	// TsMs is source.ts_ms (database time of the change); GTID is
	// source.gtid ("" when unknown).
	TsMs int64
	GTID string
	// Order is the change's position in the source ([SourceOrder]); 0 when
	// the event carries none. [Buffer.Place] adds its history's epoch.
	Order int64
	// Binlog is the basename of source.file, the binlog history's name
	// ([Basename]).
	Binlog string
	// SnapshotRead marks a snapshot row (op=r) whose Op says otherwise:
	// a keyless table's change log keeps every row image as an OpCreate
	// event. [Buffer.Place] treats it as it treats an OpRead event: its
	// TsMs is when the row was read, not a binlog time, so it never
	// starts a binlog history by its order.
	SnapshotRead bool

	// Size is the event's size in bytes (e.g. the Kafka record value), for
	// the byte bound.
	Size int
}

// Limits bound a Buffer. Zero fields take the defaults.
type Limits struct {
	MaxRows  int           // events buffered; default 100,000
	MaxBytes int64         // sum of Event.Size; default 64 MiB
	MaxAge   time.Duration // age of the oldest event; default 30s
}

func (l Limits) withDefaults() Limits {
	if l.MaxRows <= 0 {
		l.MaxRows = 100_000
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 64 << 20
	}
	if l.MaxAge <= 0 {
		l.MaxAge = 30 * time.Second
	}
	return l
}

// Buffer holds the events of one table, with one column layout (flush
// before the source schema changes).
type Buffer struct {
	columns []string
	key     []string
	ids     []int // the columns' table field ids (SetFieldIDs), nil when unknown
	// appendOnly: every event is a row to append (a table without a
	// primary key kept as a change log); nothing is collapsed or deleted.
	appendOnly bool
	limits     Limits
	events     []Event
	bytes      int64
	first      time.Time
	// passed are the positions of records consumed without an event (sent
	// to the dead-letter topic), so that the commit advances past them.
	passed []Position
	// next is, by topic and partition, the offset after the last record
	// held (as an event or passed).
	next map[partitionOf]int64
	// inHistory holds each event's Order as added, before Place gave it
	// an epoch.
	inHistory []int64
}

type partitionOf struct {
	topic     string
	partition int32
}

// Position is a Kafka record's place: topic, partition and offset.
type Position struct {
	Topic     string
	Partition int32
	Offset    int64
}

// New returns an empty buffer for rows laid out as columns, keyed by the
// key columns (a subset of columns, in key order).
func New(columns, key []string, limits Limits) (*Buffer, error) {
	for _, k := range key {
		found := false
		for _, c := range columns {
			found = found || c == k
		}
		if !found {
			return nil, fmt.Errorf("%w: key column %q is not a column", ErrInvalidEvent, k)
		}
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("%w: a table without key columns cannot be upserted", ErrInvalidEvent)
	}
	return &Buffer{columns: columns, key: key, limits: limits.withDefaults()}, nil
}

// NewAppend returns an empty append-only buffer: every event added is a
// row to append (Op OpCreate, no key), none is collapsed or deleted. It
// holds the change log of a table without a primary key.
func NewAppend(columns []string, limits Limits) *Buffer {
	return &Buffer{columns: columns, appendOnly: true, limits: limits.withDefaults()}
}

// Empty returns an empty buffer with b's row layout and limits: the one a
// table fills while b is being committed.
func (b *Buffer) Empty() *Buffer {
	return &Buffer{columns: b.columns, key: b.key, ids: b.ids, appendOnly: b.appendOnly, limits: b.limits}
}

// SameLayout reports whether b and o lay rows out alike: the same columns,
// key, field ids and kind, so that one can take the other's place.
func (b *Buffer) SameLayout(o *Buffer) bool {
	return b.appendOnly == o.appendOnly && slices.Equal(b.columns, o.columns) && slices.Equal(b.key, o.key) && slices.Equal(b.ids, o.ids)
}

// SetFieldIDs records the table field id of each column (0: none), as the
// table had them when the layout was made. A commit against a table whose
// columns were renamed since (by another writer) finds each column by its
// id, not by a name that may now be another column's.
func (b *Buffer) SetFieldIDs(ids []int) { b.ids = ids }

// ColumnsIn returns the row layout's column and key names as the columns
// are named in sch: a column whose field id sch holds under another name
// takes that name.
func (b *Buffer) ColumnsIn(sch interface {
	FindColumnName(int) (string, bool)
}) (columns, key []string) {
	if len(b.ids) != len(b.columns) {
		return b.columns, b.key
	}
	renamed := map[string]string{}
	columns = slices.Clone(b.columns)
	for i, id := range b.ids {
		if id <= 0 {
			continue
		}
		if name, ok := sch.FindColumnName(id); ok && name != columns[i] {
			renamed[columns[i]] = name
			columns[i] = name
		}
	}
	if len(renamed) == 0 {
		return b.columns, b.key
	}
	key = slices.Clone(b.key)
	for i, k := range key {
		if n, ok := renamed[k]; ok {
			key[i] = n
		}
	}
	return columns, key
}

// AppendOnly reports whether the buffer was made by [NewAppend].
func (b *Buffer) AppendOnly() bool { return b.appendOnly }

// Columns returns the row layout.
func (b *Buffer) Columns() []string { return b.columns }

// Key returns the key columns.
func (b *Buffer) Key() []string { return b.key }

// Add appends ev, received at now. The buffer keeps ev's slices.
func (b *Buffer) Add(ev Event, now time.Time) error {
	if b.appendOnly && (ev.Op != OpCreate || len(ev.Row) != len(b.columns) || ev.Key != nil) {
		return fmt.Errorf("%w: append-only buffer got a %c event with %d values for %d columns at %s/%d/%d", ErrInvalidEvent, ev.Op, len(ev.Row), len(b.columns), ev.Topic, ev.Partition, ev.Offset)
	}
	switch ev.Op {
	case OpCreate, OpRead, OpUpdate:
		if len(ev.Row) != len(b.columns) {
			return fmt.Errorf("%w: %c event at %s/%d/%d has %d values for %d columns", ErrInvalidEvent, ev.Op, ev.Topic, ev.Partition, ev.Offset, len(ev.Row), len(b.columns))
		}
		fallthrough
	case OpDelete:
		if len(ev.Key) != len(b.key) {
			return fmt.Errorf("%w: %c event at %s/%d/%d has %d key values for %d key columns", ErrInvalidEvent, ev.Op, ev.Topic, ev.Partition, ev.Offset, len(ev.Key), len(b.key))
		}
	case OpTruncate:
	default:
		return fmt.Errorf("%w: op %q at %s/%d/%d", ErrInvalidEvent, ev.Op, ev.Topic, ev.Partition, ev.Offset)
	}
	at := Position{ev.Topic, ev.Partition, ev.Offset}
	if n, ok := b.next[partitionOf{at.Topic, at.Partition}]; ok && at.Offset < n-1 {
		// One record may give several events (a change log's before and
		// after images), all at its offset; an earlier one is a record
		// fetched again, which would be applied twice in one commit.
		return fmt.Errorf("%w: %c event at %s/%d/%d is before the last one the batch holds (offset %d): the record was fetched again", ErrInvalidEvent, ev.Op, ev.Topic, ev.Partition, ev.Offset, n-1)
	}
	if b.Pending() == 0 {
		b.first = now
	}
	b.events = append(b.events, ev)
	b.bytes += int64(ev.Size)
	b.hold(at)
	return nil
}

func (b *Buffer) hold(pos Position) {
	if b.next == nil {
		b.next = map[partitionOf]int64{}
	}
	k := partitionOf{pos.Topic, pos.Partition}
	b.next[k] = max(b.next[k], pos.Offset+1)
}

// Holds reports whether the batch holds the record at pos or one after it
// in its partition: a record at pos is one fetched again (after a
// rebalance, say) that must not be added a second time.
func (b *Buffer) Holds(pos Position) bool {
	n, ok := b.next[partitionOf{pos.Topic, pos.Partition}]
	return ok && pos.Offset < n
}

// Pass records that the record at pos was consumed without an event (it
// went to the dead-letter topic, say), at now: the next commit's offsets
// cover it, and it counts toward the row and age limits like an event, so
// a partition whose records are all passed still commits its progress.
func (b *Buffer) Pass(pos Position, now time.Time) {
	if b.Pending() == 0 {
		b.first = now
	}
	b.passed = append(b.passed, pos)
	b.hold(pos)
}

// Passed returns the positions given to Pass since the last Reset.
func (b *Buffer) Passed() []Position { return b.passed }

// Len returns the number of buffered events.
func (b *Buffer) Len() int { return len(b.events) }

// Pending returns the number of buffered events and passed positions: what
// a commit has to record.
func (b *Buffer) Pending() int { return len(b.events) + len(b.passed) }

// Bytes returns the sum of the buffered events' sizes.
func (b *Buffer) Bytes() int64 { return b.bytes }

// Full reports whether a limit is reached at now.
func (b *Buffer) Full(now time.Time) bool {
	if b.Pending() == 0 {
		return false
	}
	return b.Pending() >= b.limits.MaxRows || b.bytes >= b.limits.MaxBytes || now.Sub(b.first) >= b.limits.MaxAge
}

// Events returns the buffered events in order. Do not modify them.
func (b *Buffer) Events() []Event { return b.events }

// Reset empties the buffer, keeping its capacity.
func (b *Buffer) Reset() {
	clear(b.events)
	b.events = b.events[:0]
	b.inHistory = b.inHistory[:0]
	b.passed = b.passed[:0]
	b.bytes = 0
	clear(b.next)
}

// Offsets are Kafka positions: topic → partition → next offset to consume
// (last consumed + 1), the form the table's snapshot summary stores.
type Offsets map[string]map[int32]int64

// Covers reports whether the position (topic, partition, offset) is before
// the next offset recorded in o, i.e. already consumed.
func (o Offsets) Covers(topic string, partition int32, offset int64) bool {
	next, ok := o[topic][partition]
	return ok && offset < next
}

// Advance records that offset was consumed (next = max(next, offset+1)).
func (o Offsets) Advance(topic string, partition int32, offset int64) {
	p := o[topic]
	if p == nil {
		p = map[int32]int64{}
		o[topic] = p
	}
	if n, ok := p[partition]; !ok || offset+1 > n {
		p[partition] = offset + 1
	}
}

// Lower records offset as a partition's first (first = min(first, offset)),
// for Offsets that hold first offsets rather than next ones.
func (o Offsets) Lower(topic string, partition int32, offset int64) {
	p := o[topic]
	if p == nil {
		p = map[int32]int64{}
		o[topic] = p
	}
	if n, ok := p[partition]; !ok || offset < n {
		p[partition] = offset
	}
}

// Merge advances o by every position in other.
func (o Offsets) Merge(other Offsets) {
	for t, ps := range other {
		for p, n := range ps {
			o.Advance(t, p, n-1)
		}
	}
}

// Collapsed is the net effect of a buffer's events on the table.
type Collapsed struct {
	// Truncate means the table must be emptied before Upserts apply (a
	// truncate without a source position); then Deletes is empty.
	Truncate bool
	// TruncateBefore, when above the committed watermark, is the source
	// order of the batch's latest truncate: every row of the table whose
	// order is below it (or null) must be deleted before Upserts and
	// Deletes apply. Watermark is the table's truncate watermark after the
	// batch: max(committed watermark, TruncateBefore).
	TruncateBefore, Watermark int64
	// Upserts are the last row images of the keys whose last change is not
	// a delete, in the order of their last change.
	Upserts []*Event
	// Deletes are the events whose keys must be deleted: the last change of
	// every key touched since the last truncate (upserted or deleted).
	Deletes []*Event
	// Offsets are the next offsets after the included events, and First
	// the offsets of the first included event or passed record of each
	// partition: the batch applies [First, Offsets) of each.
	Offsets, First Offsets
	// Events counts the included events; Skipped those already covered by
	// the committed offsets; Stale those included but dropped because a
	// truncate later in source order removes them.
	Events, Skipped, Stale int
	// StaleFirst are the first [MaxStaleSamples] of the Stale events, in
	// Kafka order, for the log line that reports the drop.
	StaleFirst []StaleEvent
	// StaleAfterTruncate counts the Stale events that follow the batch's
	// truncate in its own partition: Kafka order is source order there,
	// so such an event sorting below the truncate means the orders are
	// wrong (they come from different binlog histories, or a producer
	// gave a wrong position).
	StaleAfterTruncate int
	// Passed counts the passed positions (Buffer.Pass) not covered by the
	// committed offsets: records consumed without an event.
	Passed int
	// MaxTsMs is the largest source.ts_ms and LastGTID the last non-empty
	// source.gtid of the included events.
	MaxTsMs  int64
	LastGTID string
}

// MaxStaleSamples bounds [Collapsed.StaleFirst]: a flood of stale events
// is reported by its count and its first few.
const MaxStaleSamples = 3

// StaleEvent is an event dropped because its source order is below the
// table's truncate watermark: where it is in Kafka and its order.
type StaleEvent struct {
	Position
	Order int64
}

// Empty reports whether the collapse has nothing to write.
func (c *Collapsed) Empty() bool {
	return !c.Truncate && len(c.Deletes) == 0 && len(c.Upserts) == 0 && c.TruncateBefore == 0
}

// Collapse computes the net effect of the buffered events, skipping those
// that committed already covers (nil skips none). watermark is the table's
// truncate watermark: the source order of the latest truncate it applied
// (0: none). A change whose source order is below the watermark, or below
// a truncate anywhere in the batch, is erased by that truncate: it is
// counted as consumed but writes nothing. Changes without a source order
// are never dropped.
func (b *Buffer) Collapse(committed Offsets, watermark int64) *Collapsed {
	c := &Collapsed{Offsets: Offsets{}, First: Offsets{}, Watermark: watermark}
	var truncAt Position // the batch's latest truncate, when TruncateBefore is set
	// A truncate erases what precedes it in the source whatever its place
	// in the batch: find the batch's latest one first.
	if !b.appendOnly {
		for i := range b.events {
			ev := &b.events[i]
			if ev.Op == OpTruncate && ev.Order > c.Watermark && !committed.Covers(ev.Topic, ev.Partition, ev.Offset) {
				c.TruncateBefore, c.Watermark = ev.Order, ev.Order
				truncAt = Position{ev.Topic, ev.Partition, ev.Offset}
			}
		}
	}
	for _, pos := range b.passed {
		if !committed.Covers(pos.Topic, pos.Partition, pos.Offset) {
			c.Passed++
			c.Offsets.Advance(pos.Topic, pos.Partition, pos.Offset)
			c.First.Lower(pos.Topic, pos.Partition, pos.Offset)
		}
	}
	stale := func(ev *Event) bool { return ev.Order > 0 && ev.Order < c.Watermark }
	var ix keyIndex
	ix.init(len(b.key), len(b.events))
	last := make([]int32, 0, min(len(b.events), 1<<16)) // slot → index of the key's last event
	for i := range b.events {
		ev := &b.events[i]
		if committed.Covers(ev.Topic, ev.Partition, ev.Offset) {
			c.Skipped++
			continue
		}
		c.Events++
		c.Offsets.Advance(ev.Topic, ev.Partition, ev.Offset)
		c.First.Lower(ev.Topic, ev.Partition, ev.Offset)
		c.MaxTsMs = max(c.MaxTsMs, ev.TsMs)
		if ev.GTID != "" {
			c.LastGTID = ev.GTID
		}
		if b.appendOnly {
			c.Upserts = append(c.Upserts, ev)
			continue
		}
		if ev.Op == OpTruncate {
			if ev.Order == 0 {
				// No source position: arrival order is all there is.
				c.Truncate = true
				ix.reset()
				last = last[:0]
			}
			continue
		}
		slot, isNew := ix.slot(ev.Key, len(last))
		if isNew {
			last = append(last, int32(i))
		} else {
			last[slot] = int32(i)
		}
	}
	if b.appendOnly {
		return c
	}
	// Order by the Kafka order of the final changes.
	slices.Sort(last)
	if !c.Truncate {
		c.Deletes = make([]*Event, 0, len(last))
	}
	c.Upserts = make([]*Event, 0, len(last))
	for _, i := range last {
		ev := &b.events[i]
		if stale(ev) {
			// The key's last change precedes a truncate: so do all its
			// rows in the table (earlier in its partition), which the
			// truncate deletes or has deleted.
			c.Stale++
			if c.TruncateBefore > 0 && ev.Topic == truncAt.Topic && ev.Partition == truncAt.Partition && ev.Offset > truncAt.Offset {
				c.StaleAfterTruncate++
			}
			if len(c.StaleFirst) < MaxStaleSamples {
				c.StaleFirst = append(c.StaleFirst, StaleEvent{Position{ev.Topic, ev.Partition, ev.Offset}, ev.Order})
			}
			continue
		}
		if !c.Truncate {
			c.Deletes = append(c.Deletes, ev)
		}
		if ev.Op != OpDelete {
			c.Upserts = append(c.Upserts, ev)
		}
	}
	return c
}

// keyIndex maps key values to slots. A single integer key (the common case)
// uses an integer map and allocates nothing per key; other keys are
// encoded into a byte string.
type keyIndex struct {
	ints map[int64]int32
	strs map[string]int32
	buf  []byte
}

func (k *keyIndex) init(keyLen, hint int) {
	hint = min(hint, 1<<16)
	k.ints = make(map[int64]int32, hint)
	if keyLen != 1 {
		k.strs = make(map[string]int32, hint)
	}
}

func (k *keyIndex) reset() {
	clear(k.ints)
	clear(k.strs)
}

// slot returns the slot of key, or assigns next when it is new.
func (k *keyIndex) slot(key []any, next int) (int, bool) {
	if len(key) == 1 {
		var n int64
		ok := true
		switch v := key[0].(type) {
		case int64:
			n = v
		case int32:
			n = int64(v)
		default:
			ok = false
		}
		if ok {
			if s, found := k.ints[n]; found {
				return int(s), false
			}
			k.ints[n] = int32(next)
			return next, true
		}
	}
	k.buf = appendKey(k.buf[:0], key)
	if k.strs == nil {
		k.strs = map[string]int32{}
	}
	if s, found := k.strs[string(k.buf)]; found {
		return int(s), false
	}
	k.strs[string(k.buf)] = int32(next)
	return next, true
}

// appendKey encodes key values unambiguously (type tag + fixed width or
// length prefix).
func appendKey(dst []byte, key []any) []byte {
	for _, v := range key {
		switch x := v.(type) {
		case nil:
			dst = append(dst, 0)
		case bool:
			b := byte(0)
			if x {
				b = 1
			}
			dst = append(dst, 1, b)
		case int32:
			dst = binary.BigEndian.AppendUint64(append(dst, 2), uint64(int64(x)))
		case int64:
			dst = binary.BigEndian.AppendUint64(append(dst, 2), uint64(x))
		case float32:
			dst = binary.BigEndian.AppendUint64(append(dst, 3), math.Float64bits(float64(x)))
		case float64:
			dst = binary.BigEndian.AppendUint64(append(dst, 3), math.Float64bits(x))
		case string:
			dst = binary.AppendUvarint(append(dst, 4), uint64(len(x)))
			dst = append(dst, x...)
		case []byte:
			dst = binary.AppendUvarint(append(dst, 5), uint64(len(x)))
			dst = append(dst, x...)
		case decimal128.Num:
			dst = binary.BigEndian.AppendUint64(append(dst, 6), uint64(x.HighBits()))
			dst = binary.BigEndian.AppendUint64(dst, x.LowBits())
		default:
			s := fmt.Sprint(x)
			dst = binary.AppendUvarint(append(dst, 7), uint64(len(s)))
			dst = append(dst, s...)
		}
	}
	return dst
}
