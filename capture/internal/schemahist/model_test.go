package schemahist

import (
	"encoding/json"
	"testing"
)

// colJSON renders a model column the way the probe of real Debezium 3.5
// printed tableChanges columns, to compare with its output.
func colJSON(t *testing.T, m *Model) []string {
	t.Helper()
	var out []string
	for _, c := range m.TableChangeStruct()[2].([]any) {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// The expected columns are what Debezium 3.5.0's MariaDB connector wrote
// for the same statements (name, jdbcType, nativeType, typeName,
// typeExpression, charsetName, length, scale, position, optional,
// autoIncremented, generated, comment, defaultValueExpression, enumValues).
func TestModelFromDDL(t *testing.T) {
	show := "CREATE TABLE `pre` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  `name` varchar(20) NOT NULL DEFAULT 'x' COMMENT 'c1',\n" +
		"  `e` enum('a','b') DEFAULT NULL,\n  `d` decimal(10,2) DEFAULT NULL,\n  `ts` timestamp NULL DEFAULT current_timestamp(),\n" +
		"  `g` int(11) GENERATED ALWAYS AS (`id` + 1) VIRTUAL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB AUTO_INCREMENT=2 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci COMMENT='tc'"
	ref, m, err := ParseCreateTable(show, "app", "latin1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ref != (TableRef{"app", "pre"}) || m.DefaultCharset != "utf8mb4" || *m.Comment != "tc" || len(m.PrimaryKey) != 1 || m.PrimaryKey[0] != "id" {
		t.Fatalf("table: %+v %+v", ref, m)
	}
	want := []string{
		`["id",4,null,"INT","INT",null,11,null,1,false,true,true,null,null,null]`,
		`["name",12,null,"VARCHAR","VARCHAR","utf8mb4",20,null,2,false,false,false,"c1","x",null]`,
		`["e",1,null,"ENUM","ENUM","utf8mb4",1,null,3,true,false,false,null,null,["'a'","'b'"]]`,
		`["d",3,null,"DECIMAL","DECIMAL",null,10,2,4,true,false,false,null,null,null]`,
		`["ts",2014,null,"TIMESTAMP","TIMESTAMP",null,null,null,5,true,false,false,null,"1970-01-01 00:00:00",null]`,
		`["g",4,null,"INT","INT",null,11,null,6,true,false,false,null,null,null]`,
	}
	check(t, colJSON(t, m), want)

	_, m2, err := ParseCreateTable("CREATE TABLE t2 (id BIGINT UNSIGNED NOT NULL, v VARCHAR(10) CHARACTER SET latin1, b BIT(3), s SET('x','y'), PRIMARY KEY(id))", "app", "utf8mb4", nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, colJSON(t, m2), []string{
		`["id",-5,null,"BIGINT UNSIGNED","BIGINT UNSIGNED",null,null,null,1,false,false,false,null,null,null]`,
		`["v",12,null,"VARCHAR","VARCHAR","latin1",10,null,2,true,false,false,null,null,null]`,
		`["b",-7,null,"BIT","BIT",null,3,null,3,true,false,false,null,null,null]`,
		`["s",1,null,"SET","SET","utf8mb4",3,null,4,true,false,false,null,null,["'x'","'y'"]]`,
	})
	m3, rename, err := m2.Alter("ALTER TABLE t2 ADD COLUMN z DATETIME(3) NULL", "app")
	if err != nil || rename != nil {
		t.Fatal(err, rename)
	}
	if got := colJSON(t, m3)[4]; got != `["z",93,null,"DATETIME","DATETIME",null,3,null,5,true,false,false,null,null,null]` {
		t.Errorf("added column: %s", got)
	}
	if len(m2.Columns) != 4 {
		t.Errorf("Alter changed its receiver")
	}
	m4, _, err := m3.Alter("ALTER TABLE t2 MODIFY COLUMN v INT FIRST, CHANGE b b2 BIT(5) NOT NULL AFTER z, DROP COLUMN s, RENAME COLUMN id TO id2, RENAME TO x.t9", "app")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range m4.Columns {
		names = append(names, c.Name)
	}
	check(t, names, []string{"v", "id2", "z", "b2"})
	if m4.PrimaryKey[0] != "id2" || m4.Columns[3].Length != 5 || m4.Columns[3].Optional {
		t.Errorf("after alter: %+v", m4)
	}
	_, m5, err := ParseCreateTable("CREATE TABLE t4 (id INT)", "app", "utf8mb4", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := m5.TableChangeStruct(); len(s[1].([]any)) != 0 || s[1] == nil {
		t.Errorf("primary key of a keyless table: %#v (Debezium writes an empty array)", s[1])
	}
}

func check(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d items, want %d:\n%v", len(got), len(want), got)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("item %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

// TestAlterConvertToCharset: CONVERT TO CHARACTER SET changes the table's
// default and every character column's charset (observed in Debezium 3.5's
// schema-change events, test/compat/testdata/realworld/10_charsets.sql).
func TestAlterConvertToCharset(t *testing.T) {
	_, m, err := ParseCreateTable("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(30), e ENUM('a')) DEFAULT CHARSET=latin1", "db", "utf8mb4", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err = m.Alter("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "db")
	if err != nil {
		t.Fatal(err)
	}
	if m.DefaultCharset != "utf8mb4" || m.Columns[0].Charset != "" || m.Columns[1].Charset != "utf8mb4" || m.Columns[2].Charset != "utf8mb4" {
		t.Errorf("after CONVERT TO: default %q, columns %q %q %q", m.DefaultCharset, m.Columns[0].Charset, m.Columns[1].Charset, m.Columns[2].Charset)
	}
}
