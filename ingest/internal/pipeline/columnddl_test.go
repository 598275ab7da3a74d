package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseColumnRenames(t *testing.T) {
	type cr = columnRename
	d := func(tb string) tableName { return tableName{"d", tb} }
	for _, tc := range []struct {
		ddl   string
		table tableName
		want  []columnRename
	}{
		{"ALTER TABLE t CHANGE c c2 INT", d("t"), []cr{{"c", "c2"}}},
		{"alter table t change column c c2 bigint not null default 0", d("t"), []cr{{"c", "c2"}}},
		{"ALTER TABLE t CHANGE COLUMN IF EXISTS c c2 VARCHAR(10)", d("t"), []cr{{"c", "c2"}}},
		{"ALTER TABLE t CHANGE c c INT", tableName{}, nil},
		{"ALTER TABLE t CHANGE c C INT", d("t"), []cr{{"c", "C"}}},
		{"ALTER TABLE t RENAME COLUMN a TO b", d("t"), []cr{{"a", "b"}}},
		{"ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO a", d("t"), []cr{{"a", "b"}, {"b", "a"}}},
		{"ALTER TABLE t CHANGE a b INT, CHANGE b a VARCHAR(5)", d("t"), []cr{{"a", "b"}, {"b", "a"}}},
		{"ALTER TABLE t RENAME COLUMN c TO d, ADD COLUMN c INT", d("t"), []cr{{"c", "d"}}},
		{"ALTER TABLE t ADD COLUMN x INT DEFAULT 1, RENAME COLUMN a TO b, MODIFY y BIGINT, CHANGE p q DECIMAL(10, 2) COMMENT 'x, CHANGE u v INT'", d("t"),
			[]cr{{"a", "b"}, {"p", "q"}}},
		{"ALTER TABLE `my db`.`t t` RENAME COLUMN `a``b` TO `c d`", tableName{"my db", "t t"}, []cr{{"a`b", "c d"}}},
		{`ALTER TABLE "x"."t" RENAME COLUMN "a" TO "b"`, tableName{"x", "t"}, []cr{{"a", "b"}}},
		{"ALTER ONLINE IGNORE TABLE IF EXISTS x.t NOWAIT CHANGE a b INT", tableName{"x", "t"}, []cr{{"a", "b"}}},
		{"ALTER TABLE t WAIT 3 RENAME COLUMN a TO b", d("t"), []cr{{"a", "b"}}},
		{"/* c */ ALTER TABLE t -- note\n RENAME COLUMN a TO b", d("t"), []cr{{"a", "b"}}},
		{"ALTER TABLE t RENAME COLUMN a TO b, RENAME TO u", d("t"), []cr{{"a", "b"}}},
		{"ALTER TABLE t RENAME TO u", tableName{}, nil},
		{"ALTER TABLE t RENAME INDEX i TO j", tableName{}, nil},
		{"ALTER TABLE t ADD COLUMN `change` INT, ADD COLUMN rename INT", tableName{}, nil},
		{"ALTER TABLE t MODIFY c INT COMMENT 'CHANGE c d'", tableName{}, nil},
		{"ALTER TABLE t ADD CONSTRAINT k CHECK (a IN (1, 2)), CHANGE a b INT", d("t"), []cr{{"a", "b"}}},
		{"ALTER TABLE t PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (1), PARTITION p1 VALUES LESS THAN MAXVALUE)", tableName{}, nil},
		{"CREATE TABLE t (change_me INT)", tableName{}, nil},
		{"RENAME TABLE a TO b", tableName{}, nil},
	} {
		tb, got, ok := parseColumnRenames(tc.ddl, "d")
		if ok != (tc.want != nil) {
			t.Errorf("%s: ok %v", tc.ddl, ok)
			continue
		}
		if tb != tc.table {
			t.Errorf("%s: table %v, want %v", tc.ddl, tb, tc.table)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.ddl, diff)
		}
	}
}
