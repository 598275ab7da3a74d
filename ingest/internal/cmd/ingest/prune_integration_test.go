//go:build integration

package ingest

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/keyindex"
	"github.com/binlake/binlake/ingest/internal/testtable"
	"github.com/binlake/binlake/test/testenv"
)

// TestPruneIndexesREST: after a restart, the key indexes of a table
// dropped from the REST catalog and of one dropped and created again under
// its name are removed; the index of the table still there is kept and
// still answers.
func TestPruneIndexesREST(t *testing.T) {
	env := testenv.IcebergEnv(t)
	ctx := t.Context()
	cat, err := rest.NewCatalog(ctx, "test", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, err := keyindex.Open(keyindex.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	uuids := map[string]string{}
	var idents []table.Identifier
	var schema *iceberg.Schema
	for _, name := range []string{"kept", "dropped", "recreated"} {
		ident := testtable.Create(t, cat, "prune_"+name, 2, nil)
		idents = append(idents, ident)
		c, err := commit.New(ctx, cat, ident, commit.Config{DeleteMode: commit.DeletePosition, Index: st})
		if err != nil {
			t.Fatal(err)
		}
		b, err := batch.New([]string{"id", "name"}, []string{"id"}, batch.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Add(batch.Event{Op: batch.OpCreate, Topic: "p.db.orders", Key: []any{int64(1)}, Row: []any{int64(1), "one"}}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Commit(ctx, b); err != nil {
			t.Fatal(err)
		}
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		uuids[name], schema = tbl.Metadata().TableUUID().String(), tbl.Schema()
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cat.DropTable(ctx, idents[1]); err != nil {
		t.Fatal(err)
	}
	if err := cat.DropTable(ctx, idents[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateTable(ctx, idents[2], schema, catalog.WithProperties(iceberg.Properties{"format-version": "2"})); err != nil {
		t.Fatal(err)
	}

	if st, err = keyindex.Open(keyindex.Config{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := st.Prune(ctx, tableUUIDs(cat))
	if err != nil || n != 2 {
		t.Fatalf("Prune removed %d indexes (%v), want 2 (the dropped and the recreated table's)", n, err)
	}
	tables, err := st.Tables()
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || tables[0].UUID != uuids["kept"] {
		t.Fatalf("indexes left %+v, want only the kept table's (%s)", tables, uuids["kept"])
	}
	// The kept index still answers without a rebuild.
	x, err := st.Table(uuids["kept"], idents[0])
	if err != nil {
		t.Fatal(err)
	}
	if x.Snapshot() == 0 {
		t.Fatal("the kept table's index lost its snapshot")
	}
}
