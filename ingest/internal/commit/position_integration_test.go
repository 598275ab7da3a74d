//go:build integration

package commit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/keyindex"
	"github.com/binlake/binlake/ingest/internal/testtable"
)

// TestPositionModeReaders writes through the REST catalog and MinIO in
// position mode (format v2) and dv mode (format v3) (inserts, updates, deletes, key changes, re-inserts, keys
// updated in many commits, a restart with the index removed), then checks
// that no snapshot ever held an equality delete and that the Java
// reference reader, pyiceberg 0.12 (which refuses equality deletes) and
// DuckDB 1.5.5's iceberg extension each read exactly the expected rows.
func TestPositionModeReaders(t *testing.T) {
	bucket4 := testtable.Bucket4()
	for _, tc := range []struct {
		name string
		mode DeleteMode
		spec *iceberg.PartitionSpec
	}{
		{"position/unpartitioned", DeletePosition, nil},
		{"position/bucket4", DeletePosition, &bucket4},
		{"dv/unpartitioned", DeleteDV, nil},
		{"dv/bucket4", DeleteDV, &bucket4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := connect(t, "")
			version := 2
			if tc.mode == DeleteDV {
				version = 3
			}
			ident := testtable.Create(t, cat, "posdel", version, tc.spec)
			dir := filepath.Join(t.TempDir(), "state")
			open := func() (*keyindex.Store, *Committer) {
				st, err := keyindex.Open(keyindex.Config{Dir: dir})
				if err != nil {
					t.Fatal(err)
				}
				c, err := New(t.Context(), cat, ident, Config{DeleteMode: tc.mode, Index: st})
				if err != nil {
					t.Fatal(err)
				}
				return st, c
			}
			st, c := open()
			want := map[int64]string{}
			apply := func(ops ...op) {
				for _, o := range ops {
					switch o.op {
					case batch.OpDelete:
						delete(want, o.id)
					default:
						want[o.id] = o.name
					}
				}
			}
			off := int64(0)
			step := func(ops ...op) {
				t.Helper()
				mustCommit(t, c, fill(t, off, ops...))
				off += int64(len(ops))
				apply(ops...)
			}
			var first []op
			for i := int64(1); i <= 40; i++ {
				first = append(first, op{batch.OpCreate, i, fmt.Sprintf("n%d", i)})
			}
			step(first...)
			step(op{batch.OpUpdate, 1, "u1"}, op{batch.OpDelete, 2, ""}, op{batch.OpDelete, 3, ""}, op{batch.OpCreate, 300, "n3"},
				op{batch.OpCreate, 41, "x"}, op{batch.OpDelete, 41, ""})
			for i := range 6 {
				step(op{batch.OpUpdate, 1, fmt.Sprintf("u1-%d", i)}, op{batch.OpUpdate, int64(10 + i), fmt.Sprintf("u%d", 10+i)})
			}
			step(op{batch.OpCreate, 2, "back"}, op{batch.OpDelete, 300, ""}, op{batch.OpCreate, 3, "n3"})
			// A restart whose index is gone: rebuilt from the table.
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			st, c = open()
			t.Cleanup(func() { _ = st.Close() })
			step(op{batch.OpUpdate, 2, "back2"}, op{batch.OpDelete, 4, ""}, op{batch.OpUpdate, 20, "u20"})

			expect(t, cat, ident, want)
			tbl, err := cat.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			n, err := countDeleteFiles(tbl)
			if err != nil {
				t.Fatal(err)
			}
			if n.Equality != 0 || n.Position == 0 {
				t.Fatalf("the table's snapshots hold %d equality-delete and %d position-delete files; want none and some", n.Equality, n.Position)
			}

			if d := cmp.Diff(want, testtable.Java(t, ident)); d != "" {
				t.Errorf("java reader rows (-want +got):\n%s", d)
			}
			for _, r := range []struct {
				name string
				read func(testing.TB, table.Identifier) (map[int64]string, error)
			}{{"pyiceberg", testtable.PyIceberg}, {"duckdb", testtable.DuckDB}} {
				got, err := r.read(t, ident)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s rows (-want +got):\n%s", r.name, d)
				}
			}
		})
	}
}

// TestPyIcebergRefusesEqualityDeletes is the control of
// TestPositionModeReaders: the same reader fails on a table written in
// equality mode, so its success there proves no equality delete is met.
func TestPyIcebergRefusesEqualityDeletes(t *testing.T) {
	cat := connect(t, "")
	ident := testtable.Create(t, cat, "posdel", 2, nil)
	c, err := New(t.Context(), cat, ident, Config{DeleteMode: DeleteEquality})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, c, fill(t, 0, op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}))
	mustCommit(t, c, fill(t, 2, op{batch.OpUpdate, 1, "a2"}))
	_, err = testtable.PyIceberg(t, ident)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("equality deletes")) {
		t.Fatalf("pyiceberg read an equality-delete table: error %v, want one about equality deletes", err)
	}
}
