package schemamap

import (
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/schemas/debezium"
)

var tid = debezium.TableID{Prefix: "dbserver1", DB: "inventory", Table: "all_types"}

func sch(t debezium.Type, name string, params ...debezium.Param) *debezium.Schema {
	return &debezium.Schema{Type: t, Name: name, Version: 1, Parameters: params}
}

func opt(s *debezium.Schema) *debezium.Schema { s.Optional = true; return s }

func dec(p, s string) *debezium.Schema {
	return sch(debezium.BYTES, debezium.DecimalName, debezium.Param{Key: debezium.DecimalScaleParam, Value: s}, debezium.Param{Key: debezium.DecimalPrecisionParam, Value: p})
}

// typeCases is exhaustive over the Debezium types TYPES.md lists.
var typeCases = []struct {
	col  string
	s    *debezium.Schema
	want iceberg.Type
	kind Kind
}{
	{"c_tinyint", &debezium.Schema{Type: debezium.INT8}, iceberg.PrimitiveTypes.Int32, KindInt},
	{"c_smallint", &debezium.Schema{Type: debezium.INT16}, iceberg.PrimitiveTypes.Int32, KindInt},
	{"c_int", &debezium.Schema{Type: debezium.INT32}, iceberg.PrimitiveTypes.Int32, KindInt},
	{"c_bigint", &debezium.Schema{Type: debezium.INT64}, iceberg.PrimitiveTypes.Int64, KindLong},
	{"c_bool", &debezium.Schema{Type: debezium.BOOLEAN}, iceberg.PrimitiveTypes.Bool, KindBool},
	{"c_float", &debezium.Schema{Type: debezium.FLOAT32}, iceberg.PrimitiveTypes.Float32, KindFloat},
	{"c_double", &debezium.Schema{Type: debezium.FLOAT64}, iceberg.PrimitiveTypes.Float64, KindDouble},
	{"c_decimal", dec("10", "2"), iceberg.DecimalTypeOf(10, 2), KindDecimal},
	{"c_decimal38", dec("38", "10"), iceberg.DecimalTypeOf(38, 10), KindDecimal},
	{"c_decimal65", dec("65", "30"), iceberg.PrimitiveTypes.String, KindDecimalString},
	{"c_ubigint", dec("20", "0"), iceberg.DecimalTypeOf(20, 0), KindDecimal},
	{"c_bits", sch(debezium.BYTES, debezium.BitsName, debezium.Param{Key: "length", Value: "12"}), iceberg.PrimitiveTypes.Binary, KindBinary},
	{"c_varchar", &debezium.Schema{Type: debezium.STRING}, iceberg.PrimitiveTypes.String, KindString},
	{"c_blob", &debezium.Schema{Type: debezium.BYTES}, iceberg.PrimitiveTypes.Binary, KindBinary},
	{"c_date", sch(debezium.INT32, debezium.DateName), iceberg.PrimitiveTypes.Date, KindDate},
	{"c_time", sch(debezium.INT64, debezium.MicroTimeName), iceberg.PrimitiveTypes.Int64, KindTimeMicros},
	{"c_datetime", sch(debezium.INT64, debezium.TimestampName), iceberg.PrimitiveTypes.Timestamp, KindTimestampMillis},
	{"c_datetime6", sch(debezium.INT64, debezium.MicroTimestampName), iceberg.PrimitiveTypes.Timestamp, KindTimestampMicros},
	{"c_timestamp", sch(debezium.STRING, debezium.ZonedTimestampName), iceberg.PrimitiveTypes.TimestampTz, KindZonedTimestamp},
	{"c_year", sch(debezium.INT32, debezium.YearName), iceberg.PrimitiveTypes.Int32, KindInt},
	{"c_json", sch(debezium.STRING, debezium.JSONName), iceberg.PrimitiveTypes.String, KindString},
	{"c_enum", sch(debezium.STRING, debezium.EnumName, debezium.Param{Key: "allowed", Value: "a,b"}), iceberg.PrimitiveTypes.String, KindString},
	{"c_set", sch(debezium.STRING, debezium.EnumSetName, debezium.Param{Key: "allowed", Value: "a,b"}), iceberg.PrimitiveTypes.String, KindString},
	{"c_cdate", sch(debezium.INT32, debezium.ConnectDateName), iceberg.PrimitiveTypes.Date, KindDate},
	{"c_ctime", sch(debezium.INT32, debezium.ConnectTimeName), iceberg.PrimitiveTypes.Int64, KindTimeMillis},
	{"c_cts", sch(debezium.INT64, debezium.ConnectTimestamp), iceberg.PrimitiveTypes.Timestamp, KindTimestampMillis},
	{"c_geometry", debezium.GeometrySchema(true), &iceberg.StructType{FieldList: []iceberg.NestedField{
		{Name: "wkb", Type: iceberg.PrimitiveTypes.Binary, Required: true},
		{Name: "srid", Type: iceberg.PrimitiveTypes.Int32},
	}}, KindStruct},
	{"c_point", debezium.PointSchema(true), &iceberg.StructType{FieldList: []iceberg.NestedField{
		{Name: "x", Type: iceberg.PrimitiveTypes.Float64, Required: true},
		{Name: "y", Type: iceberg.PrimitiveTypes.Float64, Required: true},
		{Name: "wkb", Type: iceberg.PrimitiveTypes.Binary},
		{Name: "srid", Type: iceberg.PrimitiveTypes.Int32},
	}}, KindStruct},
	{"c_vector", &debezium.Schema{Type: debezium.ARRAY, Name: debezium.FloatVectorName, Elem: &debezium.Schema{Type: debezium.FLOAT32}},
		&iceberg.ListType{Element: iceberg.PrimitiveTypes.Float32, ElementRequired: true}, KindList},
}

// envelopeJSON renders the all-types table through the same Avro renderer
// capture uses, so the test reads what the registry really holds.
func envelopeJSON(t *testing.T) []byte {
	t.Helper()
	fields := []debezium.Field{{Name: "id", Schema: &debezium.Schema{Type: debezium.INT64}}}
	for _, c := range typeCases {
		fields = append(fields, debezium.Field{Name: c.col, Schema: c.s})
	}
	env := debezium.EnvelopeSchema(tid, debezium.FlavorMySQL, debezium.ValueSchema(tid, fields))
	b, err := debezium.AvroSchema(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stripIDs zeroes field IDs so types compare structurally.
func stripIDs(t iceberg.Type) iceberg.Type {
	switch x := t.(type) {
	case *iceberg.StructType:
		out := &iceberg.StructType{}
		for _, f := range x.FieldList {
			f.ID = 0
			f.Doc = ""
			f.Type = stripIDs(f.Type)
			out.FieldList = append(out.FieldList, f)
		}
		return out
	case *iceberg.ListType:
		return &iceberg.ListType{Element: stripIDs(x.Element), ElementRequired: x.ElementRequired}
	}
	return t
}

func TestMapAllTypesFromAvro(t *testing.T) {
	env, err := ParseAvro(envelopeJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Map(env, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Schema.IdentifierFieldIDs; len(got) != 1 || got[0] != 1 {
		t.Fatalf("identifier fields %v, want [1]", got)
	}
	id := m.Schema.Field(0)
	if id.Name != "id" || !id.Required || !id.Type.Equals(iceberg.PrimitiveTypes.Int64) {
		t.Fatalf("key column %+v", id)
	}
	for i, c := range typeCases {
		f := m.Schema.Field(i + 1)
		if f.Name != c.col {
			t.Fatalf("column %d is %q, want %q", i+1, f.Name, c.col)
		}
		if got := stripIDs(f.Type); !got.Equals(c.want) {
			t.Errorf("%s: Iceberg type %s, want %s", c.col, got, c.want)
		}
		if f.Required != !c.s.Optional {
			t.Errorf("%s: required=%v, want %v", c.col, f.Required, !c.s.Optional)
		}
		if m.Columns[i+1].Kind != c.kind {
			t.Errorf("%s: kind %s, want %s", c.col, m.Columns[i+1].Kind, c.kind)
		}
	}
	// Field IDs are unique across nesting levels.
	seen := map[int]string{}
	for _, f := range m.Schema.Fields() {
		var walk func(path string, t iceberg.Type, id int)
		walk = func(path string, ty iceberg.Type, id int) {
			if prev, ok := seen[id]; ok {
				t.Fatalf("field id %d used by %s and %s", id, prev, path)
			}
			seen[id] = path
			switch x := ty.(type) {
			case *iceberg.StructType:
				for _, nf := range x.FieldList {
					walk(path+"."+nf.Name, nf.Type, nf.ID)
				}
			case *iceberg.ListType:
				walk(path+".element", x.Element, x.ElementID)
			}
		}
		walk(f.Name, f.Type, f.ID)
	}
}

func TestParseAvroGoldenOrders(t *testing.T) {
	b, err := os.ReadFile("../../../schemas/debezium/testdata/orders-value.avsc")
	if err != nil {
		t.Skip("golden file not present:", err)
	}
	env, err := ParseAvro(b)
	if err != nil {
		t.Fatal(err)
	}
	row, err := RowSchema(env)
	if err != nil {
		t.Fatal(err)
	}
	if row.Name != "dbserver1.inventory.orders.Value" || row.FieldIndex("price") < 0 {
		t.Fatalf("row schema %s with %d fields", row.Name, len(row.Fields))
	}
	m, err := Map(env, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	want := "1: id: required int\n2: name: optional string\n3: price: required decimal(10, 2)\n4: created_dt: optional timestamp\n5: updated_ts: required timestamptz\n6: attrs: optional string\n7: status: required string"
	var got []string
	for _, f := range m.Schema.Fields() {
		got = append(got, f.String())
	}
	if d := cmp.Diff(want, strings.Join(got, "\n")); d != "" {
		t.Errorf("schema (-want +got):\n%s", d)
	}
}

func TestParseAvroLogicalTypesWithoutConnectName(t *testing.T) {
	s, err := ParseAvro([]byte(`{"type":"record","name":"V","fields":[
		{"name":"a","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}},
		{"name":"b","type":["null",{"type":"int","logicalType":"date"}]},
		{"name":"c","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"d","type":{"type":"int","logicalType":"time-millis"}},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["x"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Map(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []iceberg.Type{iceberg.DecimalTypeOf(5, 2), iceberg.PrimitiveTypes.Date, iceberg.PrimitiveTypes.Timestamp, iceberg.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.String}
	for i, w := range want {
		if f := m.Schema.Field(i); !f.Type.Equals(w) {
			t.Errorf("%s: %s, want %s", f.Name, f.Type, w)
		}
	}
}

func TestMapKeyErrors(t *testing.T) {
	row := &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{
		{Name: "f", Schema: &debezium.Schema{Type: debezium.FLOAT64}},
	}}
	if _, err := Map(row, []string{"f"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("float key: %v, want ErrUnsupported", err)
	}
	if _, err := Map(row, []string{"missing"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("missing key: %v, want ErrUnsupported", err)
	}
}

func TestConvert(t *testing.T) {
	neg := debezium.DecimalBytes(big.NewInt(-12345))
	big17 := append([]byte{0xff}, debezium.DecimalBytes(new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 100)))...)
	for len(big17) < 17 {
		big17 = append([]byte{0xff}, big17...)
	}
	cases := []struct {
		c    Column
		in   any
		want any
	}{
		{Column{Kind: KindInt}, int8(-3), int32(-3)},
		{Column{Kind: KindInt}, int16(300), int32(300)},
		{Column{Kind: KindLong}, int32(7), int64(7)},
		{Column{Kind: KindDouble}, float32(1.5), float64(1.5)},
		{Column{Kind: KindDecimal, Scale: 2}, neg, decimal128.FromI64(-12345)},
		{Column{Kind: KindDecimal, Scale: 2}, big17, decimal128.FromBigInt(new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 100)))},
		{Column{Kind: KindDecimal, Scale: 2}, big.NewRat(-12345, 100), decimal128.FromI64(-12345)},
		{Column{Kind: KindDecimalString, Scale: 3}, neg, "-12.345"},
		{Column{Kind: KindDecimalString, Scale: 6}, debezium.DecimalBytes(big.NewInt(5)), "0.000005"},
		{Column{Kind: KindTimestampMillis}, int64(1700000000123), int64(1700000000123000)},
		{Column{Kind: KindTimeMillis}, int32(1500), int64(1500000)},
		{Column{Kind: KindTimestampNanos}, int64(-1), int64(-1)},
		{Column{Kind: KindZonedTimestamp}, "2024-01-02T08:04:05.120Z", int64(1704182645120000)},
		{Column{Kind: KindZonedTimestamp}, "1970-01-01T00:00:00Z", int64(0)},
		{Column{Kind: KindStruct, Fields: []Column{{Name: "wkb", Kind: KindBinary}, {Name: "srid", Kind: KindInt}}},
			debezium.Struct{[]byte{1}, nil}, []any{[]byte{1}, nil}},
		{Column{Kind: KindList, Elem: &Column{Kind: KindFloat}}, []any{float32(1)}, []any{float32(1)}},
		{Column{Kind: KindString}, nil, nil},
	}
	for _, c := range cases {
		got, err := c.c.Convert(c.in)
		if err != nil {
			t.Errorf("%s(%v): %v", c.c.Kind, c.in, err)
			continue
		}
		if d := cmp.Diff(c.want, got, cmp.AllowUnexported(decimal128.Num{})); d != "" {
			t.Errorf("%s(%v) (-want +got):\n%s", c.c.Kind, c.in, d)
		}
	}
	if _, err := (&Column{Name: "x", Kind: KindInt}).Convert("nope"); !errors.Is(err, ErrValue) {
		t.Errorf("wrong type: %v, want ErrValue", err)
	}
	if _, err := (&Column{Name: "x", Kind: KindDecimal}).Convert(make([]byte, 17)); err != nil {
		t.Errorf("17 zero bytes: %v", err)
	}
	over := append([]byte{0x01}, make([]byte, 16)...)
	if _, err := (&Column{Name: "x", Kind: KindDecimal}).Convert(over); !errors.Is(err, ErrValue) {
		t.Errorf("overflow: %v, want ErrValue", err)
	}
}

func mustMap(t *testing.T, fields ...debezium.Field) *iceberg.Schema {
	t.Helper()
	row := &debezium.Schema{Type: debezium.STRUCT, Fields: append([]debezium.Field{{Name: "id", Schema: &debezium.Schema{Type: debezium.INT64}}}, fields...)}
	m, err := Map(row, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	return m.Schema
}

func TestEvolve(t *testing.T) {
	f := func(name string, s *debezium.Schema) debezium.Field { return debezium.Field{Name: name, Schema: s} }
	i32 := &debezium.Schema{Type: debezium.INT32}
	i64 := &debezium.Schema{Type: debezium.INT64}
	str := &debezium.Schema{Type: debezium.STRING}
	cur := mustMap(t, f("a", i32), f("b", dec("10", "2")), f("c", str), f("g", debezium.GeometrySchema(true)))

	cases := []struct {
		name string
		next *iceberg.Schema
		want []string
		bad  string // column named in the IncompatibleError
	}{
		{"same", mustMap(t, f("a", i32), f("b", dec("10", "2")), f("c", str), f("g", debezium.GeometrySchema(true))), nil, ""},
		{"add and widen", mustMap(t, f("a", i64), f("b", dec("12", "2")), f("c", opt(&debezium.Schema{Type: debezium.STRING})), f("g", debezium.GeometrySchema(true)), f("n", str)),
			[]string{"widen a from int to long", "widen b from decimal(10, 2) to decimal(12, 2)", "make c optional", "add column n string"}, ""},
		{"drop column", mustMap(t, f("a", i32), f("b", dec("10", "2")), f("g", debezium.GeometrySchema(true))), []string{"make c optional"}, ""},
		{"narrow is fine", mustMap(t, f("a", i32), f("b", dec("8", "2")), f("c", str), f("g", debezium.GeometrySchema(true))), nil, ""},
		{"nested add", mustMap(t, f("a", i32), f("b", dec("10", "2")), f("c", str), f("g", &debezium.Schema{Type: debezium.STRUCT, Optional: true, Fields: []debezium.Field{
			{Name: "wkb", Schema: &debezium.Schema{Type: debezium.BYTES}}, {Name: "srid", Schema: opt(&debezium.Schema{Type: debezium.INT32})}, {Name: "extensions", Schema: opt(&debezium.Schema{Type: debezium.STRING})}}})),
			[]string{"add column g.extensions string"}, ""},
		{"string to long", mustMap(t, f("a", i32), f("b", dec("10", "2")), f("c", i64)), nil, "c"},
		{"decimal scale", mustMap(t, f("a", i32), f("b", dec("10", "3")), f("c", str)), nil, "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			changes, err := Evolve(cur, c.next)
			if c.bad != "" {
				var ie *IncompatibleError
				if !errors.As(err, &ie) || ie.Column != c.bad || !errors.Is(err, ErrIncompatible) {
					t.Fatalf("err %v, want IncompatibleError for %s", err, c.bad)
				}
				if ie.Fix == "" {
					t.Error("no fix in error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range changes {
				got = append(got, ch.String())
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("changes (-want +got):\n%s", d)
			}
		})
	}

	// A different key is incompatible.
	row := &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{f("id", i64), f("a", i32)}}
	m, _ := Map(row, []string{"a"})
	if _, err := Evolve(cur, m.Schema); !errors.Is(err, ErrIncompatible) {
		t.Errorf("key change: %v, want ErrIncompatible", err)
	}
}

func TestChangeLog(t *testing.T) {
	row := &debezium.Schema{Type: debezium.STRUCT, Name: "p.db.t.Value", Fields: []debezium.Field{
		{Name: "a", Schema: sch(debezium.INT32, "")},
		{Name: "b", Schema: opt(sch(debezium.STRING, ""))},
	}}
	m, err := ChangeLog(row)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range m.Schema.Fields() {
		names = append(names, f.Name)
		meta := strings.HasPrefix(f.Name, "_binlake_")
		if f.Required != meta {
			t.Errorf("%s: required %v", f.Name, f.Required)
		}
	}
	want := "a b _binlake_op _binlake_before _binlake_ts_ms _binlake_partition _binlake_offset"
	if got := strings.Join(names, " "); got != want || len(m.Columns) != 7 || len(m.Schema.IdentifierFieldIDs) != 0 {
		t.Errorf("columns %q (%d), identifiers %v; want %q", got, len(m.Columns), m.Schema.IdentifierFieldIDs, want)
	}
	row.Fields = append(row.Fields, debezium.Field{Name: ChangeOpColumn, Schema: sch(debezium.STRING, "")})
	if _, err := ChangeLog(row); !errors.Is(err, ErrUnsupported) {
		t.Errorf("a source column named %s: err %v", ChangeOpColumn, err)
	}
}
