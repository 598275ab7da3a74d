// Package testtable is the orders test table of ingest's integration
// tests (id long key, name string), and the readers that check it: a
// table created in a namespace of its own through a catalog, read back by
// iceberg-go, Iceberg's Java reference reader, pyiceberg and DuckDB, each
// failing on a key read twice.
package testtable

import (
	"context"
	"fmt"
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

// Bucket4 is the partition spec bucket(4, id), field id_bucket, that the
// partitioned orders tests write under.
func Bucket4() iceberg.PartitionSpec {
	return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}})
}

// Respec changes a Bucket4 table's spec to bucket(2, id), field
// id_bucket2: the rows already written stay under the old spec.
func Respec(t testing.TB, cat catalog.Catalog, ident table.Identifier) {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatalf("loading table %v: %v", ident, err)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSpec(true).RemoveField("id_bucket").AddField("id", iceberg.BucketTransform{NumBuckets: 2}, "id_bucket2").Commit(); err != nil {
		t.Fatalf("changing the spec of %v: %v", ident, err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatalf("committing the spec change of %v: %v", ident, err)
	}
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
	got, err := read(t, "java", ident)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// PyIceberg reads the table with pyiceberg (0.12 refuses any table whose
// scan meets an equality delete: the error says "equality deletes").
func PyIceberg(t testing.TB, ident table.Identifier) (map[int64]string, error) {
	t.Helper()
	return read(t, "pyiceberg", ident)
}

// DuckDB reads the table with DuckDB 1.5.5's iceberg extension.
func DuckDB(t testing.TB, ident table.Identifier) (map[int64]string, error) {
	t.Helper()
	return read(t, "duckdb", ident)
}

// read reads the table with one of icebergreader.Readers, failing on a key
// read twice.
func read(t testing.TB, reader string, ident table.Identifier) (map[int64]string, error) {
	t.Helper()
	testenv.IcebergEnv(t) // skips without the stack
	rows, err := icebergreader.ReadWith(reader, ident[0]+"."+ident[1])
	if err != nil {
		return nil, err
	}
	got := map[int64]string{}
	for _, r := range rows {
		id, err := strconv.ParseInt(Deref(r["id"]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s reader: id %q: %v", reader, Deref(r["id"]), err)
		}
		if _, dup := got[id]; dup {
			return nil, fmt.Errorf("%s reader: key %d twice", reader, id)
		}
		got[id] = Deref(r["name"])
	}
	return got, nil
}

// Deref is a nullable value as the readers compare it ("<null>" for NULL).
func Deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
