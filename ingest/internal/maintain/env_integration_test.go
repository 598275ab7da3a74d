//go:build integration

package maintain

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/keyindex"
	"github.com/binlake/binlake/ingest/internal/testtable"
	"github.com/binlake/binlake/test/testenv"
)

const topic = "it.db.orders"

var columns = []string{"id", "name"}

// modes are the delete modes with the format version each needs.
var modes = []struct {
	mode    commit.DeleteMode
	version int
}{
	{commit.DeleteEquality, 2},
	{commit.DeletePosition, 2},
	{commit.DeleteDV, 3},
}

func connect(t *testing.T) catalog.Catalog {
	t.Helper()
	env := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(t.Context(), "maintain", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatalf("connecting to the REST catalog: %v", err)
	}
	return cat
}

// createTable creates the orders table (id long key, name string) in a
// namespace of its own.
func createTable(t *testing.T, cat catalog.Catalog, version int, spec *iceberg.PartitionSpec) table.Identifier {
	t.Helper()
	return testtable.Create(t, cat, "maint", version, spec)
}

// committer opens a Committer in mode, with a key index of its own in
// position and dv modes (as one ingest process has).
func committer(t *testing.T, cat catalog.Catalog, ident table.Identifier, mode commit.DeleteMode) *commit.Committer {
	t.Helper()
	cfg := commit.Config{DeleteMode: mode, MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, MaxAttempts: 50}
	if mode != commit.DeleteEquality {
		st, err := keyindex.Open(keyindex.Config{Dir: filepath.Join(t.TempDir(), "index")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		cfg.Index = st
	}
	c, err := commit.New(t.Context(), cat, ident, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// op is one change of a test batch.
type op struct {
	op   batch.Op
	id   int64
	name string
}

// workload tracks the rows a sequence of batches leaves, and the next
// Kafka offset.
type workload struct {
	t    *testing.T
	c    *commit.Committer
	off  int64
	want map[int64]string
	// attempts counts commits that needed more than one attempt.
	retried int
}

func newWorkload(t *testing.T, c *commit.Committer) *workload {
	return &workload{t: t, c: c, want: map[int64]string{}}
}

// commit commits ops as one batch at the next offsets and records their
// effect.
func (w *workload) commit(ctx context.Context, ops ...op) error {
	b, err := batch.New(columns, []string{"id"}, batch.Limits{})
	if err != nil {
		return err
	}
	for i, o := range ops {
		off := w.off + int64(i)
		ev := batch.Event{Op: o.op, Topic: topic, Partition: 0, Offset: off, TsMs: 1_700_000_000_000 + off, GTID: fmt.Sprintf("0-1-%d", off), Key: []any{o.id}}
		if o.op != batch.OpDelete {
			ev.Row = []any{o.id, o.name}
		}
		if err := b.Add(ev, time.Now()); err != nil {
			return err
		}
	}
	res, err := w.c.Commit(ctx, b)
	if err != nil {
		return err
	}
	if res.Attempts > 1 {
		w.retried++
	}
	w.off += int64(len(ops))
	for _, o := range ops {
		if o.op == batch.OpDelete {
			delete(w.want, o.id)
		} else {
			w.want[o.id] = o.name
		}
	}
	return nil
}

func (w *workload) mustCommit(ops ...op) {
	w.t.Helper()
	if err := w.commit(w.t.Context(), ops...); err != nil {
		w.t.Fatalf("commit: %v", err)
	}
}

// scan reads the table with iceberg-go, failing on a key read twice.
func scan(t *testing.T, cat catalog.Catalog, ident table.Identifier) map[int64]string {
	t.Helper()
	return testtable.Scan(t, cat, ident)
}

// expectReaders checks the rows that iceberg-go, the Java reference reader
// and (when the table holds no equality delete, which it refuses) pyiceberg
// read.
func expectReaders(t *testing.T, cat catalog.Catalog, ident table.Identifier, want map[int64]string, pyiceberg bool) {
	t.Helper()
	if d := cmp.Diff(want, scan(t, cat, ident)); d != "" {
		t.Errorf("iceberg-go rows (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, testtable.Java(t, ident)); d != "" {
		t.Errorf("java reader rows (-want +got):\n%s", d)
	}
	if pyiceberg {
		got, err := testtable.PyIceberg(t, ident)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("pyiceberg rows (-want +got):\n%s", d)
		}
	}
}

func stats(t *testing.T, cat catalog.Catalog, ident table.Identifier) Stats {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	st, err := TableStats(t.Context(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func offsets(t *testing.T, cat catalog.Catalog, ident table.Identifier) batch.Offsets {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	off, err := commit.Offsets(tbl)
	if err != nil {
		t.Fatal(err)
	}
	return off
}
