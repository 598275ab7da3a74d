package main

import (
	"strings"
	"testing"
)

// TestStatusCut checks the consistent cut across tables: the newest GTID
// when no table waits, the lowest GTID of those that wait otherwise, and
// no cut (with the reason) where none can be told.
func TestStatusCut(t *testing.T) {
	one := []statusRow{{}}
	two := []statusRow{{}, {Partition: 1}}
	for _, tc := range []struct {
		name      string
		tables    []statusTable
		want, why string
	}{
		{"all caught up: the newest", []statusTable{{Table: "a", SourceGTID: "0-1-10", Partitions: one}, {Table: "b", SourceGTID: "0-1-20", Partitions: one}}, "0-1-20", ""},
		{"one waits: its last GTID", []statusTable{{Table: "a", SourceGTID: "0-1-10", Lag: 3, Partitions: one}, {Table: "b", SourceGTID: "0-1-20", Partitions: one}}, "0-1-10", ""},
		{"two wait: the lower", []statusTable{{Table: "a", SourceGTID: "0-1-10", Lag: 3, Partitions: one}, {Table: "b", SourceGTID: "0-1-7", Lag: 1, Partitions: one}}, "0-1-7", ""},
		{"sequence numbers compare as numbers", []statusTable{{Table: "a", SourceGTID: "0-1-9", Partitions: one}, {Table: "b", SourceGTID: "0-1-10", Partitions: one}}, "0-1-10", ""},
		{"MySQL GTIDs", []statusTable{{Table: "a", SourceGTID: "3e11fa47-71ca-11e1-9e33-c80aa9429562:23", Lag: 1, Partitions: one}, {Table: "b", SourceGTID: "3e11fa47-71ca-11e1-9e33-c80aa9429562:40", Partitions: one}}, "3e11fa47-71ca-11e1-9e33-c80aa9429562:23", ""},
		{"a waiting table on two partitions", []statusTable{{Table: "a", SourceGTID: "0-1-10", Lag: 3, Partitions: two}}, "", "2 partitions"},
		{"two domains", []statusTable{{Table: "a", SourceGTID: "0-1-10", Partitions: one}, {Table: "b", SourceGTID: "1-1-3", Partitions: one}}, "", "more than one source stream"},
		{"a waiting table without a GTID", []statusTable{{Table: "a", Lag: 2, Partitions: one}}, "", "holds no GTID"},
		{"no GTIDs at all", []statusTable{{Table: "a", Partitions: one}}, "", "no table holds a GTID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := cut(tc.tables)
			if got != tc.want || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("cut = %q (%q), want %q (%q)", got, why, tc.want, tc.why)
			}
		})
	}
}

// TestStatusRenamesText: ingest status prints one line per source prefix
// saying whether its renames are followed, in each of the four states.
func TestStatusRenamesText(t *testing.T) {
	var out strings.Builder
	printStatus(&out, statusReport{Cut: "0-1-1", Renames: []renameSource{
		{"a", "a", renamesFollowed}, {"b", "b", renamesNotFollowed}, {"c", "c", renamesNoTopic}, {"d", "d", renamesUnknown},
	}})
	for _, want := range []string{
		"source a: renames: followed (schema-change topic a consumed)\n",
		"source b: renames: NOT followed: schema-change topic b exists but is not in topics/topic-regex\n",
		"source c: renames: not followed: no schema-change topic c on the cluster\n",
		"source d: renames: unknown: schema-change topic d exists; give ingest status ingest's topics or topic-regex",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
}
