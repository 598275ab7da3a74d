package pipeline

import (
	"testing"
	"time"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/decode"
)

// TestChangeLogBytesAddUp: the rows a keyless table's change event becomes
// (before and after images of an update) hold together exactly the
// record's size, which the worker adds to the pipeline's buffered bytes
// and the commit takes back as the buffer's bytes. An odd-sized update
// used to leave one byte behind per record, until max-buffered-bytes
// forced a commit after every record.
func TestChangeLogBytesAddUp(t *testing.T) {
	cols := []string{"a", "b"}
	w := &worker{schema: &decode.Schema{Columns: cols}, buf: batch.NewAppend(changeLogColumns(cols), batch.Limits{})}
	var want int64
	for i, ch := range []decode.Change{
		{Event: batch.Event{Op: batch.OpCreate, Row: []any{int32(1), "x"}, Topic: "t", Offset: 0, Size: 101}},
		{Event: batch.Event{Op: batch.OpUpdate, Row: []any{int32(1), "y"}, Topic: "t", Offset: 1, Size: 101}, Before: []any{int32(1), "x"}},
		{Event: batch.Event{Op: batch.OpUpdate, Row: []any{int32(1), "z"}, Topic: "t", Offset: 2, Size: 1}, Before: []any{int32(1), "y"}},
		{Event: batch.Event{Op: batch.OpDelete, Topic: "t", Offset: 3, Size: 77}, Before: []any{int32(1), "z"}},
		{Event: batch.Event{Op: batch.OpTruncate, Topic: "t", Offset: 4, Size: 55}},
	} {
		if err := w.addChangeLog(&ch, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		want += int64(ch.Event.Size)
		if got := w.buf.Bytes(); got != want {
			t.Fatalf("after event %d (%c, %d bytes): the buffer holds %d bytes, want %d", i, ch.Event.Op, ch.Event.Size, got, want)
		}
	}
	if w.buf.Len() != 7 {
		t.Errorf("%d rows, want 7 (c, u before and after twice, d, t)", w.buf.Len())
	}
}
