package debezium

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/linkedin/goavro/v2"
)

var ordersTable = TableID{Prefix: "dbserver1", DB: "inventory", Table: "orders"}

// ordersFields is the A.5 example table written out by hand.
func ordersFields() []Field {
	return []Field{
		{"id", &Schema{Type: INT32}},
		{"name", &Schema{Type: STRING, Optional: true}},
		{"price", &Schema{Type: BYTES, Name: DecimalName, Version: 1,
			Parameters: []Param{{DecimalScaleParam, "2"}, {DecimalPrecisionParam, "10"}}}},
		{"created_dt", &Schema{Type: INT64, Optional: true, Name: TimestampName, Version: 1}},
		{"updated_ts", &Schema{Type: STRING, Name: ZonedTimestampName, Version: 1, Default: "1970-01-01T00:00:00Z"}},
		{"attrs", &Schema{Type: STRING, Optional: true, Name: JSONName, Version: 1}},
		{"status", &Schema{Type: STRING, Name: EnumName, Version: 1,
			Parameters: []Param{{"allowed", "new,paid,shipped"}}, Default: "new"}},
	}
}

// assertGolden checks got against the golden file both as parsed JSON and
// as the exact compact string (key order matters for registry lookups).
func assertGolden(t *testing.T, got []byte, golden string) {
	t.Helper()
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("rendered schema is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("parsed JSON differs from %s (-want +got):\n%s", golden, d)
	}
	if !bytes.Equal(bytes.TrimSpace(want), got) {
		t.Errorf("compact string differs from %s:\n got %s\nwant %s", golden, got, bytes.TrimSpace(want))
	}
	if _, err := goavro.NewCodec(string(got)); err != nil {
		t.Errorf("goavro rejects the schema: %v", err)
	}
}

func TestAvroSchemaGoldenA5(t *testing.T) {
	fields := ordersFields()
	key := KeySchema(ordersTable, fields[:1])
	env := EnvelopeSchema(ordersTable, FlavorMySQL, ValueSchema(ordersTable, fields))

	gotKey, err := AvroSchema(key)
	if err != nil {
		t.Fatal(err)
	}
	assertGolden(t, gotKey, "testdata/orders-key.avsc")

	gotValue, err := AvroSchema(env)
	if err != nil {
		t.Fatal(err)
	}
	assertGolden(t, gotValue, "testdata/orders-value.avsc")
}

func TestAvroSchemaFragments(t *testing.T) {
	tests := []struct {
		name   string
		schema *Schema
		want   string
	}{
		{"int8", &Schema{Type: INT8}, `{"type":"int","connect.type":"int8"}`},
		{"int16 optional", &Schema{Type: INT16, Optional: true}, `["null",{"type":"int","connect.type":"int16"}]`},
		{"int8 default after name", &Schema{Type: INT8, Optional: true, Default: int8(3), Doc: "c"},
			`[{"type":"int","connect.doc":"c","connect.default":3,"connect.type":"int8"},"null"]`},
		{"plain long", &Schema{Type: INT64}, `"long"`},
		{"decimal observed", &Schema{Type: BYTES, Name: DecimalName, Version: 1,
			Parameters: []Param{{"scale", "2"}, {"connect.decimal.precision", "5"}}},
			`{"type":"bytes","scale":2,"precision":5,"connect.version":1,"connect.parameters":{"scale":"2","connect.decimal.precision":"5"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}`},
		{"decimal default precision", &Schema{Type: BYTES, Name: DecimalName, Version: 1,
			Parameters: []Param{{"scale", "0"}}},
			`{"type":"bytes","scale":0,"precision":64,"connect.version":1,"connect.parameters":{"scale":"0"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}`},
		{"decimal default bytes", &Schema{Type: BYTES, Name: DecimalName, Version: 1,
			Parameters: []Param{{"scale", "0"}}, Default: []byte{0x00, 0xff}},
			`{"type":"bytes","scale":0,"precision":64,"connect.version":1,"connect.parameters":{"scale":"0"},"connect.default":"\u0000ÿ","connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}`},
		{"connect date", &Schema{Type: INT32, Name: ConnectDateName, Version: 1},
			`{"type":"int","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Date","logicalType":"date"}`},
		{"connect time", &Schema{Type: INT32, Name: ConnectTimeName, Version: 1},
			`{"type":"int","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Time","logicalType":"time-millis"}`},
		{"connect timestamp", &Schema{Type: INT64, Name: ConnectTimestamp, Version: 1},
			`{"type":"long","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Timestamp","logicalType":"timestamp-millis"}`},
		{"bits", &Schema{Type: BYTES, Name: BitsName, Version: 1, Parameters: []Param{{"length", "64"}}},
			`{"type":"bytes","connect.version":1,"connect.parameters":{"length":"64"},"connect.name":"io.debezium.data.Bits"}`},
		{"float defaults", &Schema{Type: STRUCT, Name: "a.F", Fields: []Field{
			{"d", &Schema{Type: FLOAT64, Default: 1.0}},
			{"e", &Schema{Type: FLOAT64, Default: 1e10}},
			{"f", &Schema{Type: FLOAT32, Default: float32(0.1)}},
			{"g", &Schema{Type: FLOAT64, Default: 1.5e-5}},
		}}, `{"type":"record","name":"F","namespace":"a","fields":[` +
			`{"name":"d","type":{"type":"double","connect.default":1.0},"default":1.0},` +
			`{"name":"e","type":{"type":"double","connect.default":1.0E10},"default":1.0E10},` +
			`{"name":"f","type":{"type":"float","connect.default":0.1},"default":0.1},` +
			`{"name":"g","type":{"type":"double","connect.default":1.5E-5},"default":1.5E-5}],"connect.name":"a.F"}`},
		{"escaping", &Schema{Type: STRING, Doc: "a\"b\\c\n\x01é/<"},
			`{"type":"string","connect.doc":"a\"b\\c\n\u0001é/<"}`},
		{"geometry reused", &Schema{Type: STRUCT, Name: "p.d.t.Value", Fields: []Field{
			{"g1", GeometrySchema(true)},
			{"g2", GeometrySchema(false)},
		}}, `{"type":"record","name":"Value","namespace":"p.d.t","fields":[` +
			`{"name":"g1","type":["null",{"type":"record","name":"Geometry","namespace":"io.debezium.data.geometry","fields":[{"name":"wkb","type":"bytes"},{"name":"srid","type":["null","int"],"default":null}],"connect.doc":"Geometry","connect.version":1,"connect.name":"io.debezium.data.geometry.Geometry"}],"default":null},` +
			`{"name":"g2","type":"io.debezium.data.geometry.Geometry"}],"connect.name":"p.d.t.Value"}`},
		{"array and map", &Schema{Type: STRUCT, Name: "R", Fields: []Field{
			{"a", &Schema{Type: ARRAY, Optional: true, Elem: &Schema{Type: STRING}}},
			{"m", &Schema{Type: MAP, Key: &Schema{Type: STRING}, Value: &Schema{Type: INT32}}},
			{"n", &Schema{Type: MAP, Key: &Schema{Type: INT32}, Value: &Schema{Type: INT32}}},
		}}, `{"type":"record","name":"R","fields":[` +
			`{"name":"a","type":["null",{"type":"array","items":"string"}],"default":null},` +
			`{"name":"m","type":{"type":"map","values":"int"}},` +
			`{"name":"n","type":{"type":"array","items":{"type":"record","name":"MapEntry","namespace":"io.confluent.connect.avro","fields":[{"name":"key","type":"int"},{"name":"value","type":"int"}]}}}],"connect.name":"R"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AvroSchema(tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestStandardSchemasParse(t *testing.T) {
	for _, f := range []Flavor{FlavorMySQL, FlavorMariaDB} {
		for name, s := range map[string]*Schema{
			"schema change key":   SchemaChangeKeySchema(f),
			"schema change value": SchemaChangeValueSchema(f),
			"transaction key":     TransactionKeySchema(),
			"transaction value":   TransactionValueSchema(),
			"heartbeat key":       HeartbeatKeySchema(),
			"heartbeat value":     HeartbeatValueSchema(),
			"point":               PointSchema(false),
			"envelope":            EnvelopeSchema(ordersTable, f, ValueSchema(ordersTable, ordersFields())),
		} {
			t.Run(string(f)+"/"+name, func(t *testing.T) {
				js, err := AvroSchema(s)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := goavro.NewCodec(string(js)); err != nil {
					t.Fatalf("goavro rejects %s: %v", js, err)
				}
			})
		}
	}
	js, _ := AvroSchema(SourceSchema(FlavorMariaDB))
	if !bytes.Contains(js, []byte(`"name":"Source","namespace":"io.debezium.connector.mariadb"`)) {
		t.Errorf("mariadb source namespace missing: %s", js)
	}
}
