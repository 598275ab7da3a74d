package stream

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/binlake/binlake/capture/internal/publish"
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
	row := debezium.Struct{int32(7), "x", []byte{0xff}}
	name, key := describe(tb, row).Describe()
	if name != "app.t" || key != `{"id":7,"code":"/w=="}` || key != keyString(tb, row) {
		t.Fatalf("Describe() = %q, %q", name, key)
	}
	if name, key := describe(&table{Table: &schemahist.Table{Def: schemahist.Definition{DB: "app", Table: "nokey"}}}, row).Describe(); name != "app.nokey" || key != "(none)" {
		t.Fatalf("Describe() without a key = %q, %q", name, key)
	}
}

func TestAppendKeyEqualsKeyStruct(t *testing.T) {
	tb := keyTable()
	for _, row := range []debezium.Struct{
		{int32(7), "x", []byte{0xff}},
		{int32(-1 << 31), nil, []byte{}},
		{int32(7), "x", nil},      // NULL in a required field: the general path's error
		{int64(7), "x", []byte{}}, // wrong type: the same
	} {
		want, werr := debezium.AppendAvro([]byte{0}, tb.Key, keyStruct(tb, row))
		got, err := appendKey([]byte{0}, tb, row)
		if !bytes.Equal(got, want) || fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Errorf("appendKey(%v) = %x, %v; want %x, %v", row, got, err, want, werr)
		}
	}
}

func TestRecordArena(t *testing.T) {
	var a recordArena
	var got [][]byte
	for i := range 3000 {
		f := publish.ConfluentFrame(i)
		b := a.frame(&f)
		b = append(b, bytes.Repeat([]byte{byte(i)}, i%700)...) // some outgrow the chunk's rest
		got = append(got, a.done(b))
		if cap(got[i]) != len(got[i]) {
			t.Fatalf("record %d has capacity %d for length %d", i, cap(got[i]), len(got[i]))
		}
	}
	for i, b := range got { // none was overwritten by a later one
		want := append([]byte{0, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}, bytes.Repeat([]byte{byte(i)}, i%700)...)
		if !bytes.Equal(b, want) {
			t.Fatalf("record %d changed: %x", i, b)
		}
	}
}

// BenchmarkEmitEncode is emit's encoding of one change of a two-column key
// table: key and value bytes, as the arena and appendKey give them.
func BenchmarkEmitEncode(b *testing.B) {
	tb := keyTable()
	row := debezium.Struct{int32(7), "x", []byte{0xff}}
	var a recordArena
	f := publish.ConfluentFrame(1)
	b.ReportAllocs()
	for b.Loop() {
		k, _ := appendKey(a.frame(&f), tb, row)
		_ = a.done(k)
	}
}

// BenchmarkEmitEncodeBefore is BenchmarkEmitEncode as emit did it before
// the arena and appendKey (a frame and a key struct per event).
func BenchmarkEmitEncodeBefore(b *testing.B) {
	tb := keyTable()
	row := debezium.Struct{int32(7), "x", []byte{0xff}}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = debezium.AppendAvro(frame(publish.ConfluentFrame(1)), tb.Key, keyStruct(tb, row))
	}
}
