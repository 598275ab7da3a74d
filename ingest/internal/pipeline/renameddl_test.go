package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRenames(t *testing.T) {
	tn := func(db, tb string) tableName { return tableName{db, tb} }
	for _, tc := range []struct {
		ddl  string
		want []renamePair
	}{
		{"RENAME TABLE a TO b", []renamePair{{tn("d", "a"), tn("d", "b")}}},
		{"rename table `a` to `b`", []renamePair{{tn("d", "a"), tn("d", "b")}}},
		{"RENAME TABLE a TO b, c TO a", []renamePair{{tn("d", "a"), tn("d", "b")}, {tn("d", "c"), tn("d", "a")}}},
		{"RENAME TABLES IF EXISTS x.a WAIT 5 TO `y`.`b c`", []renamePair{{tn("x", "a"), tn("y", "b c")}}},
		{"RENAME TABLE a NOWAIT TO b", []renamePair{{tn("d", "a"), tn("d", "b")}}},
		{"/* c */ RENAME TABLE `we``ird` TO b", []renamePair{{tn("d", "we`ird"), tn("d", "b")}}},
		{"ALTER TABLE a RENAME TO b", []renamePair{{tn("d", "a"), tn("d", "b")}}},
		{"ALTER TABLE a RENAME b", []renamePair{{tn("d", "a"), tn("d", "b")}}},
		{"ALTER TABLE x.a RENAME AS y.b", []renamePair{{tn("x", "a"), tn("y", "b")}}},
		{"ALTER TABLE a ADD COLUMN c INT DEFAULT 1, RENAME TO b", []renamePair{{tn("d", "a"), tn("d", "b")}}},
		{"ALTER TABLE a RENAME TO b, ADD COLUMN c INT", []renamePair{{tn("d", "a"), tn("d", "b")}}},
		{"ALTER ONLINE IGNORE TABLE IF EXISTS a NOWAIT RENAME TO b", []renamePair{{tn("d", "a"), tn("d", "b")}}},
		{"ALTER TABLE a RENAME COLUMN x TO y", nil},
		{"ALTER TABLE a RENAME COLUMN x TO y, RENAME INDEX i TO j", nil},
		{"ALTER TABLE a RENAME KEY i TO j, RENAME TO b", []renamePair{{tn("d", "a"), tn("d", "b")}}},
		{"ALTER TABLE a ADD COLUMN rename INT", nil},
		{"ALTER TABLE a COMMENT 'RENAME TO b'", nil},
		{"CREATE TABLE rename_me (id INT)", nil},
		{"DROP TABLE a", nil},
	} {
		if diff := cmp.Diff(tc.want, parseRenames(tc.ddl, "d")); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.ddl, diff)
		}
	}
}
