package schemahist

import (
	"reflect"
	"testing"

	"github.com/binlake/binlake/capture/internal/mysqltype"
	"github.com/binlake/binlake/schemas/debezium"
)

// TestModelDefaults checks the Connect default of a column after each DDL
// form, taken from the table model as Debezium 3.5 takes it (the cases of
// test/compat/testdata/realworld/30_keys_defaults.sql). info is
// MariaDB's information_schema COLUMN_DEFAULT for the same column: the
// definition's default, which the model's replaces.
func TestModelDefaults(t *testing.T) {
	for _, c := range []struct {
		name  string
		ddl   []string // CREATE TABLE t (id ..., c ...), then ALTERs
		typ   string   // COLUMN_TYPE of c
		info  *string  // COLUMN_DEFAULT of c
		null  bool
		want  any
		avro  string // the model's defaultValueExpression
		noDef bool   // no default expression
	}{
		{name: "string", ddl: []string{"CREATE TABLE t (c VARCHAR(10) DEFAULT 'x')"}, typ: "varchar(10)", info: sp("'x'"), null: true, want: "x", avro: "x"},
		{name: "doubled quote", ddl: []string{"CREATE TABLE t (c VARCHAR(10) DEFAULT 'it''s')"}, typ: "varchar(10)", info: sp("'it''s'"), null: true, want: "it's", avro: "it''s"},
		{name: "negative", ddl: []string{"CREATE TABLE t (c INT NOT NULL DEFAULT -5)"}, typ: "int(11)", info: sp("-5"), want: int32(-5), avro: "-5"},
		{name: "expression", ddl: []string{"CREATE TABLE t (c INT DEFAULT (1 + 1))"}, typ: "int(11)", info: sp("(1 + 1)"), null: true, noDef: true},
		{name: "function", ddl: []string{"CREATE TABLE t (c VARCHAR(5) DEFAULT LOWER('AB'))"}, typ: "varchar(5)", info: sp("lcase('AB')"), null: true, noDef: true},
		{name: "current_timestamp not null", ddl: []string{"CREATE TABLE t (c TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"}, typ: "timestamp(6)", info: sp("current_timestamp(6)"), want: "1970-01-01T00:00:00Z", avro: "1970-01-01 00:00:00"},
		{name: "current_timestamp nullable", ddl: []string{"CREATE TABLE t (c TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)"}, typ: "timestamp", info: sp("current_timestamp()"), null: true, avro: "1970-01-01 00:00:00"},
		{name: "datetime now", ddl: []string{"CREATE TABLE t (c DATETIME DEFAULT NOW())"}, typ: "datetime", info: sp("current_timestamp()"), null: true, want: int64(0), avro: "1970-01-01 00:00:00"},
		{name: "decimal", ddl: []string{"CREATE TABLE t (c DECIMAL(5,2) DEFAULT 1.5)"}, typ: "decimal(5,2)", info: sp("1.50"), null: true, want: []byte{0, 0x96}, avro: "1.5"},
		{name: "bits", ddl: []string{"CREATE TABLE t (c BIT(3) DEFAULT b'101')"}, typ: "bit(3)", info: sp("b'101'"), null: true, want: []byte{5}, avro: "101"},
		{name: "boolean true", ddl: []string{"CREATE TABLE t (c BOOLEAN DEFAULT TRUE)"}, typ: "tinyint(1)", info: sp("1"), null: true, want: true, avro: "TRUE"},
		{name: "tinyint false", ddl: []string{"CREATE TABLE t (c TINYINT NOT NULL DEFAULT FALSE)"}, typ: "tinyint(4)", info: sp("0"), want: int16(0), avro: "FALSE"},
		{name: "hex literal", ddl: []string{"CREATE TABLE t (c VARBINARY(4) DEFAULT 0x41)"}, typ: "varbinary(4)", info: sp("'A'"), null: true, noDef: true},
		{name: "ADD COLUMN", ddl: []string{"CREATE TABLE t (id INT)", "ALTER TABLE t ADD COLUMN c VARCHAR(32) DEFAULT 'dflt'"}, typ: "varchar(32)", info: sp("'dflt'"), null: true, want: "dflt", avro: "dflt"},
		{name: "MODIFY", ddl: []string{"CREATE TABLE t (c VARCHAR(32) DEFAULT 'a')", "ALTER TABLE t MODIFY c VARCHAR(32) DEFAULT 'modified'"}, typ: "varchar(32)", info: sp("'modified'"), null: true, want: "modified", avro: "modified"},
		{name: "MODIFY without default", ddl: []string{"CREATE TABLE t (c VARCHAR(32) DEFAULT 'a')", "ALTER TABLE t MODIFY c VARCHAR(40)"}, typ: "varchar(40)", info: nil, null: true, noDef: true},
		{name: "CHANGE", ddl: []string{"CREATE TABLE t (x VARCHAR(32) DEFAULT 'a')", "ALTER TABLE t CHANGE x c VARCHAR(40) NOT NULL DEFAULT 'changed'"}, typ: "varchar(40)", info: sp("'changed'"), want: "changed", avro: "changed"},
		{name: "SET DEFAULT", ddl: []string{"CREATE TABLE t (c VARCHAR(32) DEFAULT 'a')", "ALTER TABLE t ALTER COLUMN c SET DEFAULT 'set'"}, typ: "varchar(32)", info: sp("'set'"), null: true, want: "set", avro: "set"},
		{name: "DROP DEFAULT", ddl: []string{"CREATE TABLE t (c VARCHAR(32) NOT NULL DEFAULT 'a')", "ALTER TABLE t ALTER COLUMN c DROP DEFAULT"}, typ: "varchar(32)", info: nil, noDef: true},
		{name: "ADD expression", ddl: []string{"CREATE TABLE t (id INT)", "ALTER TABLE t ADD COLUMN c INT DEFAULT (2 * 3)"}, typ: "int(11)", info: sp("(2 * 3)"), null: true, noDef: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, m, err := ParseCreateTable(c.ddl[0], "app", "utf8mb4", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range c.ddl[1:] {
				if m, _, err = m.Alter(q, "app"); err != nil {
					t.Fatal(err)
				}
			}
			mi := m.column("c")
			if got := m.Columns[mi].Default; c.noDef != (got == nil) || (got != nil && *got != c.avro) {
				t.Errorf("defaultValueExpression %v, want %q", show(got), c.avro)
			}
			def := Definition{DB: "app", Table: "t", Model: m}
			for _, mc := range m.Columns {
				col := mysqltype.Column{Name: mc.Name, Type: "int(11)", Nullable: true}
				if mc.Name == "c" {
					col = mysqltype.Column{Name: "c", Type: c.typ, Nullable: c.null, Default: c.info}
				}
				def.Columns = append(def.Columns, col)
			}
			tbl, err := Compile(def, "p", debezium.FlavorMariaDB, mysqltype.Options{}, Naming{}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := tbl.Value.Fields[mi].Schema.Default; !reflect.DeepEqual(got, c.want) {
				t.Errorf("Connect default %#v, want %#v", got, c.want)
			}
		})
	}
}

func sp(s string) *string { return &s }

func show(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}
