//go:build integration

package commit

import (
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/branch"
	"github.com/binlake/binlake/ingest/internal/testtable"
)

// TestCommitToBranch writes through package branch's view, the way ingest
// replay does: a branch made at an earlier snapshot takes the same
// Committer's commits, main and its offsets stay as they are, and Publish
// then gives main the branch's rows and offsets, after which main's own
// Committer skips what the branch already applied. In every delete mode,
// against the REST catalog.
func TestCommitToBranch(t *testing.T) {
	for _, mode := range []DeleteMode{DeleteEquality, DeletePosition, DeleteDV} {
		t.Run(string(mode), func(t *testing.T) {
			cat := connect(t, "")
			version := 2
			if mode == DeleteDV {
				version = 3
			}
			ident := testtable.Create(t, cat, "branch", version, nil)
			cfg := func() Config { return inMode(t, Config{}, mode) }
			ctx := t.Context()
			c, err := New(ctx, cat, ident, cfg())
			if err != nil {
				t.Fatal(err)
			}
			mustCommit(t, c, fill(t, 0, op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}, op{batch.OpCreate, 3, "c"}))
			s1 := c.Table().CurrentSnapshot().SnapshotID
			// A wrong write on main (the bad batch a replay undoes).
			mustCommit(t, c, fill(t, 3, op{batch.OpUpdate, 1, "WRONG"}, op{batch.OpDelete, 2, ""}))
			mainRows := map[int64]string{1: "WRONG", 3: "c"}
			expect(t, cat, ident, mainRows)

			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			if err := branch.Create(ctx, cat, tbl, "fix", s1, nil); err != nil {
				t.Fatalf("creating the branch: %v", err)
			}
			if err := branch.Create(ctx, cat, tbl, "fix", s1, nil); err == nil {
				t.Fatal("creating the branch a second time: want an error")
			}
			bcat := &branch.Catalog{Catalog: cat, Branch: "fix"}
			bc, err := New(ctx, bcat, ident, cfg())
			if err != nil {
				t.Fatal(err)
			}
			off, err := bc.Offsets()
			if err != nil {
				t.Fatal(err)
			}
			if want := (batch.Offsets{topic: {0: 3}}); !cmp.Equal(off, want) {
				t.Fatalf("the branch's offsets %v, want S1's %v", off, want)
			}
			// The corrected history from offset 3 on, and more.
			mustCommit(t, bc, fill(t, 3, op{batch.OpUpdate, 1, "a2"}, op{batch.OpCreate, 4, "d"}))
			res := mustCommit(t, bc, fill(t, 5, op{batch.OpDelete, 3, ""}, op{batch.OpUpdate, 4, "d2"}))
			if res.Rows != 1 {
				t.Errorf("branch commit %+v", res)
			}
			fixed := map[int64]string{1: "a2", 2: "b", 4: "d2"}
			if d := cmp.Diff(fixed, testtable.Scan(t, bcat, ident)); d != "" {
				t.Errorf("branch rows (-want +got):\n%s", d)
			}
			expect(t, cat, ident, mainRows)
			tbl, err = cat.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := Offsets(tbl); !cmp.Equal(got, batch.Offsets{topic: {0: 5}}) {
				t.Errorf("main's offsets %v after branch commits, want 5 (the branch's must not leak)", got)
			}
			head := tbl.Metadata().SnapshotByName("fix")
			if !table.IsAncestorOf(head.SnapshotID, s1, func(id int64) *table.Snapshot { return tbl.SnapshotByID(id) }) {
				t.Errorf("branch head %d does not descend from S1 %d", head.SnapshotID, s1)
			}

			id, err := branch.Publish(ctx, cat, tbl, "fix", nil, nil)
			if err != nil {
				t.Fatalf("publish: %v", err)
			}
			expect(t, cat, ident, fixed)
			tbl, err = cat.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			if tbl.CurrentSnapshot().SnapshotID != id {
				t.Errorf("main at %d, want the branch head %d", tbl.CurrentSnapshot().SnapshotID, id)
			}
			if got, _ := Offsets(tbl); !cmp.Equal(got, batch.Offsets{topic: {0: 7}}) {
				t.Errorf("main's offsets %v after publish, want the branch's 7", got)
			}
			// Main's writer, still on the old main, gets the same events
			// again and the next one: only the next one is applied, and its
			// index follows main's move (a rollback to it).
			res = mustCommit(t, c, fill(t, 5, op{batch.OpDelete, 3, ""}, op{batch.OpUpdate, 4, "d2"}, op{batch.OpUpdate, 2, "b2"}))
			if res.SkippedEvents != 2 || res.Events != 1 {
				t.Errorf("main commit after publish %+v: want 2 skipped, 1 applied", res)
			}
			fixed[2] = "b2"
			expect(t, cat, ident, fixed)
			// A published branch still at its head can be removed.
			if err := branch.Remove(ctx, cat, c.Table(), "fix", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := bcat.LoadTable(ctx, ident); err == nil {
				t.Error("loading the removed branch: want an error")
			}
		})
	}
}

// TestBranchAfterRename is issue 29 item 6: a table fed by two topics
// (the old one until a rename, the new one since) records the old topic's
// offsets only in the snapshots before the rename. A branch made after the
// rename must see each topic's offsets from the newest snapshot that has
// them (else a replay re-reads the old topic from 0), and Publish must
// keep main's offsets of a topic the branch did not consume.
func TestBranchAfterRename(t *testing.T) {
	const oldTopic, newTopic, laterTopic = "it.db.old", "it.db.new", "it.db.later"
	cat := connect(t, "")
	ident := testtable.Create(t, cat, "brrename", 2, nil)
	ctx := t.Context()
	c, err := New(ctx, cat, ident, Config{})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, c, fillOn(t, oldTopic, 0, op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}))
	mustCommit(t, c, fillOn(t, newTopic, 0, op{batch.OpCreate, 3, "c"}))
	s2 := c.Table().CurrentSnapshot().SnapshotID
	mustCommit(t, c, fillOn(t, newTopic, 1, op{batch.OpUpdate, 3, "c2"}))
	mustCommit(t, c, fillOn(t, laterTopic, 0, op{batch.OpCreate, 4, "d"}))

	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseOffsets(branch.Bookkeeping(tbl.Metadata(), s2))
	if err != nil {
		t.Fatal(err)
	}
	if want := (batch.Offsets{oldTopic: {0: 2}, newTopic: {0: 1}}); !cmp.Equal(got, want) {
		t.Errorf("offsets as of snapshot %d: %v, want %v", s2, got, want)
	}
	if err := branch.Create(ctx, cat, tbl, "fix", s2, nil); err != nil {
		t.Fatalf("creating the branch: %v", err)
	}
	bcat := &branch.Catalog{Catalog: cat, Branch: "fix"}
	bc, err := New(ctx, bcat, ident, Config{})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, bc, fillOn(t, newTopic, 1, op{batch.OpUpdate, 3, "c3"}))
	tbl, err = cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := branch.Publish(ctx, cat, tbl, "fix", nil, nil); err != nil {
		t.Fatalf("publish: %v", err)
	}
	tbl, err = cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	got, err = Offsets(tbl)
	if err != nil {
		t.Fatal(err)
	}
	if want := (batch.Offsets{oldTopic: {0: 2}, newTopic: {0: 2}, laterTopic: {0: 1}}); !cmp.Equal(got, want) {
		t.Errorf("main's offsets after publish: %v, want %v (the old topic's and the untouched topic's kept)", got, want)
	}
}
