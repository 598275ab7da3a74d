//go:build integration

package commit

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/schemamap"
)

// orderedColumns is the row layout of a table with the source-order column,
// as the pipeline lays it out.
var orderedColumns = []string{"id", "name", schemamap.SourceOrderColumn}

// createOrderedTable creates the table the pipeline creates today: the
// schemamap mapping plus the source-order column.
func createOrderedTable(t *testing.T, cat catalog.Catalog) table.Identifier {
	t.Helper()
	return createMapped(t, cat, "order", true)
}

// pev is a change on a partition at an offset with a source order.
type pev struct {
	op     batch.Op
	part   int32
	off    int64
	order  int64
	id     int64
	suffix string
}

func orderedBatch(t *testing.T, evs ...pev) *batch.Buffer {
	t.Helper()
	b, err := batch.New(orderedColumns, []string{"id"}, batch.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		ev := batch.Event{Op: e.op, Topic: topic, Partition: e.part, Offset: e.off, Order: e.order, TsMs: 1_700_000_000_000}
		if e.op != batch.OpTruncate {
			ev.Key = []any{e.id}
		}
		if e.op != batch.OpDelete && e.op != batch.OpTruncate {
			ev.Row = []any{e.id, fmt.Sprintf("v%d%s", e.order, e.suffix), e.order}
		}
		if err := b.Add(ev, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestTruncateFollowsSourceOrder is finding 1 of issue 9: a TRUNCATE lands
// on one partition (p0) while the rows go to their keys' partitions (p1,
// p2), and two ingest processes (two Committers on one table) own them. The
// truncate at source order 100 must remove exactly the rows whose changes
// precede it in the source, whatever order the partitions are committed in:
// rows after it committed earlier survive, rows before it committed later
// are dropped.
func TestTruncateFollowsSourceOrder(t *testing.T) {
	cat := connect(t, "")
	ident := createOrderedTable(t, cat)
	ctx := t.Context()
	a, err := New(ctx, cat, ident, modeConfig(t, Config{})) // owns p1 and p2
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(ctx, cat, ident, modeConfig(t, Config{})) // owns p0
	if err != nil {
		t.Fatal(err)
	}

	// Process A is ahead: rows before the truncate (ids 1, 2, 3) and after
	// it (8 and 9), and an update of 8 that leaves an equality delete on
	// the file holding 2 and 8.
	mustCommit(t, a, orderedBatch(t,
		pev{batch.OpCreate, 1, 0, 10, 1, ""}, pev{batch.OpCreate, 2, 0, 20, 2, ""}, pev{batch.OpCreate, 1, 1, 160, 8, ""}))
	mustCommit(t, a, orderedBatch(t,
		pev{batch.OpUpdate, 2, 1, 30, 2, ""}, pev{batch.OpCreate, 2, 2, 40, 3, ""},
		pev{batch.OpCreate, 1, 2, 150, 9, ""}, pev{batch.OpUpdate, 1, 3, 170, 8, ""}))
	expect(t, cat, ident, map[int64]string{1: "v10", 2: "v30", 3: "v40", 8: "v170", 9: "v150"})

	// Process B commits p0: a row before the truncate, the truncate, a row
	// after it, all in one batch.
	res := mustCommit(t, b, orderedBatch(t,
		pev{batch.OpCreate, 0, 0, 99, 7, ""}, pev{batch.OpTruncate, 0, 1, 100, 0, ""}, pev{batch.OpCreate, 0, 2, 105, 10, ""}))
	if !res.Truncated {
		t.Errorf("truncate not reported: %+v", res)
	}
	expect(t, cat, ident, map[int64]string{8: "v170", 9: "v150", 10: "v105"})

	// Process A lags on p2: a row from before the truncate arrives now and
	// is dropped; one after it is kept. A's table is stale: its pinned
	// commit conflicts, reloads and sees the truncate's watermark.
	res = mustCommit(t, a, orderedBatch(t, pev{batch.OpCreate, 2, 3, 90, 4, ""}, pev{batch.OpCreate, 2, 4, 110, 5, ""}, pev{batch.OpDelete, 2, 5, 95, 3, ""}))
	if res.StaleEvents != 2 {
		t.Errorf("stale events %d, want 2 (the insert of 4 and the delete of 3)", res.StaleEvents)
	}
	expect(t, cat, ident, map[int64]string{5: "v110", 8: "v170", 9: "v150", 10: "v105"})

	// Only stale changes: nothing to write, but the offsets move on.
	res = mustCommit(t, a, orderedBatch(t, pev{batch.OpCreate, 2, 6, 96, 6, ""}))
	if res.Events != 1 || res.StaleEvents != 1 || res.Offsets[topic][2] != 7 {
		t.Errorf("stale-only batch: %+v", res)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if off, err := Offsets(tbl); err != nil || off[topic][0] != 3 || off[topic][1] != 4 || off[topic][2] != 7 {
		t.Errorf("offsets %v %v, want p0=3 p1=4 p2=7", off, err)
	}
	if w, err := Watermark(tbl); err != nil || w != 100 {
		t.Errorf("watermark %d %v, want 100", w, err)
	}
	if _, ok := tbl.Properties()[table.WriteDeleteModeKey]; ok {
		t.Errorf("the truncate left %s set", table.WriteDeleteModeKey)
	}
	expect(t, cat, ident, map[int64]string{5: "v110", 8: "v170", 9: "v150", 10: "v105"})
}

// TestTruncateOfEmptyTable: a truncate that reaches a table without
// snapshots still keeps its watermark (and offsets), so a lagging
// partition's older rows are dropped.
func TestTruncateOfEmptyTable(t *testing.T) {
	cat := connect(t, "")
	ident := createOrderedTable(t, cat)
	c, err := New(t.Context(), cat, ident, modeConfig(t, Config{}))
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, c, orderedBatch(t, pev{batch.OpTruncate, 0, 0, 100, 0, ""}))
	mustCommit(t, c, orderedBatch(t, pev{batch.OpCreate, 1, 0, 50, 1, ""}, pev{batch.OpCreate, 1, 1, 150, 2, ""}))
	expect(t, cat, ident, map[int64]string{2: "v150"})
}

// TestOffsetsSurviveSnapshotExpiry is finding 2 of issue 9: another writer
// (a maintenance job) commits a snapshot without binlake's keys and every
// older snapshot is expired. The offsets must still be found, and a
// restarted committer must skip what the table holds.
func TestOffsetsSurviveSnapshotExpiry(t *testing.T) {
	cat := connect(t, "")
	ident := createOrderedTable(t, cat)
	ctx := t.Context()
	c, err := New(ctx, cat, ident, modeConfig(t, Config{}))
	if err != nil {
		t.Fatal(err)
	}
	first := orderedBatch(t, pev{batch.OpCreate, 0, 0, 10, 1, ""}, pev{batch.OpCreate, 1, 0, 20, 2, ""})
	mustCommit(t, c, first)
	mustCommit(t, c, orderedBatch(t, pev{batch.OpUpdate, 0, 1, 30, 1, ""}))

	maintain(t, cat, ident)
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiry, want 1", n)
	}
	off, err := Offsets(tbl)
	if err != nil || off[topic][0] != 2 || off[topic][1] != 1 {
		t.Fatalf("offsets after expiry: %v %v, want p0=2 p1=1", off, err)
	}
	// A restart: a new committer replays the first batch; nothing is
	// applied twice.
	c2, err := New(ctx, cat, ident, modeConfig(t, Config{}))
	if err != nil {
		t.Fatal(err)
	}
	if res := mustCommit(t, c2, first); !res.AlreadyCommitted {
		t.Errorf("replay after expiry committed again: %+v", res)
	}
	expect(t, cat, ident, map[int64]string{1: "v30", 2: "v20", 1000: "maint"})
}

// TestOffsetsLostStops: a table with snapshots whose offsets are nowhere
// (written before offsets were kept in the properties, its ingest snapshots
// since expired) is an error naming the table, never "start over".
func TestOffsetsLostStops(t *testing.T) {
	cat := connect(t, "")
	ident := createOrderedTable(t, cat)
	ctx := t.Context()
	c, err := New(ctx, cat, ident, modeConfig(t, Config{}))
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, c, orderedBatch(t, pev{batch.OpCreate, 0, 0, 10, 1, ""}))
	// Back to the state of an older ingest: offsets in summaries only.
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.RemoveProperties([]string{OffsetsKeyPrefix + topic, CommitIDKey}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	if off, err := Offsets(tbl); err != nil || off[topic][0] != 1 {
		t.Fatalf("offsets from the summary: %v %v", off, err)
	}
	maintain(t, cat, ident)
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	off, err := Offsets(tbl)
	if !errors.Is(err, ErrOffsetsLost) {
		t.Fatalf("offsets %v, error %v: want ErrOffsetsLost", off, err)
	}
	t.Logf("error: %v", err)
	c2, err := New(ctx, cat, ident, modeConfig(t, Config{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Commit(ctx, orderedBatch(t, pev{batch.OpCreate, 0, 0, 10, 1, ""})); !errors.Is(err, ErrOffsetsLost) {
		t.Errorf("commit on a table with lost offsets: %v, want ErrOffsetsLost", err)
	}
}

// maintain plays a maintenance job of another writer: it appends a row in a
// snapshot without binlake's keys, then expires every other snapshot.
func maintain(t *testing.T, cat catalog.Catalog, ident table.Identifier) {
	t.Helper()
	ctx := t.Context()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := batch.NewConverter(tbl.Schema(), orderedColumns, []string{"id"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := []*batch.Event{{Op: batch.OpCreate, Key: []any{int64(1000)}, Row: []any{int64(1000), "maint", nil}}}
	rdr := newReader(conv.Schema(), conv.Rows(rows))
	defer rdr.Release()
	if tbl, err = tbl.Append(ctx, rdr, iceberg.Properties{"maintenance": "yes"}); err != nil {
		t.Fatalf("maintenance append: %v", err)
	}
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0), table.WithPostCommit(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("expiring snapshots: %v", err)
	}
}
