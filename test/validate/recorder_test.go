package validate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// metaWith is a v2 table whose main branch is the chain of snapshots ids
// (oldest first, each the parent of the next; the first's parent is
// parentOfFirst, 0 for none), each with summary {"n": <id>}.
func metaWith(t *testing.T, parentOfFirst int64, ids ...int64) *table.Table {
	t.Helper()
	var snaps []string
	parent := parentOfFirst
	for i, id := range ids {
		p := ""
		if parent != 0 {
			p = fmt.Sprintf(`"parent-snapshot-id": %d,`, parent)
		}
		snaps = append(snaps, fmt.Sprintf(`{"snapshot-id": %d, %s "sequence-number": %d, "timestamp-ms": %d,
			"manifest-list": "s3://b/t/metadata/snap-%d.avro", "summary": {"operation": "append", "n": "%d"}, "schema-id": 0}`,
			id, p, id, 1700000000000+int64(i), id, id))
		parent = id
	}
	cur := ids[len(ids)-1]
	js := fmt.Sprintf(`{"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": "s3://b/t",
		"last-sequence-number": %d, "last-updated-ms": 1700000000000, "last-column-id": 1,
		"schemas": [{"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": true, "type": "long"}]}],
		"current-schema-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}], "default-spec-id": 0, "last-partition-id": 999,
		"sort-orders": [{"order-id": 0, "fields": []}], "default-sort-order-id": 0,
		"properties": {}, "snapshots": [%s], "current-snapshot-id": %d,
		"refs": {"main": {"snapshot-id": %d, "type": "branch"}}}`, cur, strings.Join(snaps, ","), cur, cur)
	meta, err := table.ParseMetadataBytes([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return table.New(table.Identifier{"ns", "t"}, meta, "s3://b/t/metadata/v1.metadata.json", nil, nil)
}

// TestRecorder: after an expiry removed the oldest snapshots, History
// fails, and a Recorder that noted the table before the expiry walks the
// whole chain; one that noted only part of what was expired fails too.
func TestRecorder(t *testing.T) {
	before := metaWith(t, 0, 1, 2, 3)
	expired := metaWith(t, 3, 4, 5) // 1..3 expired, 4 and 5 committed since

	if _, err := History(expired); err == nil || !strings.Contains(err.Error(), "parent 3 of snapshot 4 is missing") {
		t.Fatalf("History of an expired table: %v, want the missing parent named", err)
	}
	var rec Recorder
	rec.Note(before)
	hist, err := rec.History(expired)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range hist {
		got = append(got, fmt.Sprintf("%d:%s", s.ID, s.Summary["n"]))
	}
	if strings.Join(got, " ") != "1:1 2:2 3:3 4:4 5:5" {
		t.Fatalf("history %v, want snapshots 1 to 5 with their summaries", got)
	}
	if rec.Noted() != 3 {
		t.Errorf("noted %d snapshots, want 3", rec.Noted())
	}

	var partial Recorder
	partial.Note(metaWith(t, 1, 2, 3)) // snapshot 1 was never noted
	if _, err := partial.History(expired); err == nil || !strings.Contains(err.Error(), "parent 1 of snapshot 2 is missing") {
		t.Fatalf("a Recorder that missed snapshot 1: %v, want it named missing", err)
	}
	if hist, err := (*Recorder)(nil).History(before); err != nil || len(hist) != 3 {
		t.Fatalf("a nil Recorder on a whole history: %d snapshots, %v", len(hist), err)
	}
}
