//go:build integration

package commit

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/batch"
)

// TestCommitTableReplaced: RENAME TABLE s1 TO s2, s3 TO s1 in the catalog
// while a Committer of s1 holds a batch. Its commit conflicts (the table
// under s1 is another one), and the reload must not take the new s1 for
// the old: the batch is s2's, and committing it to the new s1 put the old
// table's rows and offsets in another table. Opening a Committer pinned to
// the old table's UUID under the name fails the same way, and so does a
// name that holds no table any more.
func TestCommitTableReplaced(t *testing.T) {
	ctx := t.Context()
	cat := connect(t, "")
	s1 := createTable(t, cat)
	other := createMapped(t, cat, "ingest-other", false)
	mustCommit(t, mustNew(t, cat, s1), fill(t, 0, op{batch.OpCreate, 1, "old s1"}))
	mustCommit(t, mustNew(t, cat, other), fill(t, 0, op{batch.OpCreate, 3, "old s3"}))

	c := mustNew(t, cat, s1)
	pinned := c.TableUUID()
	s2 := table.Identifier{s1[0], "orders_s2"}
	if _, err := cat.RenameTable(ctx, s1, s2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.DropTable(context.WithoutCancel(ctx), s2) })
	if _, err := cat.RenameTable(ctx, other, s1); err != nil {
		t.Fatal(err)
	}

	_, err := c.Commit(ctx, fill(t, 1, op{batch.OpCreate, 2, "late s1"}))
	if !errors.Is(err, ErrTableReplaced) {
		t.Fatalf("commit to a name another table took: err %v, want ErrTableReplaced", err)
	}
	expect(t, cat, s1, map[int64]string{3: "old s3"})
	expect(t, cat, s2, map[int64]string{1: "old s1"})

	cfg := modeConfig(t, Config{TableUUID: pinned})
	if _, err := New(ctx, cat, s1, cfg); !errors.Is(err, ErrTableReplaced) {
		t.Fatalf("New pinned to the renamed table's uuid under its old name: err %v, want ErrTableReplaced", err)
	}
	if nc, err := New(ctx, cat, s2, cfg); err != nil || nc.TableUUID() != pinned {
		t.Fatalf("New pinned to the table under its new name: %v", err)
	}
	gone := table.Identifier{s1[0], "orders_gone"}
	if _, err := cat.RenameTable(ctx, s2, gone); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.DropTable(context.WithoutCancel(ctx), gone) })
	if _, err := New(ctx, cat, s2, cfg); !errors.Is(err, ErrTableReplaced) {
		t.Fatalf("New pinned under a name that holds no table: err %v, want ErrTableReplaced", err)
	}
}
