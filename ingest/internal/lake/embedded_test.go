package lake

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestEmbeddedCatalog: the embedded catalog lives in the state directory
// (catalog.db, tables under warehouse/, the key index in keyindex/, so
// that removing a corrupt index cannot remove the catalog), says so at
// start, keeps its tables across a reopen under another catalog-name, and
// a REST-catalog ingest refuses its state directory for its key index.
func TestEmbeddedCatalog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	cfg := CatalogConfig{StateDir: dir, CatalogName: "one"}
	cat, err := Open(t.Context(), cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	wantFile := filepath.Join(dir, "catalog.db")
	wantWarehouse := "file://" + filepath.Join(dir, "warehouse")
	for _, want := range []string{"embedded catalog", "catalog_file=" + wantFile, "warehouse=" + wantWarehouse} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("start log %q lacks %q", logs.String(), want)
		}
	}
	ident := table.Identifier{"shop", "orders"}
	if err := cat.CreateNamespace(t.Context(), table.Identifier{"shop"}, nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1}, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(t.Context(), ident, sch)
	if err != nil {
		t.Fatal(err)
	}
	if loc := tbl.MetadataLocation(); !strings.HasPrefix(loc, wantWarehouse+"/") {
		t.Errorf("metadata at %s, want it under %s", loc, wantWarehouse)
	}
	Close(cat, logger)
	if _, err := os.Stat(wantFile); err != nil {
		t.Fatalf("no catalog file: %v", err)
	}

	// Reopened under another name (catalog-name names the catalog in logs).
	cfg.CatalogName = "two"
	cat, err = Open(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.LoadTable(t.Context(), ident); err != nil {
		t.Errorf("the table is gone after a reopen: %v", err)
	}
	Close(cat, logger)

	base, err := cfg.IndexBase()
	if err != nil || base != filepath.Join(dir, "keyindex") {
		t.Errorf("key index in %q (%v), want %s/keyindex", base, err, dir)
	}
	rest := CatalogConfig{CatalogURI: "http://c:8181", StateDir: dir}
	if _, err := rest.IndexBase(); err == nil || !strings.Contains(err.Error(), "holds an embedded catalog") {
		t.Errorf("a REST ingest took the embedded catalog's state-dir for its key index: %v", err)
	}
	rest.StateDir = t.TempDir()
	if base, err := rest.IndexBase(); err != nil || base != filepath.Join(rest.StateDir, "keyindex") {
		t.Errorf("REST key index in %q (%v), want %s/keyindex (a directory of its own)", base, err, rest.StateDir)
	}
}

// TestEmbeddedCatalogOwnWarehouse: a warehouse naming a local directory
// holds the embedded catalog's tables instead of <state-dir>/warehouse.
func TestEmbeddedCatalogOwnWarehouse(t *testing.T) {
	dir := t.TempDir()
	wh := filepath.Join(t.TempDir(), "lake")
	cat, err := Open(context.Background(), CatalogConfig{StateDir: dir, Warehouse: wh}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer Close(cat, slog.New(slog.DiscardHandler))
	if err := cat.CreateNamespace(t.Context(), table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	tbl, err := cat.CreateTable(t.Context(), table.Identifier{"db", "t"}, sch)
	if err != nil {
		t.Fatal(err)
	}
	if loc := tbl.MetadataLocation(); !strings.HasPrefix(loc, "file://"+wh+"/") {
		t.Errorf("metadata at %s, want it under the warehouse %s", loc, wh)
	}
	if _, err := os.Stat(filepath.Join(dir, "warehouse")); !os.IsNotExist(err) {
		t.Errorf("<state-dir>/warehouse made although warehouse names another directory (%v)", err)
	}
}

// TestEmbeddedCatalogConflict: a commit from a base another writer has
// moved past is table.ErrCommitFailed, as the REST catalog's 409 is (a
// conflict to the committer and to maintenance, not an ambiguous
// outcome), also through the tables the catalog loads; the first writer's
// rows are there once.
func TestEmbeddedCatalogConflict(t *testing.T) {
	cat, err := Open(t.Context(), CatalogConfig{StateDir: t.TempDir()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer Close(cat, slog.New(slog.DiscardHandler))
	ident := table.Identifier{"db", "t"}
	if err := cat.CreateNamespace(t.Context(), table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := cat.CreateTable(t.Context(), ident, sch); err != nil {
		t.Fatal(err)
	}
	rows := func(ids ...int64) arrow.Table {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(ids, nil)
		col := b.NewArray()
		defer col.Release()
		as := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
		rec := array.NewRecordBatch(as, []arrow.Array{col}, int64(len(ids)))
		defer rec.Release()
		return array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
	}
	first, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	second, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	a := rows(1, 2)
	defer a.Release()
	if _, err := first.AppendTable(t.Context(), a, 10, nil); err != nil {
		t.Fatal(err)
	}
	b := rows(3)
	defer b.Release()
	tx := second.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		t.Fatal(err)
	}
	if err := tx.AppendTable(t.Context(), b, 10, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("a commit from a stale base: %v, want table.ErrCommitFailed", err)
	}
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	if n := tbl.CurrentSnapshot().Summary.Properties["total-records"]; n != "2" {
		t.Errorf("the table holds %s records, want the first writer's 2", n)
	}
}
