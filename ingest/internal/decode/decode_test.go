package decode

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/schemas/debezium"
)

// golden is one record written by the real Debezium MariaDB connector
// (schemas/testdata/debezium).
type golden struct {
	Topic       string          `json:"topic"`
	Partition   int32           `json:"partition"`
	Offset      int64           `json:"offset"`
	KeySchema   *string         `json:"key_schema"`
	ValueSchema *string         `json:"value_schema"`
	Key         json.RawMessage `json:"key"`
	Value       json.RawMessage `json:"value"`
}

// frames is a golden record re-encoded into its Kafka bytes.
type frames struct {
	golden
	key, value []byte
}

// encodeNative writes v, the goavro native form as JSON (unions as
// {"type": value}, bytes base64), as Avro binary of n. Test-only: it is
// the inverse of what the golden recorder did.
func encodeNative(t testing.TB, dst []byte, n *node, v any) []byte {
	t.Helper()
	switch n.kind {
	case avroNull:
		return dst
	case avroBoolean:
		if v.(bool) {
			return append(dst, 1)
		}
		return append(dst, 0)
	case avroInt, avroLong:
		i, err := v.(json.Number).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return debezium.AppendLong(dst, i)
	case avroFloat:
		f, _ := v.(json.Number).Float64()
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f)))
	case avroDouble:
		f, _ := v.(json.Number).Float64()
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
	case avroString:
		s := v.(string)
		return append(debezium.AppendLong(dst, int64(len(s))), s...)
	case avroBytes, avroFixed:
		b, err := base64.StdEncoding.DecodeString(v.(string))
		if err != nil {
			t.Fatal(err)
		}
		if n.kind == avroBytes {
			dst = debezium.AppendLong(dst, int64(len(b)))
		}
		return append(dst, b...)
	case avroEnum:
		for i, s := range n.symbols {
			if s == v.(string) {
				return debezium.AppendLong(dst, int64(i))
			}
		}
		t.Fatalf("enum symbol %v", v)
	case avroRecord:
		o := v.(map[string]any)
		for _, f := range n.fields {
			dst = encodeNative(t, dst, f.typ, o[f.name])
		}
		return dst
	case avroArray:
		a := v.([]any)
		if len(a) > 0 {
			dst = debezium.AppendLong(dst, int64(len(a)))
			for _, e := range a {
				dst = encodeNative(t, dst, n.items, e)
			}
		}
		return append(dst, 0)
	case avroUnion:
		if v == nil {
			for i, b := range n.branches {
				if b.kind == avroNull {
					return debezium.AppendLong(dst, int64(i))
				}
			}
			t.Fatal("null for a union without null")
		}
		var name string
		var inner any
		for k, x := range v.(map[string]any) {
			name, inner = k, x
		}
		for i, b := range n.branches {
			bn := b.name
			if bn == "" {
				bn = map[avroKind]string{avroBoolean: "boolean", avroInt: "int", avroLong: "long", avroFloat: "float",
					avroDouble: "double", avroBytes: "bytes", avroString: "string", avroArray: "array", avroMap: "map"}[b.kind]
			}
			if bn == name {
				return encodeNative(t, debezium.AppendLong(dst, int64(i)), b, inner)
			}
		}
		t.Fatalf("no union branch %q", name)
	}
	t.Fatalf("cannot encode kind %d", n.kind)
	return nil
}

// loadGoldens registers the golden schemas in reg and returns every
// golden record as Kafka bytes.
func loadGoldens(t testing.TB, reg *sr.Client) []frames {
	t.Helper()
	files, err := filepath.Glob("../../../schemas/testdata/debezium/*/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	ids := map[string]int{}
	register := func(subject, text string) int {
		if id, ok := ids[text]; ok {
			return id
		}
		s, err := reg.CreateSchema(context.Background(), subject, sr.Schema{Schema: text, Type: sr.TypeAvro})
		if err != nil {
			t.Fatal(err)
		}
		ids[text] = s.ID
		return s.ID
	}
	var out []frames
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var gs []golden
		if err := dec.Decode(&gs); err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			fr := frames{golden: g}
			enc := func(schema *string, raw json.RawMessage, subject string) []byte {
				if schema == nil {
					return nil
				}
				n, err := parseAvroNodes([]byte(*schema))
				if err != nil {
					t.Fatal(err)
				}
				var v any
				d := json.NewDecoder(bytes.NewReader(raw))
				d.UseNumber()
				if err := d.Decode(&v); err != nil {
					t.Fatal(err)
				}
				return debezium.AppendFrame(nil, uint32(register(subject, *schema)), encodeNative(t, nil, n, v))
			}
			fr.key = enc(g.KeySchema, g.Key, g.Topic+"-key")
			fr.value = enc(g.ValueSchema, g.Value, g.Topic+"-value")
			out = append(out, fr)
		}
	}
	return out
}

func newRegistry(t testing.TB) *sr.Client {
	t.Helper()
	fake := srfake.New()
	t.Cleanup(fake.Close)
	cl, err := sr.NewClient(sr.URLs(fake.URL()))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestGoldens decodes every record real Debezium wrote and checks the
// compiled readers against the generic path (schemamap Convert of the
// plain Avro value) and a few values by hand.
func TestGoldens(t *testing.T) {
	reg := newRegistry(t)
	d := New(reg)
	ctx := t.Context()
	seen := map[string]bool{}
	for _, g := range loadGoldens(t, reg) {
		ch, err := d.Decode(ctx, g.Topic, g.Partition, g.Offset, g.key, g.value)
		if strings.HasSuffix(g.Topic, ".nopk") && g.value != nil {
			// A null key: a keyless change with its before image.
			if err != nil || !ch.Keyless || ch.KeyFields != nil {
				t.Errorf("%s@%d: keyless event: keyless %v, err %v", g.Topic, g.Offset, ch.Keyless, err)
			}
			if wantBefore := ch.Event.Op == batch.OpUpdate || ch.Event.Op == batch.OpDelete; wantBefore != (ch.Before != nil) || len(ch.Before) > 0 && len(ch.Before) != len(ch.Schema.Columns) {
				t.Errorf("%s@%d: %c event with before image %v", g.Topic, g.Offset, ch.Event.Op, ch.Before)
			}
			if ch.Event.Op == batch.OpDelete && ch.Before[0] == nil {
				t.Errorf("%s@%d: before image without column a", g.Topic, g.Offset)
			}
			seen["keyless "+string(ch.Event.Op)] = true
			continue
		}
		if err != nil {
			t.Fatalf("%s@%d: %v", g.Topic, g.Offset, err)
		}
		if g.value == nil {
			if !ch.Tombstone {
				t.Errorf("%s@%d: tombstone not reported", g.Topic, g.Offset)
			}
			continue
		}
		seen[string(ch.Event.Op)] = true
		if ch.Event.TsMs < 1_700_000_000_000 || (ch.Event.Op != batch.OpRead && !strings.HasPrefix(ch.Event.GTID, "0-1-")) {
			t.Errorf("%s@%d: ts_ms %d gtid %q", g.Topic, g.Offset, ch.Event.TsMs, ch.Event.GTID)
		}
		if ch.Event.Op != batch.OpRead && (!strings.HasPrefix(ch.Source.File, "mysql-bin.") || ch.Source.Pos <= 0) {
			t.Errorf("%s@%d: source position %+v", g.Topic, g.Offset, ch.Source)
		}
		// The topic is <prefix>.<db>.<table>: source.db and source.table
		// name its table (they name the table of a topic with dots in
		// its names).
		if ch.SourceDB == "" || ch.SourceTable == "" || !strings.HasSuffix(g.Topic, "."+ch.SourceDB+"."+ch.SourceTable) {
			t.Errorf("%s@%d: source.db %q source.table %q", g.Topic, g.Offset, ch.SourceDB, ch.SourceTable)
		}
		if ch.Event.Order <= 0 {
			t.Errorf("%s@%d: %c event without a source order (source.file/pos/row)", g.Topic, g.Offset, ch.Event.Op)
		}
		if ch.Event.Op == batch.OpTruncate {
			continue
		}
		if len(ch.KeyFields) == 0 || len(ch.Event.Key) != len(ch.KeyFields) {
			t.Errorf("%s@%d: key %v fields %v", g.Topic, g.Offset, ch.Event.Key, ch.KeyFields)
		}
		if ch.Event.Op == batch.OpDelete {
			continue
		}
		// The generic path: read the envelope as a plain value, convert.
		vc := d.values[schemaRef{id: binary.BigEndian.Uint32(g.value[1:5])}]
		n, _ := parseAvroNodes(mustSchema(t, reg, g.value))
		r := reader{b: g.value[5:], bud: Limits{}.withDefaults().budget(0)}
		env := r.value(n, 0).(debezium.Struct)
		after := env[1].(debezium.Struct)
		var want []any
		for i, c := range vc.steps[1].row.fields {
			_ = c
			col := mapCols(t, vc)[i]
			v, err := col.Convert(after[i])
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, v)
		}
		if diff := cmp.Diff(want, ch.Event.Row, cmp.Comparer(func(a, b decimal128.Num) bool { return a == b })); diff != "" {
			t.Errorf("%s@%d: row (-generic +compiled):\n%s", g.Topic, g.Offset, diff)
		}
		if g.Topic == "dbzgolden.golden.nums" && g.Offset == 0 {
			i := indexOf(ch.Schema.Columns, "d10")
			if got := ch.Event.Row[i].(decimal128.Num); got != decimal128.FromI64(1234567890) {
				t.Errorf("d10 = %v, want unscaled 1234567890", got)
			}
		}
	}
	for _, op := range []string{"c", "u", "d", "t", "keyless c", "keyless u", "keyless d"} {
		if !seen[op] {
			t.Errorf("no %q event among the goldens", op)
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func mustSchema(t testing.TB, reg *sr.Client, frame []byte) []byte {
	t.Helper()
	s, err := reg.SchemaByID(context.Background(), int(binary.BigEndian.Uint32(frame[1:5])))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(s.Schema)
}

func TestErrors(t *testing.T) {
	reg := newRegistry(t)
	d := New(reg)
	gs := loadGoldens(t, reg)
	good := gs[0]
	for _, g := range gs {
		if g.Topic == "dbzgolden.golden.ints" && g.Offset == 0 {
			good = g
		}
	}
	keyID, _ := reg.CreateSchema(t.Context(), "k", sr.Schema{Schema: *good.KeySchema, Type: sr.TypeAvro})
	cases := []struct {
		name       string
		key, value []byte
		want       error
		part       string
	}{
		{"magic", good.key, append([]byte{1}, good.value[1:]...), ErrMagic, "value"},
		{"empty", good.key, []byte{}, ErrMagic, "value"},
		{"unknown id", good.key, debezium.AppendFrame(nil, 999999, good.value[5:]), ErrUnknownSchema, "value"},
		{"not an envelope", good.key, debezium.AppendFrame(nil, uint32(keyID.ID), good.value[5:]), ErrNotEnvelope, "value"},
		{"truncated", good.key, good.value[:len(good.value)-3], ErrMalformed, "value"},
		{"trailing", good.key, append(append([]byte{}, good.value...), 0), ErrMalformed, "value"},
		{"key magic", []byte("x"), good.value, ErrMagic, "key"},
		{"bad json", nil, []byte(`{"schema":`), ErrMalformed, "value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := d.Decode(t.Context(), "tp", 3, 77, c.key, c.value)
			var de *Error
			if !errors.Is(err, c.want) || !errors.As(err, &de) || de.Part != c.part {
				t.Fatalf("err = %v, want %v in the %s", err, c.want, c.part)
			}
			if !strings.Contains(err.Error(), "tp/3 at offset 77") {
				t.Errorf("error does not name the record: %v", err)
			}
		})
	}
}

// TestNoValuesInErrors checks that a value that does not fit is reported
// without its content.
func TestNoValuesInErrors(t *testing.T) {
	const secret = "s3cr3t-value-1985-13-45T99:99:99Z"
	msg := fmt.Sprintf(`{"schema":{"type":"struct","name":"e","fields":[
	  {"field":"after","type":"struct","optional":true,"fields":[{"field":"id","type":"int32"},{"field":"at","type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp"}]},
	  {"field":"op","type":"string"}]},
	 "payload":{"after":{"id":1,"at":%q},"op":"c"}}`, secret)
	key := `{"schema":{"type":"struct","fields":[{"field":"id","type":"int32"}]},"payload":{"id":1}}`
	_, err := New(nil).Decode(t.Context(), "tp", 0, 1, []byte(key), []byte(msg))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("err = %v: want an error without the value", err)
	}
}

func TestJSON(t *testing.T) {
	value := `{"schema":{"type":"struct","fields":[
	  {"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"},
	    {"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"amount"},
	    {"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1,"field":"at"}],"optional":true,"name":"p.db.t.Value","field":"before"},
	  {"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"},
	    {"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"amount"},
	    {"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1,"field":"at"}],"optional":true,"name":"p.db.t.Value","field":"after"},
	  {"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":true,"field":"gtid"},{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},{"type":"int32","optional":false,"field":"row"}],"optional":false,"name":"io.debezium.connector.mysql.Source","field":"source"},
	  {"type":"string","optional":false,"field":"op"},{"type":"int64","optional":true,"field":"ts_ms"}],
	  "optional":false,"name":"p.db.t.Envelope","version":2},
	 "payload":{"before":null,"after":{"id":7,"name":"x","amount":"AJY=","at":1700000000123456},"source":{"ts_ms":1700000000000,"gtid":"0-1-5","file":"mysql-bin.000003","pos":1234,"row":2},"op":"c","ts_ms":1}}`
	key := `{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,"name":"p.db.t.Key"},"payload":{"id":7}}`
	d := New(nil)
	ch, err := d.Decode(t.Context(), "p.db.t", 0, 5, []byte(key), []byte(value))
	if err != nil {
		t.Fatal(err)
	}
	want := batch.Event{Op: batch.OpCreate, Key: []any{int32(7)}, Row: []any{int32(7), "x", decimal128.FromI64(150), int64(1700000000123456)},
		Topic: "p.db.t", Offset: 5, TsMs: 1700000000000, GTID: "0-1-5", Order: 3<<33 + 1234 + 2, Binlog: "mysql-bin", Size: len(key) + len(value)}
	if diff := cmp.Diff(want, ch.Event, cmp.Comparer(func(a, b decimal128.Num) bool { return a == b })); diff != "" {
		t.Fatalf("event (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"id", "name", "amount", "at"}, ch.Schema.Columns); diff != "" {
		t.Fatal(diff)
	}
	ch2, _ := d.Decode(t.Context(), "p.db.t", 0, 6, []byte(key), []byte(value))
	if ch2.Schema != ch.Schema {
		t.Error("the same JSON schema decoded into two Schemas")
	}
	// A JSON tombstone payload.
	if ch, err := d.Decode(t.Context(), "p.db.t", 0, 7, []byte(key), nil); err != nil || !ch.Tombstone {
		t.Fatalf("tombstone: %v %v", ch, err)
	}
}

// FuzzDecode feeds mutations of real Debezium frames (testdata/fuzz holds
// the seeds and any crashers): decoding must never panic, and a success
// must produce an event the batch package accepts.
func FuzzDecode(f *testing.F) {
	reg := newRegistry(f)
	gs := loadGoldens(f, reg)
	for _, g := range gs {
		f.Add(g.key, g.value)
		if len(g.value) > 10 {
			f.Add(g.key, g.value[:len(g.value)/2])
		}
	}
	f.Add([]byte(`{"schema":{"type":"struct","fields":[{"type":"int32","field":"id"}]},"payload":{"id":1}}`),
		[]byte(`{"schema":{"type":"struct","fields":[{"type":"struct","optional":true,"field":"after","fields":[{"type":"int32","field":"id"}]},{"type":"string","field":"op"}]},"payload":{"after":{"id":1},"op":"u"}}`))
	d := New(reg)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		ch, err := d.Decode(context.Background(), "t", 0, 1, key, value)
		checkDecoded(t, ch, err)
	})
}

func BenchmarkDecodeAvro(b *testing.B) {
	reg := newRegistry(b)
	var g frames
	for _, x := range loadGoldens(b, reg) {
		if x.Topic == "dbzgolden.golden.ints" && x.Offset == 0 {
			g = x
		}
	}
	d := New(reg)
	if _, err := d.Decode(b.Context(), g.Topic, 0, 0, g.key, g.value); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(g.key) + len(g.value)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(b.Context(), g.Topic, 0, 0, g.key, g.value); err != nil {
			b.Fatal(err)
		}
	}
}

func timeNow() time.Time { return time.Unix(1_700_000_000, 0) }

func mapCols(t testing.TB, vc *valueCodec) []schemamap.Column {
	t.Helper()
	m, err := schemamap.Map(vc.schema.Row, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m.Columns
}

// TestWriteFuzzSeeds rewrites testdata/fuzz/FuzzDecode from the golden
// frames when UPDATE_FUZZ_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("UPDATE_FUZZ_SEEDS") != "1" {
		t.Skip("set UPDATE_FUZZ_SEEDS=1 to rewrite the seeds")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, g := range loadGoldens(t, newRegistry(t)) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\n", g.key, g.value)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("golden-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNonChangeRecordsSkipped checks that Debezium's schema change,
// transaction metadata and heartbeat records (which a topic regex such as
// 'prefix\..*' can match) decode to NotChange, in Avro and in JSON, and
// that their keys are not needed.
func TestNonChangeRecordsSkipped(t *testing.T) {
	reg := newRegistry(t)
	d := New(reg)
	for _, name := range []string{
		"io.debezium.connector.mariadb.SchemaChangeValue",
		"io.debezium.connector.mysql.SchemaChangeValue",
		"io.debezium.connector.common.TransactionMetadataValue",
		"io.debezium.connector.common.Heartbeat",
	} {
		i := strings.LastIndex(name, ".")
		schema := fmt.Sprintf(`{"type":"record","name":%q,"namespace":%q,"fields":[{"name":"ts_ms","type":"long"}],"connect.name":%q}`,
			name[i+1:], name[:i], name)
		id, err := reg.CreateSchema(t.Context(), name+"-value", sr.Schema{Schema: schema, Type: sr.TypeAvro})
		if err != nil {
			t.Fatal(err)
		}
		ch, err := d.Decode(t.Context(), "p.transaction", 0, 1, []byte("not a key"), debezium.AppendFrame(nil, uint32(id.ID), []byte{0x0a}))
		if err != nil || ch.NotChange != name {
			t.Errorf("avro %s: NotChange %q, err %v", name, ch.NotChange, err)
		}
		js := fmt.Sprintf(`{"schema":{"type":"struct","name":%q,"optional":false,"fields":[{"type":"int64","optional":false,"field":"ts_ms"}]},"payload":{"ts_ms":5}}`, name)
		ch, err = d.Decode(t.Context(), "p", 0, 1, nil, []byte(js))
		if err != nil || ch.NotChange != name {
			t.Errorf("json %s: NotChange %q, err %v", name, ch.NotChange, err)
		}
	}
	for _, name := range []string{"io.debezium.connector.mariadb.Other", "x.SchemaChangeValue", "io.debezium.connector.SchemaChangeValue"} {
		if NonChangeSchema(name) {
			t.Errorf("NonChangeSchema(%q) = true", name)
		}
	}
}

// TestNullableKeyIsKeyless: Debezium keys a table without a primary key on
// its first column declared UNIQUE even when it is nullable (MariaDB
// allows NULL in many rows of it). Such a key cannot be an Iceberg
// identifier field, so the change is keyless, with its before image, and
// names the nullable column; a NOT NULL key stays a key.
func TestNullableKeyIsKeyless(t *testing.T) {
	row := `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"int32","optional":true,"field":"u"}],"optional":true,"name":"p.db.t.Value","field":"%s"}`
	value := `{"schema":{"type":"struct","fields":[` + fmt.Sprintf(row, "before") + `,` + fmt.Sprintf(row, "after") + `,
	  {"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},{"type":"int32","optional":false,"field":"row"}],"optional":false,"name":"io.debezium.connector.mysql.Source","field":"source"},
	  {"type":"string","optional":false,"field":"op"}],"optional":false,"name":"p.db.t.Envelope","version":2},
	 "payload":{"before":{"id":1,"u":null},"after":null,"source":{"ts_ms":1700000000000,"file":"mysql-bin.000003","pos":1234,"row":0},"op":"d"}}`
	d := New(nil)
	for _, tc := range []struct {
		key     string
		keyless bool
	}{
		{`{"schema":{"type":"struct","fields":[{"type":"int32","optional":true,"field":"u"}],"optional":false,"name":"p.db.t.Key"},"payload":{"u":null}}`, true},
		{`{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,"name":"p.db.t.Key"},"payload":{"id":1}}`, false},
	} {
		ch, err := d.Decode(t.Context(), "p.db.t", 0, 5, []byte(tc.key), []byte(value))
		if err != nil {
			t.Fatal(err)
		}
		if tc.keyless {
			if !ch.Keyless || !slices.Equal(ch.NullableKey, []string{"u"}) || ch.KeyFields != nil || ch.Event.Key != nil {
				t.Errorf("key on nullable u: keyless=%v nullable=%v key fields=%v key=%v; want keyless, nullable [u], no key", ch.Keyless, ch.NullableKey, ch.KeyFields, ch.Event.Key)
			}
			if !cmp.Equal(ch.Before, []any{int32(1), nil}) {
				t.Errorf("before image %v, want [1 <nil>]", ch.Before)
			}
		} else if ch.Keyless || ch.NullableKey != nil || !slices.Equal(ch.KeyFields, []string{"id"}) {
			t.Errorf("key on NOT NULL id: keyless=%v nullable=%v key fields=%v", ch.Keyless, ch.NullableKey, ch.KeyFields)
		}
	}
}

// TestJSONIntegerRange: a JSON number outside its field's integer type is
// malformed, not wrapped into the type (3000000000 as an int32 was
// -1294967296 before).
func TestJSONIntegerRange(t *testing.T) {
	key := `{"schema":{"type":"struct","fields":[{"field":"id","type":"int32"}]},"payload":{"id":1}}`
	for _, tc := range []struct {
		typ, n string
		ok     bool
	}{
		{"int8", "127", true}, {"int8", "128", false}, {"int8", "-129", false},
		{"int16", "-32768", true}, {"int16", "32768", false},
		{"int32", "2147483647", true}, {"int32", "3000000000", false}, {"int32", "-2147483649", false},
		{"int64", "3000000000", true},
	} {
		msg := fmt.Sprintf(`{"schema":{"type":"struct","name":"e","fields":[
		  {"field":"after","type":"struct","optional":true,"fields":[{"field":"id","type":"int32"},{"field":"n","type":%q}]},
		  {"field":"op","type":"string"}]},
		 "payload":{"after":{"id":1,"n":%s},"op":"c"}}`, tc.typ, tc.n)
		_, err := New(nil).Decode(t.Context(), "tp", 0, 1, []byte(key), []byte(msg))
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrMalformed)) {
			t.Errorf("%s %s: err = %v, want ok %v (or ErrMalformed)", tc.typ, tc.n, err, tc.ok)
		}
	}
}

// TestTruncateOrderIgnoresRow: a truncate sorts at its own event (row 0),
// whatever source.row it carries. Real Debezium's truncate (a golden
// record, row 0) and the same record with capture's and Debezium's other
// value (the last row of the previous rows event: 1799 after an 1,800-row
// INSERT) get one order, and it is below every row of the next rows event,
// so a reload written right after the truncate is not dropped as older.
func TestTruncateOrderIgnoresRow(t *testing.T) {
	reg := newRegistry(t)
	var g *frames
	for _, x := range loadGoldens(t, reg) {
		if x.Topic == "dbzgolden.golden.times" && bytes.Contains(x.Value, []byte(`"op": "t"`)) {
			g = &x
			break
		}
	}
	if g == nil {
		t.Fatal("no truncate among the goldens")
	}
	n, err := parseAvroNodes([]byte(*g.ValueSchema))
	if err != nil {
		t.Fatal(err)
	}
	withRow := func(row int) []byte {
		d := json.NewDecoder(bytes.NewReader(g.Value))
		d.UseNumber()
		var v map[string]any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		v["source"].(map[string]any)["row"] = json.Number(fmt.Sprint(row))
		return debezium.AppendFrame(nil, binary.BigEndian.Uint32(g.value[1:5]), encodeNative(t, nil, n, v))
	}
	const file, pos = "mysql-bin.000003", 118890801
	want, ok := batch.SourceOrder(file, pos, 0, false)
	if !ok {
		t.Fatal("no order")
	}
	d := New(reg)
	for _, row := range []int{0, 1799} {
		ch, err := d.Decode(t.Context(), g.Topic, 0, g.Offset, g.key, withRow(row))
		if err != nil {
			t.Fatal(err)
		}
		if ch.Event.Op != batch.OpTruncate || ch.Event.Order != want {
			t.Errorf("Avro truncate with source.row %d: op %c order %s, want t at %s", row, ch.Event.Op, batch.FormatOrder(ch.Event.Order), batch.FormatOrder(want))
		}
	}
	// The first row of a rows event right after the truncate (its GTID
	// event, the truncate's 40-odd bytes and the next transaction's
	// events come between) sorts after the truncate.
	if next, _ := batch.SourceOrder(file, pos+100, 0, false); next <= want {
		t.Errorf("a row after the truncate sorts at %s, not after it (%s)", batch.FormatOrder(next), batch.FormatOrder(want))
	}

	// The same with JSON-encoded Debezium records.
	for _, row := range []int{0, 1799} {
		value := fmt.Sprintf(`{"schema":{"type":"struct","fields":[
		  {"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":true,"name":"p.db.t.Value","field":"before"},
		  {"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":true,"name":"p.db.t.Value","field":"after"},
		  {"type":"struct","fields":[{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},{"type":"int32","optional":false,"field":"row"}],"optional":false,"name":"io.debezium.connector.mysql.Source","field":"source"},
		  {"type":"string","optional":false,"field":"op"}],"optional":false,"name":"p.db.t.Envelope","version":2},
		 "payload":{"before":null,"after":null,"source":{"file":%q,"pos":%d,"row":%d},"op":"t"}}`, file, pos, row)
		ch, err := New(nil).Decode(t.Context(), "p.db.t", 0, 1, nil, []byte(value))
		if err != nil {
			t.Fatal(err)
		}
		if ch.Event.Op != batch.OpTruncate || ch.Event.Order != want {
			t.Errorf("JSON truncate with source.row %d: op %c order %s, want t at %s", row, ch.Event.Op, batch.FormatOrder(ch.Event.Order), batch.FormatOrder(want))
		}
	}
}
