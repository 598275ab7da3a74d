package stream

import (
	"testing"

	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/schemas/debezium"
)

func keyTable() *table {
	key := &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{
		{Name: "id", Schema: &debezium.Schema{Type: debezium.INT32}},
		{Name: "code", Schema: &debezium.Schema{Type: debezium.BYTES}},
	}}
	return &table{Table: &schemahist.Table{Def: schemahist.Definition{DB: "app", Table: "t"}, KeyIdx: []int{0, 2}, Key: key}}
}

func TestSameKey(t *testing.T) {
	tb := keyTable()
	row := func(id any, code any) debezium.Struct { return debezium.Struct{id, "other", code} }
	for _, c := range []struct {
		a, b debezium.Struct
		want bool
	}{
		{row(int32(1), []byte{1, 2}), row(int32(1), []byte{1, 2}), true},
		{row(int32(1), []byte{1, 2}), row(int32(2), []byte{1, 2}), false},
		{row(int32(1), []byte{1, 2}), row(int32(1), []byte{1, 3}), false},
		{row(int32(1), []byte{1, 2}), row(int32(1), "\x01\x02"), false},
		{row(int32(1), nil), row(int32(1), nil), true},
		{row(int32(1), debezium.Struct{int32(1)}), row(int32(1), debezium.Struct{int32(1)}), true}, // not comparable: no panic
	} {
		if got := sameKey(tb, c.a, c.b); got != c.want {
			t.Errorf("sameKey(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestRecordDescRendersKeyLikeDebezium(t *testing.T) {
	tb := keyTable()
	table, key := recordDesc{t: tb, row: debezium.Struct{int32(7), "x", []byte{0xff}}}.Describe()
	if table != "app.t" || key != `{"id":7,"code":"/w=="}` {
		t.Fatalf("Describe() = %q, %q", table, key)
	}
}
