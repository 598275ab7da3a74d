package schemamap

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"
)

// defaultsEnvelope is a value row as the Confluent AvroConverter writes
// Debezium's schema after ALTER TABLE … ADD COLUMN … DEFAULT: an optional
// column with a default is the union [T, "null"] with the default in T's
// JSON form, a NOT NULL one is plain T, and a column without a default (or
// DEFAULT NULL) is ["null", T] with default null.
const defaultsEnvelope = `{"type":"record","name":"Value","namespace":"p.db.t","fields":[
 {"name":"id","type":"int"},
 {"name":"s","type":[{"type":"string","connect.default":"dflt"},"null"],"default":"dflt"},
 {"name":"quote","type":[{"type":"string","connect.default":"it's"},"null"],"default":"it's"},
 {"name":"n","type":{"type":"int","connect.default":-5},"default":-5},
 {"name":"ti","type":[{"type":"int","connect.type":"int16","connect.default":7},"null"],"default":7},
 {"name":"big","type":[{"type":"long","connect.default":-1},"null"],"default":-1},
 {"name":"maxlong","type":[{"type":"long"},"null"],"default":9223372036854775807},
 {"name":"f","type":[{"type":"double"},"null"],"default":1000.0},
 {"name":"ff","type":[{"type":"double"},"null"],"default":1.5},
 {"name":"bo","type":[{"type":"boolean"},"null"],"default":true},
 {"name":"vb","type":[{"type":"bytes"},"null"],"default":"A\u00ff"},
 {"name":"d","type":[{"type":"bytes","scale":2,"precision":5,"connect.version":1,"connect.parameters":{"scale":"2","connect.decimal.precision":"5"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"},"null"],"default":"\u0000\u0096"},
 {"name":"dd","type":[{"type":"int","connect.version":1,"connect.name":"io.debezium.time.Date"},"null"],"default":18263},
 {"name":"tm","type":[{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTime"},"null"],"default":45296000000},
 {"name":"dt","type":[{"type":"long","connect.version":1,"connect.name":"io.debezium.time.Timestamp"},"null"],"default":1577923200000},
 {"name":"ts_now","type":{"type":"string","connect.version":1,"connect.default":"1970-01-01T00:00:00Z","connect.name":"io.debezium.time.ZonedTimestamp"},"default":"1970-01-01T00:00:00Z"},
 {"name":"dt_now","type":[{"type":"long","connect.version":1,"connect.default":0,"connect.name":"io.debezium.time.MicroTimestamp"},"null"],"default":0},
 {"name":"ts_lit","type":[{"type":"string","connect.version":1,"connect.name":"io.debezium.time.ZonedTimestamp"},"null"],"default":"2020-01-02T03:04:05Z"},
 {"name":"none","type":["null","string"],"default":null}
],"connect.name":"p.db.t.Value"}`

// TestDefaultsFromAvro reads each column's default from the Avro schema
// and checks what it becomes: a converted Column.Default, an Iceberg
// initial-default for the types iceberg-go v0.7.0 writes per spec, a
// backfill for the others, and nothing for DEFAULT NULL and Debezium's
// CURRENT_TIMESTAMP stand-in.
func TestDefaultsFromAvro(t *testing.T) {
	s, err := ParseAvro([]byte(defaultsEnvelope))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Map(s, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		def     any
		initial iceberg.Literal // on a v3 table; nil: none
	}
	wants := map[string]want{
		"id":      {},
		"s":       {"dflt", iceberg.StringLiteral("dflt")},
		"quote":   {"it's", iceberg.StringLiteral("it's")},
		"n":       {int32(-5), iceberg.Int32Literal(-5)},
		"ti":      {int32(7), iceberg.Int32Literal(7)},
		"big":     {int64(-1), iceberg.Int64Literal(-1)},
		"maxlong": {int64(9223372036854775807), nil}, // iceberg-go reads defaults back as float64
		"f":       {1000.0, nil},                     // written as 1000, which Java refuses for a double
		"ff":      {1.5, iceberg.Float64Literal(1.5)},
		"bo":      {true, iceberg.BoolLiteral(true)},
		"vb":      {[]byte{'A', 0xff}, iceberg.BinaryLiteral{'A', 0xff}},
		"d":       {decimal128.FromI64(150), nil},
		"dd":      {int32(18263), nil},
		"tm":      {int64(45296000000), iceberg.Int64Literal(45296000000)},
		"dt":      {int64(1577923200000000), nil},
		"ts_now":  {},
		"dt_now":  {},
		"ts_lit":  {int64(1577934245000000), nil},
		"none":    {},
	}
	if len(m.Columns) != len(wants) {
		t.Fatalf("%d columns, want %d", len(m.Columns), len(wants))
	}
	for i := range m.Columns {
		c := &m.Columns[i]
		w, ok := wants[c.Name]
		if !ok {
			t.Fatalf("unexpected column %s", c.Name)
		}
		if d := cmp.Diff(w.def, c.Default, cmp.AllowUnexported(decimal128.Num{})); d != "" {
			t.Errorf("column %s: default (-want +got):\n%s", c.Name, d)
		}
		ch := Change{Kind: AddColumn, Path: []string{c.Name}, Default: c.Default, Column: c}
		lit, ok := ch.InitialDefault()
		if (w.initial == nil) == ok || ok && !lit.Equals(w.initial) {
			t.Errorf("column %s: initial-default %v, %v; want %v", c.Name, lit, ok, w.initial)
		}
		if got, want := ch.Backfill(2), w.def != nil; got != want {
			t.Errorf("column %s: Backfill(v2) = %v, want %v", c.Name, got, want)
		}
		if got, want := ch.Backfill(3), w.def != nil && w.initial == nil; got != want {
			t.Errorf("column %s: Backfill(v3) = %v, want %v", c.Name, got, want)
		}
	}
}

// TestEvolveMappingCarriesDefaults: the added column's change carries its
// default, and the golden Debezium orders schema's defaults (ENUM 'new';
// TIMESTAMP DEFAULT CURRENT_TIMESTAMP, which has none in the lake).
func TestEvolveMappingCarriesDefaults(t *testing.T) {
	s, err := ParseAvro([]byte(defaultsEnvelope))
	if err != nil {
		t.Fatal(err)
	}
	next, err := Map(s, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	cur := iceberg.NewSchemaWithIdentifiers(0, []int{1}, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int32, Required: true})
	changes, err := EvolveMapping(cur, next)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, c := range changes {
		if c.Kind == AddColumn && c.Default != nil {
			got[c.Path[0]] = c.Default
		}
	}
	if got["s"] != "dflt" || got["n"] != int32(-5) || len(got) != 15 {
		t.Errorf("defaults carried by the changes: %v", got)
	}

	b, err := os.ReadFile("../../../schemas/debezium/testdata/orders-value.avsc")
	if err != nil {
		t.Skip("golden file not present:", err)
	}
	env, err := ParseAvro(b)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Map(env, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Columns {
		switch c.Name {
		case "status":
			if c.Default != "new" {
				t.Errorf("status default %v, want new", c.Default)
			}
		case "updated_ts":
			if c.Default != nil {
				t.Errorf("updated_ts (DEFAULT CURRENT_TIMESTAMP) default %v, want none", c.Default)
			}
		}
	}
}

// TestApplyDefaults stages the added columns of the defaults schema on an
// in-memory table: on v3 the columns with an initial-default carry it
// (initial-default and write-default), the others and every v2 column
// carry none and say in their doc what their older rows read.
func TestApplyDefaults(t *testing.T) {
	s, err := ParseAvro([]byte(defaultsEnvelope))
	if err != nil {
		t.Fatal(err)
	}
	next, err := Map(s, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	cur := iceberg.NewSchemaWithIdentifiers(0, []int{1}, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int32, Required: true})
	changes, err := EvolveMapping(cur, next)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version  int
		backfill bool
	}{{2, false}, {2, true}, {3, false}, {3, true}} {
		meta, err := table.NewMetadata(cur, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file:///tmp/t",
			iceberg.Properties{"format-version": strconv.Itoa(tc.version)})
		if err != nil {
			t.Fatal(err)
		}
		tx := table.New(table.Identifier{"ns", "t"}, meta, "file:///tmp/t/metadata/v1.json", nil, nil).NewTransaction()
		if err := Apply(tx.UpdateSchema(true, false), changes, tc.version, tc.backfill).Commit(); err != nil {
			t.Fatalf("v%d: staging: %v", tc.version, err)
		}
		staged, err := tx.StagedTable()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			f, ok := staged.Schema().FindFieldByName(c.Path[0])
			if !ok {
				t.Fatalf("v%d: column %s not added", tc.version, c.Path[0])
			}
			lit, initial := c.InitialDefault()
			initial = initial && tc.version >= 3
			switch {
			case initial && (!cmp.Equal(f.InitialDefault, lit.Any()) || !cmp.Equal(f.WriteDefault, lit.Any())):
				t.Errorf("v%d column %s: initial-default %v, write-default %v, want %v", tc.version, f.Name, f.InitialDefault, f.WriteDefault, lit.Any())
			case !initial && (f.InitialDefault != nil || f.WriteDefault != nil):
				t.Errorf("v%d column %s: initial-default %v, want none", tc.version, f.Name, f.InitialDefault)
			}
			wantDoc := ""
			switch {
			case c.Default == nil || initial:
			case tc.backfill:
				wantDoc = "were rewritten with the source default"
			default:
				wantDoc = "they read NULL"
			}
			if !strings.Contains(f.Doc, wantDoc) || wantDoc == "" && f.Doc != "" {
				t.Errorf("v%d backfill=%v column %s: doc %q, want it to say %q", tc.version, tc.backfill, f.Name, f.Doc, wantDoc)
			}
		}
	}
}

// TestEvolveKeyOrder: a key whose column order differs from the table's
// (UNIQUE KEY (b, a), PRIMARY KEY (b, a)) comes back from the REST catalog
// with its identifier fields in ascending id order; the same key in
// another order is no key change. A different key still is.
func TestEvolveKeyOrder(t *testing.T) {
	fields := []iceberg.NestedField{
		{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.String, Required: true},
		{ID: 3, Name: "v", Type: iceberg.PrimitiveTypes.Int32},
	}
	stored := iceberg.NewSchemaWithIdentifiers(0, []int{1, 2}, fields...)
	source := iceberg.NewSchemaWithIdentifiers(0, []int{2, 1}, fields...)
	if changes, err := Evolve(stored, source); err != nil || len(changes) != 0 {
		t.Errorf("key (b, a) against the stored (a, b): %v, %v; want no change", changes, err)
	}
	other := iceberg.NewSchemaWithIdentifiers(0, []int{2}, fields...)
	if _, err := Evolve(stored, other); !errors.Is(err, ErrIncompatible) {
		t.Errorf("key (b) against (a, b): err %v, want ErrIncompatible", err)
	}
}
