package schemahist

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/binlake/binlake/capture/internal/mysqltype"
)

// TestModelKey checks the key Debezium's table model takes for each way a
// table gets one (the rules on Model's applyConstraint; the same cases run
// against Debezium 3.5 in test/compat/testdata/realworld/30_keys_defaults.sql).
func TestModelKey(t *testing.T) {
	for _, c := range []struct {
		name  string
		ddl   []string // CREATE TABLE, then ALTER TABLE or CREATE UNIQUE INDEX statements
		key   []string
		notes string
	}{
		{"primary key", []string{"CREATE TABLE t (id INT NOT NULL, u INT NOT NULL UNIQUE, PRIMARY KEY (id))"}, []string{"id"}, ""},
		{"unique not null", []string{"CREATE TABLE t (id INT NOT NULL, u VARCHAR(10) NOT NULL, UNIQUE KEY uk_u (u))"}, []string{"u"}, ""},
		{"unique nullable constraint skipped", []string{"CREATE TABLE t (id INT NOT NULL, u INT NULL, UNIQUE KEY (u))"}, []string{}, ""},
		{"nullable column UNIQUE attribute is a key", []string{"CREATE TABLE t (id INT NOT NULL, u INT NULL UNIQUE)"}, []string{"u"}, ""},
		{"first unique of not null columns", []string{"CREATE TABLE t (a INT NOT NULL, b INT NOT NULL, c INT NULL, UNIQUE KEY uc (c), UNIQUE KEY ub (b), UNIQUE KEY ua (a))"}, []string{"b"}, ""},
		{"composite in index order", []string{"CREATE TABLE t (a INT NOT NULL, b VARCHAR(5) NOT NULL, v INT, UNIQUE KEY (b(3), a DESC))"}, []string{"b", "a"}, ""},
		{"constraint name", []string{"CREATE TABLE t (a INT NOT NULL, CONSTRAINT uq UNIQUE INDEX idx USING BTREE (a))"}, []string{"a"}, ""},
		{"unique on a missing column skipped", []string{"CREATE TABLE t (a INT NOT NULL, b INT NOT NULL, UNIQUE (zz), UNIQUE (b))"}, []string{"b"}, ""},
		{"SERIAL", []string{"CREATE TABLE t (id SERIAL, v INT)"}, []string{"id"}, ""},
		{"SERIAL DEFAULT VALUE", []string{"CREATE TABLE t (id INT SERIAL DEFAULT VALUE, v INT)"}, []string{"id"}, ""},
		{"PRIMARY KEY after a UNIQUE column wins", []string{"CREATE TABLE t (u INT UNIQUE, id INT NOT NULL, PRIMARY KEY (id))"}, []string{"id"}, ""},
		{"keyless", []string{"CREATE TABLE t (a INT, b VARCHAR(5))"}, []string{}, ""},
		{"ADD UNIQUE KEY", []string{"CREATE TABLE t (a INT NOT NULL, b INT NOT NULL, c INT)", "ALTER TABLE t ADD UNIQUE KEY ub (b)"}, []string{"b"}, ""},
		{"ADD CONSTRAINT UNIQUE", []string{"CREATE TABLE t (a INT NOT NULL)", "ALTER TABLE t ADD CONSTRAINT x UNIQUE (a)"}, []string{"a"}, ""},
		{"second unique ignored", []string{"CREATE TABLE t (a INT NOT NULL, b INT NOT NULL)", "ALTER TABLE t ADD UNIQUE (b)", "CREATE UNIQUE INDEX ua ON t (a)"}, []string{"b"}, ""},
		{"DROP INDEX keeps the key", []string{"CREATE TABLE t (a INT NOT NULL, b INT NOT NULL)", "ALTER TABLE t ADD UNIQUE ub (b)", "ALTER TABLE t DROP INDEX ub"}, []string{"b"}, ""},
		{"CREATE UNIQUE INDEX", []string{"CREATE TABLE t (a INT NOT NULL, b INT)", "CREATE UNIQUE INDEX ua ON t (a)"}, []string{"a"}, ""},
		{"CREATE UNIQUE INDEX on nullable", []string{"CREATE TABLE t (a INT NOT NULL, b INT)", "CREATE UNIQUE INDEX ub ON t (b)"}, []string{}, ""},
		{"ADD COLUMN UNIQUE", []string{"CREATE TABLE t (a INT)", "ALTER TABLE t ADD COLUMN k INT NOT NULL UNIQUE"}, []string{"k"}, ""},
		{"MODIFY UNIQUE", []string{"CREATE TABLE t (a INT, k INT)", "ALTER TABLE t MODIFY k INT UNIQUE"}, []string{"k"}, ""},
		{"DROP PRIMARY KEY", []string{"CREATE TABLE t (a INT NOT NULL PRIMARY KEY)", "ALTER TABLE t DROP PRIMARY KEY"}, []string{}, ""},
		{"ADD PRIMARY KEY replaces a unique key", []string{"CREATE TABLE t (a INT NOT NULL UNIQUE, b INT)", "ALTER TABLE t ADD PRIMARY KEY (b)"}, []string{"b"}, ""},
		{"SHOW CREATE TABLE of a nullable UNIQUE column", []string{"CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `u` int(11) DEFAULT NULL,\n  UNIQUE KEY `u` (`u`)\n) ENGINE=InnoDB"}, []string{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, m, err := ParseCreateTable(c.ddl[0], "app", "utf8mb4", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range c.ddl[1:] {
				if strings.HasPrefix(q, "CREATE") {
					var ok bool
					if m, ok = m.CreateUniqueIndex(q, "app"); !ok {
						t.Fatalf("%s: not understood", q)
					}
					continue
				}
				if m, _, err = m.Alter(q, "app"); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(m.PrimaryKey, c.key) {
				t.Errorf("key %q, want %q", m.PrimaryKey, c.key)
			}
		})
	}
}

// A unique key taken as the key keeps its columns' nullability (unlike
// PRIMARY KEY, which makes them NOT NULL).
func TestModelKeyNullability(t *testing.T) {
	_, m, err := ParseCreateTable("CREATE TABLE t (id INT NOT NULL, u INT NULL UNIQUE)", "app", "utf8mb4", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Columns[1].Optional {
		t.Errorf("u became NOT NULL")
	}
	_, m, _ = ParseCreateTable("CREATE TABLE t (id INT, PRIMARY KEY (id))", "app", "utf8mb4", nil)
	if m.Columns[0].Optional {
		t.Errorf("primary key column is optional")
	}
}

func TestKeyColumns(t *testing.T) {
	cols := []string{"id", "code", "region", "v"}
	for _, c := range []struct {
		spec, db, table string
		want            []string
	}{
		{"", "app", "t", nil},
		{"app.t:code", "app", "t", []string{"code"}},
		{"app.t:region,code", "app", "t", []string{"region", "code"}}, // the order written
		{"APP.T:CODE", "app", "t", []string{"code"}},                  // case-insensitive
		{".*\\.t:code", "other", "t", []string{"code"}},
		{"app.t:c.*", "app", "t", []string{"code"}},
		{"app.t:(code|region)", "app", "t", []string{"code", "region"}}, // one regex: table order
		{"app.t:code", "app", "t2", nil},                                // whole-name match
		{"app.x:id;app.t:v", "app", "t", []string{"v"}},
		{"app.t:nosuch", "app", "t", nil},
		{"app.t:code;", "app", "t", []string{"code"}},
		{"app.t: code ", "app", "t", []string{"code"}},
	} {
		k, err := ParseKeyColumns(c.spec)
		if err != nil {
			t.Fatalf("%q: %v", c.spec, err)
		}
		if got := k.Columns(c.db, c.table, cols); !slices.Equal(got, c.want) {
			t.Errorf("%q on %s.%s: %q, want %q", c.spec, c.db, c.table, got, c.want)
		}
	}
	for _, bad := range []string{"app.t", "app.t:", ":a", "app.t:a:b", "app.t:a,,b", "app.t:(a", ";app.t:a"} {
		if _, err := ParseKeyColumns(bad); !errors.Is(err, ErrInvalidKeyColumns) || !strings.Contains(err.Error(), "CAPTURE_MESSAGE_KEY_COLUMNS") {
			t.Errorf("%q: %v, want ErrInvalidKeyColumns naming the setting", bad, err)
		}
	}
}

// TestCompileKey checks the key Compile gives the change events: custom
// key columns first, then the model's key, then the primary key.
func TestCompileKey(t *testing.T) {
	_, m, err := ParseCreateTable("CREATE TABLE t (id INT NOT NULL, u VARCHAR(10) NOT NULL UNIQUE, v INT)", "app", "utf8mb4", nil)
	if err != nil {
		t.Fatal(err)
	}
	def := Definition{DB: "app", Table: "t", Columns: []mysqltype.Column{
		{Name: "id", Type: "int(11)"}, {Name: "u", Type: "varchar(10)"}, {Name: "v", Type: "int(11)", Nullable: true}}}
	keyOf := func(def Definition, keys *KeyColumns, include func(string) bool) []string {
		t.Helper()
		tbl, err := Compile(def, "p", "mariadb", mysqltype.Options{}, Naming{}, include, keys)
		if err != nil {
			t.Fatal(err)
		}
		if tbl.Key == nil {
			return nil
		}
		var names []string
		for _, f := range tbl.Key.Fields {
			names = append(names, f.Name)
		}
		return names
	}
	if got := keyOf(def, nil, nil); got != nil {
		t.Errorf("no model, no primary key: key %q", got)
	}
	withModel := def
	withModel.Model = m
	if got := keyOf(withModel, nil, nil); !slices.Equal(got, []string{"u"}) {
		t.Errorf("model key: %q", got)
	}
	if got := keyOf(withModel, nil, func(c string) bool { return c == "v" }); !slices.Equal(got, []string{"u"}) {
		t.Errorf("key column left out by the column filter: %q", got)
	}
	keys, _ := ParseKeyColumns("app.t:v,id")
	if got := keyOf(withModel, keys, nil); !slices.Equal(got, []string{"v", "id"}) {
		t.Errorf("message.key.columns: %q", got)
	}
	dup, _ := ParseKeyColumns("app.t:v;app.t:.*")
	if _, err := Compile(withModel, "p", "mariadb", mysqltype.Options{}, Naming{}, nil, dup); !errors.Is(err, ErrInvalidKeyColumns) {
		t.Errorf("a column matched twice: %v", err)
	}
	stale := withModel
	stale.Model = m.Clone()
	stale.Model.PrimaryKey = []string{"gone"}
	stale.PrimaryKey = []string{"id"}
	if got := keyOf(stale, nil, nil); !slices.Equal(got, []string{"id"}) {
		t.Errorf("model key naming a missing column: %q, want the primary key", got)
	}
}
