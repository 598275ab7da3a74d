package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
