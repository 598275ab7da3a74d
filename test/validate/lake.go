package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/lakecheck"
)

// Snapshot summary keys that ingest writes (ingest/internal/commit's
// offsets.go, which test/ cannot import): read here as data, so a change
// of ingest's format fails these validators instead of passing silently.
const (
	// OffsetsKeyPrefix + topic: JSON {"<partition>": <next offset>} of
	// every partition the table holds, cumulative.
	OffsetsKeyPrefix = "binlake.offsets."
	// CommitIDKey: the UUID of the ingest commit.
	CommitIDKey = "binlake.commit-id"
	// FirstOffsetsKeyPrefix + topic: JSON {"<partition>": <offset>} of
	// the first record the snapshot's commit applied in each partition it
	// advanced.
	FirstOffsetsKeyPrefix = "binlake.first-offsets."
)

// ParseOffsets reads an OffsetsKeyPrefix value: partition → next offset.
func ParseOffsets(raw string) (map[int32]int64, error) {
	var m map[string]int64
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("offsets %q: %w", raw, err)
	}
	out := make(map[int32]int64, len(m))
	for k, n := range m {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("offsets %q: partition %q: %w", raw, k, err)
		}
		out[int32(p)] = n
	}
	return out, nil
}

// TableOffsets returns the offsets of every topic a table holds: those in
// its properties (ingest sets them with every commit, also one that writes
// no snapshot), else for each topic those of the newest snapshot summary
// that has them.
func TableOffsets(tbl *table.Table) (map[string]map[int32]int64, error) {
	out := map[string]map[int32]int64{}
	add := func(props map[string]string) error {
		for k, v := range props {
			topic, ok := strings.CutPrefix(k, OffsetsKeyPrefix)
			if !ok || out[topic] != nil {
				continue
			}
			offs, err := ParseOffsets(v)
			if err != nil {
				return fmt.Errorf("%v: %w", tbl.Identifier(), err)
			}
			out[topic] = offs
		}
		return nil
	}
	if err := add(tbl.Properties()); err != nil {
		return nil, err
	}
	for s := tbl.CurrentSnapshot(); s != nil; {
		if s.Summary != nil {
			if err := add(s.Summary.Properties); err != nil {
				return nil, err
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = tbl.SnapshotByID(*s.ParentSnapshotID)
	}
	return out, nil
}

// Snapshot is one snapshot of a table's history.
type Snapshot struct {
	ID      int64
	Summary map[string]string
}

// History returns the snapshots of tbl's main branch, oldest first, by
// walking the parent chain back from the current snapshot. It fails when
// an ancestor is missing (expired): a partial history cannot prove what
// was applied. After snapshot expiry, use a [Recorder] fed before each
// expiry.
func History(tbl *table.Table) ([]Snapshot, error) {
	return (*Recorder)(nil).History(tbl)
}

// Recorder keeps every snapshot of a table it was shown, so that the
// table's history can still be walked after snapshot expiry removed some
// of it: whoever expires snapshots notes the table with
// [Recorder.Note] just before, and [Recorder.History] fills the missing
// ancestors from what was noted. It is safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	byID map[int64]table.Snapshot
}

// Note records every snapshot tbl's metadata holds.
func (r *Recorder) Note(tbl *table.Table) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[int64]table.Snapshot{}
	}
	for _, s := range tbl.Metadata().Snapshots() {
		r.byID[s.SnapshotID] = s
	}
}

// Noted is how many snapshots were recorded.
func (r *Recorder) Noted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// History is [History] with every ancestor tbl no longer holds taken from
// the snapshots noted (a nil Recorder has none). It fails when an
// ancestor is in neither: a snapshot was expired without being noted.
func (r *Recorder) History(tbl *table.Table) ([]Snapshot, error) {
	lookup := func(id int64) *table.Snapshot {
		if s := tbl.SnapshotByID(id); s != nil {
			return s
		}
		if r == nil {
			return nil
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if s, ok := r.byID[id]; ok {
			return &s
		}
		return nil
	}
	var out []Snapshot
	for s := tbl.CurrentSnapshot(); s != nil; {
		snap := Snapshot{ID: s.SnapshotID, Summary: map[string]string{}}
		if s.Summary != nil {
			for k, v := range s.Summary.Properties {
				snap.Summary[k] = v
			}
		}
		out = append(out, snap)
		if s.ParentSnapshotID == nil {
			break
		}
		parent := lookup(*s.ParentSnapshotID)
		if parent == nil {
			return nil, fmt.Errorf("history of %v: parent %d of snapshot %d is missing (expired)", tbl.Identifier(), *s.ParentSnapshotID, s.SnapshotID)
		}
		s = parent
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// span is offsets [from, to) of a partition applied by one snapshot.
type span struct {
	from, to int64
	snap     int64
}

// Tiling implements [OffsetTiling].
type Tiling struct {
	topic   string
	prev    map[int32]int64 // the last ingest snapshot's stored offsets
	applied map[int32][]span
	high    map[int32]int64
	ends    map[int32]int64
	records map[int32][]int64 // NoteRecord's offsets
	sorted  bool              // records is in ascending order
	commits map[string]int64
	// lastCommit is the commit id of the last ingest snapshot noted.
	lastCommit string
	ingest     int // ingest snapshots noted
	all        int
	bad        []string
}

// OffsetTiling checks that every offset of topic's partitions was applied
// to the table in exactly one snapshot. An ingest snapshot stores, per
// partition, the next offset to consume, and ingest resumes from the
// stored offsets, so a snapshot that changes a partition's offset applied
// the range [previous ingest snapshot's offset, its offset). Fed the
// table's history oldest first ([Tiling.NoteSnapshot]) and the offset after
// each partition's last change record ([Tiling.NoteEnd]), it fails on:
//
//   - overlap: a range that starts below what earlier snapshots applied
//     (the stored offset went back, or was lost and restarted from 0);
//   - a lost partition: one an earlier snapshot stored and a later one
//     does not;
//   - a gap: a partition whose applied offsets end before its end;
//   - a commit id in two snapshots that are not consecutive (one commit
//     may stage several snapshots in one transaction), or offsets that do
//     not parse;
//   - a skipped range: a snapshot whose first applied offset (its
//     FirstOffsetsKeyPrefix summary) is past a record ([Tiling.NoteRecord])
//     at or after the offset stored before it, so that its range does not
//     start where the one before ended (a resume from offsets another table
//     or deployment held), or below that offset.
//
// Snapshots without the topic's offsets (other writers, maintenance) are
// skipped.
func OffsetTiling(topic string) *Tiling {
	return &Tiling{topic: topic, prev: map[int32]int64{}, applied: map[int32][]span{}, high: map[int32]int64{},
		ends: map[int32]int64{}, records: map[int32][]int64{}, commits: map[string]int64{}}
}

// NoteRecord records a record of the topic that ingest applies (a change
// or a record it dead-letters; not a tombstone), in offset order per
// partition, before the snapshots are noted: without records, a snapshot's
// first offset is only checked against the range before it.
func (v *Tiling) NoteRecord(partition int32, offset int64) {
	v.records[partition] = append(v.records[partition], offset)
	v.sorted = false
}

// NoteApplied notes every record of recs that is of v's topic and not a
// tombstone ([Tiling.NoteRecord]).
func (v *Tiling) NoteApplied(recs []kafkatest.Record) {
	for _, r := range recs {
		if r.Topic == v.topic && r.Value != nil {
			v.NoteRecord(r.Partition, r.Offset)
		}
	}
}

// NoteSnapshot feeds the next snapshot of the history.
func (v *Tiling) NoteSnapshot(s Snapshot) {
	v.all++
	raw, ok := s.Summary[OffsetsKeyPrefix+v.topic]
	if !ok {
		return
	}
	v.ingest++
	if id := s.Summary[CommitIDKey]; id != "" && id != v.lastCommit {
		// One commit may stage several snapshots in one catalog
		// transaction (a delete, then a row delta): consecutive snapshots
		// with one id are one commit. Apart, the id was committed twice.
		if other, dup := v.commits[id]; dup {
			v.failf("commit id %s in snapshots %d and %d", id, other, s.ID)
		}
		v.commits[id] = s.ID
	}
	v.lastCommit = s.Summary[CommitIDKey]
	cur, err := ParseOffsets(raw)
	if err != nil {
		v.failf("snapshot %d: %v", s.ID, err)
		return
	}
	var firsts map[int32]int64
	if raw, ok := s.Summary[FirstOffsetsKeyPrefix+v.topic]; ok {
		if firsts, err = ParseOffsets(raw); err != nil {
			v.failf("snapshot %d: first offsets: %v", s.ID, err)
		}
	}
	for _, p := range sortedParts(v.prev) {
		if _, ok := cur[p]; !ok {
			v.failf("snapshot %d: partition %d lost its stored offset (%d in the snapshot before)", s.ID, p, v.prev[p])
		}
	}
	for _, p := range sortedParts(cur) {
		to := cur[p]
		from, had := v.prev[p]
		if had && to == from {
			continue // not applied by this snapshot
		}
		if to < from {
			v.failf("partition %d: snapshot %d stores offset %d below the %d stored before: offsets below %d applied again", p, s.ID, to, from, to)
			from = 0
		} else if hi := v.high[p]; from < hi {
			first := v.overlapping(p, from, to)
			v.failf("partition %d: offsets [%d, %d) applied again by snapshot %d (first applied by snapshot %d)", p, from, min(to, hi), s.ID, first)
		}
		if first, ok := firsts[p]; ok {
			switch {
			case first < from:
				v.failf("partition %d: snapshot %d applied offsets from %d, below the %d stored before it", p, s.ID, first, from)
			case first >= to:
				v.failf("partition %d: snapshot %d's first applied offset %d is not below the %d it stores", p, s.ID, first, to)
			default:
				if r, skipped := v.recordIn(p, from, first); skipped {
					v.failf("partition %d: offsets [%d, %d) never applied: snapshot %d's range starts at %d, past the record at %d", p, from, first, s.ID, first, r)
				}
			}
		}
		v.applied[p] = append(v.applied[p], span{from: from, to: to, snap: s.ID})
		v.high[p] = max(v.high[p], to)
	}
	v.prev = cur
}

// recordIn returns the first noted record of partition p in [from, to).
func (v *Tiling) recordIn(p int32, from, to int64) (int64, bool) {
	if !v.sorted {
		for _, recs := range v.records {
			slices.Sort(recs)
		}
		v.sorted = true
	}
	recs := v.records[p]
	i := sort.Search(len(recs), func(i int) bool { return recs[i] >= from })
	if i < len(recs) && recs[i] < to {
		return recs[i], true
	}
	return 0, false
}

func (v *Tiling) overlapping(p int32, from, to int64) int64 {
	for _, sp := range v.applied[p] {
		if sp.from < to && from < sp.to {
			return sp.snap
		}
	}
	return -1
}

// NoteEnd records that partition's change records end before next (its
// last change record's offset + 1, 0 when it has none; a trailing
// tombstone applies nothing and does not count): the table must hold
// exactly that offset.
func (v *Tiling) NoteEnd(partition int32, next int64) { v.ends[partition] = next }

// Failures implements Validator.
func (v *Tiling) Failures() []string {
	out := append([]string(nil), v.bad...)
	if v.ingest == 0 && len(v.ends) > 0 {
		out = append(out, fmt.Sprintf("offset tiling: %s: no snapshot of %d holds its offsets", v.topic, v.all))
	}
	for _, p := range sortedParts(v.ends) {
		end, hi := v.ends[p], v.high[p]
		switch {
		case hi < end:
			out = append(out, fmt.Sprintf("offset tiling: %s partition %d: offsets [%d, %d) never applied", v.topic, p, hi, end))
		case hi > end:
			out = append(out, fmt.Sprintf("offset tiling: %s partition %d: offsets applied up to %d, past the end %d", v.topic, p, hi, end))
		}
	}
	return out
}

// String summarises what was noted: snapshots, ingest snapshots, ranges.
func (v *Tiling) String() string {
	n := 0
	for _, s := range v.applied {
		n += len(s)
	}
	return fmt.Sprintf("%s: %d snapshots, %d with offsets, %d ranges over %d partitions", v.topic, v.all, v.ingest, n, len(v.applied))
}

func (v *Tiling) failf(f string, a ...any) {
	v.bad = append(v.bad, "offset tiling: "+v.topic+": "+fmt.Sprintf(f, a...))
}

func sortedParts[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ChangeRow identifies one row of an append-only change-log table (a table
// without a primary key): the Kafka position of its change event and
// whether it is the before image.
type ChangeRow struct {
	Partition int32
	Offset    int64
	Before    bool
}

// ChangeLog implements [ChangeLogOnce].
type ChangeLog struct {
	topic string
	want  map[ChangeRow]string // row → op
	got   map[ChangeRow]int
}

// ChangeLogOnce checks that an append-only change-log table holds each row
// image of the topic's change events exactly once: one row for c, r and t
// (the after image, or none), the before image for d, both for u; none
// for a tombstone. Feed it the topic ([ChangeLog.NoteEvent]) and the
// table's rows ([ChangeLog.NoteRow], or [ChangeLogRows]).
func ChangeLogOnce(topic string) *ChangeLog {
	return &ChangeLog{topic: topic, want: map[ChangeRow]string{}, got: map[ChangeRow]int{}}
}

// NoteEvent records an event of the topic the table must hold.
func (v *ChangeLog) NoteEvent(e Event) {
	if e.Topic != v.topic {
		return
	}
	switch e.Op {
	case "c", "r", "t":
		v.want[ChangeRow{e.Partition, e.Offset, false}] = e.Op
	case "d":
		v.want[ChangeRow{e.Partition, e.Offset, true}] = e.Op
	case "u":
		v.want[ChangeRow{e.Partition, e.Offset, true}] = e.Op
		v.want[ChangeRow{e.Partition, e.Offset, false}] = e.Op
	}
}

// NoteRow records a row the table holds.
func (v *ChangeLog) NoteRow(r ChangeRow) { v.got[r]++ }

// Failures implements Validator.
func (v *ChangeLog) Failures() []string {
	var out []string
	rows := make([]ChangeRow, 0, len(v.want)+len(v.got))
	for r := range v.want {
		rows = append(rows, r)
	}
	for r := range v.got {
		if _, ok := v.want[r]; !ok {
			rows = append(rows, r)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		if a.Offset != b.Offset {
			return a.Offset < b.Offset
		}
		return a.Before && !b.Before
	})
	for _, r := range rows {
		op, want := v.want[r]
		n := v.got[r]
		img := "after"
		if r.Before {
			img = "before"
		}
		switch {
		case want && n == 0:
			out = append(out, fmt.Sprintf("change log: %s[%d]@%d %s image of %s missing from the table", v.topic, r.Partition, r.Offset, img, op))
		case want && n > 1:
			out = append(out, fmt.Sprintf("change log: %s[%d]@%d %s image of %s in the table %d times", v.topic, r.Partition, r.Offset, img, op, n))
		case !want:
			out = append(out, fmt.Sprintf("change log: %s[%d]@%d %s image in the table %d time(s), but no such change on the topic", v.topic, r.Partition, r.Offset, img, n))
		}
	}
	return out
}

// ChangeLogRows scans a change-log table (ingest's _binlake_partition,
// _binlake_offset and _binlake_before columns) into v.
func ChangeLogRows(ctx context.Context, tbl *table.Table, v *ChangeLog) error {
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	at, err := tbl.Scan(table.WithSelectedFields("_binlake_partition", "_binlake_offset", "_binlake_before")).ToArrowTable(ctx)
	if err != nil {
		return fmt.Errorf("scanning %v: %w", tbl.Identifier(), err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(name string) (int, error) {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				return 0, fmt.Errorf("%v has no column %s: not a change-log table", tbl.Identifier(), name)
			}
			return idx[0], nil
		}
		pi, err := col("_binlake_partition")
		if err != nil {
			return err
		}
		oi, err := col("_binlake_offset")
		if err != nil {
			return err
		}
		bi, err := col("_binlake_before")
		if err != nil {
			return err
		}
		parts, offs, before := rec.Column(pi).(*array.Int32), rec.Column(oi).(*array.Int64), rec.Column(bi).(*array.Boolean)
		for i := range int(rec.NumRows()) {
			v.NoteRow(ChangeRow{Partition: parts.Value(i), Offset: offs.Value(i), Before: before.Value(i)})
		}
	}
	return tr.Err()
}

// equal implements [TableEquals].
type equal struct {
	name      string
	want, got lakecheck.Rows
}

// TableEquals checks that the lake table (got) equals the source (want)
// row for row and value for value, in test/lakecheck's canonical forms.
func TableEquals(name string, want, got lakecheck.Rows) Validator {
	return equal{name: name, want: want, got: got}
}

func (v equal) Failures() []string {
	d := lakecheck.Diff(v.want, v.got, 20)
	for i := range d {
		d[i] = "table equals source: " + v.name + ": " + d[i]
	}
	return d
}

// Report joins failures for a test message, at most max lines.
func Report(failures []string, max int) string {
	if len(failures) > max {
		failures = append(failures[:max:max], fmt.Sprintf("... %d failures in all", len(failures)))
	}
	return strings.Join(failures, "\n")
}
