//go:build integration

package commit

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/testtable"
)

// TestRewriteBoundsDeadRows makes repeated upsert commits (10% of a small
// table's keys each) in position and dv mode with the in-ingest rewrite
// on, and checks after every commit that (a) the table's dead fraction is
// under the threshold (measured by reading each file alone with its
// deletes, not by the planner's count), (b) the table holds
// exactly the expected rows, no key twice, so that (c) the commits after a
// rewrite deleted the moved rows at their new places: the key index was
// updated, across a restart of the committer and its index store too. At
// the end the Java reader and pyiceberg read the same rows.
func TestRewriteBoundsDeadRows(t *testing.T) {
	forModes(t, func(t *testing.T, mode DeleteMode) {
		for _, tc := range []struct {
			name string
			cfg  RewriteConfig
		}{
			{"dead-fraction", RewriteConfig{DeadFraction: 0.3}},
			{"dead-fraction+manifests", RewriteConfig{DeadFraction: 0.3, Manifests: 3}},
			{"delete-files", RewriteConfig{DeleteFiles: 3}},
		} {
			if mode == DeleteDV && tc.cfg.DeleteFiles > 0 {
				continue // a data file has at most one deletion vector
			}
			t.Run(tc.name, func(t *testing.T) { testRewrite(t, mode, tc.cfg) })
		}
	})
}

func testRewrite(t *testing.T, mode DeleteMode, rcfg RewriteConfig) {
	e := newPosEnv(t, mode, nil)
	committer := func() *Committer {
		c, err := New(t.Context(), e.cat, e.ident, Config{DeleteMode: mode, Index: e.store, Rewrite: rcfg,
			MaxAttempts: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := committer()
	const keys = 100
	want := map[int64]string{}
	off := int64(0)
	var first []op
	for i := int64(1); i <= keys; i++ {
		first = append(first, op{batch.OpCreate, i, fmt.Sprintf("v%d-0", i)})
		want[i] = fmt.Sprintf("v%d-0", i)
	}
	e.commit(c, batchOf(t, off, first...))
	off += int64(len(first))
	rng := rand.New(rand.NewPCG(1, 2))
	rewrites, unplanned := 0, 0
	for round := 1; round <= 16; round++ {
		if round == 9 {
			// A restart: the store closed and opened again, a new
			// committer; the rewritten rows must be found where the
			// rewrites moved them.
			if err := e.store.Close(); err != nil {
				t.Fatal(err)
			}
			e.open()
			c = committer()
		}
		var ops []op
		for _, id := range rng.Perm(keys)[:keys/10] {
			id := int64(id + 1)
			switch {
			case round%5 == 0 && id%7 == 0:
				ops = append(ops, op{batch.OpDelete, id, ""})
				delete(want, id)
			default:
				v := fmt.Sprintf("v%d-%d", id, round)
				kind := batch.OpUpdate
				if _, ok := want[id]; !ok {
					kind = batch.OpCreate
				}
				ops = append(ops, op{kind, id, v})
				want[id] = v
			}
		}
		res := e.commit(c, batchOf(t, off, ops...))
		off += int64(len(ops))
		if res.RewriteErr != nil {
			t.Fatalf("round %d: rewrite: %v", round, res.RewriteErr)
		}
		if res.Rewrite.Manifests > 0 && res.Rewrite.Files == 0 {
			t.Logf("round %d: merged %d manifests", round, res.Rewrite.Manifests)
		}
		if !res.Rewrite.Planned {
			if res.Rewrite.Files > 0 {
				t.Fatalf("round %d: rewrote %d files without planning", round, res.Rewrite.Files)
			}
			unplanned++ // checkBounded below says it was right not to
		}
		if res.Rewrite.Files > 0 {
			rewrites++
			t.Logf("round %d: rewrote %d files (%d rows kept, %d dead dropped, %d delete files removed, %d manifests merged)",
				round, res.Rewrite.Files, res.Rewrite.Rows, res.Rewrite.DeadRows, res.Rewrite.DeleteFiles, res.Rewrite.Manifests)
		}
		e.expect(want)
		checkBounded(t, e, rcfg, round)
	}
	if rewrites == 0 {
		t.Fatal("no rewrite happened")
	}
	// A commit that leaves the table's totals under every threshold does
	// not read the manifests to plan (Committer.planDue).
	t.Logf("%d rewrites, %d of 16 commits planned none", rewrites, unplanned)
	if unplanned == 0 {
		t.Error("every commit planned a rewrite from the table's files, though most leave the table under the thresholds")
	}
	if d := cmp.Diff(want, testtable.Java(t, e.ident)); d != "" {
		t.Errorf("java reader rows (-want +got):\n%s", d)
	}
	got, err := testtable.PyIceberg(t, e.ident)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("pyiceberg rows (-want +got):\n%s", d)
	}
}

// checkBounded fails when the table is at or over the rewrite's dead
// fraction, its rows counted by reading each data file alone with its
// deletes applied, or a data file has more delete files than the rewrite
// allows.
func checkBounded(t *testing.T, e *posEnv, rcfg RewriteConfig, round int) {
	t.Helper()
	tbl, err := e.cat.LoadTable(t.Context(), e.ident)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rcfg.Manifests > 0 {
		fsys, err := tbl.FS(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := tbl.CurrentSnapshot().Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		data := 0
		for _, mf := range mfs {
			if mf.ManifestContent() == iceberg.ManifestContentData {
				data++
			}
		}
		if data > rcfg.Manifests {
			t.Fatalf("round %d: %d data manifests, over %d", round, data, rcfg.Manifests)
		}
	}
	var rows, dead int64
	for _, task := range tasks {
		dels := len(task.DeleteFiles) + len(task.DeletionVectorFiles) + len(task.EqualityDeleteFiles)
		if rcfg.DeleteFiles > 0 && dels > rcfg.DeleteFiles {
			t.Fatalf("round %d: data file %s has %d delete files, over %d", round, task.File.FilePath(), dels, rcfg.DeleteFiles)
		}
		if rcfg.DeadFraction == 0 {
			continue
		}
		_, recs, err := tbl.Scan().ReadTasks(t.Context(), []table.FileScanTask{task})
		if err != nil {
			t.Fatal(err)
		}
		var live int64
		for rec, err := range recs {
			if err != nil {
				t.Fatal(err)
			}
			live += rec.NumRows()
			rec.Release()
		}
		rows += task.File.Count()
		dead += task.File.Count() - live
	}
	if rcfg.DeadFraction > 0 && float64(dead) >= rcfg.DeadFraction*float64(rows) {
		t.Fatalf("round %d: the table is %.2f dead (%d of %d rows), at or over %.2f", round, float64(dead)/float64(rows), dead, rows, rcfg.DeadFraction)
	}
}

// TestRewriteConflict: another writer commits between the rewrite's plan
// and its commit. The rewrite, pinned to the snapshot it planned from,
// conflicts and is dropped (never rebased onto a table it has not read);
// the table holds both writers' rows, and the next commit plans the
// rewrite again on the new table and lands it, the key index following.
func TestRewriteConflict(t *testing.T) {
	forModes(t, func(t *testing.T, mode DeleteMode) {
		e := newPosEnv(t, mode, nil)
		c, err := New(t.Context(), e.cat, e.ident, Config{DeleteMode: mode, Index: e.store, Rewrite: RewriteConfig{DeadFraction: 0.2},
			MaxAttempts: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		// The other writer: another process, with an index of its own and
		// a topic of its own.
		other, err := New(t.Context(), e.cat, e.ident, inMode(t, Config{MaxAttempts: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}, mode))
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]string{}
		var first []op
		for i := int64(1); i <= 10; i++ {
			first = append(first, op{batch.OpCreate, i, fmt.Sprintf("v%d", i)})
			want[i] = fmt.Sprintf("v%d", i)
		}
		e.commit(c, batchOf(t, 0, first...))
		fired := 0
		c.beforeRewriteCommit = func() {
			fired++
			if fired > 1 {
				return
			}
			if _, err := other.Commit(t.Context(), fillOn(t, "other.db.orders", 0, op{batch.OpUpdate, 9, "other"})); err != nil {
				t.Errorf("the other writer's commit: %v", err)
			}
		}
		want[9] = "other"
		res := e.commit(c, batchOf(t, 10, op{batch.OpUpdate, 1, "u1"}, op{batch.OpUpdate, 2, "u2"}, op{batch.OpUpdate, 3, "u3"}))
		want[1], want[2], want[3] = "u1", "u2", "u3"
		if res.RewriteErr != nil || !res.Rewrite.Conflict || res.Rewrite.Files != 0 {
			t.Fatalf("rewrite after the other writer's commit: %+v, %v; want a conflict, nothing rewritten", res.Rewrite, res.RewriteErr)
		}
		e.expect(want)
		res = e.commit(c, batchOf(t, 13, op{batch.OpUpdate, 4, "u4"}))
		want[4] = "u4"
		if res.RewriteErr != nil || res.Rewrite.Conflict || res.Rewrite.Files == 0 {
			t.Fatalf("rewrite of the next commit: %+v, %v; want it landed", res.Rewrite, res.RewriteErr)
		}
		e.expect(want)
		checkBounded(t, e, RewriteConfig{DeadFraction: 0.2}, 0)
		// The moved rows are deleted where they now are.
		e.commit(c, batchOf(t, 14, op{batch.OpUpdate, 5, "u5"}, op{batch.OpUpdate, 9, "u9"}, op{batch.OpDelete, 10, ""}))
		want[5], want[9] = "u5", "u9"
		delete(want, 10)
		e.expect(want)
	})
}

// TestRewriteDropsDeadFile: a data file all of whose rows are deleted is
// removed with its deletes, unread (dv mode: its vector's count is exact;
// position mode: its delete files' distinct positions are counted), and
// nothing written in its place; the keys of the other files still delete
// where they are.
func TestRewriteDropsDeadFile(t *testing.T) {
	forModes(t, func(t *testing.T, mode DeleteMode) {
		e := newPosEnv(t, mode, nil)
		c, err := New(t.Context(), e.cat, e.ident, Config{DeleteMode: mode, Index: e.store, Rewrite: RewriteConfig{DeadFraction: 0.2},
			MaxAttempts: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]string{}
		var ops []op
		for i := int64(1); i <= 10; i++ {
			ops = append(ops, op{batch.OpCreate, i, fmt.Sprintf("v%d", i)})
			want[i] = fmt.Sprintf("v%d", i)
		}
		e.commit(c, batchOf(t, 0, ops...))
		e.commit(c, batchOf(t, 10, op{batch.OpCreate, 11, "a"}, op{batch.OpCreate, 12, "b"}))
		want[11], want[12] = "a", "b"
		// 3 of the table's 13 rows are dead now (0.23): the deadest file
		// (both rows) goes, and the table is at 1 of 11 (under 0.1).
		res := e.commit(c, batchOf(t, 12, op{batch.OpDelete, 11, ""}, op{batch.OpDelete, 12, ""}, op{batch.OpUpdate, 1, "u1"}))
		delete(want, 11)
		delete(want, 12)
		want[1] = "u1"
		// Both of its rows were deleted through the key index, which
		// therefore names none of its keys: they are not read either.
		if rw := res.Rewrite; res.RewriteErr != nil || rw.Files != 1 || rw.Unread != 1 || rw.KeysUnread != 1 || rw.Rows != 0 || rw.DeadRows != 2 || rw.NewFiles != 0 || rw.DeleteFiles != 1 {
			t.Fatalf("rewrite: %+v, %v; want the dead file (2 rows) and its delete file removed unread, its keys unread, nothing written", rw, res.RewriteErr)
		}
		e.expect(want)
		e.commit(c, batchOf(t, 15, op{batch.OpUpdate, 2, "u2"}, op{batch.OpDelete, 3, ""}))
		want[2] = "u2"
		delete(want, 3)
		e.expect(want)
	})
}
