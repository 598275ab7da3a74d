package schemamap

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/schemas/debezium"
)

func TestLowerColumns(t *testing.T) {
	comment := opt(sch(debezium.STRING, ""))
	comment.Doc = "the buyer"
	row := &debezium.Schema{Type: debezium.STRUCT, Name: "p.shop.Orders.Value", Fields: []debezium.Field{
		{Name: "OrderID", Schema: sch(debezium.INT64, "")},
		{Name: "Customer", Schema: comment},
		{Name: "total", Schema: opt(sch(debezium.INT32, ""))},
	}}
	got, key, err := LowerColumns(row, []string{"OrderID"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names, docs []string
	for _, f := range got.Fields {
		names, docs = append(names, f.Name), append(docs, f.Schema.Doc)
	}
	if d := cmp.Diff([]string{"orderid", "customer", "total"}, names); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"binlake: source column OrderID", "the buyer; binlake: source column Customer", ""}, docs); d != "" {
		t.Errorf("docs (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"orderid"}, key); d != "" {
		t.Errorf("key (-want +got):\n%s", d)
	}
	if row.Fields[0].Name != "OrderID" || row.Fields[1].Schema.Doc != "the buyer" {
		t.Error("the source schema was changed")
	}
	m, err := Map(got, key)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := m.Schema.FindFieldByName("orderid"); !ok || f.Doc != "binlake: source column OrderID" || len(m.Schema.IdentifierFieldIDs) != 1 || m.Schema.IdentifierFieldIDs[0] != f.ID {
		t.Errorf("mapped schema %v", m.Schema)
	}

	// A column the existing table has under its source name keeps it.
	got, key, err = LowerColumns(row, []string{"OrderID"}, func(n string) bool { return n == "OrderID" })
	if err != nil || got.Fields[0].Name != "OrderID" || got.Fields[1].Name != "customer" || key[0] != "OrderID" {
		t.Errorf("kept: %v %v %v", got.Fields, key, err)
	}

	// Already lower case: the same schema.
	lower := &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{{Name: "id", Schema: sch(debezium.INT64, "")}}}
	if got, _, err := LowerColumns(lower, []string{"id"}, nil); err != nil || got != lower {
		t.Errorf("lower-case row: %p %v, want %p", got, err, lower)
	}

	// Two source columns of one lake name.
	clash := &debezium.Schema{Type: debezium.STRUCT, Name: "p.shop.Orders.Value", Fields: []debezium.Field{
		{Name: "OrderID", Schema: sch(debezium.INT64, "")},
		{Name: "orderid", Schema: sch(debezium.INT64, "")},
	}}
	_, _, err = LowerColumns(clash, nil, nil)
	if !errors.Is(err, ErrColumnCollision) {
		t.Fatalf("collision: error %v, want ErrColumnCollision", err)
	}
	for _, want := range []string{`"OrderID"`, `"orderid"`, "p.shop.Orders", "lower-case-columns"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("collision error %q does not name %s", err, want)
		}
	}
}
