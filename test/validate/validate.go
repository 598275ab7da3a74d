// Package validate states binlake's delivery guarantees once each, as small
// validators in the style of CockroachDB's changefeed cdctest: a test feeds
// a validator what it observed (records of a change topic, snapshots of a
// lake table) with Note… methods and asks it for Failures at the end. Each
// validator checks one guarantee, says which in its doc comment, and keeps
// no tolerance: one duplicate, one gap, one reordering is a failure.
// Validators compose with [Events] (one stream fanned out to several).
//
// Kafka validators (fed with [Event]s, see [FromRecord]):
//
//   - [ExactlyOnce]: every source change is on the topic exactly once.
//   - [KeyOrder]: each key's changes arrive in source order.
//   - [PositionOrder]: each key stays in one partition and its streamed
//     changes carry non-decreasing binlog positions (no source log needed).
//   - [Tombstones]: a tombstone follows each delete, and only a delete.
//   - [SnapshotReads]: at most one op=r per key per snapshot.
//
// Lake validators:
//
//   - [OffsetTiling]: fed with a table's snapshot history ([History]),
//     every (partition, offset) of a topic was applied in exactly one
//     snapshot: successive ingest snapshots' offset ranges tile each
//     partition without gap or overlap.
//   - [ChangeLogOnce]: each change event is in an append-only (keyless)
//     table exactly once, by its (partition, offset) columns.
//   - [TableEquals]: the table equals the source (test/lakecheck rows).
package validate

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Validator checks one guarantee over what it was fed.
type Validator interface {
	// Failures returns one line per violation found, none if the guarantee
	// held for everything noted so far.
	Failures() []string
}

// EventValidator is a Validator of the records of change topics, fed in
// the order a consumer reads them (per partition, by offset).
type EventValidator interface {
	Validator
	NoteEvent(Event)
}

// Event is one record of a change topic, reduced to what the validators
// compare.
type Event struct {
	Topic     string
	Partition int32
	Offset    int64
	// Key is the canonical key ("" for a null key: a table without a
	// primary key, or a truncate).
	Key string
	// Op is c, u, d, r or t, and "" for a tombstone.
	Op string
	// Row is the caller's rendering of the row image the change leaves
	// (after; before for a delete), compared with [Change.Row].
	Row string
	// Pos is the source position: binlog file, position and row index.
	Pos Position
	// Snapshot is source.snapshot (true, first, last, incremental, …;
	// false or "" when streamed).
	Snapshot string
	// TsMs is the envelope's ts_ms: when the producer made the record
	// (0 when unknown).
	TsMs int64
}

// Position orders source changes: binlog file, then position, then the
// row's index in its event.
type Position struct {
	File string
	Pos  int64
	Row  int64
}

// Less reports whether p comes before q in the binlog.
func (p Position) Less(q Position) bool {
	if p.File != q.File {
		return p.File < q.File
	}
	if p.Pos != q.Pos {
		return p.Pos < q.Pos
	}
	return p.Row < q.Row
}

func (p Position) String() string { return fmt.Sprintf("%s:%d#%d", p.File, p.Pos, p.Row) }

func (e Event) String() string {
	op := e.Op
	if op == "" {
		op = "tombstone"
	}
	return fmt.Sprintf("%s[%d]@%d %s", e.Topic, e.Partition, e.Offset, op)
}

// Change is one change the source committed, as its writer logged it.
type Change struct {
	Key string
	Op  string // c, u or d
	Row string // rendered as [Event.Row]
}

func (c Change) String() string { return c.Op + ":" + c.Row }

// Events fans every event out to each of vs; its Failures are theirs, in
// order.
func Events(vs ...EventValidator) EventValidator { return multi(vs) }

type multi []EventValidator

func (m multi) NoteEvent(e Event) {
	for _, v := range m {
		v.NoteEvent(e)
	}
}

func (m multi) Failures() []string {
	var out []string
	for _, v := range m {
		out = append(out, v.Failures()...)
	}
	return out
}

// changeEvent reports whether e is a change of a row (not a tombstone, a
// snapshot read or a truncate).
func changeEvent(e Event) bool { return e.Op == "c" || e.Op == "u" || e.Op == "d" }

// exactlyOnce implements [ExactlyOnce].
type exactlyOnce struct {
	want map[string][]Change
	got  map[string][]Change
}

// ExactlyOnce checks that every change in want (the source's log, e.g. the
// workload's record of what it committed) is on the topic exactly once,
// and that the topic holds no c, u or d the source did not make. It
// compares multisets per key; order is [KeyOrder]'s concern.
func ExactlyOnce(want []Change) EventValidator {
	v := &exactlyOnce{want: map[string][]Change{}, got: map[string][]Change{}}
	for _, c := range want {
		v.want[c.Key] = append(v.want[c.Key], c)
	}
	return v
}

func (v *exactlyOnce) NoteEvent(e Event) {
	if changeEvent(e) {
		v.got[e.Key] = append(v.got[e.Key], Change{Key: e.Key, Op: e.Op, Row: e.Row})
	}
}

func (v *exactlyOnce) Failures() []string {
	var out []string
	for _, k := range keysOf(v.want, v.got) {
		counts := map[Change]int{}
		for _, c := range v.want[k] {
			counts[c]++
		}
		for _, c := range v.got[k] {
			counts[c]--
		}
		for _, c := range sortedChanges(counts) {
			switch n := counts[c]; {
			case n > 0:
				out = append(out, fmt.Sprintf("exactly once: key %s: change %s missing %d time(s)", k, c, n))
			case n < 0:
				out = append(out, fmt.Sprintf("exactly once: key %s: change %s on the topic %d time(s) too many", k, c, -n))
			}
		}
	}
	return out
}

// keyOrder implements [KeyOrder].
type keyOrder struct {
	want map[string][]Change
	next map[string]int // key → index in want after the last matched event
	bad  []string
}

// KeyOrder checks that each key's c, u and d events arrive in the order the
// source made them: they must be a subsequence of the key's changes in
// want. A change delivered again after a later one is a violation; a
// missing change is not ([ExactlyOnce] reports it).
func KeyOrder(want []Change) EventValidator {
	v := &keyOrder{want: map[string][]Change{}, next: map[string]int{}}
	for _, c := range want {
		v.want[c.Key] = append(v.want[c.Key], c)
	}
	return v
}

func (v *keyOrder) NoteEvent(e Event) {
	if !changeEvent(e) {
		return
	}
	i := v.next[e.Key]
	if i < 0 {
		return // already reported
	}
	ws := v.want[e.Key]
	c := Change{Key: e.Key, Op: e.Op, Row: e.Row}
	for ; i < len(ws); i++ {
		if ws[i] == c {
			v.next[e.Key] = i + 1
			return
		}
	}
	v.bad = append(v.bad, fmt.Sprintf("key order: key %s: %s (%s) does not follow the key's earlier changes in source order %v", e.Key, c, e, ws))
	v.next[e.Key] = -1
}

func (v *keyOrder) Failures() []string { return v.bad }

// positionOrder implements [PositionOrder].
type positionOrder struct {
	part map[string]int32
	last map[string]Event
	bad  []string
}

// PositionOrder checks, without a source log, that each key's events are
// in one partition of its topic (so a consumer sees them in order) and
// that its streamed changes (c, u, d) carry non-decreasing source
// positions. Null keys, snapshot reads and truncates are not checked.
func PositionOrder() EventValidator {
	return &positionOrder{part: map[string]int32{}, last: map[string]Event{}}
}

func (v *positionOrder) NoteEvent(e Event) {
	if e.Key == "" {
		return
	}
	k := e.Topic + "\x00" + e.Key
	if p, ok := v.part[k]; ok && p != e.Partition {
		v.bad = append(v.bad, fmt.Sprintf("position order: key %s of %s in partitions %d and %d", e.Key, e.Topic, p, e.Partition))
	}
	v.part[k] = e.Partition
	if !changeEvent(e) {
		return
	}
	if l, ok := v.last[k]; ok && e.Pos.Less(l.Pos) {
		v.bad = append(v.bad, fmt.Sprintf("position order: key %s: %s at %s after %s at %s", e.Key, e, e.Pos, l, l.Pos))
	}
	v.last[k] = e
}

func (v *positionOrder) Failures() []string { return v.bad }

// tombstones implements [Tombstones].
type tombstones struct {
	due map[string]Event // key → the delete whose tombstone is due
	bad []string
}

// Tombstones checks that every delete of a keyed row is followed by a
// tombstone of the same key before any other event of that key, that no
// tombstone comes without such a delete, and that none is still due at the
// end. Tables without a primary key (null keys) are not checked.
func Tombstones() EventValidator { return &tombstones{due: map[string]Event{}} }

func (v *tombstones) NoteEvent(e Event) {
	if e.Key == "" {
		return
	}
	k := e.Topic + "\x00" + e.Key
	d, due := v.due[k]
	switch {
	case e.Op == "" && !due:
		v.bad = append(v.bad, fmt.Sprintf("tombstones: key %s: tombstone %s follows no delete", e.Key, e))
	case e.Op == "":
		delete(v.due, k)
	case due:
		v.bad = append(v.bad, fmt.Sprintf("tombstones: key %s: %s where the tombstone of %s was due", e.Key, e, d))
		delete(v.due, k)
	}
	if e.Op == "d" {
		v.due[k] = e
	}
}

func (v *tombstones) Failures() []string {
	out := v.bad
	keys := make([]string, 0, len(v.due))
	for k := range v.due {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, fmt.Sprintf("tombstones: key %s: no tombstone after %s", v.due[k].Key, v.due[k]))
	}
	return out
}

// snapshotReads implements [SnapshotReads].
type snapshotReads struct {
	gen     map[string]int     // topic → snapshots begun, in arrival order (records without ts_ms)
	markers map[string][]int64 // topic → ts_ms of each snapshot's first record
	timed   []Event            // initial reads with a ts_ms, placed by the markers at the end
	reads   map[string]int     // topic, snapshot, key → op=r events
	first   map[string]Event
	bad     []string
}

// SnapshotReads checks that a snapshot reads each key at most once: per
// topic and snapshot, at most one op=r per key. An initial snapshot begins
// at the record marked source.snapshot=first or first_in_data_collection.
// Only one partition of a multi-partition topic holds that record, so a
// read carrying its envelope ts_ms belongs to the topic's newest snapshot
// whose first record was made at or before it (records without a ts_ms:
// to the newest first record that arrived before it). An incremental
// snapshot's records are all marked incremental, so all of a topic's
// incremental reads count as one snapshot. Keyless tables (null keys) are
// not checked.
func SnapshotReads() EventValidator {
	return &snapshotReads{gen: map[string]int{}, markers: map[string][]int64{}, reads: map[string]int{}, first: map[string]Event{}}
}

func (v *snapshotReads) NoteEvent(e Event) {
	if e.Op != "r" || e.Key == "" {
		return
	}
	if e.Snapshot == "incremental" {
		v.count(e, "incremental", 0)
		return
	}
	if e.Snapshot == "first" || e.Snapshot == "first_in_data_collection" {
		v.gen[e.Topic]++
		if e.TsMs != 0 {
			v.markers[e.Topic] = append(v.markers[e.Topic], e.TsMs)
		}
	}
	if e.TsMs != 0 {
		v.timed = append(v.timed, e)
		return
	}
	v.count(e, "initial", v.gen[e.Topic])
}

func (v *snapshotReads) count(e Event, kind string, gen int) {
	k := fmt.Sprintf("%s\x00%s%d\x00%s", e.Topic, kind, gen, e.Key)
	v.reads[k]++
	switch v.reads[k] {
	case 1:
		v.first[k] = e
	case 2:
		v.bad = append(v.bad, fmt.Sprintf("snapshot reads: key %s read twice in one %s snapshot: %s and %s", e.Key, kind, v.first[k], e))
	}
}

func (v *snapshotReads) Failures() []string {
	for _, m := range v.markers {
		slices.Sort(m)
	}
	for _, e := range v.timed {
		gen, _ := slices.BinarySearch(v.markers[e.Topic], e.TsMs+1) // markers at or before e
		v.count(e, "initial", gen)
	}
	v.timed = nil
	return v.bad
}

func keysOf(ms ...map[string][]Change) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func sortedChanges(m map[Change]int) []Change {
	out := make([]Change, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Canonical renders a decoded Avro record (a key or a row image, as
// test/kafkatest decodes it) as name=value pairs sorted by name, for
// [Event.Key] and [Event.Row].
func Canonical(m map[string]any) string {
	if m == nil {
		return ""
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%v", n, m[n])
	}
	return strings.Join(parts, ",")
}
