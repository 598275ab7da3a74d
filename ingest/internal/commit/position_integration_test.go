//go:build integration

package commit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/keyindex"
	"github.com/binlake/binlake/test/icebergreader"
	"github.com/binlake/binlake/test/testenv"
)

// TestPositionModeReaders writes through the REST catalog and MinIO in
// position mode (format v2) and dv mode (format v3) (inserts, updates, deletes, key changes, re-inserts, keys
// updated in many commits, a restart with the index removed), then checks
// that no snapshot ever held an equality delete and that the Java
// reference reader, pyiceberg 0.12 (which refuses equality deletes) and
// DuckDB 1.5.5's iceberg extension each read exactly the expected rows.
func TestPositionModeReaders(t *testing.T) {
	bucket4 := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}})
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
			ident := createPositionTable(t, cat, version, tc.spec)
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

			java := map[int64]string{}
			for _, r := range icebergreader.Read(t, ident[0]+"."+ident[1]) {
				id, err := strconv.ParseInt(deref(r["id"]), 10, 64)
				if err != nil {
					t.Fatalf("java reader: id %q: %v", deref(r["id"]), err)
				}
				if _, dup := java[id]; dup {
					t.Fatalf("java reader: key %d twice", id)
				}
				java[id] = deref(r["name"])
			}
			if d := cmp.Diff(want, java); d != "" {
				t.Errorf("java reader rows (-want +got):\n%s", d)
			}
			if d := cmp.Diff(want, readPyIceberg(t, ident)); d != "" {
				t.Errorf("pyiceberg rows (-want +got):\n%s", d)
			}
			if d := cmp.Diff(want, readDuckDB(t, ident)); d != "" {
				t.Errorf("duckdb rows (-want +got):\n%s", d)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// createPositionTable creates the orders table (id long key, name string)
// with spec (nil: unpartitioned) in a namespace of its own.
func createPositionTable(t *testing.T, cat catalog.Catalog, version int, spec *iceberg.PartitionSpec) table.Identifier {
	t.Helper()
	ctx := t.Context()
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	ns := table.Identifier{testenv.Unique(t, "posdel")}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	ident := table.Identifier{ns[0], "orders"}
	opts := []catalog.CreateTableOpt{catalog.WithProperties(iceberg.Properties{"format-version": strconv.Itoa(version)})}
	if spec != nil {
		opts = append(opts, catalog.WithPartitionSpec(spec))
	}
	if _, err := cat.CreateTable(ctx, ident, sch, opts...); err != nil {
		t.Fatalf("creating table: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = cat.DropTable(ctx, ident)
		_ = cat.DropNamespace(ctx, ns)
	})
	return ident
}

// pyScan reads a table with pyiceberg and prints its rows as JSON lines.
const pyScan = `
import json, os, sys
from pyiceberg.catalog import load_catalog
cat = load_catalog("rest", **{
    "type": "rest",
    "uri": os.environ["BINLAKE_ICEBERG_URI"],
    "s3.endpoint": os.environ["BINLAKE_S3_ENDPOINT"],
    "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
    "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"],
    "s3.region": os.environ["AWS_REGION"],
})
tbl = cat.load_table((sys.argv[1], sys.argv[2]))
for row in tbl.scan().to_arrow().to_pylist():
    print(json.dumps(row))
`

// duckScan reads a table with DuckDB's iceberg extension through the REST
// catalog and prints its rows as JSON lines. DuckDB cannot download
// extensions here: stack.sh installs them from PyPI and they are loaded by
// path, avro and httpfs before iceberg.
const duckScan = `
import glob, json, os, site, sys, urllib.parse
import duckdb
con = duckdb.connect()
exts = []
for d in site.getsitepackages():
    exts += glob.glob(os.path.join(d, "duckdb_extension_*", "extensions", "*", "*.duckdb_extension"))
if len(exts) != 3:
    sys.exit("want the iceberg, avro and httpfs extensions, found %s" % exts)
for e in sorted(exts, key=lambda p: os.path.basename(p).startswith("iceberg")):
    con.execute("LOAD '%s'" % e)
ep = urllib.parse.urlparse(os.environ["BINLAKE_S3_ENDPOINT"])
con.execute("CREATE SECRET s3 (TYPE s3, KEY_ID ?, SECRET ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?, REGION ?)",
            [os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"], ep.netloc, ep.scheme == "https", os.environ["AWS_REGION"]])
con.execute("ATTACH 'warehouse' AS ice (TYPE iceberg, ENDPOINT ?, AUTHORIZATION_TYPE 'none')", [os.environ["BINLAKE_ICEBERG_URI"]])
q = lambda n: '"' + n.replace('"', '""') + '"'
for id_, name in con.execute("SELECT id, name FROM ice.%s.%s" % (q(sys.argv[1]), q(sys.argv[2]))).fetchall():
    print(json.dumps({"id": id_, "name": name}))
`

// readPyIceberg reads the table with pyiceberg (0.12 refuses any table
// whose scan meets an equality delete).
func readPyIceberg(t *testing.T, ident table.Identifier) map[int64]string {
	t.Helper()
	got, err := pyIceberg(t, ident)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func pyIceberg(t *testing.T, ident table.Identifier) (map[int64]string, error) {
	t.Helper()
	return pythonReader(t, "pyiceberg", pyScan, ident)
}

// readDuckDB reads the table with DuckDB 1.5.5's iceberg extension.
func readDuckDB(t *testing.T, ident table.Identifier) map[int64]string {
	t.Helper()
	got, err := pythonReader(t, "duckdb", duckScan, ident)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// pythonReader runs script (one of the Python readers) on the table and
// returns its rows, id → name, failing on a key read twice.
func pythonReader(t *testing.T, reader, script string, ident table.Identifier) (map[int64]string, error) {
	t.Helper()
	testenv.IcebergEnv(t) // skips without the stack
	// stack.sh installs the readers in a venv and names its interpreter
	// BINLAKE_PYTHON; without it, python3 must have them itself.
	python := os.Getenv("BINLAKE_PYTHON")
	if python == "" {
		python = "python3"
	}
	cmd := exec.CommandContext(t.Context(), python, "-c", script, ident[0], ident[1])
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("%s: %w\n%s", reader, err, ee.Stderr)
		}
		return nil, fmt.Errorf("%s with %s (deploy/local/stack.sh up installs it and exports BINLAKE_PYTHON): %w", reader, python, err)
	}
	got := map[int64]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var r struct {
			ID   int64   `json:"id"`
			Name *string `json:"name"`
		}
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s output: %w\n%s", reader, err, out)
		}
		if _, dup := got[r.ID]; dup {
			return nil, fmt.Errorf("%s: key %d twice", reader, r.ID)
		}
		got[r.ID] = deref(r.Name)
	}
	return got, nil
}

// TestPyIcebergRefusesEqualityDeletes is the control of
// TestPositionModeReaders: the same reader fails on a table written in
// equality mode, so its success there proves no equality delete is met.
func TestPyIcebergRefusesEqualityDeletes(t *testing.T) {
	cat := connect(t, "")
	ident := createPositionTable(t, cat, 2, nil)
	c, err := New(t.Context(), cat, ident, Config{DeleteMode: DeleteEquality})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, c, fill(t, 0, op{batch.OpCreate, 1, "a"}, op{batch.OpCreate, 2, "b"}))
	mustCommit(t, c, fill(t, 2, op{batch.OpUpdate, 1, "a2"}))
	_, err = pyIceberg(t, ident)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("equality deletes")) {
		t.Fatalf("pyiceberg read an equality-delete table: error %v, want one about equality deletes", err)
	}
}
