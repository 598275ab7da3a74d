//go:build integration

package maintain

import (
	"fmt"
	"testing"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/testtable"
)

// TestCompactOlderSpec evolves the partition spec of a table holding rows
// (bucket(4, id) → bucket(2, id)), keeps changing rows of both specs in
// position and dv mode, and compacts: every data file of the old spec is
// rewritten into the current one with its deletes applied, no delete file
// is left, the rows are exact for iceberg-go, the Java reader and
// pyiceberg, and the writer goes on committing after it.
func TestCompactOlderSpec(t *testing.T) {
	bucket4 := testtable.Bucket4()
	for _, tc := range modes {
		if tc.mode == commit.DeleteEquality {
			// Equality deletes written under the new spec do not apply to
			// the old spec's files: the table already reads an updated
			// old row twice before any compaction (ingest/README.md,
			// "Delete modes"); position and dv target the file itself.
			continue
		}
		t.Run(string(tc.mode), func(t *testing.T) {
			cat := connect(t)
			ident := createTable(t, cat, tc.version, &bucket4)
			w := newWorkload(t, committer(t, cat, ident, tc.mode))
			seed(w)

			testtable.Respec(t, cat, ident)
			w.c = committer(t, cat, ident, tc.mode)
			// Rows of the old spec updated and deleted, new rows.
			w.mustCommit(op{batch.OpUpdate, 4, "u4"}, op{batch.OpDelete, 5, ""}, op{batch.OpCreate, 100, "n100"}, op{batch.OpCreate, 101, "n101"})
			w.mustCommit(op{batch.OpUpdate, 100, "u100"}, op{batch.OpUpdate, 6, "u6"})

			tbl, err := cat.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			current := int32(tbl.Metadata().DefaultPartitionSpec())
			specsOf := func() map[int32]int {
				t.Helper()
				tbl, err := cat.LoadTable(t.Context(), ident)
				if err != nil {
					t.Fatal(err)
				}
				tasks, err := tbl.Scan().PlanFiles(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				n := map[int32]int{}
				for _, task := range tasks {
					n[task.File.SpecID()]++
				}
				return n
			}
			before := specsOf()
			if len(before) != 2 {
				t.Fatalf("data files by spec before compaction: %v, want both specs", before)
			}

			m, err := New(cat, Config{Steps: []Step{StepCompact}, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := m.Run(t.Context(), ident)
			if err != nil {
				t.Fatalf("maintain: %v", err)
			}
			after := specsOf()
			if rep.Compact.OtherSpecFiles != before[int32(0)] || len(after) != 1 || after[current] == 0 {
				t.Fatalf("compaction: %d files of the old spec rewritten (%v before); data files by spec after: %v, want only spec %d", rep.Compact.OtherSpecFiles, before, after, current)
			}
			if st := stats(t, cat, ident); st.DeleteFiles() != 0 {
				t.Errorf("delete files left after compacting every file: %+v", st)
			}
			expectReaders(t, cat, ident, w.want, true)

			// The writer's index catches up with the rewrite.
			w.mustCommit(op{batch.OpUpdate, 4, "u4b"}, op{batch.OpDelete, 7, ""}, op{batch.OpUpdate, 101, "u101"})
			expectReaders(t, cat, ident, w.want, true)
			t.Logf("%s: data files by spec %v → %v; %s", tc.mode, before, after, fmt.Sprint(rep.Compact.attrs()...))
		})
	}
}
