//go:build integration

package maintain

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/testtable"
)

// TestConvertEqualityDeletes writes a keyed table in equality mode over
// several commits (an update, that is a delete and an insert of one key in
// one commit; a key deleted and re-inserted in a later commit), adds a
// foreign writer's equality delete on another column (name, field id 2)
// and a merge-on-read delete by position (a position-delete file on v2, a
// deletion vector on v3, which the conversion must merge with), then
// converts the equality deletes in batches of a few rows. No equality
// delete may remain, and iceberg-go, the Java reader and pyiceberg (which
// refuses the table before) must read exactly the expected rows. A
// conversion from a stale snapshot fails with a conflict and changes
// nothing; the writer then goes on from its own stale base.
func TestConvertEqualityDeletes(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			cat := connect(t)
			ident := createTable(t, cat, version, nil)
			w := newWorkload(t, committer(t, cat, ident, commit.DeleteEquality))
			seed(w)
			stale, err := cat.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}

			// Another writer deletes by name, with equality ids [2].
			tbl, err := cat.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			tx := tbl.NewTransaction()
			names := array.NewStringBuilder(memory.DefaultAllocator)
			names.AppendValues([]string{"n30", "n31", "no-such-name"}, nil)
			arr := names.NewArray()
			sch := arrow.NewSchema([]arrow.Field{{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
			rec := array.NewRecordBatch(sch, []arrow.Array{arr}, int64(arr.Len()))
			dels, err := tx.WriteEqualityDeletes(t.Context(), []int{2}, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) })
			if err != nil {
				t.Fatalf("writing the foreign equality delete: %v", err)
			}
			if err := tx.NewRowDelta(nil).AddDeletes(dels...).Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
			delete(w.want, 30)
			delete(w.want, 31)

			// A delete by position (merge-on-read).
			tbl, err = cat.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			tx = tbl.NewTransaction()
			if err := tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Delete(t.Context(), iceberg.EqualTo(iceberg.Reference("id"), int64(7)), nil); err != nil {
				t.Fatalf("deleting id 7 by position: %v", err)
			}
			if _, err := tx.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
			delete(w.want, 7)
			// The writer's base is stale: this commit conflicts and is
			// rebuilt; the key deleted by the foreign writer comes back.
			w.mustCommit(op{batch.OpCreate, 31, "back31"}, op{batch.OpUpdate, 8, "u8"})

			before := stats(t, cat, ident)
			if before.EqualityDeleteFiles < 5 || before.PositionDeleteFiles+before.DeletionVectors == 0 {
				t.Fatalf("seeded table %+v: want equality deletes and a delete by position", before)
			}
			if got, err := testtable.PyIceberg(t, ident); err == nil && cmpRows(w.want, got) == "" {
				t.Errorf("pyiceberg read the equality-delete table right before the conversion; the check after it proves nothing")
			} else {
				t.Logf("pyiceberg before the conversion: %v", err)
			}
			if d := cmpRows(w.want, scan(t, cat, ident)); d != "" {
				t.Fatalf("iceberg-go before conversion: %s", d)
			}

			m, err := New(cat, Config{ConvertEqualityDeletes: true, ConvertBatchRows: 7, Steps: []Step{StepRewriteManifests}, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			// From a stale snapshot: a conflict, and nothing left behind.
			if _, err := m.convertOnce(t.Context(), stale); !errors.Is(err, table.ErrCommitFailed) {
				t.Fatalf("converting from a stale snapshot: %v; want ErrCommitFailed", err)
			}
			if got := stats(t, cat, ident); got != before {
				t.Fatalf("a failed conversion changed the table: %+v, before %+v", got, before)
			}

			rep, err := m.Run(t.Context(), ident)
			if err != nil {
				t.Fatalf("maintain: %v", err)
			}
			t.Logf("conversion: %+v", rep.Convert)
			after := stats(t, cat, ident)
			if after.EqualityDeleteFiles != 0 {
				t.Errorf("%d equality-delete files left (%+v)", after.EqualityDeleteFiles, after)
			}
			if rep.Convert.EqualityDeletes != before.EqualityDeleteFiles || rep.Convert.Batches < 2 || rep.Convert.Positions == 0 {
				t.Errorf("conversion report %+v; want %d equality deletes removed in several batches", rep.Convert, before.EqualityDeleteFiles)
			}
			if after.DataFiles != before.DataFiles || after.DataRecords != before.DataRecords {
				t.Errorf("the conversion rewrote data: %+v, before %+v", after, before)
			}
			if version >= 3 && after.PositionDeleteFiles != 0 {
				t.Errorf("v3 table holds %d position-delete files; want deletion vectors only", after.PositionDeleteFiles)
			}
			expectReaders(t, cat, ident, w.want, true)

			// The writer goes on from its stale base, and a second
			// conversion converts its new deletes.
			w.mustCommit(op{batch.OpUpdate, 1, "after"}, op{batch.OpDelete, 4, ""}, op{batch.OpCreate, 7, "back7"})
			if _, err := m.Run(t.Context(), ident); err != nil {
				t.Fatal(err)
			}
			if st := stats(t, cat, ident); st.EqualityDeleteFiles != 0 {
				t.Errorf("after the second conversion: %+v", st)
			}
			expectReaders(t, cat, ident, w.want, true)
		})
	}
}

func cmpRows(want, got map[int64]string) string {
	var d []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			d = append(d, fmt.Sprintf("key %d: want %q, got %q (present %v)", k, v, g, ok))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("key %d: unexpected %q", k, v))
		}
	}
	slices.Sort(d)
	return fmt.Sprint(d)[1 : len(fmt.Sprint(d))-1]
}
