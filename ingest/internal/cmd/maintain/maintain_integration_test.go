//go:build integration

package maintain

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	tablemaint "github.com/binlake/binlake/ingest/internal/maintain"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/test/testenv"
)

// hookWriter collects the command's log and calls hook on each write.
type hookWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	hook func(line string)
}

func (w *hookWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hook != nil {
		w.hook(string(p))
	}
	return w.buf.Write(p)
}

func (w *hookWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestMaintainCommand runs `ingest maintain` (Run, with the settings an
// operator would give), against
// the REST catalog and MinIO, on two tables of one namespace written in
// equality mode: a dry run changes nothing, a stop after the first step of
// the first table leaves the rest undone, and a full run leaves no delete
// file and one snapshot per table, with the rows and offsets intact.
func TestMaintainCommand(t *testing.T) {
	env := testenv.IcebergEnv(t)
	ctx := t.Context()
	cat, err := rest.NewCatalog(ctx, "test", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	ns := table.Identifier{testenv.Unique(t, "maintcmd")}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	var idents []table.Identifier
	for _, name := range []string{"a", "b"} {
		ident := table.Identifier{ns[0], name}
		if _, err := cat.CreateTable(ctx, ident, sch, catalog.WithProperties(iceberg.Properties{"format-version": "2"})); err != nil {
			t.Fatal(err)
		}
		idents = append(idents, ident)
		c, err := commit.New(ctx, cat, ident, commit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		off := int64(0)
		for n := range 6 {
			b, err := batch.New([]string{"id", "name"}, []string{"id"}, batch.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for id := int64(1); id <= 10; id++ {
				ev := batch.Event{Op: batch.OpUpdate, Topic: "it.db." + name, Offset: off, Key: []any{id}, Row: []any{id, fmt.Sprintf("v%d", n)}}
				if n == 0 {
					ev.Op = batch.OpCreate
				}
				if err := b.Add(ev, time.Now()); err != nil {
					t.Fatal(err)
				}
				off++
			}
			if _, err := c.Commit(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		for _, id := range idents {
			_ = cat.DropTable(ctx, id)
		}
		_ = cat.DropNamespace(ctx, ns)
	})
	stats := func(ident table.Identifier) tablemaint.Stats {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		st, err := tablemaint.TableStats(ctx, tbl)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	before := stats(idents[0])
	if before.EqualityDeleteFiles != 5 || before.Snapshots != 6 {
		t.Fatalf("seeded table %+v", before)
	}
	args := []string{"-catalog-uri=" + env.URI, "-s3-endpoint=" + env.S3Endpoint, "-s3-region=" + env.Region,
		"-maintain-namespaces=" + ns[0], "-expire-older-than=1ms", "-expire-retain-last=1"}
	cmd := func(ctx context.Context, w *hookWriter, extra ...string) error {
		cfg, err := parseConfig(append(append([]string{}, args...), extra...), os.Getenv)
		if err != nil {
			return err
		}
		return Run(ctx, cfg, slog.New(slog.NewTextHandler(w, nil)))
	}

	var dry hookWriter
	if err := cmd(ctx, &dry, "-dry-run"); err != nil {
		t.Fatalf("dry run: %v\n%s", err, dry.String())
	}
	if got := stats(idents[0]); got != before {
		t.Fatalf("the dry run changed the table: %+v", got)
	}
	if !strings.Contains(dry.String(), "input_files=6") || !strings.Contains(dry.String(), "snapshots_expired=5") {
		t.Errorf("dry-run log does not show the plan:\n%s", dry.String())
	}

	// SIGTERM right after the first step of the first table.
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := hookWriter{hook: func(line string) {
		if strings.Contains(line, "step done") && strings.Contains(line, "step=compact") {
			stop()
		}
	}}
	if err := cmd(sctx, &stopped); err != nil {
		t.Fatalf("a stopped run is not an error: %v\n%s", err, stopped.String())
	}
	// 6 + the conversion of the equality deletes (two snapshots in one
	// commit) + the compaction.
	if st := stats(idents[0]); st.DeleteFiles() != 0 || st.Snapshots != 9 {
		t.Errorf("after a stop past compaction the first table is %+v; want compacted, nothing expired", st)
	}
	if st := stats(idents[1]); st != before {
		t.Errorf("after a stop during the first table the second one changed: %+v", st)
	}
	if !strings.Contains(stopped.String(), "stopped before rewrite-manifests") {
		t.Errorf("log does not say where it stopped:\n%s", stopped.String())
	}

	start := time.Now()
	var full hookWriter
	if err := cmd(ctx, &full); err != nil {
		t.Fatalf("maintain: %v\n%s", err, full.String())
	}
	t.Logf("ingest maintain over 2 tables took %s", time.Since(start).Round(time.Millisecond))
	if testing.Verbose() {
		t.Log(full.String())
	}
	for i, ident := range idents {
		st := stats(ident)
		if st.DeleteFiles() != 0 || st.Snapshots != 1 || st.DataFiles != 1 || st.DataRecords != 10 {
			t.Errorf("table %v after maintenance: %+v", ident, st)
		}
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		off, err := commit.Offsets(tbl)
		if err != nil || off["it.db."+ident[1]][0] != 60 {
			t.Errorf("table %d offsets %v, %v; want 60", i, off, err)
		}
	}
	if !strings.Contains(full.String(), "maintenance done") || !strings.Contains(full.String(), "delete_files_after=0") {
		t.Errorf("no summary line:\n%s", full.String())
	}
}

// TestMaintainEvery runs ingest's in-process schedule (-maintain-interval)
// with a short interval beside a writer: rounds compact the table while
// commits go on, and the schedule returns once its context is done.
func TestMaintainEvery(t *testing.T) {
	env := testenv.IcebergEnv(t)
	ctx := t.Context()
	cat, err := rest.NewCatalog(ctx, "test", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	ns := table.Identifier{testenv.Unique(t, "maintevery")}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	ident := table.Identifier{ns[0], "t"}
	if _, err := cat.CreateTable(ctx, ident, sch, catalog.WithProperties(iceberg.Properties{"format-version": "2"})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = cat.DropTable(ctx, ident)
		_ = cat.DropNamespace(ctx, ns)
	})
	c, err := commit.New(ctx, cat, ident, commit.Config{MinBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	off := int64(0)
	write := func(n int) {
		t.Helper()
		b, err := batch.New([]string{"id", "name"}, []string{"id"}, batch.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for id := int64(1); id <= 10; id++ {
			if err := b.Add(batch.Event{Op: batch.OpUpdate, Topic: "it.db.t", Offset: off, Key: []any{id}, Row: []any{id, fmt.Sprintf("v%d", n)}}, time.Now()); err != nil {
				t.Fatal(err)
			}
			off++
		}
		if _, err := c.Commit(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	for n := range 4 {
		write(n)
	}
	var log hookWriter
	settings := Settings{Tables: ident[0] + "." + ident[1], Steps: "compact,expire-snapshots", MinInputFiles: 5, DeleteFileThreshold: 1,
		ExpireOlderThan: time.Millisecond, RetainLast: 2, OrphanAge: 24 * time.Hour, Attempts: 20, StopTimeout: time.Second}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Every(sctx, cat, settings, 300*time.Millisecond, nil, slog.New(slog.NewTextHandler(&log, nil)))
	}()
	for n := 4; n < 12; n++ {
		write(n)
		time.Sleep(200 * time.Millisecond)
	}
	testenv.Eventually(t, 60*time.Second, 200*time.Millisecond, func() bool {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return false
		}
		st, err := tablemaint.TableStats(ctx, tbl)
		rounds := strings.Count(log.String(), "msg=\"maintenance done\"")
		return err == nil && st.DeleteFiles() == 0 && st.Snapshots <= 2 && rounds >= 2
	}, "the schedule ran twice and compacted and expired the table")
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("schedule: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the schedule did not return after its context was done")
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if off, err := commit.Offsets(tbl); err != nil || off["it.db.t"][0] != 120 {
		t.Errorf("offsets %v, %v; want 120", off, err)
	}
}

// TestMaintainLeavesForeignTables puts binlake's tables and other
// engines' tables (created and written with iceberg-go directly, with no
// binlake.source) under one namespace folder: "wide", a foreign table
// located at the namespace folder itself; "other", a foreign table at its
// own location; "lake", a binlake table; and "wide_lake", a binlake table
// also located at the namespace folder. `ingest maintain
// -maintain-namespaces` (with every file old enough to be an orphan) must
// keep every object outside lake's folder: the foreign tables are not
// maintained, wide_lake is refused (its location holds the others'), and
// lake's orphan scan covers only its data and metadata folders.
func TestMaintainLeavesForeignTables(t *testing.T) {
	env := testenv.IcebergEnv(t)
	ctx := t.Context()
	cat, err := rest.NewCatalog(ctx, "test", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	ns := table.Identifier{testenv.Unique(t, "maintforeign")}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	var idents []table.Identifier
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		for _, id := range idents {
			_ = cat.DropTable(ctx, id)
		}
		_ = cat.DropNamespace(ctx, ns)
	})
	create := func(name, location string, props iceberg.Properties) *table.Table {
		t.Helper()
		ident := table.Identifier{ns[0], name}
		opts := []catalog.CreateTableOpt{catalog.WithProperties(props)}
		if location != "" {
			opts = append(opts, catalog.WithLocation(location))
		}
		tbl, err := cat.CreateTable(ctx, ident, sch, opts...)
		if err != nil {
			t.Fatal(err)
		}
		idents = append(idents, ident)
		return tbl
	}
	ours := func(name, location string) {
		t.Helper()
		tbl := create(name, location, iceberg.Properties{"format-version": "2", schemamap.SourceProperty: "it.db." + name})
		c, err := commit.New(ctx, cat, tbl.Identifier(), commit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		for n := range 3 {
			b, err := batch.New([]string{"id", "name"}, []string{"id"}, batch.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for id := int64(1); id <= 5; id++ {
				if err := b.Add(batch.Event{Op: batch.OpUpdate, Topic: "it.db." + name, Offset: int64(n*5) + id - 1, Key: []any{id}, Row: []any{id, fmt.Sprintf("v%d", n)}}, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.Commit(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	foreign := func(name, location string) {
		t.Helper()
		tbl := create(name, location, iceberg.Properties{"format-version": "2"})
		asch, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
		if err != nil {
			t.Fatal(err)
		}
		for n := range 2 {
			b := array.NewRecordBuilder(memory.DefaultAllocator, asch)
			for id := int64(1); id <= 5; id++ {
				b.Field(0).(*array.Int64Builder).Append(id + int64(n)*5)
				b.Field(1).(*array.StringBuilder).Append(name)
			}
			rec := b.NewRecordBatch()
			rdr, err := array.NewRecordReader(asch, []arrow.RecordBatch{rec})
			if err != nil {
				t.Fatal(err)
			}
			if tbl, err = tbl.Append(ctx, rdr, nil); err != nil {
				t.Fatalf("appending to %s: %v", name, err)
			}
			rec.Release()
			b.Release()
		}
	}

	ours("lake", "")
	lake, err := cat.LoadTable(ctx, table.Identifier{ns[0], "lake"})
	if err != nil {
		t.Fatal(err)
	}
	nsDir := lake.Location()[:strings.LastIndex(lake.Location(), "/")] // the namespace's folder
	foreign("wide", nsDir)
	foreign("other", "")
	ours("wide_lake", nsDir)

	fsys, err := lake.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	strayOrphan := lake.Location() + "/data/00000-0-failed-attempt.parquet"
	strayOutside := lake.Location() + "/notes/not-a-table-file.txt"
	for _, p := range []string{strayOrphan, strayOutside} {
		if err := fsys.(icebergio.WriteFileIO).WriteFile(p, []byte("stray")); err != nil {
			t.Fatal(err)
		}
	}
	objects := func() map[string]bool {
		t.Helper()
		out := map[string]bool{}
		err := fsys.(icebergio.ListableIO).WalkDir(nsDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				out[p] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := objects()
	time.Sleep(2 * time.Second) // every file is now older than the orphan age

	var log hookWriter
	logger := slog.New(slog.NewTextHandler(&log, nil))
	settings := Settings{Namespaces: ns[0]}
	m, err := tablemaint.New(cat, tablemaint.Config{ExpireOlderThan: time.Millisecond, RetainLast: 1, OrphanAge: time.Second, MinBackoff: 10 * time.Millisecond, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	runErr := maintainTables(ctx, cat, m, settings, logger)
	after := objects()
	lost := 0
	for p := range before {
		if strings.HasPrefix(p, lake.Location()+"/") {
			continue // lake's own files: maintenance rewrites and expires them
		}
		if !after[p] {
			lost++
			t.Errorf("maintenance deleted %s, which is not lake's", p)
		}
	}
	t.Logf("objects under the namespace folder: %d before, %d after; %d of other tables lost", len(before), len(after), lost)
	if !after[strayOutside] {
		t.Errorf("the orphan scan went outside lake's data and metadata folders: %s deleted", strayOutside)
	}
	if after[strayOrphan] {
		t.Errorf("lake's orphan %s was not removed", strayOrphan)
	}
	if runErr == nil || !strings.Contains(runErr.Error(), "shares its location") || !strings.Contains(runErr.Error(), "wide_lake") {
		t.Errorf("maintain error %v; want wide_lake refused for sharing its location", runErr)
	}
	if testing.Verbose() {
		t.Log(log.String())
	}
	for _, name := range []string{"lake", "wide_lake", "wide", "other"} {
		tbl, err := cat.LoadTable(ctx, table.Identifier{ns[0], name})
		if err != nil {
			t.Fatalf("loading %s: %v", name, err)
		}
		st, err := tablemaint.TableStats(ctx, tbl)
		if err != nil {
			t.Errorf("table %s after maintenance: %v", name, err)
			continue
		}
		if st.DataRecords-st.DeleteRecords == 0 {
			t.Errorf("table %s is empty after maintenance: %+v", name, st)
		}
		scan, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Errorf("reading %s after maintenance: %v", name, err)
			continue
		}
		if want := map[string]int64{"lake": 5, "wide_lake": 5, "wide": 10, "other": 10}[name]; scan.NumRows() != want {
			t.Errorf("table %s has %d rows after maintenance, want %d", name, scan.NumRows(), want)
		}
		scan.Release()
	}
}
