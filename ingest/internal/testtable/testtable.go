// Package testtable is the orders test table of ingest's integration
// tests (id long key, name string), and the readers that check it: a
// table created in a namespace of its own through a catalog, read back by
// iceberg-go, Iceberg's Java reference reader, pyiceberg and DuckDB, each
// failing on a key read twice.
package testtable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/icebergreader"
	"github.com/binlake/binlake/test/testenv"
)

// Create creates the orders table in format version with spec (nil:
// unpartitioned) in a namespace of its own named after nsPrefix and the
// test, dropped when the test ends.
func Create(t testing.TB, cat catalog.Catalog, nsPrefix string, version int, spec *iceberg.PartitionSpec) table.Identifier {
	t.Helper()
	ctx := t.Context()
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	ns := table.Identifier{testenv.Unique(t, nsPrefix)}
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

// Scan reads the table with iceberg-go, deletes applied: its first column
// is the long key, its second the string name.
func Scan(t testing.TB, cat catalog.Catalog, ident table.Identifier) map[int64]string {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	if tbl.CurrentSnapshot() == nil {
		return got
	}
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatalf("scanning: %v", err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		r := tr.RecordBatch()
		ids := r.Column(0).(*array.Int64)
		names := r.Column(1).(*array.String)
		for i := range int(r.NumRows()) {
			id := ids.Value(i)
			if _, dup := got[id]; dup {
				t.Fatalf("iceberg-go: key %d appears twice", id)
			}
			got[id] = names.Value(i)
		}
	}
	return got
}

// Java reads the table with Iceberg's Java reference reader.
func Java(t testing.TB, ident table.Identifier) map[int64]string {
	t.Helper()
	got := map[int64]string{}
	for _, r := range icebergreader.Read(t, ident[0]+"."+ident[1]) {
		id, err := strconv.ParseInt(Deref(r["id"]), 10, 64)
		if err != nil {
			t.Fatalf("java reader: id %q: %v", Deref(r["id"]), err)
		}
		if _, dup := got[id]; dup {
			t.Fatalf("java reader: key %d twice", id)
		}
		got[id] = Deref(r["name"])
	}
	return got
}

// Deref is a nullable value as the readers compare it ("<null>" for NULL).
func Deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
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

// PyIceberg reads the table with pyiceberg (0.12 refuses any table whose
// scan meets an equality delete: the error says "equality deletes").
func PyIceberg(t testing.TB, ident table.Identifier) (map[int64]string, error) {
	t.Helper()
	return pythonReader(t, "pyiceberg", pyScan, ident)
}

// DuckDB reads the table with DuckDB 1.5.5's iceberg extension.
func DuckDB(t testing.TB, ident table.Identifier) (map[int64]string, error) {
	t.Helper()
	return pythonReader(t, "duckdb", duckScan, ident)
}

// pythonReader runs script (one of the Python readers) on the table and
// returns its rows, failing on a key read twice.
func pythonReader(t testing.TB, reader, script string, ident table.Identifier) (map[int64]string, error) {
	t.Helper()
	testenv.IcebergEnv(t) // skips without the stack
	// stack.sh installs the readers in a venv and names its interpreter
	// BINLAKE_PYTHON; without it, python3 must have them itself.
	python := os.Getenv("BINLAKE_PYTHON")
	if python == "" {
		python = "python3"
	}
	out, err := exec.CommandContext(t.Context(), python, "-c", script, ident[0], ident[1]).Output()
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
		got[r.ID] = Deref(r.Name)
	}
	return got, nil
}
