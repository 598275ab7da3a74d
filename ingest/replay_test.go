package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/batch"
)

func TestParseFromOffsets(t *testing.T) {
	got, err := parseFromOffsets("0=12, 1=0,p.db.t:2=7")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]int64{"": {0: 12, 1: 0}, "p.db.t": {2: 7}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for _, bad := range []string{"0", "x=1", "0=-1", "-1=3", "0=1,,1=2"} {
		if _, err := parseFromOffsets(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	if got, err := parseFromOffsets(" "); err != nil || got != nil {
		t.Errorf("empty: %v %v", got, err)
	}
}

// TestPendingTopics: a replay reads only the topics main holds offsets of
// past the replay's start; the old topic of a table renamed before the
// start, which the start holds as far as main, is not read again (issue
// 29 item 6).
func TestPendingTopics(t *testing.T) {
	start := batch.Offsets{"p.db.old": {0: 40}, "p.db.new": {0: 3, 1: 9}}
	main := batch.Offsets{"p.db.old": {0: 40}, "p.db.new": {0: 3, 1: 12}, "p.db.later": {0: 1}}
	if got, want := pendingTopics(start, main), []string{"p.db.later", "p.db.new"}; !cmp.Equal(got, want) {
		t.Errorf("pendingTopics = %v, want %v", got, want)
	}
	if got := pendingTopics(main, main); len(got) != 0 {
		t.Errorf("caught up: pendingTopics = %v, want none", got)
	}
}
