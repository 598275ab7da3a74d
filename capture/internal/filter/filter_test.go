package filter

import (
	"errors"
	"testing"
)

func TestFilter(t *testing.T) {
	f, err := New(Lists{DatabaseInclude: "app,shop_.*", TableExclude: `shop_eu\.tmp_.*`, ColumnExclude: `app\.users\.password`})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		db, table string
		want      bool
	}{
		{"app", "users", true},
		{"APP", "users", true}, // case-insensitive, as MySQL names on most systems
		{"shop_eu", "orders", true},
		{"shop_eu", "tmp_1", false},
		{"application", "x", false}, // whole-name match, not prefix
		{"other", "x", false},
		{"mysql", "user", false},
	} {
		if got := f.Table(c.db, c.table); got != c.want {
			t.Errorf("Table(%s, %s) = %v, want %v", c.db, c.table, got, c.want)
		}
	}
	if f.Column("app", "users", "password") || !f.Column("app", "users", "email") {
		t.Error("column exclude list not applied")
	}
	all, _ := New(Lists{})
	if !all.Table("anything", "t") || all.Database("information_schema") {
		t.Error("empty lists must capture every user table and no system table")
	}
}

func TestFilterInvalid(t *testing.T) {
	for _, l := range []Lists{
		{DatabaseInclude: "a", DatabaseExclude: "b"},
		{TableInclude: "a.b", TableExclude: "a.c"},
		{ColumnInclude: "a", ColumnExclude: "b"},
		{TableInclude: "a.(b"},
	} {
		if _, err := New(l); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", l, err)
		}
	}
}
