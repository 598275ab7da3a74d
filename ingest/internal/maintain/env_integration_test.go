//go:build integration

package maintain

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
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/keyindex"
	"github.com/binlake/binlake/test/icebergreader"
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
	ctx := t.Context()
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	ns := table.Identifier{testenv.Unique(t, "maint")}
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

// expectReaders checks the rows that iceberg-go, the Java reference reader
// and (when the table holds no equality delete, which it refuses) pyiceberg
// read.
func expectReaders(t *testing.T, cat catalog.Catalog, ident table.Identifier, want map[int64]string, pyiceberg bool) {
	t.Helper()
	if d := cmp.Diff(want, scan(t, cat, ident)); d != "" {
		t.Errorf("iceberg-go rows (-want +got):\n%s", d)
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
	if pyiceberg {
		if d := cmp.Diff(want, readPyIceberg(t, ident)); d != "" {
			t.Errorf("pyiceberg rows (-want +got):\n%s", d)
		}
	}
}

func deref(s *string) string {
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

// readPyIceberg reads the table with pyiceberg (0.12 refuses any table
// whose scan meets an equality delete).
func readPyIceberg(t *testing.T, ident table.Identifier) map[int64]string {
	t.Helper()
	python := os.Getenv("BINLAKE_PYTHON")
	if python == "" {
		python = "python3"
	}
	out, err := exec.CommandContext(t.Context(), python, "-c", pyScan, ident[0], ident[1]).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("pyiceberg: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("pyiceberg with %s (deploy/local/stack.sh up installs it and exports BINLAKE_PYTHON): %v", python, err)
	}
	got := map[int64]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var r struct {
			ID   int64   `json:"id"`
			Name *string `json:"name"`
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("pyiceberg output: %v\n%s", err, out)
		}
		if _, dup := got[r.ID]; dup {
			t.Fatalf("pyiceberg: key %d twice", r.ID)
		}
		got[r.ID] = deref(r.Name)
	}
	return got
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
