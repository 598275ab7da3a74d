package batch

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// change is a keyed event of table columns (id, v, _binlake_source_order)
// at a binlog position and source second.
func change(op Op, part int32, off int64, file string, pos int64, sec int64, id int64, v string) Event {
	o, _ := SourceOrder(file, pos, 0, op == OpRead)
	e := Event{Op: op, Topic: "t", Partition: part, Offset: off, TsMs: sec * 1000, Order: o, Binlog: Basename(file), Size: 10}
	if op != OpTruncate {
		e.Key = []any{id}
	}
	if op == OpCreate || op == OpUpdate || op == OpRead {
		e.Row = []any{id, v, o}
	}
	return e
}

func orderBuf(t *testing.T, evs ...Event) *Buffer {
	t.Helper()
	b, err := New([]string{"id", "v", OrderColumn}, []string{"id"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if err := b.Add(e, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestPlaceAcrossHistories: after a truncate on one history, the changes of
// the next history (a failover to a server whose binlog numbers lower,
// RESET MASTER, another basename) sort above the truncate and are kept,
// while a late change of the old history from a lagging partition is still
// dropped. Before epochs, the new history's changes sorted below the
// watermark and were dropped.
func TestPlaceAcrossHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string // the new history's binlog file
	}{
		{"failover to lower files", "mysql-bin.000002"},
		{"reset master", "mysql-bin.000001"},
		{"new basename", "other-bin.000009"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Commit 1: rows and a truncate in history A (file 7).
			b := orderBuf(t,
				change(OpCreate, 1, 0, "mysql-bin.000007", 500, 100, 1, "a"),
				change(OpTruncate, 0, 0, "mysql-bin.000007", 900, 101, 0, ""),
				change(OpCreate, 1, 1, "mysql-bin.000007", 1200, 101, 2, "b"),
			)
			hs, err := b.Place(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := b.Collapse(nil, 0)
			if diff := cmp.Diff([]string{"2=b"}, rows(c.Upserts)); diff != "" {
				t.Fatalf("history A (-want +got):\n%s", diff)
			}
			mark := c.Watermark
			if len(hs) != 1 || mark != EpochOrder(0, mustOrder(t, "mysql-bin.000007", 900)) {
				t.Fatalf("epochs %s watermark %s", hs, FormatOrder(mark))
			}

			// Commit 2: history B begins at a lower position; a lagging
			// partition still delivers a change of A below the truncate.
			b = orderBuf(t,
				change(OpCreate, 1, 2, tc.file, 300, 110, 3, "c"),
				change(OpUpdate, 1, 3, tc.file, 400, 110, 2, "b2"),
				change(OpCreate, 2, 0, "mysql-bin.000007", 800, 100, 4, "late"),
			)
			hs2, err := b.Place(hs, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(hs2) != 2 {
				t.Fatalf("epochs after the history change: %s", hs2)
			}
			c = b.Collapse(nil, mark)
			if diff := cmp.Diff([]string{"3=c", "2=b2"}, rows(c.Upserts)); diff != "" {
				t.Errorf("history B (-want +got):\n%s", diff)
			}
			if c.Stale != 1 {
				t.Errorf("stale %d, want 1 (the late change of A)", c.Stale)
			}
			for _, u := range c.Upserts {
				if u.Row[2] != u.Order || u.Order>>epochShift != 1 {
					t.Errorf("key %v: order column %v, order %s, want epoch 1 in both", u.Key[0], u.Row[2], FormatOrder(u.Order))
				}
			}

			// Commit 3: a truncate in B deletes everything of A, and the
			// rows after it stay.
			b = orderBuf(t,
				change(OpTruncate, 0, 1, tc.file, 500, 111, 0, ""),
				change(OpCreate, 1, 4, tc.file, 600, 111, 5, "d"),
			)
			hs3, err := b.Place(hs2, nil)
			if err != nil {
				t.Fatal(err)
			}
			c = b.Collapse(nil, mark)
			if len(hs3) != 2 || c.TruncateBefore <= EpochOrder(0, mustOrder(t, "mysql-bin.999999", 1<<31)) {
				t.Errorf("epochs %s, truncate before %s: want epoch 1 above every order of epoch 0", hs3, FormatOrder(c.TruncateBefore))
			}
			if diff := cmp.Diff([]string{"5=d"}, rows(c.Upserts)); diff != "" {
				t.Errorf("after B's truncate (-want +got):\n%s", diff)
			}
			// Placing again (a retried commit) gives the same orders.
			before := c.TruncateBefore
			if _, err := b.Place(hs2, nil); err != nil || b.Collapse(nil, mark).TruncateBefore != before {
				t.Errorf("placing again: %v, truncate before %s, want %s", err, FormatOrder(b.Collapse(nil, mark).TruncateBefore), FormatOrder(before))
			}
		})
	}
}

// TestPlaceSameHistory: a late change of the current history (lower order,
// not newer than what was applied) stays in it, as does a snapshot row
// read later than the changes after its position (an incremental
// snapshot); neither starts a history.
func TestPlaceSameHistory(t *testing.T) {
	b := orderBuf(t,
		change(OpCreate, 0, 0, "mysql-bin.000003", 900, 50, 1, "a"),
		change(OpCreate, 1, 0, "mysql-bin.000003", 400, 50, 2, "late"),
		change(OpRead, 1, 1, "mysql-bin.000003", 500, 60, 3, "snap"),
	)
	hs, err := b.Place(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].First != mustOrder(t, "mysql-bin.000003", 400) || hs[0].MaxTs != 60000 {
		t.Errorf("epochs %s, want one from order 3:400", hs)
	}
}

// TestPlaceChangeLogSnapshotRow: in a change log every row is an OpCreate
// event, and a snapshot row is known by SnapshotRead. Read (milliseconds)
// later than the changes streamed after it in the same second, with a
// lower order, it stays in their history; an OpCreate row that is not
// marked would start one.
func TestPlaceChangeLogSnapshotRow(t *testing.T) {
	for _, read := range []bool{true, false} {
		b := NewAppend([]string{"a", OrderColumn}, Limits{})
		after := mustOrder(t, "mysql-bin.000003", 900)
		snap, _ := SourceOrder("mysql-bin.000003", 500, 0, true)
		for _, e := range []Event{
			{Op: OpCreate, Topic: "t", Partition: 1, Offset: 0, TsMs: 50_000, Order: after, Binlog: "mysql-bin", Row: []any{int64(1), after}},
			{Op: OpCreate, Topic: "t", Partition: 0, Offset: 0, TsMs: 50_146, Order: snap, Binlog: "mysql-bin", Row: []any{int64(2), snap}, SnapshotRead: read},
		} {
			if err := b.Add(e, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		hs, err := b.Place(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 2}[read]; len(hs) != want {
			t.Errorf("SnapshotRead %v: epochs %s, want %d", read, hs, want)
		}
	}
}

// TestPlaceUnordered: a change of the previous history's basename in the
// second the current history began, below everything applied from the
// current history, is placed in the previous history; one of the current
// history's basename is ambiguous and stops.
func TestPlaceUnordered(t *testing.T) {
	hs := Epochs{
		{Binlog: "mysql-bin", Since: 10000, First: 100, Last: 900, MaxTs: 20000},
		{Binlog: "mysql-bin", Since: 20000, First: 500, Last: 700, MaxTs: 21000},
	}
	b := orderBuf(t, change(OpCreate, 0, 0, "mysql-bin.000000", 300, 20, 1, "?"))
	if _, err := b.Place(hs, nil); !errors.Is(err, ErrHistoryUnordered) {
		t.Errorf("Place: %v, want ErrHistoryUnordered", err)
	}
	hs[1].Binlog = "other-bin"
	got, err := b.Place(hs, nil)
	if err != nil || len(got) != 2 || b.events[0].Order>>epochShift != 0 {
		t.Errorf("Place: %v, epochs %s, order %s; want the previous history", err, got, FormatOrder(b.events[0].Order))
	}
}

func mustOrder(t *testing.T, file string, pos int64) int64 {
	t.Helper()
	o, ok := SourceOrder(file, pos, 0, false)
	if !ok {
		t.Fatalf("SourceOrder(%q, %d)", file, pos)
	}
	return o
}
