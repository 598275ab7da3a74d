package debezium_test

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/binlake/binlake/schemas/debezium"
	"github.com/binlake/binlake/schemas/debezium/debeziumtest"
	"github.com/google/go-cmp/cmp"
)

var table = debezium.TableID{Prefix: "dbserver1", DB: "inventory", Table: "orders"}

func TestAppendAvroRoundTrip(t *testing.T) {
	opt := func(s *debezium.Schema) *debezium.Schema { s.Optional = true; return s }
	dec := &debezium.Schema{Type: debezium.BYTES, Name: debezium.DecimalName, Version: 1,
		Parameters: []debezium.Param{{Key: "scale", Value: "2"}, {Key: "connect.decimal.precision", Value: "10"}}}
	tests := []struct {
		name   string
		schema *debezium.Schema
		value  any
	}{
		{"int8 min", &debezium.Schema{Type: debezium.INT8}, int8(math.MinInt8)},
		{"int16 max", &debezium.Schema{Type: debezium.INT16}, int16(math.MaxInt16)},
		{"int32 min", &debezium.Schema{Type: debezium.INT32}, int32(math.MinInt32)},
		{"int64 min", &debezium.Schema{Type: debezium.INT64}, int64(math.MinInt64)},
		{"int64 max", &debezium.Schema{Type: debezium.INT64}, int64(math.MaxInt64)},
		{"float32", &debezium.Schema{Type: debezium.FLOAT32}, float32(-1.25)},
		{"float64", &debezium.Schema{Type: debezium.FLOAT64}, math.MaxFloat64},
		{"bool", &debezium.Schema{Type: debezium.BOOLEAN}, true},
		{"string utf8mb4", &debezium.Schema{Type: debezium.STRING}, "héllo 🎉 𝄞"},
		{"empty string", &debezium.Schema{Type: debezium.STRING}, ""},
		{"bytes", &debezium.Schema{Type: debezium.BYTES}, []byte{0, 1, 0xff}},
		{"decimal", dec, debezium.DecimalBytes(big.NewInt(-12345))},
		{"optional null", opt(&debezium.Schema{Type: debezium.STRING}), nil},
		{"optional value", opt(&debezium.Schema{Type: debezium.STRING}), "x"},
		{"optional default null", &debezium.Schema{Type: debezium.STRING, Optional: true, Default: "d"}, nil},
		{"optional default value", &debezium.Schema{Type: debezium.STRING, Optional: true, Default: "d"}, "v"},
		{"array", &debezium.Schema{Type: debezium.ARRAY, Elem: &debezium.Schema{Type: debezium.FLOAT32}},
			[]any{float32(1), float32(2)}},
		{"empty array", &debezium.Schema{Type: debezium.ARRAY, Elem: &debezium.Schema{Type: debezium.INT64}}, []any{}},
		{"map", &debezium.Schema{Type: debezium.MAP, Key: &debezium.Schema{Type: debezium.STRING},
			Value: &debezium.Schema{Type: debezium.INT32}}, map[string]any{"a": int32(1), "b": int32(2)}},
		{"geometry", debezium.GeometrySchema(true), debezium.Struct{[]byte{1, 2}, nil}},
		{"point", debezium.PointSchema(false), debezium.Struct{1.5, -2.5, []byte{1}, int32(4326)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := debeziumtest.RoundTrip(tt.schema, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.value, got); d != "" {
				t.Errorf("round trip (-want +got):\n%s", d)
			}
		})
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	fields := []debezium.Field{
		{Name: "id", Schema: &debezium.Schema{Type: debezium.INT32}},
		{Name: "status", Schema: &debezium.Schema{Type: debezium.STRING, Name: debezium.EnumName, Version: 1,
			Parameters: []debezium.Param{{Key: "allowed", Value: "new,paid"}}, Default: "new"}},
		{Name: "note", Schema: &debezium.Schema{Type: debezium.STRING, Optional: true, Default: "n/a"}},
	}
	for _, f := range []debezium.Flavor{debezium.FlavorMySQL, debezium.FlavorMariaDB} {
		env := debezium.EnvelopeSchema(table, f, debezium.ValueSchema(table, fields))
		for _, op := range []debezium.Op{debezium.OpCreate, debezium.OpUpdate, debezium.OpDelete, debezium.OpRead} {
			e := debezium.Envelope{
				Source: debezium.Source{Version: "3.1.2.Final", Connector: f, Name: "dbserver1", TsMs: 1700000000000,
					TsUs: 1700000000000000, TsNs: 1700000000000000000, DB: "inventory", Table: "orders",
					ServerID: 1, GTID: "0-1-108", File: "mysql-bin.000001", Pos: 4, Row: 1, Thread: 7},
				Transaction: &debezium.Block{ID: "0-1-108", TotalOrder: 1, DataCollectionOrder: 1},
				Op:          op, TsMs: 1, TsUs: 1000, TsNs: 1000000,
			}
			row := debezium.Struct{int32(1), "paid", nil}
			if op != debezium.OpCreate && op != debezium.OpRead {
				e.Before = row
			}
			if op != debezium.OpDelete {
				e.After = row
			}
			if op == debezium.OpRead {
				e.Source.Snapshot = debezium.SnapshotLast
				e.Source.Thread, e.Source.GTID, e.Source.Table = 0, "", ""
				e.Transaction = nil
			}
			want := e.Struct()
			got, err := debeziumtest.RoundTrip(env, want)
			if err != nil {
				t.Fatalf("%s %s: %v", f, op, err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s %s (-want +got):\n%s", f, op, d)
			}
			generic, err := debezium.AppendAvro(nil, env, want)
			if err != nil {
				t.Fatal(err)
			}
			fast, err := e.AppendAvro(nil, env)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(generic, fast) {
				t.Errorf("%s %s: Envelope.AppendAvro %x differs from AppendAvro %x", f, op, fast, generic)
			}
		}
	}
}

func TestAppendAvroUnionIndex(t *testing.T) {
	nullFirst := &debezium.Schema{Type: debezium.INT32, Optional: true}
	valueFirst := &debezium.Schema{Type: debezium.INT32, Optional: true, Default: int32(5)}
	tests := []struct {
		name   string
		schema *debezium.Schema
		value  any
		want   []byte
	}{
		{"null-first null", nullFirst, nil, []byte{0}},
		{"null-first value", nullFirst, int32(1), []byte{2, 2}},
		{"value-first null", valueFirst, nil, []byte{2}},
		{"value-first value", valueFirst, int32(1), []byte{0, 2}},
		{"required default for nil", &debezium.Schema{Type: debezium.INT32, Default: int32(-1)}, nil, []byte{1}},
		{"optional struct with default is null-first", &debezium.Schema{Type: debezium.STRUCT, Optional: true,
			Default: debezium.Struct{}, Name: "S"}, debezium.Struct{}, []byte{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := debezium.AppendAvro(nil, tt.schema, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("got %x want %x", got, tt.want)
			}
		})
	}
}

func TestAppendAvroErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema *debezium.Schema
		value  any
		want   error
	}{
		{"null required", &debezium.Schema{Type: debezium.STRING}, nil, debezium.ErrNullValue},
		{"wrong go type", &debezium.Schema{Type: debezium.INT32}, int64(1), debezium.ErrInvalidValue},
		{"int out of range", &debezium.Schema{Type: debezium.INT8}, 300, debezium.ErrInvalidValue},
		{"struct arity", &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{
			{Name: "a", Schema: &debezium.Schema{Type: debezium.INT32}}}}, debezium.Struct{}, debezium.ErrInvalidValue},
		{"nested field", &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{
			{Name: "a", Schema: &debezium.Schema{Type: debezium.INT32}}}}, debezium.Struct{nil}, debezium.ErrNullValue},
		{"unknown type", &debezium.Schema{Type: 99}, 1, debezium.ErrInvalidSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := debezium.AppendAvro(nil, tt.schema, tt.value)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecimalBytes(t *testing.T) {
	tests := []struct {
		v    string
		want []byte
	}{
		{"0", []byte{0}},
		{"1", []byte{1}},
		{"127", []byte{0x7f}},
		{"128", []byte{0x00, 0x80}},
		{"-1", []byte{0xff}},
		{"-128", []byte{0x80}},
		{"-129", []byte{0xff, 0x7f}},
		{"-256", []byte{0xff, 0x00}},
		{"255", []byte{0x00, 0xff}},
		{"18446744073709551615", []byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, tt := range tests {
		v, _ := new(big.Int).SetString(tt.v, 10)
		got := debezium.DecimalBytes(v)
		if !bytes.Equal(got, tt.want) {
			t.Errorf("DecimalBytes(%s) = %x, want %x", tt.v, got, tt.want)
		}
		if back := debezium.DecimalFromBytes(got); back.Cmp(v) != 0 {
			t.Errorf("DecimalFromBytes(%x) = %s, want %s", got, back, tt.v)
		}
	}
	// Exhaustive small range against the two's-complement definition.
	for i := int64(-70000); i <= 70000; i++ {
		b := debezium.DecimalBytes(big.NewInt(i))
		if debezium.DecimalFromBytes(b).Int64() != i {
			t.Fatalf("round trip of %d failed: %x", i, b)
		}
		if len(b) > 1 && ((b[0] == 0 && b[1]&0x80 == 0) || (b[0] == 0xff && b[1]&0x80 != 0)) {
			t.Fatalf("%d: non-minimal encoding %x", i, b)
		}
	}
}

func TestFrame(t *testing.T) {
	f := debezium.AppendFrame(nil, 0x01020304, []byte("avro"))
	if want := []byte{0, 1, 2, 3, 4, 'a', 'v', 'r', 'o'}; !bytes.Equal(f, want) {
		t.Fatalf("AppendFrame = %x, want %x", f, want)
	}
	id, payload, err := debezium.ParseFrame(f)
	if err != nil || id != 0x01020304 || string(payload) != "avro" {
		t.Fatalf("ParseFrame = %d %q %v", id, payload, err)
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, debezium.ErrShortFrame},
		{"header only 4", []byte{0, 0, 0, 1}, debezium.ErrShortFrame},
		{"glue magic", []byte{3, 0, 0, 0, 0, 0}, debezium.ErrUnknownMagic},
		{"guid magic", []byte{1, 0, 0, 0, 0, 0}, debezium.ErrUnknownMagic},
	}
	for _, tt := range tests {
		if _, _, err := debezium.ParseFrame(tt.in); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, p, err := debezium.ParseFrame([]byte{0, 0, 0, 0, 9}); err != nil || len(p) != 0 {
		t.Errorf("empty payload: %q %v", p, err)
	}
}

func FuzzParseFrame(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 1})
	f.Add(debezium.AppendFrame(nil, 42, []byte{2, 4, 6}))
	f.Add([]byte{3, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, payload, err := debezium.ParseFrame(b)
		if err != nil {
			if !errors.Is(err, debezium.ErrShortFrame) && !errors.Is(err, debezium.ErrUnknownMagic) {
				t.Fatalf("unexpected error class: %v", err)
			}
			if len(b) >= 5 && b[0] == 0 {
				t.Fatalf("valid frame rejected: %v", err)
			}
			return
		}
		if len(payload) != len(b)-5 {
			t.Fatalf("payload length %d for frame length %d", len(payload), len(b))
		}
		if re := debezium.AppendFrame(nil, id, payload); !bytes.Equal(re, b) {
			t.Fatalf("re-framing %x gave %x", b, re)
		}
	})
}

func TestNames(t *testing.T) {
	tests := []struct{ fn, in, want string }{
		{"topic", "dbserver1.inventory.orders", "dbserver1.inventory.orders"},
		{"topic", "db server.tä$ble", "db_server.t__ble"},
		{"topic", "p.db.emoji😀", "p.db.emoji__"}, // two UTF-16 units, two "_"
		{"topic", ".", "_"},
		{"topic", "..", "__"},
		{"topic", strings.Repeat("a", 300), strings.Repeat("a", 249)},
	}
	for _, tt := range tests {
		if got := debezium.SanitizeTopic(tt.in); got != tt.want {
			t.Errorf("SanitizeTopic(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	id := debezium.TableID{Prefix: "my-server", DB: "", Table: "t"}
	if got := id.Topic(); got != "my-server.t" {
		t.Errorf("Topic with blank db = %q", got)
	}
	if got := id.SchemaPrefix(); got != "my-server.t" {
		t.Errorf("SchemaPrefix (none) = %q", got)
	}
	id.SchemaNames = debezium.AdjustAvro
	if got := id.SchemaPrefix(); got != "my_server.t" {
		t.Errorf("SchemaPrefix (avro) = %q", got)
	}
	for mode, want := range map[debezium.NameAdjustment]string{
		debezium.AdjustNone:        "p.db.2024-sales",
		debezium.AdjustAvro:        "p.db._2024_sales",
		debezium.AdjustAvroUnicode: "p.db._u0032024_u002dsales",
	} {
		id := debezium.TableID{Prefix: "p", DB: "db", Table: "2024-sales", SchemaNames: mode}
		if got := id.SchemaPrefix(); got != want {
			t.Errorf("SchemaPrefix of a leading-digit table (%s) = %q, want %q", mode, got, want)
		}
	}
	if got := debezium.HeartbeatTopic("p"); got != "__debezium-heartbeat.p" {
		t.Errorf("HeartbeatTopic = %q", got)
	}
	if got := debezium.TransactionTopic("p"); got != "p.transaction" {
		t.Errorf("TransactionTopic = %q", got)
	}
}

// TestAdjustNames checks the rules of Debezium's SchemaNameAdjuster (schema
// names) and field namer (field names) for each mode, including the
// examples of Debezium's own SchemaNameAdjusterTest.
func TestAdjustNames(t *testing.T) {
	const (
		none    = debezium.AdjustNone
		avro    = debezium.AdjustAvro
		unicode = debezium.AdjustAvroUnicode
	)
	tests := []struct {
		field bool
		mode  debezium.NameAdjustment
		in    string
		want  string
	}{
		{false, none, "my-server.db.t-1.Value", "my-server.db.t-1.Value"},
		{false, avro, "dbserver1.inventory.orders.Value", "dbserver1.inventory.orders.Value"},
		{false, avro, "my-server.db.order-items.Value", "my_server.db.order_items.Value"},
		// Only the name's first character is a first character.
		{false, avro, "p.db.2024t.Value", "p.db.2024t.Value"},
		{false, avro, "1p.db.t.Key", "_1p.db.t.Key"},
		{false, unicode, "_hello_语言.", "_u005fhello_u005f_u8bed_u8a00."},
		{false, unicode, "p.db.t_1.Value", "p.db.t_u005f1.Value"},
		{false, unicode, "1p.t", "_u0031p.t"},
		{true, none, "created at", "created at"},
		{true, avro, "24ColumnName", "_24ColumnName"},
		{true, avro, "created at", "created_at"},
		{true, avro, "Amount€", "Amount_"},
		{true, avro, "a.b", "a_b"},
		{true, avro, "_ok_", "_ok_"},
		{true, avro, "émoji😀", "_moji__"},
		{true, unicode, "created at", "created_u0020at"},
		{true, unicode, "Amount€", "Amount_u20ac"},
		{true, unicode, "a.b", "a_u002eb"},
		{true, unicode, "9lives", "_u0039lives"},
		{true, unicode, "snake_case", "snake_u005fcase"},
		{true, unicode, "ā", "_u101"}, // Integer.toHexString pads only codes below 0x100
		{true, unicode, "x😀", "x_ud83d_ude00"},
		{true, avro, "", ""},
	}
	for _, tt := range tests {
		adjust, kind := debezium.AdjustSchemaName, "schema"
		if tt.field {
			adjust, kind = debezium.AdjustFieldName, "field"
		}
		if got := adjust(tt.mode, tt.in); got != tt.want {
			t.Errorf("%s name %q with %s = %q, want %q", kind, tt.in, tt.mode, got, tt.want)
		}
	}
	for _, in := range []string{"none", " AVRO ", "avro_unicode", ""} {
		if _, err := debezium.ParseNameAdjustment(in); err != nil {
			t.Errorf("ParseNameAdjustment(%q): %v", in, err)
		}
	}
	if _, err := debezium.ParseNameAdjustment("unicode"); err == nil {
		t.Error("ParseNameAdjustment(unicode): no error")
	}
}

// TestValidAvroName checks the Java Avro default name rule (the one the
// registry and the converters apply to field names).
func TestValidAvroName(t *testing.T) {
	for name, want := range map[string]bool{
		"id": true, "_x": true, "Café": true, "naïve": true, "日本": true, "a1": true,
		"created at": false, "Amount€": false, "a-b": false, "a.b": false, "$x": false,
		"1st": false, "": false, "x😀": false, "١٢": false, "x١٢": true,
	} {
		if full := "p.db." + name + ".Value"; !strings.Contains(name, ".") && debezium.ValidAvroFullName(full) != want {
			t.Errorf("ValidAvroFullName(%q) = %v, want %v", full, !want, want)
		}
		if got := debezium.ValidAvroName(name); got != want {
			t.Errorf("ValidAvroName(%q) = %v, want %v", name, got, want)
		}
	}
}

func BenchmarkAppendAvroEnvelope(b *testing.B) {
	fields := []debezium.Field{
		{Name: "id", Schema: &debezium.Schema{Type: debezium.INT64}},
		{Name: "name", Schema: &debezium.Schema{Type: debezium.STRING, Optional: true}},
		{Name: "qty", Schema: &debezium.Schema{Type: debezium.INT32}},
		{Name: "ts", Schema: &debezium.Schema{Type: debezium.INT64, Name: debezium.MicroTimestampName, Version: 1}},
	}
	env := debezium.EnvelopeSchema(table, debezium.FlavorMySQL, debezium.ValueSchema(table, fields))
	e := debezium.Envelope{
		After:  debezium.Struct{int64(123456), "a reasonably long product name", int32(3), int64(1700000000000000)},
		Source: debezium.Source{Version: "3.1.2.Final", Connector: debezium.FlavorMySQL, Name: "dbserver1", DB: "inventory", Table: "orders", File: "mysql-bin.000001"},
		Op:     debezium.OpCreate,
	}
	var v any = e.Struct() // boxed once, as a producer holding the row would
	buf, _ := debezium.AppendAvro(nil, env, v)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = debezium.AppendAvro(buf[:0], env, v)
	}
}
