package commit

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
)

func TestOffsetsEncoding(t *testing.T) {
	in := map[int32]int64{0: 10, 3: 7, 12: 1 << 40}
	s := encodeOffsets(in)
	if s != `{"0":10,"12":1099511627776,"3":7}` {
		t.Errorf("encoded %s", s)
	}
	out, err := decodeOffsets(s)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if _, err := decodeOffsets(`{"x":1}`); err == nil {
		t.Error("bad partition accepted")
	}
}

func TestSummaryProps(t *testing.T) {
	col := &batch.Collapsed{MaxTsMs: 1700000000000, LastGTID: "0-1-42", First: batch.Offsets{"p.db.t": {0: 3}}}
	got := summaryProps("id-1", batch.Offsets{"p.db.t": {0: 5, 1: 9}}, col)
	want := map[string]string{
		CommitIDKey:                      "id-1",
		OffsetsKeyPrefix + "p.db.t":      `{"0":5,"1":9}`,
		FirstOffsetsKeyPrefix + "p.db.t": `{"0":3}`,
		SourceTsKey:                      "1700000000000",
		SourceGTIDKey:                    "0-1-42",
	}
	if d := cmp.Diff(want, map[string]string(got)); d != "" {
		t.Errorf("props (-want +got):\n%s", d)
	}
}
