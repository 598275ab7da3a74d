package stream

import (
	"slices"
	"testing"
)

// TestRenameClauses checks the split of a RENAME TABLE of several pairs
// into the clauses Debezium writes as each event's ddl.
func TestRenameClauses(t *testing.T) {
	for _, tt := range []struct {
		q    string
		n    int
		want []string
	}{
		{"RENAME TABLE rn_live TO rn_old, rn_shadow TO rn_live", 2, []string{"rn_live TO rn_old", "rn_shadow TO rn_live"}},
		{"rename tables `a,b` to c ,d to `e`", 2, []string{"`a,b` to c", "d to `e`"}},
		{"RENAME TABLE a TO b", 1, nil},
		{"ALTER TABLE a RENAME TO b", 1, nil},
		{"RENAME TABLE a TO b, c TO d", 3, nil},
	} {
		if got := renameClauses(tt.q, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("renameClauses(%q, %d) = %q, want %q", tt.q, tt.n, got, tt.want)
		}
	}
}

// TestJavaSetOrder checks source.table of a several-table statement
// against what Debezium 3.5.0 wrote (the first case, from
// TestCompatRealWorld's 60_renames on 2026-12-01) and against Java's
// String.hashCode: "Aa" and "BB" hash alike, so they keep insertion order.
func TestJavaSetOrder(t *testing.T) {
	db := "compat_testcompatrealworld_00_s_3302755e."
	if got := javaSetOrder([]string{db + "rn_old", db + "rn_live"}); got != "rn_live,rn_old" {
		t.Errorf("got %q, want Debezium's rn_live,rn_old", got)
	}
	if got := javaSetOrder([]string{"d.Aa", "d.BB"}); got != "Aa,BB" {
		t.Errorf("colliding hashes: got %q, want insertion order", got)
	}
	if got := javaSetOrder([]string{"d.BB", "d.Aa"}); got != "BB,Aa" {
		t.Errorf("colliding hashes: got %q, want insertion order", got)
	}
}
