package pipeline

import (
	"log/slog"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/ingest/internal/decode"
)

func TestRenameColumns(t *testing.T) {
	pos := func(n int64) decode.SourcePos { return decode.SourcePos{File: "mysql-bin.000001", Pos: n} }
	note := func(n int64, rs ...columnRename) columnRenameNote { return columnRenameNote{pos: pos(n), renames: rs} }
	for _, tc := range []struct {
		name    string
		lower   bool
		cols    []string
		notes   []columnRenameNote
		want    []string
		skipped int
	}{
		{"rename", false, []string{"id", "a", "b"}, []columnRenameNote{note(1, columnRename{"a", "a2"})}, []string{"id", "a2", "b"}, 0},
		{"swap in one statement", false, []string{"id", "a", "b"}, []columnRenameNote{note(1, columnRename{"a", "b"}, columnRename{"b", "a"})}, []string{"id", "b", "a"}, 0},
		{"statements in order", false, []string{"id", "a", "b"}, []columnRenameNote{note(1, columnRename{"a", "x"}), note(2, columnRename{"x", "y"}, columnRename{"b", "x"})}, []string{"id", "y", "x"}, 0},
		{"old column absent", false, []string{"id", "a"}, []columnRenameNote{note(1, columnRename{"z", "a2"})}, []string{"id", "a"}, 1},
		{"new name held by another column", false, []string{"id", "a", "b"}, []columnRenameNote{note(1, columnRename{"a", "b"})}, []string{"id", "a", "b"}, 1},
		{"old name in another case", false, []string{"id", "Amount"}, []columnRenameNote{note(1, columnRename{"amount", "Total"})}, []string{"id", "Total"}, 0},
		{"lower-case columns", true, []string{"id", "orderid"}, []columnRenameNote{note(1, columnRename{"OrderID", "CustomerRef"})}, []string{"id", "customerref"}, 0},
		{"lower-case columns, a column kept under its source name", true, []string{"id", "OrderID"}, []columnRenameNote{note(1, columnRename{"OrderID", "Ref"})}, []string{"id", "ref"}, 0},
		{"lower-case columns, only the case changes", true, []string{"id", "amount"}, []columnRenameNote{note(1, columnRename{"amount", "Amount"})}, []string{"id", "amount"}, 0},
	} {
		p := &Pipeline{cfg: Config{LowerCaseColumns: tc.lower}, log: slog.New(slog.DiscardHandler)}
		fields := make([]iceberg.NestedField, len(tc.cols))
		for i, c := range tc.cols {
			fields[i] = iceberg.NestedField{ID: i + 1, Name: c, Type: iceberg.PrimitiveTypes.String}
		}
		_, skipped := p.renameColumns(fields, tc.notes)
		var got []string
		for i, f := range fields {
			if f.ID != i+1 {
				t.Errorf("%s: field %d has id %d", tc.name, i, f.ID)
			}
			got = append(got, f.Name)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.name, diff)
		}
		if len(skipped) != tc.skipped {
			t.Errorf("%s: skipped %v, want %d", tc.name, skipped, tc.skipped)
		}
	}
}

func TestColumnRenameNotes(t *testing.T) {
	pos := func(n int64) decode.SourcePos { return decode.SourcePos{File: "mysql-bin.000002", Pos: n} }
	var c columnRenames
	r := []columnRename{{"a", "b"}}
	for _, n := range []int64{30, 10, 20, 10} {
		c.note("t", pos(n), r, n == 30)
	}
	var got []int64
	for _, n := range c.between("t", decode.SourcePos{}, pos(100)) {
		got = append(got, n.pos.Pos)
	}
	if want := []int64{10, 20, 30}; !cmp.Equal(want, got) {
		t.Errorf("notes %v, want %v (in order, once each)", got, want)
	}
	c.note("t", pos(20), r, true)
	for _, n := range c.between("t", decode.SourcePos{}, pos(100)) {
		if n.history != (n.pos.Pos == 30) {
			t.Errorf("note at %d: history %v (a note is live once noted live)", n.pos.Pos, n.history)
		}
	}
	if n := c.between("t", pos(10), pos(30)); len(n) != 1 || n[0].pos != pos(20) {
		t.Errorf("between 10 and 30: %v", n)
	}
	if n := c.after("t", pos(10), pos(30)); len(n) != 2 {
		t.Errorf("after 10 up to 30: %v", n)
	}
	if n := c.between("t", decode.SourcePos{File: "mysql-bin.000001", Pos: 99}, decode.SourcePos{File: "mysql-bin.000003", Pos: 1}); len(n) != 3 {
		t.Errorf("across files: %v", n)
	}
	dropped := false
	for i := range int64(maxColumnRenameNotes + 5) {
		dropped = c.note("u", pos(1000+i), r, false) || dropped
	}
	if n := c.between("u", decode.SourcePos{}, pos(1_000_000)); !dropped || len(n) != maxColumnRenameNotes || n[0].pos != pos(1005) {
		t.Errorf("after %d notes: %d kept from %v, dropped %v", maxColumnRenameNotes+5, len(n), n[0].pos, dropped)
	}
	if at, ok := parseSourcePos(formatSourcePos(pos(42))); !ok || at != pos(42) {
		t.Errorf("position round trip: %v %v", at, ok)
	}
	if _, ok := parseSourcePos("nonsense"); ok {
		t.Error("parsed nonsense")
	}
}

// TestNoteColumnRenames: a statement's renames are noted under its
// table's topic (the database from the statement, else the record's), and
// under the new name's too when it also renames the table; a statement
// without a position or without a column rename is not noted.
func TestNoteColumnRenames(t *testing.T) {
	p := &Pipeline{log: slog.New(slog.DiscardHandler)}
	at := decode.SourcePos{File: "mysql-bin.000001", Pos: 10}
	p.noteColumnRenames("pfx", &decode.SchemaChange{Source: at, Database: "d", DDL: "ALTER TABLE a RENAME COLUMN x TO y, RENAME TO b"})
	p.noteColumnRenames("pfx", &decode.SchemaChange{Source: at, Database: "d", DDL: "ALTER TABLE `e f`.g CHANGE x y INT"})
	p.noteColumnRenames("pfx", &decode.SchemaChange{Database: "d", DDL: "ALTER TABLE h RENAME COLUMN x TO y"})
	p.noteColumnRenames("pfx", &decode.SchemaChange{Source: at, Database: "d", DDL: "ALTER TABLE i ADD COLUMN x INT"})
	end := decode.SourcePos{File: "mysql-bin.000002", Pos: 1}
	for topic, want := range map[string]int{"pfx.d.a": 1, "pfx.d.b": 1, "pfx.e_f.g": 1, "pfx.d.h": 0, "pfx.d.i": 0} {
		got := p.colRenames.between(topic, decode.SourcePos{}, end)
		if len(got) != want {
			t.Errorf("%s: %d notes, want %d", topic, len(got), want)
		}
		if len(got) == 1 && !cmp.Equal(got[0].renames, []columnRename{{"x", "y"}}) {
			t.Errorf("%s: %v", topic, got[0].renames)
		}
	}
}
