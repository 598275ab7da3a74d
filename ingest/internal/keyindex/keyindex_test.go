package keyindex

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/pebble/v2"
)

func build(t *testing.T, dt arrow.DataType, vals ...any) arrow.Array {
	t.Helper()
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	for _, v := range vals {
		switch bb := b.(type) {
		case *array.Int32Builder:
			bb.Append(v.(int32))
		case *array.Int64Builder:
			bb.Append(v.(int64))
		case *array.StringBuilder:
			bb.Append(v.(string))
		case *array.LargeStringBuilder:
			bb.Append(v.(string))
		default:
			t.Fatalf("no builder for %s", dt)
		}
	}
	return b.NewArray()
}

func keys(t *testing.T, cols ...arrow.Array) [][]byte {
	t.Helper()
	k, err := EncodeKeys(cols)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestEncodeKeys: the same key in another Arrow layout (a widened int
// column, a large string) encodes the same; composite keys do not run
// into each other.
func TestEncodeKeys(t *testing.T) {
	a := keys(t, build(t, arrow.PrimitiveTypes.Int32, int32(7)))
	b := keys(t, build(t, arrow.PrimitiveTypes.Int64, int64(7)))
	if !bytes.Equal(a[0], b[0]) {
		t.Errorf("int32 7 and int64 7 encode differently")
	}
	s := keys(t, build(t, arrow.BinaryTypes.String, "x"))
	ls := keys(t, build(t, arrow.BinaryTypes.LargeString, "x"))
	if !bytes.Equal(s[0], ls[0]) {
		t.Errorf("string and large string encode differently")
	}
	c := keys(t, build(t, arrow.BinaryTypes.String, "a", "ab"), build(t, arrow.BinaryTypes.String, "bc", "c"))
	if bytes.Equal(c[0], c[1]) {
		t.Errorf(`("a","bc") and ("ab","c") encode the same`)
	}
	n := keys(t, build(t, arrow.PrimitiveTypes.Int64, int64(1)))
	if bytes.Equal(n[0], s[0]) {
		t.Errorf("different types encode the same")
	}
}

// TestDirtyIndexIsWiped: an index left marked dirty (a crash during a
// catch-up) comes back empty, for the next Sync to rebuild.
func TestDirtyIndexIsWiped(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	x, err := st.Table("00000000-0000-0000-0000-000000000001", nil)
	if err != nil {
		t.Fatal(err)
	}
	df, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "s3://b/t/data/f.parquet", iceberg.ParquetFile, nil, nil, nil, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	x.loaded = true // as after a Sync of a table without snapshots
	if err := x.Apply(&table.Snapshot{SnapshotID: 5, SequenceNumber: 1}, nil, nil, []Added{{File: df.Build(), Keys: [][]byte{[]byte("k")}}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := x.Lookup([]byte("k")); err != nil || !ok {
		t.Fatalf("lookup after apply: %v %v", ok, err)
	}
	reopen := func() *Index {
		t.Helper()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if st, err = Open(Config{Dir: dir}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		x, err := st.Table("00000000-0000-0000-0000-000000000001", nil)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	x = reopen()
	if x.Snapshot() != 5 || len(x.files) != 1 {
		t.Fatalf("reopened index at snapshot %d with %d files; want 5 and 1", x.Snapshot(), len(x.files))
	}
	x.meta.Dirty = true
	if err := x.commit(func(*pebble.Batch) error { return nil }); err != nil {
		t.Fatal(err)
	}
	x = reopen()
	if x.Snapshot() != 0 || len(x.files) != 0 {
		t.Fatalf("dirty index reopened at snapshot %d with %d files; want it wiped", x.Snapshot(), len(x.files))
	}
	v, closer, err := x.db.Get(x.key(spaceKey, []byte("k")))
	if err == nil {
		closer.Close()
		t.Fatalf("key entry %x survived the wipe", v)
	}
}

// TestLockedStoreIsNotRemoved: a state-dir in use is refused, never taken
// for corrupt and wiped.
func TestLockedStoreIsNotRemoved(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x, err := st.Table("00000000-0000-0000-0000-000000000002", nil)
	if err != nil {
		t.Fatal(err)
	}
	x.loaded = true
	if err := x.Apply(&table.Snapshot{SnapshotID: 7, SequenceNumber: 1}, nil, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Dir: dir}); err == nil {
		t.Fatal("a second Open of a store in use succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "LOCK")); err != nil {
		t.Fatalf("the store in use was removed: %v", err)
	}
	if x.Snapshot() != 7 {
		t.Fatalf("index at snapshot %d after the refused Open, want 7", x.Snapshot())
	}
}

// TestPrune: the indexes of tables dropped, or dropped and created again
// under their name, are removed; those of live tables, of tables in use,
// of tables the catalog did not answer for and of unnamed tables stay.
func TestPrune(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	df, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "s3://b/t/data/f.parquet", iceberg.ParquetFile, nil, nil, nil, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	const (
		live      = "00000000-0000-0000-0000-00000000000a"
		recreated = "00000000-0000-0000-0000-00000000000b"
		inUse     = "00000000-0000-0000-0000-00000000000c"
		unnamed   = "00000000-0000-0000-0000-00000000000d"
		noAnswer  = "00000000-0000-0000-0000-00000000000e"
		dropped   = "00000000-0000-0000-0000-00000000000f"
	)
	names := map[string][]string{live: {"db", "a"}, recreated: {"db", "b"}, inUse: {"db", "c"}, noAnswer: {"db", "e"}, dropped: {"a.b", "f"}}
	for _, id := range []string{live, recreated, inUse, unnamed, noAnswer, dropped} {
		x, err := st.Table(id, names[id])
		if err != nil {
			t.Fatal(err)
		}
		x.loaded = true
		if err := x.Apply(&table.Snapshot{SnapshotID: 5, SequenceNumber: 1}, nil, nil, []Added{{File: df.Build(), Keys: [][]byte{[]byte("k" + id)}}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = Open(Config{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Table(inUse, names[inUse]); err != nil {
		t.Fatal(err)
	}
	tables, err := st.Tables()
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 6 {
		t.Fatalf("Tables() = %v, want the 6 indexed tables", tables)
	}
	asked := map[string]bool{}
	n, err := st.Prune(t.Context(), func(_ context.Context, name []string) (string, bool, error) {
		asked[strings.Join(name, "|")] = true
		switch strings.Join(name, "|") {
		case "db|a":
			return live, true, nil
		case "db|b":
			return "00000000-0000-0000-0000-0000000000bb", true, nil
		case "db|e":
			return "", false, errors.New("catalog unavailable")
		case "a.b|f":
			return "", false, nil
		}
		t.Errorf("asked for %v", name)
		return "", false, nil
	})
	if err != nil || n != 2 {
		t.Fatalf("Prune removed %d (%v), want 2", n, err)
	}
	if asked["db|c"] {
		t.Error("Prune asked about a table whose index is in use")
	}
	tables, err = st.Tables()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, tb := range tables {
		left = append(left, tb.UUID)
	}
	slices.Sort(left)
	if want := []string{live, inUse, unnamed, noAnswer}; !slices.Equal(left, want) {
		t.Fatalf("indexes left %v, want %v", left, want)
	}
	for _, id := range []string{recreated, dropped} {
		x, err := st.Table(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := x.Lookup([]byte("k" + id)); ok || x.Snapshot() != 0 {
			t.Errorf("%s: the removed index still answers (snapshot %d)", id, x.Snapshot())
		}
	}
	if err := st.Drop(inUse); err == nil {
		t.Error("Drop of an index in use succeeded")
	}
}

// TestAdopt: a store kept at a state dir's root beside other files moves
// into its own directory with what it held; the other files stay; a store
// another process holds is not moved.
func TestAdopt(t *testing.T) {
	root := t.TempDir()
	other := filepath.Join(root, "OPTIONS-notes.txt")
	if err := os.WriteFile(other, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := Open(Config{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	x, err := st.Table("00000000-0000-0000-0000-000000000003", nil)
	if err != nil {
		t.Fatal(err)
	}
	x.loaded = true
	if err := x.Apply(&table.Snapshot{SnapshotID: 9, SequenceNumber: 1}, nil, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	into := filepath.Join(root, "keyindex")
	if err := Adopt(root, into, nil); !errors.Is(err, ErrInUse) {
		t.Errorf("Adopt of a store in use: %v, want ErrInUse", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Adopt(root, into, nil); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.Name() != "keyindex" && e.Name() != "OPTIONS-notes.txt" {
			t.Errorf("left at the root: %s", e.Name())
		}
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "mine" {
		t.Errorf("the other file: %q, %v", b, err)
	}
	st, err = Open(Config{Dir: into})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if x, err = st.Table("00000000-0000-0000-0000-000000000003", nil); err != nil {
		t.Fatal(err)
	}
	if x.Snapshot() != 9 {
		t.Errorf("the moved index is at snapshot %d, want 9", x.Snapshot())
	}
	// Nothing at the root any more: a second Adopt does nothing.
	if err := Adopt(root, into, nil); err != nil {
		t.Error(err)
	}
}

// openTable opens a store in dir and the index of table id in it, as
// after a Sync of a table without snapshots; the store is closed when the
// test ends.
func openTable(tb testing.TB, dir, id string) (*Store, *Index) {
	tb.Helper()
	st, err := Open(Config{Dir: dir})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	x, err := st.Table(id, nil)
	if err != nil {
		tb.Fatal(err)
	}
	x.loaded = true
	return st, x
}

// dataFile describes an unpartitioned Parquet data file of rows rows.
func dataFile(tb testing.TB, name string, rows int64) iceberg.DataFile {
	tb.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "s3://b/t/data/"+name+".parquet", iceberg.ParquetFile, nil, nil, nil, rows, 100)
	if err != nil {
		tb.Fatal(err)
	}
	return b.Build()
}

// next is the snapshot a commit makes on top of the one x reflects.
func next(x *Index) *table.Snapshot {
	s := &table.Snapshot{SnapshotID: x.meta.Snapshot + 1, SequenceNumber: x.meta.Snapshot + 1}
	if x.meta.Snapshot != 0 {
		parent := x.meta.Snapshot
		s.ParentSnapshotID = &parent
	}
	return s
}

// TestApplyRewrite: after a rewrite of files a and b (a's live key k1
// moved to c), a removed key whose entry still names a removed file loses
// it (k2, deleted by another writer), one that names a file the rewrite
// kept stays (k3, updated into d before), and the moved key names its new
// file and position; the removed files are gone from the index. The keys
// come unsorted and with a duplicate (a key in both removed files).
func TestApplyRewrite(t *testing.T) {
	_, x := openTable(t, t.TempDir(), "00000000-0000-0000-0000-000000000002")
	a, b, c, d := dataFile(t, "a", 2), dataFile(t, "b", 2), dataFile(t, "c", 1), dataFile(t, "d", 1)
	k := func(s string) []byte { return []byte(s) }
	if err := x.Apply(next(x), nil, nil,
		[]Added{{File: a, Keys: [][]byte{k("k1"), k("k3")}}, {File: b, Keys: [][]byte{k("k2"), k("k4")}}}, nil); err != nil {
		t.Fatal(err)
	}
	// k3 updated into d; k4 deleted by ingest.
	if err := x.Apply(next(x), [][]byte{k("k3"), k("k4")}, map[string]int{a.FilePath(): 1, b.FilePath(): 1},
		[]Added{{File: d, Keys: [][]byte{k("k3")}}}, nil); err != nil {
		t.Fatal(err)
	}
	ok, err := x.ApplyRewrite(next(x),
		[]string{a.FilePath(), b.FilePath()}, [][]byte{k("k3"), k("k2"), k("k1"), k("k4"), k("k3")}, []Added{{File: c, Keys: [][]byte{k("k1")}}})
	if err != nil || !ok {
		t.Fatalf("ApplyRewrite: %v %v", ok, err)
	}
	for key, want := range map[string]string{"k1": c.FilePath(), "k2": "", "k3": d.FilePath(), "k4": ""} {
		loc, found, err := x.Lookup(k(key))
		switch {
		case err != nil:
			t.Errorf("%s: %v", key, err)
		case want == "" && found:
			t.Errorf("%s: still names %s at %d", key, loc.File.FilePath(), loc.Pos)
		case want != "" && (!found || loc.File.FilePath() != want || loc.Pos != 0):
			t.Errorf("%s: found=%v at %v; want %s position 0", key, found, loc, want)
		}
	}
	if x.Snapshot() != 3 || x.byPath[a.FilePath()] != nil || x.byPath[b.FilePath()] != nil || len(x.files) != 2 {
		t.Errorf("index at snapshot %d with %d files (a kept: %v, b kept: %v); want 3, 2 files, a and b gone",
			x.Snapshot(), len(x.files), x.byPath[a.FilePath()] != nil, x.byPath[b.FilePath()] != nil)
	}
	if x.Unnamed(c.FilePath()) {
		t.Error("c, holding k1, is unnamed")
	}
}

// TestUnnamed: a file the index added is unnamed once the commits that
// removed its keys' entries said so (and not before); a file the index
// loaded from disk (its entries not counted) never is.
func TestUnnamed(t *testing.T) {
	dir := t.TempDir()
	const id = "00000000-0000-0000-0000-000000000003"
	st, x := openTable(t, dir, id)
	a := dataFile(t, "a", 2)
	if err := x.Apply(next(x), nil, nil, []Added{{File: a, Keys: [][]byte{[]byte("k1"), []byte("k2")}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := x.Apply(next(x), [][]byte{[]byte("k1")}, map[string]int{a.FilePath(): 1}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if x.Unnamed(a.FilePath()) {
		t.Fatal("unnamed with k2's entry left")
	}
	if err := x.Apply(next(x), [][]byte{[]byte("k2")}, map[string]int{a.FilePath(): 1}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !x.Unnamed(a.FilePath()) {
		t.Fatal("named after both keys' entries were removed")
	}
	if x.Unnamed("s3://b/t/data/other.parquet") {
		t.Fatal("a file the index does not hold is unnamed")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, x = openTable(t, dir, id); x.Unnamed(a.FilePath()) {
		t.Fatal("a file loaded from disk, its entries not counted, is unnamed")
	}
}
