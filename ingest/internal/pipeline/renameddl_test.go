package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/decode"
)

func TestParseRenames(t *testing.T) {
	tn := func(db, tb string) tableName { return tableName{db, tb} }
	for _, tc := range []struct {
		ddl  string
		want []renamePair
	}{
		{"RENAME TABLE a TO b", []renamePair{{From: tn("d", "a"), To: tn("d", "b")}}},
		{"rename table `a` to `b`", []renamePair{{From: tn("d", "a"), To: tn("d", "b")}}},
		{"RENAME TABLE a TO b, c TO a", []renamePair{{From: tn("d", "a"), To: tn("d", "b")}, {From: tn("d", "c"), To: tn("d", "a")}}},
		{"RENAME TABLES IF EXISTS x.a WAIT 5 TO `y`.`b c`", []renamePair{{From: tn("x", "a"), To: tn("y", "b c"), ToQualified: true}}},
		{"RENAME TABLE a NOWAIT TO b", []renamePair{{From: tn("d", "a"), To: tn("d", "b")}}},
		{"/* c */ RENAME TABLE `we``ird` TO b", []renamePair{{From: tn("d", "we`ird"), To: tn("d", "b")}}},
		{"ALTER TABLE a RENAME TO b", []renamePair{{From: tn("d", "a"), To: tn("d", "b")}}},
		{"ALTER TABLE a RENAME b", []renamePair{{From: tn("d", "a"), To: tn("d", "b")}}},
		{"ALTER TABLE x.a RENAME AS y.b", []renamePair{{From: tn("x", "a"), To: tn("y", "b"), ToQualified: true}}},
		{"ALTER TABLE a ADD COLUMN c INT DEFAULT 1, RENAME TO b", []renamePair{{From: tn("d", "a"), To: tn("d", "b")}}},
		{"ALTER TABLE a RENAME TO b, ADD COLUMN c INT", []renamePair{{From: tn("d", "a"), To: tn("d", "b")}}},
		{"ALTER ONLINE IGNORE TABLE IF EXISTS a NOWAIT RENAME TO b", []renamePair{{From: tn("d", "a"), To: tn("d", "b")}}},
		{"ALTER TABLE a RENAME COLUMN x TO y", nil},
		{"ALTER TABLE a RENAME COLUMN x TO y, RENAME INDEX i TO j", nil},
		{"ALTER TABLE a RENAME KEY i TO j, RENAME TO b", []renamePair{{From: tn("d", "a"), To: tn("d", "b")}}},
		{"ALTER TABLE a ADD COLUMN rename INT", nil},
		{"ALTER TABLE a COMMENT 'RENAME TO b'", nil},
		{"CREATE TABLE rename_me (id INT)", nil},
		{"DROP TABLE a", nil},
	} {
		got := parseRenames(tc.ddl, "d")
		for i := range got {
			got[i].FromQualified = false
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.ddl, diff)
		}
	}
}

// TestRenamesOf: a swap is written as one schema-change record per new
// name, each with the whole statement; each record stands for its pair.
func TestRenamesOf(t *testing.T) {
	ddl := "RENAME TABLE a TO b, c TO a"
	for _, tc := range []struct {
		id   string
		want []renamePair
	}{
		{`"d"."b"`, []renamePair{{From: tableName{"d", "a"}, To: tableName{"d", "b"}}}},
		{`"d"."a"`, []renamePair{{From: tableName{"d", "c"}, To: tableName{"d", "a"}, Idx: 1}}},
	} {
		got := renamesOf(&decode.SchemaChange{DDL: ddl, Database: "d", Tables: []decode.TableChange{{Type: "ALTER", ID: tc.id}}})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.id, diff)
		}
	}
	got := renamesOf(&decode.SchemaChange{Tables: []decode.TableChange{{Type: "ALTER", ID: `"d"."a","e"."b"`}}})
	if want := []renamePair{{From: tableName{"d", "a"}, To: tableName{"e", "b"}, FromQualified: true, ToQualified: true}}; !cmp.Equal(want, got) {
		t.Errorf("old,new id: got %v, want %v", got, want)
	}
}

// TestRenameQualified: whether each name of a rename named its database,
// which decides whether an unqualified old name may be in another one.
func TestRenameQualified(t *testing.T) {
	for _, tc := range []struct {
		ddl        string
		fromQ, toQ bool
	}{
		{"RENAME TABLE u TO u2", false, false},
		{"RENAME TABLE a TO d2.b", false, true},
		{"RENAME TABLE d1.a TO b", true, false},
		{"ALTER TABLE a RENAME TO `d2`.`b`", false, true},
	} {
		got := parseRenames(tc.ddl, "d")
		if len(got) != 1 || got[0].FromQualified != tc.fromQ || got[0].ToQualified != tc.toQ {
			t.Errorf("%s: got %+v, want from qualified %v, to qualified %v", tc.ddl, got, tc.fromQ, tc.toQ)
		}
	}
}
