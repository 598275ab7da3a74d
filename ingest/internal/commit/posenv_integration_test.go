//go:build integration

package commit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/keyindex"
	"github.com/binlake/binlake/ingest/internal/testtable"
	"github.com/binlake/binlake/test/testenv"
)

// These tests run the position and dv delete modes against the stack's
// REST catalog and MinIO.

const posTopic = "pos.db.orders"

// testFormatVersion is the format version of the tables the commit tests
// create: 3 when BINLAKE_TEST_DELETE_MODE=dv, else 2.
func testFormatVersion() string {
	if os.Getenv("BINLAKE_TEST_DELETE_MODE") == string(DeleteDV) {
		return "3"
	}
	return "2"
}

// modeConfig is cfg in the delete mode BINLAKE_TEST_DELETE_MODE names
// (default equality), so that the commit tests run in every mode. In
// position mode each call opens a key index of its own, as a separate
// ingest process would.
func modeConfig(t testing.TB, cfg Config) Config {
	t.Helper()
	mode, err := ParseDeleteMode(os.Getenv("BINLAKE_TEST_DELETE_MODE"))
	if err != nil {
		t.Fatal(err)
	}
	return inMode(t, cfg, mode)
}

// inMode is cfg in delete mode, with a key index of its own in the
// positional modes.
func inMode(t testing.TB, cfg Config, mode DeleteMode) Config {
	t.Helper()
	cfg.DeleteMode = mode
	if mode != DeleteEquality {
		st, err := keyindex.Open(keyindex.Config{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		cfg.Index = st
	}
	return cfg
}

// posEnv is a catalog, one keyed table (id long, name string) and a key
// index directory.
type posEnv struct {
	t     *testing.T
	mode  DeleteMode
	cat   catalog.Catalog
	ident table.Identifier
	dir   string
	store *keyindex.Store
}

// forModes runs test in position mode (format v2) and dv mode (format
// v3).
func forModes(t *testing.T, test func(*testing.T, DeleteMode)) {
	for _, m := range []DeleteMode{DeletePosition, DeleteDV} {
		t.Run(string(m), func(t *testing.T) { test(t, m) })
	}
}

func newPosEnv(t *testing.T, mode DeleteMode, spec *iceberg.PartitionSpec) *posEnv {
	t.Helper()
	cat := connect(t, "")
	ns := table.Identifier{testenv.Unique(t, "pos")}
	if err := cat.CreateNamespace(t.Context(), ns, nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	version := "2"
	if mode == DeleteDV {
		version = "3"
	}
	opts := []catalog.CreateTableOpt{catalog.WithProperties(iceberg.Properties{"format-version": version})}
	if spec != nil {
		opts = append(opts, catalog.WithPartitionSpec(spec))
	}
	ident := table.Identifier{ns[0], "orders"}
	if _, err := cat.CreateTable(t.Context(), ident, sch, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = cat.DropTable(ctx, ident)
		_ = cat.DropNamespace(ctx, ns)
	})
	e := &posEnv{t: t, mode: mode, cat: cat, ident: ident, dir: filepath.Join(t.TempDir(), "state")}
	e.open()
	return e
}

func (e *posEnv) open() {
	e.t.Helper()
	st, err := keyindex.Open(keyindex.Config{Dir: e.dir})
	if err != nil {
		e.t.Fatal(err)
	}
	e.store = st
	e.t.Cleanup(func() { _ = st.Close() })
}

func (e *posEnv) committer() *Committer {
	e.t.Helper()
	c, err := New(e.t.Context(), e.cat, e.ident, Config{DeleteMode: e.mode, Index: e.store, MaxAttempts: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// batchOf makes a buffer of ops on the position tests' topic.
func batchOf(t *testing.T, first int64, ops ...op) *batch.Buffer {
	t.Helper()
	return fillOn(t, posTopic, first, ops...)
}

func (e *posEnv) commit(c *Committer, b *batch.Buffer) Result {
	e.t.Helper()
	res, err := c.Commit(e.t.Context(), b)
	if err != nil {
		e.t.Fatalf("commit: %v", err)
	}
	return res
}

// rows reads the table with iceberg-go, deletes applied, failing on a key
// seen twice.
func (e *posEnv) rows() map[int64]string {
	e.t.Helper()
	return testtable.Scan(e.t, e.cat, e.ident)
}

func (e *posEnv) expect(want map[int64]string) {
	e.t.Helper()
	if d := cmp.Diff(want, e.rows()); d != "" {
		e.t.Fatalf("table rows (-want +got):\n%s", d)
	}
	e.noEqualityDeletes()
}

// noEqualityDeletes fails when any snapshot of the table references an
// equality-delete file; it returns the position-delete files seen.
func (e *posEnv) noEqualityDeletes() int {
	e.t.Helper()
	tbl, err := e.cat.LoadTable(e.t.Context(), e.ident)
	if err != nil {
		e.t.Fatal(err)
	}
	n, err := countDeleteFiles(tbl)
	if err != nil {
		e.t.Fatal(err)
	}
	if n.Equality > 0 {
		e.t.Fatalf("the table's snapshots hold %d equality-delete files", n.Equality)
	}
	return n.Position
}

func TestPositionKeyUpdatedManyTimes(t *testing.T) { forModes(t, testPositionKeyUpdatedManyTimes) }

func testPositionKeyUpdatedManyTimes(t *testing.T, mode DeleteMode) {
	e := newPosEnv(t, mode, nil)
	c := e.committer()
	want := map[int64]string{}
	off := int64(0)
	e.commit(c, batchOf(t, off, op{batch.OpCreate, 1, "v0"}, op{batch.OpCreate, 2, "x"}))
	off += 2
	want[1], want[2] = "v0", "x"
	for i := 1; i <= 8; i++ {
		// Updated twice per batch and once per commit: only the last
		// image reaches a data file, and the previous commit's row is
		// deleted by position.
		res := e.commit(c, batchOf(t, off, op{batch.OpUpdate, 1, fmt.Sprintf("v%d-a", i)}, op{batch.OpUpdate, 1, fmt.Sprintf("v%d", i)}))
		off += 2
		want[1] = fmt.Sprintf("v%d", i)
		if res.Rows != 1 || res.Deletes != 1 {
			t.Fatalf("commit %d: %d rows, %d position deletes; want 1 and 1", i, res.Rows, res.Deletes)
		}
		e.expect(want)
	}
	if n := e.noEqualityDeletes(); n != 8 {
		t.Errorf("%d position-delete files, want 8", n)
	}
}

func TestPositionKeyChangeDeleteReinsert(t *testing.T) {
	forModes(t, testPositionKeyChangeDeleteReinsert)
}

func testPositionKeyChangeDeleteReinsert(t *testing.T, mode DeleteMode) {
	e := newPosEnv(t, mode, nil)
	c := e.committer()
	e.commit(c, batchOf(t, 0, op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}, op{batch.OpCreate, 4, "d"}))
	e.expect(map[int64]string{1: "a", 2: "b", 4: "d"})
	// A key change is a delete of the old key and a create of the new.
	e.commit(c, batchOf(t, 3, op{batch.OpDelete, 4, ""}, op{batch.OpCreate, 40, "d"}, op{batch.OpDelete, 2, ""}))
	e.expect(map[int64]string{1: "a", 40: "d"})
	// Re-insert of a deleted key; insert and delete in one batch leaves
	// nothing; delete and re-insert in one batch keeps the new row once.
	e.commit(c, batchOf(t, 6, op{batch.OpCreate, 2, "b2"}, op{batch.OpCreate, 7, "g"}, op{batch.OpDelete, 7, ""},
		op{batch.OpDelete, 1, ""}, op{batch.OpCreate, 1, "a2"}))
	e.expect(map[int64]string{1: "a2", 2: "b2", 40: "d"})
	// And back: the key changes to its old value.
	e.commit(c, batchOf(t, 11, op{batch.OpDelete, 40, ""}, op{batch.OpCreate, 4, "d2"}))
	e.expect(map[int64]string{1: "a2", 2: "b2", 4: "d2"})
}

func TestPositionIndexRebuiltWhenDirRemoved(t *testing.T) {
	forModes(t, testPositionIndexRebuiltWhenDirRemoved)
}

func testPositionIndexRebuiltWhenDirRemoved(t *testing.T, mode DeleteMode) {
	e := newPosEnv(t, mode, nil)
	c := e.committer()
	e.commit(c, batchOf(t, 0, op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}))
	e.commit(c, batchOf(t, 2, op{batch.OpUpdate, 1, "a2"}, op{batch.OpCreate, 3, "c"}))
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(e.dir); err != nil {
		t.Fatal(err)
	}
	e.open()
	c = e.committer()
	// Every key's old row is found again: 1 in the second file, 2 in the
	// first.
	res := e.commit(c, batchOf(t, 4, op{batch.OpUpdate, 1, "a3"}, op{batch.OpUpdate, 2, "b2"}, op{batch.OpDelete, 3, ""}))
	if res.Deletes != 3 {
		t.Errorf("%d position deletes, want 3", res.Deletes)
	}
	e.expect(map[int64]string{1: "a3", 2: "b2"})
}

func TestPositionIndexRebuiltWhenCorrupt(t *testing.T) {
	forModes(t, testPositionIndexRebuiltWhenCorrupt)
}

func testPositionIndexRebuiltWhenCorrupt(t *testing.T, mode DeleteMode) {
	e := newPosEnv(t, mode, nil)
	c := e.committer()
	e.commit(c, batchOf(t, 0, op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}))
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	// Garble every file of the store.
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range ents {
		if err := os.WriteFile(filepath.Join(e.dir, de.Name()), []byte("not pebble"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.open()
	c = e.committer()
	e.commit(c, batchOf(t, 2, op{batch.OpUpdate, 1, "a2"}, op{batch.OpDelete, 2, ""}))
	e.expect(map[int64]string{1: "a2"})
}

// TestPositionIndexCatchesUpAfterRewrite rewrites the table behind the
// committer's back (as a compaction does: the data files replaced by one
// holding the same live rows); the next commit must find its rows in the
// new file.
func TestPositionIndexCatchesUpAfterRewrite(t *testing.T) {
	forModes(t, testPositionIndexCatchesUpAfterRewrite)
}

func testPositionIndexCatchesUpAfterRewrite(t *testing.T, mode DeleteMode) {
	e := newPosEnv(t, mode, nil)
	c := e.committer()
	e.commit(c, batchOf(t, 0, op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}, op{batch.OpCreate, 3, "c"}, op{batch.OpCreate, 5, "e"}))
	e.commit(c, batchOf(t, 4, op{batch.OpUpdate, 2, "b2"}, op{batch.OpCreate, 4, "d"}, op{batch.OpDelete, 5, ""}))
	rewrite(t, e.cat, e.ident)
	// Another writer deletes key 3 copy-on-write: its file is replaced by
	// one without it.
	deleteCoW(t, e.cat, e.ident, 3)
	e.expect(map[int64]string{1: "a", 2: "b2", 4: "d"})

	// The committer still holds the table as of before the rewrite: its
	// first attempt conflicts, reloads and syncs the index. Keys 5 and 3,
	// deleted before, come back: nothing of them is left to delete.
	e.commit(c, batchOf(t, 7, op{batch.OpUpdate, 2, "b3"}, op{batch.OpUpdate, 4, "d2"}, op{batch.OpCreate, 5, "e2"}, op{batch.OpCreate, 3, "c2"}))
	e.expect(map[int64]string{1: "a", 2: "b3", 3: "c2", 4: "d2", 5: "e2"})
	e.deletesTargetLiveFiles()
	// A fresh committer (a restart) against the same index.
	rewrite(t, e.cat, e.ident)
	deleteCoW(t, e.cat, e.ident, 5)
	c = e.committer()
	e.commit(c, batchOf(t, 11, op{batch.OpUpdate, 1, "a2"}, op{batch.OpCreate, 5, "e3"}, op{batch.OpUpdate, 3, "c3"}))
	e.expect(map[int64]string{1: "a2", 2: "b3", 3: "c3", 4: "d2", 5: "e3"})
	e.deletesTargetLiveFiles()
}

// deleteCoW deletes the row of key id copy-on-write, as another writer
// would: the data file holding it is replaced by a copy without it.
func deleteCoW(t *testing.T, cat catalog.Catalog, ident table.Identifier, id int64) {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.Delete(t.Context(), iceberg.EqualTo(iceberg.Reference("id"), id), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// deletesTargetLiveFiles fails when a position-delete file the current
// snapshot added names a data file outside it (a delete of a row the
// index should have known was gone).
func (e *posEnv) deletesTargetLiveFiles() {
	e.t.Helper()
	tbl, err := e.cat.LoadTable(e.t.Context(), e.ident)
	if err != nil {
		e.t.Fatal(err)
	}
	data, _ := filesOf(e.t, tbl)
	cur := tbl.CurrentSnapshot()
	fsys, err := tbl.FS(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	mfs, err := cur.Manifests(fsys)
	if err != nil {
		e.t.Fatal(err)
	}
	added := 0
	for _, mf := range mfs {
		ents, err := mf.FetchEntries(fsys, true)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, en := range ents {
			d := en.DataFile()
			if d.ContentType() != iceberg.EntryContentPosDeletes || en.SnapshotID() != cur.SnapshotID || en.Status() != iceberg.EntryStatusADDED {
				continue
			}
			added++
			for _, b := range targetsOf(d) {
				if _, ok := data[b]; !ok {
					e.t.Errorf("position-delete file %s targets %q, which is not a live data file", d.FilePath(), b)
				}
			}
		}
	}
	if added == 0 {
		e.t.Error("the last commit added no position-delete file")
	}
}

// TestPositionIndexRebuiltAfterRollback rolls the table back past commits
// the index saw: the key those commits deleted is live again and must be
// found, which only a rebuild can do.
func TestPositionIndexRebuiltAfterRollback(t *testing.T) {
	forModes(t, testPositionIndexRebuiltAfterRollback)
}

func testPositionIndexRebuiltAfterRollback(t *testing.T, mode DeleteMode) {
	e := newPosEnv(t, mode, nil)
	c := e.committer()
	res := e.commit(c, batchOf(t, 0, op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}))
	e.commit(c, batchOf(t, 2, op{batch.OpDelete, 2, ""}, op{batch.OpUpdate, 1, "a2"}))
	e.expect(map[int64]string{1: "a2"})

	tbl, err := e.cat.LoadTable(t.Context(), e.ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(res.SnapshotID); err != nil {
		t.Fatal(err)
	}
	// The offsets go back with the table, as an operator rolling back
	// sets them (ingest/README.md, "Offsets storage").
	if err := tx.SetProperties(iceberg.Properties{OffsetsKeyPrefix + posTopic: `{"0":2}`}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.expect(map[int64]string{1: "a", 2: "b"})
	c = e.committer()
	e.commit(c, batchOf(t, 2, op{batch.OpUpdate, 2, "b2"}))
	e.expect(map[int64]string{1: "a", 2: "b2"})
}

// rewrite replaces every data file of the table by one file of its live
// rows, in one overwrite, as another writer would.
func rewrite(t *testing.T, cat catalog.Catalog, ident table.Identifier) {
	t.Helper()
	ctx := t.Context()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.OverwriteTable(ctx, at, 1024, iceberg.Properties{"writer": "compactor"}, table.WithOverwriteFilter(iceberg.AlwaysTrue{})); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPositionDeletesFollowTheFileSpec evolves the partition spec of a
// table that holds rows: the deletes of old rows must be written in the
// old spec and partition of the file that holds them, those of new rows
// in the new one.
func TestPositionDeletesFollowTheFileSpec(t *testing.T) {
	forModes(t, testPositionDeletesFollowTheFileSpec)
}

func testPositionDeletesFollowTheFileSpec(t *testing.T, mode DeleteMode) {
	spec := testtable.Bucket4()
	e := newPosEnv(t, mode, &spec)
	c := e.committer()
	e.commit(c, batchOf(t, 0, op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}, op{batch.OpCreate, 3, "c"}, op{batch.OpCreate, 5, "e"}))
	e.commit(c, batchOf(t, 4, op{batch.OpUpdate, 1, "a2"}))
	e.expect(map[int64]string{1: "a2", 2: "b", 3: "c", 5: "e"})

	testtable.Respec(t, e.cat, e.ident)
	c = e.committer()
	e.commit(c, batchOf(t, 5, op{batch.OpUpdate, 1, "a3"}, op{batch.OpUpdate, 2, "b2"}, op{batch.OpDelete, 5, ""}))
	e.expect(map[int64]string{1: "a3", 2: "b2", 3: "c"})
	e.commit(c, batchOf(t, 8, op{batch.OpUpdate, 1, "a4"}, op{batch.OpUpdate, 3, "c2"}))
	e.expect(map[int64]string{1: "a4", 2: "b2", 3: "c2"})

	// Every position-delete file is in the spec and partition of each
	// data file it targets.
	tbl, err := e.cat.LoadTable(t.Context(), e.ident)
	if err != nil {
		t.Fatal(err)
	}
	data, dels := filesOf(t, tbl)
	if len(dels) == 0 {
		t.Fatal("no position-delete files")
	}
	specs := map[int32]bool{}
	for _, d := range dels {
		// The targets' paths lie between file_path's bounds: both ends
		// name live data files of the delete file's spec and partition.
		for _, ref := range targetsOf(d) {
			df, ok := data[ref]
			if !ok {
				t.Fatalf("delete file %s targets %q, which is not a live data file", d.FilePath(), ref)
			}
			if d.SpecID() != df.SpecID() || partitionKey(d) != partitionKey(df) {
				t.Errorf("delete file in spec %d partition %v targets a data file in spec %d partition %v", d.SpecID(), d.Partition(), df.SpecID(), df.Partition())
			}
		}
		specs[d.SpecID()] = true
	}
	if len(specs) != 2 {
		t.Errorf("delete files in specs %v, want both the old and the new", specs)
	}
}

// targetsOf names the data files a delete file applies to, as far as its
// metadata tells: a deletion vector's referenced data file, or both ends
// of a position-delete file's file_path bounds.
func targetsOf(d iceberg.DataFile) []string {
	if ref := d.ReferencedDataFile(); ref != nil {
		return []string{*ref}
	}
	return []string{string(d.LowerBoundValues()[2147483546]), string(d.UpperBoundValues()[2147483546])}
}

// filesOf returns the live data files (by path) and delete files of the
// current snapshot.
func filesOf(t *testing.T, tbl *table.Table) (map[string]iceberg.DataFile, []iceberg.DataFile) {
	t.Helper()
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]iceberg.DataFile{}
	var dels []iceberg.DataFile
	for _, mf := range mfs {
		ents, err := mf.FetchEntries(fsys, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range ents {
			if df := en.DataFile(); df.ContentType() == iceberg.EntryContentData {
				data[df.FilePath()] = df
			} else {
				dels = append(dels, df)
			}
		}
	}
	return data, dels
}

type deleteFiles struct{ Equality, Position int }

// countDeleteFiles counts the distinct delete files that any snapshot of
// tbl (not only the current one) references, by kind.
func countDeleteFiles(tbl *table.Table) (deleteFiles, error) {
	var n deleteFiles
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		return n, err
	}
	seenManifest, seenFile := map[string]bool{}, map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		mfs, err := s.Manifests(fsys)
		if err != nil {
			return n, fmt.Errorf("snapshot %d: %w", s.SnapshotID, err)
		}
		for _, mf := range mfs {
			if seenManifest[mf.FilePath()] {
				continue
			}
			seenManifest[mf.FilePath()] = true
			ents, err := mf.FetchEntries(fsys, false)
			if err != nil {
				return n, err
			}
			for _, en := range ents {
				df := en.DataFile()
				if seenFile[df.FilePath()] {
					continue
				}
				seenFile[df.FilePath()] = true
				switch df.ContentType() {
				case iceberg.EntryContentEqDeletes:
					n.Equality++
				case iceberg.EntryContentPosDeletes:
					n.Position++
				case iceberg.EntryContentData:
				}
			}
		}
	}
	return n, nil
}

// TestAutoDeleteMode: delete-mode auto (ingest's default) deletes by
// position on a format v2 table and with deletion vectors on v3, by the
// table's own version, and never writes an equality delete.
func TestAutoDeleteMode(t *testing.T) {
	for _, tc := range []struct {
		version    DeleteMode // the mode whose table version newPosEnv creates
		want       DeleteMode
		wantPuffin bool
	}{{DeletePosition, DeletePosition, false}, {DeleteDV, DeleteDV, true}} {
		t.Run(string(tc.want), func(t *testing.T) {
			e := newPosEnv(t, tc.version, nil)
			e.mode = DeleteAuto
			c := e.committer()
			if c.cfg.DeleteMode != tc.want {
				t.Fatalf("auto on a format v%d table is %s, want %s", c.tbl.Metadata().Version(), c.cfg.DeleteMode, tc.want)
			}
			e.commit(c, batchOf(t, 0, op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}))
			e.commit(c, batchOf(t, 2, op{batch.OpUpdate, 1, "a2"}, op{batch.OpDelete, 2, ""}))
			e.expect(map[int64]string{1: "a2"})
			tbl, err := e.cat.LoadTable(t.Context(), e.ident)
			if err != nil {
				t.Fatal(err)
			}
			tasks, err := tbl.Scan().PlanFiles(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var parquet, puffin int
			for _, task := range tasks {
				for _, d := range append(append([]iceberg.DataFile{}, task.DeleteFiles...), task.DeletionVectorFiles...) {
					if d.FileFormat() == iceberg.PuffinFile {
						puffin++
					} else {
						parquet++
					}
				}
			}
			if tc.wantPuffin && (puffin == 0 || parquet != 0) || !tc.wantPuffin && (parquet == 0 || puffin != 0) {
				t.Fatalf("format v%d: %d Parquet delete files and %d deletion vectors apply, want only %s", tbl.Metadata().Version(), parquet, puffin, map[bool]string{true: "deletion vectors", false: "Parquet position deletes"}[tc.wantPuffin])
			}
		})
	}
}

// TestPositionDeleteGranularity: by default a commit writes one
// position-delete file per data file it targets, scoped to that file (a
// reader of a data file loads only its own deletes); with the table's
// write.delete.granularity=partition, one per partition.
func TestPositionDeleteGranularity(t *testing.T) {
	for _, tc := range []struct {
		granularity string
		want        int
		referenced  bool
	}{{"", 2, true}, {DeleteGranularityPartition, 1, false}} {
		t.Run("granularity="+tc.granularity, func(t *testing.T) {
			e := newPosEnv(t, DeletePosition, nil)
			if tc.granularity != "" {
				tbl, err := e.cat.LoadTable(t.Context(), e.ident)
				if err != nil {
					t.Fatal(err)
				}
				tx := tbl.NewTransaction()
				if err := tx.SetProperties(iceberg.Properties{DeleteGranularityKey: tc.granularity}); err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Commit(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			c := e.committer()
			e.commit(c, batchOf(t, 0, op{batch.OpCreate, 1, "a"}))
			e.commit(c, batchOf(t, 1, op{batch.OpCreate, 2, "b"}))
			e.commit(c, batchOf(t, 2, op{batch.OpUpdate, 1, "a2"}, op{batch.OpDelete, 2, ""}))
			e.expect(map[int64]string{1: "a2"})
			tbl, err := e.cat.LoadTable(t.Context(), e.ident)
			if err != nil {
				t.Fatal(err)
			}
			_, dels := filesOf(t, tbl)
			if len(dels) != tc.want {
				t.Fatalf("%d position-delete files, want %d", len(dels), tc.want)
			}
			// A file-scoped delete file names its one data file in its
			// file_path bounds (lower = upper), which is how readers of
			// format v2 tables skip the deletes of other files.
			for _, d := range dels {
				ends := targetsOf(d)
				if scoped := len(ends) == 1 || ends[0] == ends[1]; scoped != tc.referenced {
					t.Errorf("delete file %s: targets %v, want file-scoped: %v", d.FilePath(), ends, tc.referenced)
				}
			}
		})
	}
}

// TestIndexEqualsRebuilt: after commits of keys in shuffled order (creates,
// updates of random subsets, deletes), the key index as the commits kept it
// (on an unpartitioned table from the rows as they were written, on a
// partitioned one read back from the files) names for every key the same
// file and position as an index rebuilt from the table alone.
func TestIndexEqualsRebuilt(t *testing.T) {
	bucket4 := testtable.Bucket4()
	forModes(t, func(t *testing.T, mode DeleteMode) {
		for _, tc := range []struct {
			name string
			spec *iceberg.PartitionSpec
		}{
			{"unpartitioned", nil},
			{"bucket", &bucket4},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newPosEnv(t, mode, tc.spec)
				c := e.committer()
				const keys = 300
				rng := rand.New(rand.NewPCG(3, 4))
				want := map[int64]string{}
				off := int64(0)
				for round := range 6 {
					var ops []op
					for _, i := range rng.Perm(keys) {
						id := int64(i + 1)
						_, live := want[id]
						switch {
						case round > 0 && live && i%11 == round:
							ops = append(ops, op{batch.OpDelete, id, ""})
							delete(want, id)
						case round == 0 || i%3 == round%3:
							kind := batch.OpUpdate
							if !live {
								kind = batch.OpCreate
							}
							v := fmt.Sprintf("v%d-%d", id, round)
							ops = append(ops, op{kind, id, v})
							want[id] = v
						}
					}
					e.commit(c, batchOf(t, off, ops...))
					off += int64(len(ops))
				}
				e.expect(want)
				tbl, err := e.cat.LoadTable(t.Context(), e.ident)
				if err != nil {
					t.Fatal(err)
				}
				st, err := keyindex.Open(keyindex.Config{Dir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = st.Close() })
				rebuilt, err := st.Table(tbl.Metadata().TableUUID().String(), e.ident)
				if err != nil {
					t.Fatal(err)
				}
				if err := rebuilt.Sync(t.Context(), tbl); err != nil {
					t.Fatal(err)
				}
				b := array.NewInt64Builder(memory.DefaultAllocator)
				for id := int64(1); id <= keys; id++ {
					b.Append(id)
				}
				ids := b.NewArray()
				defer ids.Release()
				encoded, err := keyindex.EncodeKeys([]arrow.Array{ids})
				if err != nil {
					t.Fatal(err)
				}
				for i, k := range encoded {
					got, gotOK, err1 := c.idx.Lookup(k)
					re, reOK, err2 := rebuilt.Lookup(k)
					if err1 != nil || err2 != nil {
						t.Fatalf("key %d: %v, %v", i+1, err1, err2)
					}
					_, live := want[int64(i+1)]
					if gotOK != live || reOK != live || (live && (got.File.FilePath() != re.File.FilePath() || got.Pos != re.Pos)) {
						t.Errorf("key %d (live %v): the commits' index has %v %s@%d, the rebuilt one %v %s@%d", i+1, live,
							gotOK, got.File.FilePath(), got.Pos, reOK, re.File.FilePath(), re.Pos)
					}
				}
			})
		}
	})
}
