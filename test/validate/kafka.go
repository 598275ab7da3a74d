package validate

import (
	"github.com/binlake/binlake/test/kafkatest"
)

// FromRecord reduces a decoded change record to an Event. row renders the
// image the change leaves (after; before for a delete) into Event.Row; nil
// means [Canonical].
func FromRecord(r kafkatest.Record, row func(img map[string]any) string) Event {
	if row == nil {
		row = Canonical
	}
	e := Event{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: Canonical(r.Key), Op: r.Op()}
	if r.Value == nil {
		return e
	}
	img, _ := r.Value["after"].(map[string]any)
	if e.Op == "d" {
		img, _ = r.Value["before"].(map[string]any)
	}
	if img != nil {
		e.Row = row(img)
	}
	e.TsMs, _ = r.Value["ts_ms"].(int64)
	if src, ok := r.Value["source"].(map[string]any); ok {
		e.Pos.File, _ = src["file"].(string)
		e.Pos.Pos, _ = src["pos"].(int64)
		if n, ok := src["row"].(int32); ok {
			e.Pos.Row = int64(n)
		}
		e.Snapshot, _ = src["snapshot"].(string)
	}
	return e
}

// NoteRecords feeds every record to v.
func NoteRecords(v EventValidator, recs []kafkatest.Record, row func(img map[string]any) string) {
	for _, r := range recs {
		v.NoteEvent(FromRecord(r, row))
	}
}
