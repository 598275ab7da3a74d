package schemahist

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/capture/internal/mysqltype"
)

// TestHistoryReplay replays history records as the capture before
// HistoryRecord moved here wrote them: the latest definition of each
// table wins and a drop forgets it, so a table re-created after its drop
// has only its new definition.
func TestHistoryReplay(t *testing.T) {
	records := []string{
		`{"definition":{"db":"d","table":"a","columns":[{"Name":"id","Type":"int(11)","Nullable":false,"Default":null,"DefaultGenerated":false,"Comment":""}],"primary_key":["id"]}}`,
		`{"definition":{"db":"d","table":"b","columns":[{"Name":"x","Type":"int(11)","Nullable":true,"Default":null,"DefaultGenerated":false,"Comment":""}]}}`,
		`{"definition":{"db":"d","table":"a","columns":[{"Name":"id","Type":"bigint(20)","Nullable":false,"Default":null,"DefaultGenerated":false,"Comment":""}],"primary_key":["id"]}}`,
		`{"definition":{"db":"d","table":"b","columns":null},"dropped":true}`,
	}
	h := History{}
	for _, s := range records {
		rec, err := UnmarshalHistoryRecord([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		h.Apply(rec)
	}
	want := History{"d.a": {DB: "d", Table: "a", PrimaryKey: []string{"id"}, Columns: []mysqltype.Column{{Name: "id", Type: "bigint(20)"}}}}
	if d := cmp.Diff(want, h); d != "" {
		t.Fatalf("replayed history (-want +got):\n%s", d)
	}
	b, err := MarshalHistoryRecord(HistoryRecord{Definition: Definition{DB: "d", Table: "b"}, Dropped: true})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != records[3] {
		t.Fatalf("a drop encodes as %s, want %s", b, records[3])
	}
	if k := string((HistoryRecord{Definition: Definition{DB: "d", Table: "a"}}).Key()); k != "d.a" {
		t.Fatalf("key %q, want d.a", k)
	}
}
