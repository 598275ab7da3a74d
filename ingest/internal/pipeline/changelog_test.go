package pipeline

import (
	"slices"
	"testing"
	"time"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/decode"
)

// TestChangeLogBytesAddUp: the rows a keyless table's change event becomes
// (before and after images of an update) hold together exactly the
// record's size, which the worker adds to the pipeline's buffered bytes
// and the commit takes back as the buffer's bytes. An odd-sized update
// used to leave one byte behind per record, until max-buffered-bytes
// forced a commit after every record.
func TestChangeLogBytesAddUp(t *testing.T) {
	cols := []string{"a", "b"}
	w := &worker{schema: &decode.Schema{Columns: cols}, buf: batch.NewAppend(changeLogColumns(cols), batch.Limits{})}
	var want int64
	for i, ch := range []decode.Change{
		{Event: batch.Event{Op: batch.OpCreate, Row: []any{int32(1), "x"}, Topic: "t", Offset: 0, Size: 101}},
		{Event: batch.Event{Op: batch.OpUpdate, Row: []any{int32(1), "y"}, Topic: "t", Offset: 1, Size: 101}, Before: []any{int32(1), "x"}},
		{Event: batch.Event{Op: batch.OpUpdate, Row: []any{int32(1), "z"}, Topic: "t", Offset: 2, Size: 1}, Before: []any{int32(1), "y"}},
		{Event: batch.Event{Op: batch.OpDelete, Topic: "t", Offset: 3, Size: 77}, Before: []any{int32(1), "z"}},
		{Event: batch.Event{Op: batch.OpTruncate, Topic: "t", Offset: 4, Size: 55}},
	} {
		if err := w.addChangeLog(&ch, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		want += int64(ch.Event.Size)
		if got := w.buf.Bytes(); got != want {
			t.Fatalf("after event %d (%c, %d bytes): the buffer holds %d bytes, want %d", i, ch.Event.Op, ch.Event.Size, got, want)
		}
	}
	if w.buf.Len() != 7 {
		t.Errorf("%d rows, want 7 (c, u before and after twice, d, t)", w.buf.Len())
	}
}

// TestChangeLogSnapshotRowsKeepTheirHistory: a keyless table's snapshot
// rows (op=r) are placed in the binlog history of the changes around them,
// never in a new one. A snapshot row carries the time it was read, in
// milliseconds, and the order just below its snapshot's binlog position;
// the changes streamed after it in the same second carry that second
// (binlog times have no milliseconds) and higher orders. Placed by time,
// the snapshot row comes after them with a lower order and a newer time,
// which for a change means a new binlog history (RESET MASTER, failover),
// but not for a snapshot row. The change log's rows are all op=c in the
// buffer, and the rule used to miss that they were snapshot rows: the
// snapshot went to a history of its own, sorted after every change of the
// snapshot's second, and a replay in source order applied those changes'
// deletes and updates before the rows they change existed (TestScaleOut,
// keyless table, twice: "u at [4]@32 removes "44\x1fs2", which the replay
// does not hold").
func TestChangeLogSnapshotRowsKeepTheirHistory(t *testing.T) {
	cols := []string{"a", "b"}
	w := &worker{schema: &decode.Schema{Columns: cols}, buf: batch.NewAppend(changeLogColumns(cols), batch.Limits{})}
	order := func(pos int64, snapshot bool) int64 {
		o, ok := batch.SourceOrder("mysql-bin.000015", pos, 0, snapshot)
		if !ok {
			t.Fatalf("no order for position %d", pos)
		}
		return o
	}
	const second = 1796633273000 // the second the snapshot was read in
	snap := order(7213000, true) // the snapshot's binlog position
	changes := []decode.Change{
		// Streamed after the snapshot, in its second.
		{Event: batch.Event{Op: batch.OpDelete, Topic: "t", Partition: 5, Offset: 32, TsMs: second, Order: order(7213659, false), Binlog: "mysql-bin", Size: 10}, Before: []any{int32(26), "s5"}},
		{Event: batch.Event{Op: batch.OpUpdate, Row: []any{int32(1), "s1+"}, Topic: "t", Partition: 5, Offset: 37, TsMs: second, Order: order(7216237, false), Binlog: "mysql-bin", Size: 10}, Before: []any{int32(1), "s1"}},
		// The snapshot rows, read 146 ms into that second.
		{Event: batch.Event{Op: batch.OpRead, Row: []any{int32(26), "s5"}, Topic: "t", Partition: 4, Offset: 0, TsMs: second + 146, Order: snap, Binlog: "mysql-bin", Size: 10}},
		{Event: batch.Event{Op: batch.OpRead, Row: []any{int32(1), "s1"}, Topic: "t", Partition: 4, Offset: 1, TsMs: second + 146, Order: snap, Binlog: "mysql-bin", Size: 10}},
		// A change of the next second.
		{Event: batch.Event{Op: batch.OpUpdate, Row: []any{int32(1), "s1++"}, Topic: "t", Partition: 5, Offset: 40, TsMs: second + 1000, Order: order(7290000, false), Binlog: "mysql-bin", Size: 10}, Before: []any{int32(1), "s1+"}},
	}
	for _, ch := range changes {
		if err := w.addChangeLog(&ch, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	hs, err := w.buf.Place(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 {
		t.Errorf("the snapshot rows and the changes around them are in %d binlog histories, want 1: %s", len(hs), hs)
	}
	idx := slices.Index(changeLogColumns(cols), batch.OrderColumn)
	for _, ev := range w.buf.Events() {
		in := ev.Order & (1<<55 - 1) // the order within its history
		if ev.Order != in {
			t.Errorf("[%d]@%d %s: order %s, in a later history than the first; want %s", ev.Partition, ev.Offset, ev.Row[len(cols)], batch.FormatOrder(ev.Order), batch.FormatOrder(in))
		}
		if got, _ := ev.Row[idx].(int64); got != ev.Order {
			t.Errorf("[%d]@%d: order column %d, the event's order %d", ev.Partition, ev.Offset, got, ev.Order)
		}
		if ev.Partition == 5 && ev.Offset < 40 && ev.Order <= snap {
			t.Errorf("[%d]@%d: order %s, not above the snapshot's %s", ev.Partition, ev.Offset, batch.FormatOrder(ev.Order), batch.FormatOrder(snap))
		}
	}
}
