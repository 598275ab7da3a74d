//go:build integration

package maintain

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/testtable"
)

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil)).With("test", t.Name())
	}
	return slog.New(slog.DiscardHandler)
}

// seed commits a history of inserts, updates and deletes in small batches
// so that the table holds many small data files and delete files.
func seed(w *workload) {
	var first []op
	for i := int64(1); i <= 40; i++ {
		first = append(first, op{batch.OpCreate, i, fmt.Sprintf("n%d", i)})
	}
	w.mustCommit(first...)
	w.mustCommit(op{batch.OpUpdate, 1, "u1"}, op{batch.OpDelete, 2, ""}, op{batch.OpDelete, 3, ""}, op{batch.OpCreate, 300, "n300"})
	for i := range 6 {
		w.mustCommit(op{batch.OpUpdate, 1, fmt.Sprintf("u1-%d", i)}, op{batch.OpUpdate, int64(10 + i), fmt.Sprintf("u%d", 10+i)}, op{batch.OpDelete, int64(20 + i), ""})
	}
	w.mustCommit(op{batch.OpCreate, 2, "back"}, op{batch.OpDelete, 300, ""})
}

// TestMaintainEachDeleteMode writes a keyed table through the commit
// package in each delete mode (equality, position, dv), runs every
// maintenance step, and checks that the data and delete files shrank, old
// snapshots are gone, an old orphan is removed while a young one stays,
// the offsets are unchanged, and the Java reader and pyiceberg (which
// refuses equality deletes, so it also proves none is left) read exactly
// the expected rows. The Committer that wrote the table then keeps
// committing from its stale base: it conflicts, reloads and stays exactly
// once, and a new Committer resumes from the same offsets.
func TestMaintainEachDeleteMode(t *testing.T) {
	bucket4 := testtable.Bucket4()
	for _, tc := range modes {
		for _, partitioned := range []bool{false, true} {
			if partitioned && testing.Short() && tc.mode != commit.DeletePosition {
				continue // -short: bucket(4) in position mode only
			}
			name := string(tc.mode)
			var spec *iceberg.PartitionSpec
			if partitioned {
				name, spec = name+"/bucket4", &bucket4
			}
			t.Run(name, func(t *testing.T) {
				cat := connect(t)
				ident := createTable(t, cat, tc.version, spec)
				w := newWorkload(t, committer(t, cat, ident, tc.mode))
				// An orphan as a failed commit attempt leaves, older
				// than the orphan age by the time maintenance runs.
				tbl, err := cat.LoadTable(t.Context(), ident)
				if err != nil {
					t.Fatal(err)
				}
				fsys, err := tbl.FS(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				wfs := fsys.(icebergio.WriteFileIO)
				old := tbl.Location() + "/data/00000-0-failed-attempt.parquet"
				if err := wfs.WriteFile(old, []byte("left by a failed commit")); err != nil {
					t.Fatal(err)
				}
				written := time.Now()
				seed(w)
				before := stats(t, cat, ident)
				offBefore := offsets(t, cat, ident)
				if before.DeleteFiles() == 0 || before.DataFiles < 8 {
					t.Fatalf("seeded table: %+v; want several data files and some delete files", before)
				}
				const orphanAge = 5 * time.Second
				time.Sleep(time.Until(written.Add(orphanAge + time.Second)))

				// A dry run changes nothing.
				dry, err := New(cat, Config{DryRun: true, RetainLast: 1, ExpireOlderThan: time.Millisecond, OrphanAge: orphanAge, Logger: testLogger(t)})
				if err != nil {
					t.Fatal(err)
				}
				drep, err := dry.Run(t.Context(), ident)
				if err != nil {
					t.Fatalf("dry run: %v", err)
				}
				if drep.Compact.InputFiles == 0 || drep.Expire.Expired == 0 || drep.Orphans.Found != 1 {
					t.Errorf("dry run plans nothing: %+v", drep)
				}
				if got := stats(t, cat, ident); got != before {
					t.Fatalf("dry run changed the table: %+v, before %+v", got, before)
				}

				start := time.Now()
				m, err := New(cat, Config{RetainLast: 1, ExpireOlderThan: time.Millisecond, OrphanAge: orphanAge, Logger: testLogger(t)})
				if err != nil {
					t.Fatal(err)
				}
				rep, err := m.Run(t.Context(), ident)
				if err != nil {
					t.Fatalf("maintain: %v", err)
				}
				after := stats(t, cat, ident)
				t.Logf("maintain took %s: data files %d -> %d, delete files %d -> %d (pos %d eq %d dv %d), snapshots %d -> %d, manifests %d -> %d, orphans removed %d",
					time.Since(start).Round(time.Millisecond), before.DataFiles, after.DataFiles, before.DeleteFiles(), after.DeleteFiles(),
					before.PositionDeleteFiles, before.EqualityDeleteFiles, before.DeletionVectors,
					before.Snapshots, after.Snapshots, before.DataManifests+before.DeleteManifests, after.DataManifests+after.DeleteManifests, rep.Orphans.Removed)
				if after.DeleteFiles() != 0 {
					t.Errorf("after maintenance %d delete files are live (%+v); want every delete applied and dropped", after.DeleteFiles(), after)
				}
				if after.DataFiles >= before.DataFiles || after.DataFiles > 4 {
					t.Errorf("data files %d -> %d; want fewer, at most one per partition", before.DataFiles, after.DataFiles)
				}
				if after.Snapshots != 1 {
					t.Errorf("%d snapshots after expiry with retain-last 1", after.Snapshots)
				}
				if int64(len(w.want)) != after.DataRecords {
					t.Errorf("compacted files hold %d rows, want %d", after.DataRecords, len(w.want))
				}
				if rep.Orphans.Removed != 1 {
					t.Errorf("orphans removed %d, want 1 (%+v)", rep.Orphans.Removed, rep.Orphans)
				}
				if _, err := fsys.Open(old); err == nil {
					t.Errorf("the old orphan %s is still there", old)
				}
				// A file younger than the orphan age (an in-flight
				// commit's) stays.
				young := tbl.Location() + "/data/00000-0-in-flight.parquet"
				if err := wfs.WriteFile(young, []byte("an in-flight commit")); err != nil {
					t.Fatal(err)
				}
				orphans, err := New(cat, Config{Steps: []Step{StepRemoveOrphans}, OrphanAge: orphanAge, Logger: testLogger(t)})
				if err != nil {
					t.Fatal(err)
				}
				if orep, err := orphans.Run(t.Context(), ident); err != nil || orep.Orphans.Found != 0 {
					t.Errorf("orphan removal right after a write: %+v, %v; want nothing found", orep.Orphans, err)
				}
				if f, err := fsys.Open(young); err != nil {
					t.Errorf("the young orphan is gone: %v", err)
				} else {
					f.Close()
				}
				if d := cmp.Diff(offBefore, offsets(t, cat, ident)); d != "" {
					t.Errorf("offsets changed by maintenance (-before +after):\n%s", d)
				}
				expectReaders(t, cat, ident, w.want, true)

				// The writer's base is stale now: its next commit
				// conflicts, reloads and rebuilds its deletes against the
				// compacted files.
				w.mustCommit(op{batch.OpUpdate, 1, "after-1"}, op{batch.OpDelete, 4, ""}, op{batch.OpCreate, 3, "back3"}, op{batch.OpUpdate, 40, "after-40"})
				if w.retried != 1 {
					t.Errorf("the first commit after maintenance was retried %d times; want 1 conflict", w.retried)
				}
				w.mustCommit(op{batch.OpUpdate, 1, "after-2"}, op{batch.OpDelete, 5, ""}, op{batch.OpUpdate, 3, "back3-2"})
				expectReaders(t, cat, ident, w.want, tc.mode != commit.DeleteEquality)

				// A restarted ingest resumes where the writer stopped.
				fresh := committer(t, cat, ident, tc.mode)
				off, err := fresh.Offsets()
				if err != nil {
					t.Fatal(err)
				}
				if off[topic][0] != w.off {
					t.Errorf("a new committer resumes at %v, want %d", off, w.off)
				}
				w2 := &workload{t: t, c: fresh, off: w.off, want: w.want}
				w2.mustCommit(op{batch.OpUpdate, 6, "fresh"}, op{batch.OpDelete, 7, ""})
				expectReaders(t, cat, ident, w2.want, tc.mode != commit.DeleteEquality)
			})
		}
	}
}

// TestCompactKeepsSharedPositionDeletes rewrites only one of two data files
// that one position-delete file covers (ingest writes one per partition
// when the table's write.delete.granularity is partition).
// The delete file must stay, or the row it deletes in the other file comes
// back. The control runs the same rewrite through iceberg-go's
// Table.RewriteDataFiles, which drops the delete file and resurrects the
// row: the check can fail.
func TestCompactKeepsSharedPositionDeletes(t *testing.T) {
	for _, control := range []bool{false, true} {
		t.Run(fmt.Sprintf("library=%v", control), func(t *testing.T) {
			cat := connect(t)
			ident := createTable(t, cat, 2, nil)
			tbl, err := cat.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			tx := tbl.NewTransaction()
			if err := tx.SetProperties(iceberg.Properties{commit.DeleteGranularityKey: commit.DeleteGranularityPartition}); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
			w := newWorkload(t, committer(t, cat, ident, commit.DeletePosition))
			var a, b []op
			for i := int64(1); i <= 10; i++ {
				a = append(a, op{batch.OpCreate, i, "a"})
				b = append(b, op{batch.OpCreate, 100 + i, "b"})
			}
			w.mustCommit(a...)
			w.mustCommit(b...)
			w.mustCommit(op{batch.OpDelete, 1, ""}, op{batch.OpDelete, 101, ""})
			tbl, err = cat.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := TableStats(t.Context(), tbl); st.DataFiles != 2 || st.PositionDeleteFiles != 1 {
				t.Fatalf("table %+v: want 2 data files and 1 position-delete file", st)
			}
			tasks, err := tbl.Scan().PlanFiles(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			// Only the file of keys 1..10.
			var group table.CompactionTaskGroup
			for _, task := range tasks {
				if len(task.DeleteFiles) != 1 {
					t.Fatalf("task %s has %d delete files, want the shared one", task.File.FilePath(), len(task.DeleteFiles))
				}
				if lo := task.File.LowerBoundValues()[1]; len(lo) == 8 && binary.LittleEndian.Uint64(lo) == 1 {
					group.Tasks = append(group.Tasks, task)
					group.TotalSizeBytes += task.File.FileSizeBytes()
				}
			}
			if len(group.Tasks) != 1 {
				t.Fatalf("found %d tasks for keys 1..10", len(group.Tasks))
			}
			if control {
				if _, err := tbl.RewriteDataFiles(t.Context(), []table.CompactionTaskGroup{group}, table.RewriteDataFilesOptions{}); err != nil {
					t.Fatal(err)
				}
			} else {
				m, err := New(cat, Config{Logger: testLogger(t)})
				if err != nil {
					t.Fatal(err)
				}
				var rep CompactReport
				if err := m.rewrite(t.Context(), tbl, []table.CompactionTaskGroup{group}, 0, &rep); err != nil {
					t.Fatal(err)
				}
				if rep.RemovedPositionDeletes != 0 {
					t.Errorf("removed %d position-delete files; the one left still applies to keys 101..110", rep.RemovedPositionDeletes)
				}
			}
			got := scan(t, cat, ident)
			_, resurrected := got[101]
			if resurrected != control {
				t.Errorf("key 101 live after the rewrite: %v; want %v (library=%v)", resurrected, control, control)
			}
			if !control {
				expectReaders(t, cat, ident, w.want, true)
			}
		})
	}
}

// TestMaintainConcurrentWithIngest is S3 Tables' managed maintenance in
// miniature: one goroutine commits a keyed workload of inserts, updates
// and deletes while another compacts and expires the same table again and
// again. At the end the table holds exactly the expected rows in every
// reader, in each delete mode, and both sides made progress (compactions
// landed between the writer's commits, and the writer went through
// conflicts).
func TestMaintainConcurrentWithIngest(t *testing.T) {
	for _, tc := range modes {
		t.Run(string(tc.mode), func(t *testing.T) {
			cat := connect(t)
			ident := createTable(t, cat, tc.version, nil)
			w := newWorkload(t, committer(t, cat, ident, tc.mode))
			var first []op
			for i := int64(1); i <= 50; i++ {
				first = append(first, op{batch.OpCreate, i, fmt.Sprintf("v0-%d", i)})
			}
			w.mustCommit(first...)

			m, err := New(cat, Config{
				Steps:      []Step{StepCompact, StepRewriteManifests, StepExpireSnapshots},
				RetainLast: 2, ExpireOlderThan: time.Millisecond, MinInputFiles: 2,
				Attempts: 100, MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond,
				Logger: testLogger(t),
			})
			if err != nil {
				t.Fatal(err)
			}
			batches := 30
			if testing.Short() {
				batches = 20
			}
			done := make(chan struct{})
			var (
				wg          sync.WaitGroup
				runs        int
				compactions atomic.Int64
				maintErr    error
			)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					rep, err := m.Run(t.Context(), ident)
					if err != nil {
						maintErr = err
						return
					}
					runs++
					if rep.Compact.SnapshotID != 0 {
						compactions.Add(1)
					}
				}
			}()
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.mode))))
			var writeErr error
			// A compaction lands only if it finishes between two
			// commits. On a loaded machine it may keep losing against a
			// writer that commits every few hundred ms, so after its
			// batches the writer goes on, at a pace closer to ingest's
			// flush interval, until two compactions landed (for at most
			// a minute): the test must not prove nothing.
			n := 0
			extra := time.Now().Add(time.Hour)
			for ; n < batches || (compactions.Load() < 2 && time.Now().Before(extra)); n++ {
				if n == batches {
					extra = time.Now().Add(time.Minute)
				}
				var ops []op
				for range 8 {
					id := int64(1 + rng.IntN(70))
					switch _, live := w.want[id]; {
					case !live:
						ops = append(ops, op{batch.OpCreate, id, fmt.Sprintf("c%d-%d", n, id)})
					case rng.IntN(3) == 0:
						ops = append(ops, op{batch.OpDelete, id, ""})
					default:
						ops = append(ops, op{batch.OpUpdate, id, fmt.Sprintf("u%d-%d", n, id)})
					}
				}
				// A key may change several times in one batch: the
				// buffer keeps the last change (by offset), and the
				// expectation applies the ops in order, which agrees.
				if writeErr = w.commit(t.Context(), ops...); writeErr != nil {
					break
				}
				pause := time.Duration(100+rng.IntN(200)) * time.Millisecond
				if n >= batches {
					pause = 2 * time.Second
				}
				time.Sleep(pause)
			}
			close(done)
			wg.Wait()
			if writeErr != nil {
				t.Fatalf("writer: %v", writeErr)
			}
			if maintErr != nil {
				t.Fatalf("maintainer: %v", maintErr)
			}
			t.Logf("%d batches (%d retried after a conflict), %d maintenance runs, %d compactions committed", n, w.retried, runs, compactions.Load())
			if compactions.Load() == 0 {
				t.Errorf("no compaction landed between the writer's commits; the test proves nothing")
			}
			expectReaders(t, cat, ident, w.want, tc.mode != commit.DeleteEquality)

			// A final maintenance leaves no deletes, and the rows stay.
			if _, err := m.Run(t.Context(), ident); err != nil {
				t.Fatal(err)
			}
			if st := stats(t, cat, ident); st.DeleteFiles() != 0 {
				t.Errorf("after the last maintenance: %+v", st)
			}
			expectReaders(t, cat, ident, w.want, true)
		})
	}
}
