package batch

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/google/go-cmp/cmp"
)

var t0 = time.Unix(1700000000, 0)

func ev(op Op, off int64, id int64, name string) Event {
	e := Event{Op: op, Topic: "t", Partition: 0, Offset: off, TsMs: 1000 + off, Size: 10}
	if op != OpTruncate {
		e.Key = []any{id}
	}
	if op == OpCreate || op == OpUpdate || op == OpRead {
		e.Row = []any{id, name}
	}
	return e
}

func newBuf(t testing.TB, l Limits) *Buffer {
	t.Helper()
	b, err := New([]string{"id", "name"}, []string{"id"}, l)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rows(evs []*Event) []string {
	var out []string
	for _, e := range evs {
		if e.Row != nil {
			out = append(out, fmt.Sprintf("%v=%v", e.Key[0], e.Row[1]))
		} else {
			out = append(out, fmt.Sprintf("%v", e.Key[0]))
		}
	}
	return out
}

func TestCollapse(t *testing.T) {
	cases := []struct {
		name     string
		events   []Event
		upserts  []string
		deletes  []string
		truncate bool
	}{
		{"insert update", []Event{ev(OpCreate, 0, 1, "a"), ev(OpUpdate, 1, 1, "b"), ev(OpCreate, 2, 2, "x")},
			[]string{"1=b", "2=x"}, []string{"1=b", "2=x"}, false},
		{"final delete keeps the key delete", []Event{ev(OpCreate, 0, 1, "a"), ev(OpDelete, 1, 1, ""), ev(OpCreate, 2, 2, "x")},
			[]string{"2=x"}, []string{"1", "2=x"}, false},
		{"delete then reinsert", []Event{ev(OpDelete, 0, 1, ""), ev(OpCreate, 1, 1, "new")},
			[]string{"1=new"}, []string{"1=new"}, false},
		{"pk change", []Event{ev(OpCreate, 0, 1, "a"), ev(OpDelete, 1, 1, ""), ev(OpCreate, 2, 10, "a")},
			[]string{"10=a"}, []string{"1", "10=a"}, false},
		{"order of last change", []Event{ev(OpCreate, 0, 1, "a"), ev(OpCreate, 1, 2, "b"), ev(OpUpdate, 2, 1, "c")},
			[]string{"2=b", "1=c"}, []string{"2=b", "1=c"}, false},
		{"truncate drops earlier", []Event{ev(OpCreate, 0, 1, "a"), ev(OpTruncate, 1, 0, ""), ev(OpCreate, 2, 2, "b"), ev(OpDelete, 3, 3, "")},
			[]string{"2=b"}, nil, true},
		{"snapshot reads", []Event{ev(OpRead, 0, 1, "a"), ev(OpRead, 1, 2, "b")},
			[]string{"1=a", "2=b"}, []string{"1=a", "2=b"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBuf(t, Limits{})
			for _, e := range c.events {
				if err := b.Add(e, t0); err != nil {
					t.Fatal(err)
				}
			}
			got := b.Collapse(nil, 0)
			if d := cmp.Diff(c.upserts, rows(got.Upserts)); d != "" {
				t.Errorf("upserts (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.deletes, rows(got.Deletes)); d != "" {
				t.Errorf("deletes (-want +got):\n%s", d)
			}
			if got.Truncate != c.truncate {
				t.Errorf("truncate %v", got.Truncate)
			}
			want := Offsets{"t": {0: int64(len(c.events))}}
			if d := cmp.Diff(want, got.Offsets); d != "" {
				t.Errorf("offsets (-want +got):\n%s", d)
			}
			if got.Events != len(c.events) || got.MaxTsMs != 1000+int64(len(c.events)-1) {
				t.Errorf("events %d maxTs %d", got.Events, got.MaxTsMs)
			}
		})
	}
}

func TestCollapseSkipsCommitted(t *testing.T) {
	b := newBuf(t, Limits{})
	for _, e := range []Event{ev(OpCreate, 5, 1, "a"), ev(OpUpdate, 6, 1, "b"), ev(OpCreate, 7, 2, "c")} {
		_ = b.Add(e, t0)
	}
	e := ev(OpCreate, 3, 9, "other-partition")
	e.Partition = 1
	_ = b.Add(e, t0)

	got := b.Collapse(Offsets{"t": {0: 7}}, 0)
	if d := cmp.Diff([]string{"2=c", "9=other-partition"}, rows(got.Upserts)); d != "" {
		t.Errorf("upserts (-want +got):\n%s", d)
	}
	if got.Skipped != 2 || got.Events != 2 {
		t.Errorf("skipped %d events %d", got.Skipped, got.Events)
	}
	if d := cmp.Diff(Offsets{"t": {0: 8, 1: 4}}, got.Offsets); d != "" {
		t.Errorf("offsets (-want +got):\n%s", d)
	}
	// The first offsets are those of the first events not committed yet.
	if d := cmp.Diff(Offsets{"t": {0: 7, 1: 3}}, got.First); d != "" {
		t.Errorf("first offsets (-want +got):\n%s", d)
	}
	if all := b.Collapse(Offsets{"t": {0: 8, 1: 4}}, 0); !all.Empty() || all.Skipped != 4 {
		t.Errorf("fully committed batch: empty=%v skipped=%d", all.Empty(), all.Skipped)
	}
}

func TestCompositeKeys(t *testing.T) {
	b, err := New([]string{"a", "b", "v"}, []string{"a", "b"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	add := func(off int64, a string, bb int32, v string, op Op) {
		e := Event{Op: op, Key: []any{a, bb}, Topic: "t", Offset: off}
		if op != OpDelete {
			e.Row = []any{a, bb, v}
		}
		if err := b.Add(e, t0); err != nil {
			t.Fatal(err)
		}
	}
	add(0, "x", 1, "1", OpCreate)
	add(1, "x", 2, "2", OpCreate)
	add(2, "x", 1, "3", OpUpdate)
	add(3, "x\x00", 1, "4", OpCreate) // must not collide with ("x", ...)
	c := b.Collapse(nil, 0)
	if len(c.Upserts) != 3 || c.Upserts[1].Row[2] != "3" {
		t.Fatalf("upserts %v", c.Upserts)
	}
}

func TestLimits(t *testing.T) {
	b := newBuf(t, Limits{MaxRows: 3, MaxBytes: 25, MaxAge: time.Second})
	if b.Full(t0) {
		t.Fatal("empty buffer is full")
	}
	_ = b.Add(ev(OpCreate, 0, 1, "a"), t0)
	if b.Full(t0) || !b.Full(t0.Add(time.Second)) {
		t.Error("age limit")
	}
	_ = b.Add(ev(OpCreate, 1, 2, "a"), t0)
	_ = b.Add(ev(OpCreate, 2, 3, "a"), t0)
	if !b.Full(t0) {
		t.Error("rows/bytes limit")
	}
	b.Reset()
	if b.Len() != 0 || b.Bytes() != 0 || b.Full(t0.Add(time.Hour)) {
		t.Error("reset")
	}
}

func TestAddRejects(t *testing.T) {
	b := newBuf(t, Limits{})
	bad := []Event{
		{Op: 'x', Key: []any{int64(1)}},
		{Op: OpCreate, Key: []any{int64(1)}, Row: []any{int64(1)}},
		{Op: OpDelete},
	}
	for _, e := range bad {
		if err := b.Add(e, t0); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("%+v: %v", e, err)
		}
	}
	if _, err := New([]string{"a"}, nil, Limits{}); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("keyless: %v", err)
	}
}

var allTypes = iceberg.NewSchemaWithIdentifiers(0, []int{1},
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
	iceberg.NestedField{ID: 3, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
	iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 6, Name: "s", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 7, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
	iceberg.NestedField{ID: 8, Name: "dec", Type: iceberg.DecimalTypeOf(10, 2)},
	iceberg.NestedField{ID: 9, Name: "day", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 10, Name: "tm", Type: iceberg.PrimitiveTypes.Time},
	iceberg.NestedField{ID: 11, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
	iceberg.NestedField{ID: 12, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 13, Name: "geo", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 16, Name: "wkb", Type: iceberg.PrimitiveTypes.Binary, Required: true},
		{ID: 17, Name: "srid", Type: iceberg.PrimitiveTypes.Int32},
	}}},
	iceberg.NestedField{ID: 14, Name: "vec", Type: &iceberg.ListType{ElementID: 18, Element: iceberg.PrimitiveTypes.Float32, ElementRequired: true}},
	iceberg.NestedField{ID: 15, Name: "dropped", Type: iceberg.PrimitiveTypes.String},
)

var allColumns = []string{"id", "i", "b", "f", "d", "s", "bin", "dec", "day", "tm", "ts", "tstz", "geo", "vec"}

func allRow(id int64) []any {
	return []any{id, int32(id), id%2 == 0, float32(1.5), 2.5, "name", []byte{1, 2}, decimal128.FromI64(12345),
		int32(19000), int64(3_600_000_000), int64(1_700_000_000_000_000), int64(1_700_000_000_000_001),
		[]any{[]byte{0}, int32(4326)}, []any{float32(1), float32(2)}}
}

func TestConverter(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	c, err := NewConverter(allTypes, allColumns, []string{"id"}, mem)
	if err != nil {
		t.Fatal(err)
	}
	c.RecordRows = 2
	evs := []*Event{
		{Op: OpCreate, Key: []any{int64(1)}, Row: allRow(1)},
		{Op: OpCreate, Key: []any{int64(2)}, Row: allRow(2)},
		{Op: OpCreate, Key: []any{int64(3)}, Row: []any{int64(3), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil}},
	}
	var n int
	var recs []arrow.RecordBatch
	for rec, err := range c.Rows(evs) {
		if err != nil {
			t.Fatal(err)
		}
		n += int(rec.NumRows())
		recs = append(recs, rec)
	}
	if n != 3 || len(recs) != 2 {
		t.Fatalf("%d rows in %d batches", n, len(recs))
	}
	r := recs[0]
	if got := r.Column(7).(*array.Decimal128).Value(0); got != decimal128.FromI64(12345) {
		t.Errorf("decimal %v", got)
	}
	if got := r.Column(11).(*array.Timestamp).Value(1); got != 1_700_000_000_000_001 {
		t.Errorf("tstz %v", got)
	}
	if got := r.Column(12).(*array.Struct).Field(1).(*array.Int32).Value(0); got != 4326 {
		t.Errorf("geo.srid %v", got)
	}
	if r.Column(14).NullN() != 2 {
		t.Errorf("dropped column has %d nulls, want 2", r.Column(14).NullN())
	}
	if recs[1].Column(1).NullN() != 1 {
		t.Error("null row")
	}
	for _, r := range recs {
		r.Release()
	}
	for rec, err := range c.Keys(evs) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumCols() != 1 || rec.Schema().Field(0).Name != "id" {
			t.Errorf("key schema %s", rec.Schema())
		}
		rec.Release()
	}
	if ids := c.KeyFieldIDs(); len(ids) != 1 || ids[0] != 1 {
		t.Errorf("key ids %v", ids)
	}

	// A wrong Go type is an error naming the column, not a panic.
	bad := []*Event{{Op: OpCreate, Key: []any{int64(1)}, Row: append(allRow(1)[:1:1], "not an int", nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil)}}
	for rec, err := range c.Rows(bad) {
		if !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("bad row: %v", err)
		}
		if rec != nil {
			rec.Release()
		}
	}
}

// benchEvents makes n events over n/2 keys: inserts then updates.
func benchEvents(n int) []Event {
	evs := make([]Event, n)
	for i := range evs {
		id := int64(i % (n / 2))
		op := OpCreate
		if i >= n/2 {
			op = OpUpdate
		}
		evs[i] = Event{Op: op, Key: []any{id}, Row: allRow(id), Topic: "t", Offset: int64(i), Size: 200}
	}
	return evs
}

func BenchmarkCollapse(b *testing.B) {
	const n = 100_000
	buf, _ := New(allColumns, []string{"id"}, Limits{MaxRows: n})
	for _, e := range benchEvents(n) {
		_ = buf.Add(e, t0)
	}
	b.ReportAllocs()
	b.ReportMetric(n, "events/op")
	for b.Loop() {
		buf.Collapse(nil, 0)
	}
}

func BenchmarkCollapseCompositeKey(b *testing.B) {
	const n = 100_000
	buf, _ := New([]string{"a", "b"}, []string{"a", "b"}, Limits{MaxRows: n})
	for i := range n {
		k := []any{fmt.Sprintf("k%d", i%(n/2)), int32(i)}
		_ = buf.Add(Event{Op: OpCreate, Key: k, Row: k, Topic: "t", Offset: int64(i)}, t0)
	}
	b.ReportAllocs()
	b.ReportMetric(n, "events/op")
	for b.Loop() {
		buf.Collapse(nil, 0)
	}
}

func BenchmarkArrowRows(b *testing.B) {
	const n = 100_000
	buf, _ := New(allColumns, []string{"id"}, Limits{MaxRows: n})
	for _, e := range benchEvents(n) {
		_ = buf.Add(e, t0)
	}
	col := buf.Collapse(nil, 0)
	c, err := NewConverter(allTypes, allColumns, []string{"id"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ReportMetric(float64(len(col.Upserts)), "rows/op")
	b.SetBytes(int64(len(col.Upserts)) * 200)
	for b.Loop() {
		for rec, err := range c.Rows(col.Upserts) {
			if err != nil {
				b.Fatal(err)
			}
			rec.Release()
		}
	}
}

func BenchmarkArrowKeys(b *testing.B) {
	const n = 100_000
	buf, _ := New(allColumns, []string{"id"}, Limits{MaxRows: n})
	for _, e := range benchEvents(n) {
		_ = buf.Add(e, t0)
	}
	col := buf.Collapse(nil, 0)
	c, _ := NewConverter(allTypes, allColumns, []string{"id"}, nil)
	b.ReportAllocs()
	b.ReportMetric(float64(len(col.Deletes)), "keys/op")
	for b.Loop() {
		for rec, err := range c.Keys(col.Deletes) {
			if err != nil {
				b.Fatal(err)
			}
			rec.Release()
		}
	}
}

// TestAppendOnly checks the change-log buffer of a keyless table: every
// row is kept in order (duplicates too), nothing is deleted, committed
// offsets are skipped, and the converter builds rows without a key.
func TestAppendOnly(t *testing.T) {
	b := NewAppend([]string{"a", "op"}, Limits{})
	now := time.Now()
	for i, row := range [][]any{{int32(1), "c"}, {int32(1), "c"}, {int32(1), "d"}, {nil, "t"}} {
		if err := b.Add(Event{Op: OpCreate, Row: row, Topic: "tp", Offset: int64(10 + i)}, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Add(Event{Op: OpDelete, Key: []any{int32(1)}, Topic: "tp", Offset: 20}, now); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("a keyed delete in an append-only buffer: err %v", err)
	}
	c := b.Collapse(Offsets{"tp": {0: 11}}, 0)
	if c.Truncate || len(c.Deletes) != 0 || len(c.Upserts) != 3 || c.Skipped != 1 || c.Offsets["tp"][0] != 14 {
		t.Fatalf("collapse: truncate %v deletes %d upserts %d skipped %d offsets %v", c.Truncate, len(c.Deletes), len(c.Upserts), c.Skipped, c.Offsets)
	}
	for i, want := range []string{"c", "d", "t"} {
		if got := c.Upserts[i].Row[1]; got != want {
			t.Errorf("row %d: op %v, want %s", i, got, want)
		}
	}
	sch := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 2, Name: "op", Type: iceberg.PrimitiveTypes.String, Required: true})
	conv, err := NewConverter(sch, b.Columns(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rec, err := range conv.Rows(c.Upserts) {
		if err != nil {
			t.Fatal(err)
		}
		n += int(rec.NumRows())
		rec.Release()
	}
	if n != 3 {
		t.Errorf("converted %d rows, want 3", n)
	}
}

// TestCollapseTruncateBySourceOrder: a truncate removes the changes that
// precede it in the source, not those that precede it in the batch. The
// truncate arrives on partition 0; rows on partitions 1 and 2 arrive before
// and after it in any mix.
func TestCollapseTruncateBySourceOrder(t *testing.T) {
	at := func(op Op, part int32, off, order, id int64) Event {
		e := ev(op, off, id, fmt.Sprint("v", order))
		e.Partition, e.Order = part, order
		return e
	}
	b := newBuf(t, Limits{})
	for _, e := range []Event{
		at(OpCreate, 1, 0, 150, 9), // after the truncate in the source, before it in the batch
		at(OpCreate, 2, 0, 50, 5),  // before the truncate in both
		at(OpTruncate, 0, 0, 100, 0),
		at(OpCreate, 2, 1, 60, 6),   // before the truncate in the source, after it in the batch
		at(OpUpdate, 2, 2, 120, 5),  // key 5 again, after the truncate
		at(OpDelete, 1, 1, 80, 7),   // a delete before the truncate: nothing to do
		at(OpCreate, 1, 2, 0, 8),    // no source order: kept
		at(OpCreate, 2, 3, 110, 10), // after
	} {
		if err := b.Add(e, t0); err != nil {
			t.Fatal(err)
		}
	}
	c := b.Collapse(nil, 0)
	if c.Truncate || c.TruncateBefore != 100 || c.Watermark != 100 {
		t.Fatalf("truncate %v before %d watermark %d, want a truncate before 100", c.Truncate, c.TruncateBefore, c.Watermark)
	}
	if diff := cmp.Diff([]string{"9=v150", "5=v120", "8=v0", "10=v110"}, rows(c.Upserts)); diff != "" {
		t.Errorf("upserts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"9=v150", "5=v120", "8=v0", "10=v110"}, rows(c.Deletes)); diff != "" {
		t.Errorf("deletes (-want +got):\n%s", diff)
	}
	if c.Stale != 2 || c.Events != 8 || c.Offsets["t"][0] != 1 || c.Offsets["t"][1] != 3 || c.Offsets["t"][2] != 4 {
		t.Errorf("stale %d events %d offsets %v", c.Stale, c.Events, c.Offsets)
	}
	if diff := cmp.Diff([]StaleEvent{{Position{"t", 2, 1}, 60}, {Position{"t", 1, 1}, 80}}, c.StaleFirst); diff != "" {
		t.Errorf("stale events reported (-want +got):\n%s", diff)
	}

	// The table already applied a truncate at 200: a lagging partition's
	// changes below it are dropped, and the old truncate changes nothing.
	c = b.Collapse(nil, 200)
	if c.TruncateBefore != 0 || c.Watermark != 200 {
		t.Errorf("stale truncate: before %d watermark %d", c.TruncateBefore, c.Watermark)
	}
	if diff := cmp.Diff([]string{"8=v0"}, rows(c.Upserts)); diff != "" {
		t.Errorf("upserts under watermark 200 (-want +got):\n%s", diff)
	}
}

func TestSourceOrder(t *testing.T) {
	o := func(file string, pos int64, row int32, snap bool) int64 {
		t.Helper()
		v, ok := SourceOrder(file, pos, row, snap)
		if !ok {
			t.Fatalf("SourceOrder(%q, %d, %d) not ok", file, pos, row)
		}
		return v
	}
	// Increasing in the source: rows of one event, the next event, the next
	// file (also past 999999, where the names stop sorting as text).
	seq := []int64{
		o("mysql-bin.000001", 4, 0, true),
		o("mysql-bin.000001", 4, 0, false),
		o("mysql-bin.000001", 4, 3, false),
		o("mysql-bin.000001", 1<<32-10, 7, false),
		o("mysql-bin.000002", 300, 0, true),
		o("mysql-bin.000002", 300, 0, false),
		o("mysql-bin.999999", 300, 0, false),
		o("mysql-bin.1000000", 4, 0, false),
	}
	for i := 1; i < len(seq); i++ {
		if seq[i] <= seq[i-1] {
			t.Errorf("order %d (%s) not above %d (%s)", i, FormatOrder(seq[i]), i-1, FormatOrder(seq[i-1]))
		}
	}
	for _, bad := range []struct {
		file string
		pos  int64
	}{{"", 4}, {"mysql-bin", 4}, {"mysql-bin.x", 4}, {"mysql-bin.000001", 0}, {"mysql-bin.000001", 1 << 32}, {"b.2000000000", 4}} {
		if _, ok := SourceOrder(bad.file, bad.pos, 0, false); ok {
			t.Errorf("SourceOrder(%q, %d) ok", bad.file, bad.pos)
		}
	}
}

// TestPass: passed positions advance the collapse's offsets past records
// that carry no event, count toward the limits, are skipped once the
// committed offsets cover them, and are cleared by Reset.
func TestPass(t *testing.T) {
	now := time.Now()
	b, err := New([]string{"id", "v"}, []string{"id"}, Limits{MaxRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Add(Event{Op: OpCreate, Key: []any{int64(1)}, Row: []any{int64(1), "a"}, Topic: "t", Partition: 0, Offset: 4}, now); err != nil {
		t.Fatal(err)
	}
	b.Pass(Position{Topic: "t", Partition: 0, Offset: 5}, now)
	b.Pass(Position{Topic: "t", Partition: 1, Offset: 9}, now)
	if b.Len() != 1 || b.Pending() != 3 || !b.Full(now) {
		t.Fatalf("Len %d Pending %d Full %v, want 1, 3, true", b.Len(), b.Pending(), b.Full(now))
	}
	c := b.Collapse(nil, 0)
	if c.Events != 1 || c.Passed != 2 || c.Offsets["t"][0] != 6 || c.Offsets["t"][1] != 10 {
		t.Errorf("collapse: events %d passed %d offsets %v, want 1, 2, map[0:6 1:10]", c.Events, c.Passed, c.Offsets)
	}
	c = b.Collapse(Offsets{"t": {0: 6, 1: 9}}, 0)
	if c.Events != 0 || c.Passed != 1 || c.Offsets["t"][1] != 10 {
		t.Errorf("collapse over committed: events %d passed %d offsets %v, want 0, 1, map[1:10]", c.Events, c.Passed, c.Offsets)
	}
	b.Reset()
	if b.Pending() != 0 || len(b.Passed()) != 0 {
		t.Errorf("after Reset: Pending %d, Passed %v", b.Pending(), b.Passed())
	}
	// A buffer of passed positions only fills by age too.
	b.Pass(Position{Topic: "t", Partition: 0, Offset: 7}, now)
	if b.Full(now) || !b.Full(now.Add(31*time.Second)) {
		t.Errorf("a passed position alone: Full now %v, after the age limit %v; want false, true", b.Full(now), b.Full(now.Add(31*time.Second)))
	}
}

// TestHolds: the batch knows which records it holds, by partition, and
// refuses an event of a record before the last one it holds (a record
// fetched again after a rebalance would be applied twice in one commit).
func TestHolds(t *testing.T) {
	b := newBuf(t, Limits{})
	for _, off := range []int64{3, 4, 4} { // 4 twice: one record, two events
		if err := b.Add(ev(OpCreate, off, off, "x"), t0); err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
	}
	b.Pass(Position{Topic: "t", Partition: 1, Offset: 9}, t0)
	for _, c := range []struct {
		pos  Position
		want bool
	}{
		{Position{"t", 0, 2}, true}, // before the batch's first: the table's offsets skip it
		{Position{"t", 0, 4}, true},
		{Position{"t", 0, 5}, false},
		{Position{"t", 1, 9}, true},
		{Position{"t", 1, 10}, false},
		{Position{"t", 2, 0}, false},
		{Position{"u", 0, 4}, false},
	} {
		if got := b.Holds(c.pos); got != c.want {
			t.Errorf("Holds(%v) = %v, want %v", c.pos, got, c.want)
		}
	}
	if err := b.Add(ev(OpUpdate, 3, 3, "y"), t0); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("an event at offset 3 after 4: %v, want ErrInvalidEvent", err)
	}
	b.Reset()
	if b.Holds(Position{"t", 0, 4}) {
		t.Error("a reset batch still holds offset 4")
	}
	if err := b.Add(ev(OpUpdate, 3, 3, "y"), t0); err != nil {
		t.Errorf("offset 3 after a reset: %v", err)
	}
}

// TestStaleFloodSampled: a flood of changes below the truncate watermark
// is counted in full and reported by its first few, in Kafka order.
func TestStaleFloodSampled(t *testing.T) {
	b := newBuf(t, Limits{})
	for i := range int64(1000) {
		e := ev(OpCreate, i, i, "x")
		e.Order = 10 + i
		if err := b.Add(e, t0); err != nil {
			t.Fatal(err)
		}
	}
	c := b.Collapse(nil, 5000)
	if c.Stale != 1000 || len(c.Upserts) != 0 {
		t.Fatalf("stale %d upserts %d, want 1000 and 0", c.Stale, len(c.Upserts))
	}
	want := []StaleEvent{{Position{"t", 0, 0}, 10}, {Position{"t", 0, 1}, 11}, {Position{"t", 0, 2}, 12}}
	if diff := cmp.Diff(want, c.StaleFirst); diff != "" {
		t.Errorf("stale events reported (-want +got):\n%s", diff)
	}
}

// TestStaleAfterTruncateInItsPartition: in one partition Kafka order is
// source order, so a change after the truncate there that sorts below it
// has a wrong order (the truncate-and-reload loss of issue 29, where the
// truncate's order took source.row): it is still dropped, as its order
// says, but counted apart for the log to say so. A change before the
// truncate, or on another partition, is the truncate's normal work.
func TestStaleAfterTruncateInItsPartition(t *testing.T) {
	at := func(op Op, part int32, off, order, id int64) Event {
		e := ev(op, off, id, fmt.Sprint("v", order))
		e.Partition, e.Order = part, order
		return e
	}
	b := newBuf(t, Limits{})
	for _, e := range []Event{
		at(OpCreate, 0, 0, 40, 1),
		at(OpTruncate, 0, 1, 100, 0),
		at(OpCreate, 0, 2, 60, 2), // after the truncate, below it: wrong
		at(OpCreate, 0, 3, 61, 3), // likewise
		at(OpCreate, 1, 0, 50, 4), // another partition: lagging, fine
		at(OpCreate, 0, 4, 120, 5),
	} {
		if err := b.Add(e, t0); err != nil {
			t.Fatal(err)
		}
	}
	c := b.Collapse(nil, 0)
	if c.Stale != 4 || c.StaleAfterTruncate != 2 {
		t.Errorf("stale %d, after the truncate %d; want 4 and 2", c.Stale, c.StaleAfterTruncate)
	}
	if diff := cmp.Diff([]string{"5=v120"}, rows(c.Upserts)); diff != "" {
		t.Errorf("upserts (-want +got):\n%s", diff)
	}
}

// TestColumnsIn: a buffer laid out before another writer renamed (and
// swapped) columns names them as the table does now, by field id; its key
// follows; columns without an id keep their names.
func TestColumnsIn(t *testing.T) {
	b, err := New([]string{"id", "p", "q", "o", "_order"}, []string{"id"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b.SetFieldIDs([]int{1, 2, 3, 4, 0})
	now := iceberg.NewSchema(5,
		iceberg.NestedField{ID: 1, Name: "ident", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 2, Name: "q", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "p", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "o2", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 6, Name: "o", Type: iceberg.PrimitiveTypes.Int32})
	cols, key := b.ColumnsIn(now)
	if want := []string{"ident", "q", "p", "o2", "_order"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	if want := []string{"ident"}; !slices.Equal(key, want) {
		t.Errorf("key %v, want %v", key, want)
	}
	if got := b.Columns(); !slices.Equal(got, []string{"id", "p", "q", "o", "_order"}) {
		t.Errorf("the buffer's own layout changed: %v", got)
	}
}
