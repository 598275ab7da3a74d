//go:build integration

package commit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/testtable"
)

// TestOffsetsOnlyCommitPinned is issue 29 item 6's pinning: two members
// of a group, each with the table as it was, commit one after the other:
// the first only offsets (a dead-lettered record of partition 1 passed),
// the second rows of partition 0. The second must see the first's
// offsets (conflict, reload) rather than write its stale view of
// partition 1 back over them.
func TestOffsetsOnlyCommitPinned(t *testing.T) {
	cat := connect(t, "")
	ident := testtable.Create(t, cat, "pinned", 2, nil)
	ctx := t.Context()
	c1, err := New(ctx, cat, ident, Config{})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, c1, fill(t, 0, op{batch.OpCreate, 1, "a"}))
	c2, err := New(ctx, cat, ident, Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Member 1 owns partition 1: a record there is passed, nothing else.
	b1, err := batch.New(columns, []string{"id"}, batch.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b1.Pass(batch.Position{Topic: topic, Partition: 1, Offset: 7}, time.Now())
	if res := mustCommit(t, c1, b1); res.Passed != 1 {
		t.Fatalf("offsets-only commit %+v: want 1 passed", res)
	}
	// Member 2, still on the table before that commit, owns partition 0.
	mustCommit(t, c2, fill(t, 1, op{batch.OpCreate, 2, "b"}))

	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Offsets(tbl)
	if err != nil {
		t.Fatal(err)
	}
	if want := (batch.Offsets{topic: {0: 2, 1: 8}}); !cmp.Equal(got, want) {
		t.Errorf("offsets %v, want %v: a commit overwrote the offsets-only commit before it", got, want)
	}
}
