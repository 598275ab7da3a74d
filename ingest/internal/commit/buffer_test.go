package commit

import (
	"fmt"
	"testing"
	"time"

	"github.com/binlake/binlake/ingest/internal/batch"
)

// The tests' table: an int key and a name.
var columns = []string{"id", "name"}

// op is one change of a test batch.
type op struct {
	op   batch.Op
	id   int64
	name string
}

// fillOn makes a buffer of ops on topic (partition 0) at consecutive
// offsets from first.
func fillOn(t *testing.T, topic string, first int64, ops ...op) *batch.Buffer {
	t.Helper()
	b, err := batch.New(columns, []string{"id"}, batch.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range ops {
		off := first + int64(i)
		ev := batch.Event{Op: o.op, Topic: topic, Partition: 0, Offset: off, TsMs: 1_700_000_000_000 + off, GTID: fmt.Sprintf("0-1-%d", off)}
		if o.op != batch.OpTruncate {
			ev.Key = []any{o.id}
		}
		if o.op != batch.OpDelete && o.op != batch.OpTruncate {
			ev.Row = []any{o.id, o.name}
		}
		if err := b.Add(ev, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return b
}
