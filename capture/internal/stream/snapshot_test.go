package stream

import (
	"slices"
	"testing"

	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/schemas/debezium"
)

func testTable(db, name string) *table {
	return &table{Table: &schemahist.Table{Def: schemahist.Definition{DB: db, Table: name}}}
}

// TestSnapRewind checks where a snapshot reads again after its table was
// truncated or altered: from the row after the last one emitted, dropping
// what was read after it, and only that.
func TestSnapRewind(t *testing.T) {
	a, b := testTable("db", "a"), testTable("db", "b")
	tests := []struct {
		name      string
		prog      snapshot.Progress
		held      *heldRow
		idx       int
		wantAfter [][]byte
		wantHeld  bool
	}{
		{"rows of the table emitted, the held row is the table's", snapshot.Progress{Table: 1, After: [][]byte{[]byte("41")}},
			&heldRow{t: b, idx: 1, key: [][]byte{[]byte("42")}}, 1, [][]byte{[]byte("41")}, false},
		{"nothing of the table emitted, the held row is the previous table's", snapshot.Progress{Table: 0, After: [][]byte{[]byte("9")}},
			&heldRow{t: a, idx: 0, key: [][]byte{[]byte("10")}}, 1, nil, true},
		{"the previous table's held row: back to that table", snapshot.Progress{Table: 0, After: [][]byte{[]byte("9")}},
			&heldRow{t: a, idx: 0, key: [][]byte{[]byte("10")}}, 0, [][]byte{[]byte("9")}, false},
		{"nothing emitted at all", snapshot.Progress{}, nil, 0, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.prog.Tables = ids("db.a", "db.b")
			r := newReconciler(SnapshotConfig{Progress: tc.prog}, nil)
			r.held = tc.held
			r.pending = &pendingChunk{t: b, idx: 1, startAfter: [][]byte{[]byte("100")}}
			r.cur, r.after = 2, nil
			r.rewind(tc.idx)
			if r.pending != nil {
				t.Errorf("the pending chunk was kept")
			}
			if r.cur != tc.idx || !slices.EqualFunc(r.after, tc.wantAfter, slices.Equal) {
				t.Errorf("cursor %d after %q, want %d after %q", r.cur, r.after, tc.idx, tc.wantAfter)
			}
			if (r.held != nil) != tc.wantHeld {
				t.Errorf("held row kept: %v, want %v", r.held != nil, tc.wantHeld)
			}
		})
	}
}

// TestSnapPrune checks that pruning keeps every change that a chunk still
// to be emitted, or the held row, could be invalidated by.
func TestSnapPrune(t *testing.T) {
	r := newReconciler(SnapshotConfig{Progress: snapshot.Progress{Tables: ids("db.a")}}, nil)
	r.changes["db.a"] = map[string]int64{"k1": 3, "k2": 5, "k3": 8}
	r.prune(4)
	if _, ok := r.changes["db.a"]["k1"]; ok || len(r.changes["db.a"]) != 2 {
		t.Fatalf("after prune(4): %v, want k2 and k3", r.changes["db.a"])
	}
	r.held = &heldRow{t: testTable("db", "a"), low: 4}
	r.prune(7)
	if len(r.changes["db.a"]) != 2 {
		t.Fatalf("after prune(7) with a row held at 4: %v, want k2 and k3 kept", r.changes["db.a"])
	}
	r.held = nil
	r.prune(7)
	if _, ok := r.changes["db.a"]["k3"]; !ok || len(r.changes["db.a"]) != 1 {
		t.Fatalf("after prune(7): %v, want k3", r.changes["db.a"])
	}
}

// TestSnapKeylessAhead checks that changes of a table without a key are
// held back until its snapshot is emitted, and only those.
func TestSnapKeylessAhead(t *testing.T) {
	keyless, keyed := testTable("db", "nk"), testTable("db", "k")
	keyed.Key = &debezium.Schema{Type: debezium.STRUCT}
	r := newReconciler(SnapshotConfig{Progress: snapshot.Progress{Tables: ids("db.k", "db.nk")}}, nil)
	if !r.keylessAhead(keyless) {
		t.Errorf("keyless table before its snapshot: its changes must wait")
	}
	if r.keylessAhead(keyed) {
		t.Errorf("keyed table: its changes are reconciled by key, never held back")
	}
	if r.keylessAhead(testTable("db", "other")) {
		t.Errorf("a table outside the snapshot streams")
	}
	r.prog.Table = 2 // both emitted
	if r.keylessAhead(keyless) {
		t.Errorf("keyless table after its snapshot: its changes stream")
	}
}

// BenchmarkTrackChangeNoSnapshot is the per-row cost of snapshot
// bookkeeping when no snapshot runs.
func BenchmarkTrackChangeNoSnapshot(b *testing.B) {
	s := &Stream{}
	tb := testTable("inventory", "customers")
	b.ReportAllocs()
	for b.Loop() {
		s.snap.trackChange(tb, nil)
	}
}
