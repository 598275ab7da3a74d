//go:build integration

package bench

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/testenv"
)

// TestBenchMaintainEquality measures the peak RSS of `ingest maintain`
// (compact, the way bench-scan runs it) on a table of
// BINLAKE_MAINTAIN_EQ_ROWS rows (default 500,000) after
// BINLAKE_MAINTAIN_EQ_COMMITS upsert commits (default 20) of a tenth of
// them each, written as equality deletes (delete by key plus insert in one
// row delta, as ingest's equality mode and the Kafka Connect sink write
// them). It prints
//
//	MAINTAIN_EQ rows=<n> commits=<k> delete_keys=<d> maintain_s=<s> peak_rss_mib=<m>
//
// and asserts only that maintenance succeeded and left no delete file.
// BINLAKE_MAINTAIN_EQ_VERSION=3 makes the table format v3 (deletion
// vectors). BINLAKE_MAINTAIN_EQ_LOG writes the command's whole output to that file.
// BINLAKE_MAINTAIN_EQ_ARGS adds flags to the command (a later
// -maintain-steps wins). BINLAKE_MAINTAIN_BIN runs another ingest binary (e.g. one built from an
// older commit) instead of building this tree's.
func TestBenchMaintainEquality(t *testing.T) {
	if os.Getenv("BINLAKE_BENCH") != "1" {
		t.Skip("set BINLAKE_BENCH=1")
	}
	rows := envInt(t, "BINLAKE_MAINTAIN_EQ_ROWS", 500_000)
	commits := envInt(t, "BINLAKE_MAINTAIN_EQ_COMMITS", 20)
	bin := os.Getenv("BINLAKE_MAINTAIN_BIN")
	if bin == "" {
		bin = build(t, "ingest")
	}
	ice := testenv.IcebergEnv(t)
	ctx := t.Context()
	cat, err := rest.NewCatalog(ctx, "bench", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("bench_maintaineq_%d", time.Now().UnixNano())
	ident := table.Identifier{ns, "t"}
	if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		dropTable(ctx, cat, ident)
		_ = cat.DropNamespace(ctx, table.Identifier{ns})
	})
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	tbl, err := cat.CreateTable(ctx, ident, sch, catalog.WithProperties(iceberg.Properties{"format-version": strconv.Itoa(envInt(t, "BINLAKE_MAINTAIN_EQ_VERSION", 2))}))
	if err != nil {
		t.Fatal(err)
	}
	arrowSchema, err := table.SchemaToArrowSchema(sch, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	records := func(ids []int64, gen int) iter.Seq2[arrow.RecordBatch, error] {
		return func(yield func(arrow.RecordBatch, error) bool) {
			b := array.NewRecordBuilder(memory.DefaultAllocator, arrowSchema)
			defer b.Release()
			for _, id := range ids {
				b.Field(0).(*array.Int64Builder).Append(id)
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("gen%d-row%d-%x", gen, id, id*2654435761))
			}
			// Not released: the writer may still read it after yield
			// returns.
			yield(b.NewRecordBatch(), nil)
		}
	}
	all := make([]int64, rows)
	for i := range all {
		all[i] = int64(i)
	}
	tx := tbl.NewTransaction()
	var first []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, arrowSchema, records(all, 0)) {
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, df)
	}
	if err := tx.NewRowDelta(nil).AddRows(first...).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	keySchema := arrow.NewSchema([]arrow.Field{arrowSchema.Field(0)}, nil)
	deleteKeys := 0
	for c := 1; c <= commits; c++ {
		ids := make([]int64, 0, rows/10)
		for _, i := range rng.Perm(rows)[:rows/10] {
			ids = append(ids, int64(i))
		}
		tx := tbl.NewTransaction()
		var data []iceberg.DataFile
		for df, err := range table.WriteRecords(ctx, tbl, arrowSchema, records(ids, c)) {
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, df)
		}
		kb := array.NewInt64Builder(memory.DefaultAllocator)
		kb.AppendValues(ids, nil)
		karr := kb.NewArray()
		krec := array.NewRecordBatch(keySchema, []arrow.Array{karr}, int64(len(ids)))
		dels, err := tx.WriteEqualityDeletes(ctx, []int{1}, func(yield func(arrow.RecordBatch, error) bool) { yield(krec, nil) })
		krec.Release()
		karr.Release()
		kb.Release()
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.NewRowDelta(nil).AddRows(data...).AddDeletes(dels...).Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		deleteKeys += len(ids)
	}
	t.Logf("table %v: %d rows, %d upsert commits written", ident, rows, commits)

	m := runMaintain(bin, ice, ns+".t", append([]string{"-maintain-steps", "compact"}, strings.Fields(os.Getenv("BINLAKE_MAINTAIN_EQ_ARGS"))...)...)
	out, secs, rss := m.out, m.seconds, m.rssMiB
	if m.err != nil {
		t.Fatalf("ingest maintain: %v\n%s", m.err, tail(out))
	}
	t.Logf("ingest maintain:\n%s", tail(out))
	if p := os.Getenv("BINLAKE_MAINTAIN_EQ_LOG"); p != "" {
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Error(err)
		}
	}
	fmt.Printf("MAINTAIN_EQ rows=%d commits=%d delete_keys=%d maintain_s=%.1f peak_rss_mib=%.0f\n", rows, commits, deleteKeys, secs, rss)
	if os.Getenv("BINLAKE_MAINTAIN_EQ_ARGS") != "" {
		return // the checks below are of a compaction
	}
	if got := countFiles(t, cat, ident); got.deletes != 0 {
		t.Errorf("after maintenance the scan plans %d delete files", got.deletes)
	}
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	if n := tbl.CurrentSnapshot().Summary.Properties["total-records"]; n != strconv.Itoa(rows) {
		t.Errorf("after maintenance the table holds %s records, want %d", n, rows)
	}
}
