//go:build integration

package e2e

import (
	"bytes"
	"context"
	be "encoding/binary"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/test/faults"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/validate"
)

// What ingest writes, as its README documents it (ingest/internal is not
// importable from here): Kafka Connect's dead-letter context headers, the
// stages, and the table property counting dead-lettered records.
const (
	hdrTopic     = "__connect.errors.topic"
	hdrPartition = "__connect.errors.partition"
	hdrOffset    = "__connect.errors.offset"
	hdrStage     = "__connect.errors.stage"
	hdrMessage   = "__connect.errors.exception.message"
	deadLetters  = "binlake.dead-letters"
	stageDecode  = "decode"
	stageMap     = "map"
)

// The bad-record matrix of issue 12 (item 4): each kind of record ingest
// cannot decode or map, as raw bytes on a change topic.

// dlqRow is a row of the test tables: id BIGINT key, name VARCHAR, n INT.
type dlqRow struct {
	id   int64
	name string
	n    int64
}

func (r dlqRow) String() string { return fmt.Sprintf("%d|%s|%d", r.id, r.name, r.n) }

// dlqKey is the JsonConverter key of id.
func dlqKey(id int64) []byte {
	return fmt.Appendf(nil, `{"schema":{"type":"struct","optional":false,"name":"bl.db.t.Key","fields":[{"type":"int64","optional":false,"field":"id"}]},"payload":{"id":%d}}`, id)
}

// dlqValue is a JsonConverter change envelope whose after image has
// columns id int64, name (nameType) and n int32, with payload after.
func dlqValue(nameType, after string, pos int64) []byte {
	return dlqValueWith(`{"type":"`+nameType+`","optional":true,"field":"name"}`, after, pos)
}

// dlqValueWith is dlqValue with the Connect JSON schema of the name
// column.
func dlqValueWith(nameField, after string, pos int64) []byte {
	row := `{"type":"struct","optional":true,"name":"bl.db.t.Value","fields":[{"type":"int64","optional":false,"field":"id"},` + nameField + `,{"type":"int32","optional":true,"field":"n"}],"field":"%s"}`
	return fmt.Appendf(nil, `{"schema":{"type":"struct","optional":false,"name":"bl.db.t.Envelope","version":2,"fields":[`+row+`,`+row+`,`+
		`{"type":"struct","optional":false,"name":"io.debezium.connector.mysql.Source","field":"source","fields":[{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},{"type":"int32","optional":false,"field":"row"}]},`+
		`{"type":"string","optional":false,"field":"op"}]},`+
		`"payload":{"before":null,"after":%s,"source":{"ts_ms":1700000000000,"file":"mysql-bin.000001","pos":%d,"row":0},"op":"c"}}`,
		"before", "after", after, pos)
}

func goodRecord(r dlqRow) *kgo.Record {
	return &kgo.Record{Key: dlqKey(r.id), Value: dlqValue("string", fmt.Sprintf(`{"id":%d,"name":%q,"n":%d}`, r.id, r.name, r.n), 1000+r.id)}
}

// badKind is one kind of bad record and the stage ingest fails it at.
type badKind struct {
	name  string
	stage string
	rec   func(id int64) *kgo.Record
}

// dlqAvroEnvelope is a Debezium-shaped Avro envelope, registered so that a
// truncated body has a known schema id.
const dlqAvroEnvelope = `{"type":"record","name":"Envelope","namespace":"bl.dlq","fields":[
 {"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null}]}],"default":null},
 {"name":"after","type":["null","Value"],"default":null},
 {"name":"op","type":"string"}]}`

// dlqAvroDecimal is an envelope whose name column is a Connect Decimal of
// scale 11 and precision 10, which iceberg.DecimalTypeOf panics on: once
// a crash loop of ingest.
const dlqAvroDecimal = `{"type":"record","name":"Envelope","namespace":"bl.dlqdec","fields":[
 {"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"long"},{"name":"name","type":["null",
   {"type":"bytes","connect.name":"org.apache.kafka.connect.data.Decimal","connect.parameters":{"scale":"11","connect.decimal.precision":"10"}}],"default":null}]}],"default":null},
 {"name":"after","type":["null","Value"],"default":null},
 {"name":"op","type":"string"}]}`

// badKinds are the matrix's bad records; avroID is dlqAvroEnvelope's id,
// decimalID dlqAvroDecimal's.
func badKinds(avroID, decimalID int) []badKind {
	frame := func(id uint32, body ...byte) []byte {
		return append(be.BigEndian.AppendUint32([]byte{0}, id), body...)
	}
	return []badKind{
		// after = union branch 1 (zigzag 2), then the record's long id is
		// missing.
		{"truncated avro", stageDecode, func(id int64) *kgo.Record {
			return &kgo.Record{Key: dlqKey(id), Value: frame(uint32(avroID), 0x00, 0x02)}
		}},
		{"unknown schema id", stageDecode, func(id int64) *kgo.Record {
			return &kgo.Record{Key: dlqKey(id), Value: frame(0x7ffffff0, 0x00, 0x02, 0x02)}
		}},
		{"wrong magic byte", stageDecode, func(id int64) *kgo.Record {
			return &kgo.Record{Key: dlqKey(id), Value: []byte("\x07not a framed record")}
		}},
		// name was a string column: string → long is a change Iceberg
		// cannot take.
		{"schema iceberg cannot take", stageMap, func(id int64) *kgo.Record {
			return &kgo.Record{Key: dlqKey(id), Value: dlqValue("int64", fmt.Sprintf(`{"id":%d,"name":5,"n":1}`, id), 1000+id)}
		}},
		{"value out of range", stageDecode, func(id int64) *kgo.Record {
			return &kgo.Record{Key: dlqKey(id), Value: dlqValue("string", fmt.Sprintf(`{"id":%d,"name":"x","n":3000000000}`, id), 1000+id)}
		}},
		{"not a change record", stageDecode, func(id int64) *kgo.Record {
			return &kgo.Record{Key: dlqKey(id), Value: []byte(`{"schema":{"type":"struct","name":"some.Other","fields":[{"type":"string","field":"x"}]},"payload":{"x":"y"}}`)}
		}},
		// A schema value iceberg-go panics on (issue 30): the record's
		// own error, not a crash of ingest.
		{"json decimal scale over precision", stageDecode, func(id int64) *kgo.Record {
			return &kgo.Record{Key: dlqKey(id), Value: dlqValueWith(`{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,`+
				`"parameters":{"scale":"11","connect.decimal.precision":"10"},"field":"name"}`, fmt.Sprintf(`{"id":%d,"name":null,"n":1}`, id), 1000+id)}
		}},
		// before null, after {id, name null}, op "c".
		{"avro decimal scale over precision", stageDecode, func(id int64) *kgo.Record {
			return &kgo.Record{Key: dlqKey(id), Value: frame(uint32(decimalID), append(append([]byte{0x00, 0x02}, be.AppendVarint(nil, id)...), 0x00, 0x02, 'c')...)}
		}},
	}
}

// dlqEnv is the topics, producer and catalog of a matrix test.
type dlqEnv struct {
	t      *testing.T
	db     string
	cl     *kgo.Client // producer (manual partitions) and admin
	cat    *rest.Catalog
	avroID int
	decID  int // dlqAvroDecimal's schema id
	lake   *lake
}

func newDLQEnv(t *testing.T) *dlqEnv {
	t.Helper()
	ice := testenv.IcebergEnv(t)
	e := &dlqEnv{t: t, db: testenv.Unique(t, "dlq"), lake: newLake(t, lakeOpts{})}
	var err error
	if e.cl, err = kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...), kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.cl.Close)
	if e.cat, err = rest.NewCatalog(t.Context(), "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps())); err != nil {
		t.Fatal(err)
	}
	reg, err := sr.NewClient(sr.URLs(testenv.RegistryURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := reg.CreateSchema(t.Context(), e.db+"-dlq-value", sr.Schema{Schema: dlqAvroEnvelope, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("registering the Avro envelope: %v", err)
	}
	e.avroID = ss.ID
	if ss, err = reg.CreateSchema(t.Context(), e.db+"-dlqdec-value", sr.Schema{Schema: dlqAvroDecimal, Type: sr.TypeAvro}); err != nil {
		t.Fatalf("registering the Avro decimal envelope: %v", err)
	}
	e.decID = ss.ID
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		for _, n := range []string{"a", "b", "c"} {
			_ = e.cat.DropTable(ctx, table.Identifier{e.db, n})
		}
		_ = e.cat.DropNamespace(ctx, table.Identifier{e.db})
	})
	return e
}

func (e *dlqEnv) topic(tbl string) string { return "bl." + e.db + "." + tbl }

func (e *dlqEnv) createTopic(name string, partitions int32) {
	e.t.Helper()
	adm := kadm.NewClient(e.cl)
	if _, err := adm.CreateTopics(e.t.Context(), partitions, 1, nil, name); err != nil {
		e.t.Fatalf("creating %s: %v", name, err)
	}
	e.t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(e.t.Context()), name) })
}

// produce writes r to topic's partition and returns it with its offset.
func (e *dlqEnv) produce(topic string, part int32, r *kgo.Record) *kgo.Record {
	e.t.Helper()
	r.Topic, r.Partition = topic, part
	res := e.cl.ProduceSync(e.t.Context(), r)
	if err := res.FirstErr(); err != nil {
		e.t.Fatal(err)
	}
	return res[0].Record
}

// catalogHold serves, in front of the catalog that env (INGEST_* settings)
// names, a proxy that passes everything through except table commits,
// which it holds unanswered (until the client gives up or Close).
func catalogHold(t *testing.T, env []string) *httptest.Server {
	t.Helper()
	var uri string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "INGEST_CATALOG_URI="); ok {
			uri = v
		}
	}
	if uri == "" {
		t.Fatal("no INGEST_CATALOG_URI in the lake's settings")
	}
	cf, err := faults.NewCommitFaults(uri, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cf.Arm(faults.Timeout, 1<<30)
	srv := httptest.NewServer(cf)
	t.Cleanup(srv.Close)
	return srv
}

// ingestEnv is the environment of an ingest process on the tables.
func (e *dlqEnv) ingestEnv(group, metrics string, extra ...string) []string {
	env := append([]string{
		"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(e.t), ","),
		"INGEST_GROUP_ID=" + group,
		"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(e.t),
		"INGEST_METRICS_ADDR=" + metrics,
		"INGEST_STATE_DIR=" + e.t.TempDir(),
	}, e.lake.env...)
	return append(env, extra...)
}

// rows scans table name: its rows sorted by id (nil: no table or snapshot).
func (e *dlqEnv) rows(name string) ([]string, error) {
	tbl, err := e.cat.LoadTable(e.t.Context(), table.Identifier{e.db, name})
	if err != nil || tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	at, err := tbl.Scan().ToArrowTable(e.t.Context())
	if err != nil {
		return nil, err
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(n string) int { return rec.Schema().FieldIndices(n)[0] }
		id, name, n := col("id"), col("name"), col("n")
		for i := range int(rec.NumRows()) {
			out = append(out, cell(e.t, rec.Column(id), i)+"|"+cell(e.t, rec.Column(name), i)+"|"+cell(e.t, rec.Column(n), i))
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		x, _ := strconv.Atoi(strings.SplitN(a, "|", 2)[0])
		y, _ := strconv.Atoi(strings.SplitN(b, "|", 2)[0])
		return x - y
	})
	return out, nil
}

// offsets are the offsets table name holds for its topic.
func (e *dlqEnv) offsets(name string) map[int32]int64 {
	tbl, err := e.cat.LoadTable(e.t.Context(), table.Identifier{e.db, name})
	if err != nil {
		return nil
	}
	offs, err := validate.TableOffsets(tbl)
	if err != nil {
		e.t.Fatalf("offsets of %s: %v", name, err)
	}
	return offs[e.topic(name)]
}

// waitRows waits until table name holds want (value for value).
func (e *dlqEnv) waitRows(name string, want []dlqRow, p *proc) {
	e.t.Helper()
	var ws []string
	for _, r := range want {
		ws = append(ws, r.String())
	}
	slices.SortFunc(ws, func(a, b string) int {
		x, _ := strconv.Atoi(strings.SplitN(a, "|", 2)[0])
		y, _ := strconv.Atoi(strings.SplitN(b, "|", 2)[0])
		return x - y
	})
	testenv.CheckFor(e.t, 90*time.Second, 500*time.Millisecond, func() error {
		if p.exited() {
			e.t.Fatalf("ingest exited: %v\n%s", p.err, p.output())
		}
		got, err := e.rows(name)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(ws, got); diff != "" {
			return fmt.Errorf("table %s (-want +got):\n%s", name, diff)
		}
		return nil
	})
}

// readDLQ reads the whole dead-letter topic.
func (e *dlqEnv) readDLQ(topic string) []*kgo.Record {
	e.t.Helper()
	adm := kadm.NewClient(e.cl)
	ends, err := adm.ListEndOffsets(e.t.Context(), topic)
	if err != nil {
		e.t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	rd, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(e.t)...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer rd.Close()
	var out []*kgo.Record
	deadline := time.Now().Add(30 * time.Second)
	for len(want) > 0 && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(e.t.Context(), 5*time.Second)
		fs := rd.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	if len(want) > 0 {
		e.t.Fatalf("dead-letter topic %s not read to its end: %v left", topic, want)
	}
	return out
}

func header(r *kgo.Record, key string) (string, int) {
	var v string
	n := 0
	for _, h := range r.Headers {
		if h.Key == key {
			v, n = string(h.Value), n+1
		}
	}
	return v, n
}

// checkDLQ checks that the dead-letter topic holds each of bad exactly
// once, byte for byte, with its own headers and the context headers.
func (e *dlqEnv) checkDLQ(topic string, bad map[string]*kgo.Record, stages map[string]string) {
	e.t.Helper()
	got := e.readDLQ(topic)
	seen := map[string]int{}
	for _, r := range got {
		src, _ := header(r, hdrTopic)
		part, _ := header(r, hdrPartition)
		off, _ := header(r, hdrOffset)
		at := src + "/" + part + "/" + off
		seen[at]++
		orig, ok := bad[at]
		if !ok {
			e.t.Errorf("dead-letter record %s is none of the bad records", at)
			continue
		}
		if !bytes.Equal(r.Key, orig.Key) || !bytes.Equal(r.Value, orig.Value) {
			e.t.Errorf("dead-letter record %s: key/value changed:\n got %q / %q\nwant %q / %q", at, r.Key, r.Value, orig.Key, orig.Value)
		}
		for _, h := range orig.Headers {
			if v, n := header(r, h.Key); n != 1 || v != string(h.Value) {
				e.t.Errorf("dead-letter record %s: header %s = %q (%d times), want %q once", at, h.Key, v, n, h.Value)
			}
		}
		if v, _ := header(r, hdrStage); v != stages[at] {
			e.t.Errorf("dead-letter record %s: stage %q, want %q", at, v, stages[at])
		}
		if v, _ := header(r, hdrMessage); !strings.Contains(v, orig.Topic) {
			e.t.Errorf("dead-letter record %s: message %q does not name the topic", at, v)
		}
		if r.Timestamp.UnixMilli() != orig.Timestamp.UnixMilli() {
			e.t.Errorf("dead-letter record %s: timestamp %v, want the original %v", at, r.Timestamp, orig.Timestamp)
		}
	}
	for at := range bad {
		if seen[at] != 1 {
			e.t.Errorf("bad record %s is %d times on the dead-letter topic, want once", at, seen[at])
		}
	}
}

// TestIngestBadRecordsStop: with the default errors-tolerance=none each
// kind of bad record stops ingest with an error naming the record's
// topic/partition/offset and the setting, and the table's offsets do not
// pass it: the good record after it is not committed.
func TestIngestBadRecordsStop(t *testing.T) {
	e := newDLQEnv(t)
	bin := binary(t, "ingest")
	for i, k := range badKinds(e.avroID, e.decID) {
		t.Run(strings.ReplaceAll(k.name, " ", "_"), func(t *testing.T) {
			tbl := fmt.Sprintf("s%d", i)
			topic := e.topic(tbl)
			e.createTopic(topic, 1)
			t.Cleanup(func() { _ = e.cat.DropTable(context.WithoutCancel(t.Context()), table.Identifier{e.db, tbl}) })
			e.produce(topic, 0, goodRecord(dlqRow{1, "one", 1}))
			bad := e.produce(topic, 0, k.rec(2))
			e.produce(topic, 0, goodRecord(dlqRow{3, "three", 3}))
			p := start(t, bin, e.ingestEnv(testenv.Unique(t, "g"), "off", "INGEST_TOPICS="+topic, "INGEST_FLUSH_INTERVAL=1s"), "ingest.log")
			select {
			case <-p.done:
			case <-time.After(90 * time.Second):
				t.Fatalf("ingest did not stop at the bad record:\n%s", p.output())
			}
			if p.err == nil {
				t.Fatalf("ingest exited 0 at a bad record:\n%s", p.output())
			}
			log := p.fullLog(t)
			if i := strings.LastIndex(strings.TrimSpace(log), "\n"); i >= 0 {
				t.Logf("stopped with: %s", strings.TrimSpace(log)[i+1:])
			}
			at := fmt.Sprintf("%s/%d", topic, bad.Partition)
			for _, want := range []string{at, fmt.Sprintf("offset %d", bad.Offset), "errors-tolerance=dlq"} {
				if !strings.Contains(log, want) && !strings.Contains(log, strings.ReplaceAll(want, "offset ", "/")) {
					t.Errorf("the error does not name %q:\n%s", want, p.output())
				}
			}
			if next := e.offsets(tbl)[0]; next > bad.Offset {
				t.Errorf("the table's offset %d passes the bad record at %d", next, bad.Offset)
			}
			rows, err := e.rows(tbl)
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, "3|") }) {
				t.Errorf("the good record after the bad one was committed: %v", rows)
			}
		})
	}
}

// TestIngestDeadLetter: with errors-tolerance=dlq every bad record of the
// matrix, among good records of two tables, lands on the dead-letter topic
// exactly once and unchanged, every good record is in its table value for
// value, a partition of only bad records and a topic whose table never
// exists make progress; then a run killed (-9) after dead-lettering but
// before its table commit is followed by one that does not dead-letter the
// same records again.
func TestIngestDeadLetter(t *testing.T) {
	e := newDLQEnv(t)
	bin := binary(t, "ingest")
	ta, tb, tc := e.topic("a"), e.topic("b"), e.topic("c")
	dlq := "dlq." + e.db
	e.createTopic(ta, 2) // partition 1: bad records only
	e.createTopic(tb, 1)
	e.createTopic(tc, 1) // bad records only: its table never exists
	e.createTopic(dlq, 1)
	group := testenv.Unique(t, "g")
	kinds := badKinds(e.avroID, e.decID)

	bad := map[string]*kgo.Record{}
	stages := map[string]string{}
	var goodA, goodB []dlqRow
	note := func(r *kgo.Record, st string) {
		at := fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)
		bad[at], stages[at] = r, st
	}
	// wave produces good rows from..from+len(kinds) on a and b and every
	// bad kind among them, plus bad records on a's partition 1 and on c.
	wave := func(from int64, kinds []badKind) {
		for i, k := range kinds {
			id := from + int64(i)
			g := dlqRow{id, fmt.Sprintf("a-%d", id), id * 7}
			e.produce(ta, 0, goodRecord(g))
			goodA = append(goodA, g)
			r := k.rec(id + 1000)
			r.Headers = []kgo.RecordHeader{{Key: "origin", Value: fmt.Appendf(nil, "h-%d", id)}}
			r.Timestamp = time.UnixMilli(1700000000000 + id)
			note(e.produce(ta, 0, r), k.stage)
			gb := dlqRow{id, fmt.Sprintf("b-%d", id), -id}
			e.produce(tb, 0, goodRecord(gb))
			goodB = append(goodB, gb)
		}
		note(e.produce(ta, 1, kinds[2].rec(from+2000)), kinds[2].stage)
		note(e.produce(ta, 1, kinds[1].rec(from+2001)), kinds[1].stage)
		note(e.produce(tc, 0, kinds[2].rec(from+3000)), kinds[2].stage)
	}
	wave(1, kinds)
	// An oversized record is no bad record: a value over every bound of
	// ingest's (flush-bytes and max-buffered-bytes are 64 KiB here) is
	// committed alone, not dead-lettered and not lost. (Over the topic's
	// max.message.bytes Kafka refuses it at produce.)
	big := dlqRow{999, strings.Repeat("x", 600<<10), 1}
	e.produce(tb, 0, goodRecord(big))
	goodB = append(goodB, big)

	env := func(metrics string, extra ...string) []string {
		return e.ingestEnv(group, metrics, append([]string{"INGEST_TOPICS=" + ta + "," + tb + "," + tc,
			"INGEST_ERRORS_TOLERANCE=dlq", "INGEST_DLQ_TOPIC=" + dlq, "INGEST_GROUP_SESSION_TIMEOUT=6s",
			"INGEST_FLUSH_BYTES=65536", "INGEST_MAX_BUFFERED_BYTES=65536"}, extra...)...)
	}
	m1 := freePort(t)
	p := start(t, bin, env(m1, "INGEST_FLUSH_INTERVAL=1s"), "ingest-1.log")
	e.waitRows("a", goodA, p)
	e.waitRows("b", goodB, p)
	ends := topicEnds(t, ta)
	testenv.CheckFor(t, 60*time.Second, 500*time.Millisecond, func() error {
		if got := e.offsets("a"); got[0] != ends[0] || got[1] != ends[1] {
			return fmt.Errorf("table a holds offsets %v, want the ends %v (partition 1 holds bad records only)", got, ends)
		}
		return nil
	})
	if n := metricSum(m1, `ingest_dead_letter_records_total\{[^}]*\}`); n != len(bad) {
		t.Errorf("ingest_dead_letter_records_total = %d, want %d", n, len(bad))
	}
	e.checkDLQ(dlq, bad, stages)
	tblA, err := e.cat.LoadTable(t.Context(), table.Identifier{e.db, "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tblA.Properties()[deadLetters], strconv.Itoa(len(kinds)+2); got != want {
		t.Errorf("table a: %s = %q, want %q", deadLetters, got, want)
	}
	if _, err := e.cat.LoadTable(t.Context(), table.Identifier{e.db, "c"}); err == nil {
		t.Errorf("table c exists, but its topic holds only bad records")
	}
	p.stop(t, 60*time.Second)

	// Wave 2, read by a run that commits nothing (flush interval 1h) and
	// is killed once it has dead-lettered the wave's bad records.
	// A record whose schema differs from the one before commits the batch
	// before it (to adopt the new schema; the JSON schemas alternate), so
	// the kind failing at the map stage would make the run commit past the
	// records dead-lettered before it: wave 2 has the decode kinds only.
	var wave2 []badKind
	for _, k := range kinds {
		if k.stage != stageMap {
			wave2 = append(wave2, k)
		}
	}
	first := len(bad)
	wave(100, wave2)
	var wave2Bad []*kgo.Record
	for _, r := range bad {
		if r.Topic == ta && r.Partition == 0 && r.Offset >= int64(2*len(kinds)) || r.Topic == ta && r.Partition == 1 && r.Offset >= 2 || r.Topic == tc && r.Offset >= 1 {
			wave2Bad = append(wave2Bad, r)
		}
	}
	if len(wave2Bad) != len(bad)-first {
		t.Fatalf("wave 2 has %d bad records, found %d by offset", len(bad)-first, len(wave2Bad))
	}
	// Its table commits are held by a proxy in front of the catalog (they
	// never reach it), so the kill lands between dead-lettering and the
	// table commit whatever makes the run commit (a schema switch, a
	// flush bound): a flush interval alone left that to timing.
	hold := catalogHold(t, e.lake.env)
	p = start(t, bin, env(freePort(t), "INGEST_FLUSH_INTERVAL=1h", "INGEST_CATALOG_URI="+hold.URL), "ingest-2.log")
	// Killed once it dead-lettered one of wave 2's records: a commit the
	// run starts (a schema switch, a rebalance's handoff) blocks its table
	// at the proxy, so it may not reach the others; the next run
	// dead-letters those and must meet the ones sent here on the topic.
	testenv.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		if n := len(e.readDLQ(dlq)); n <= first {
			if p.exited() {
				t.Fatalf("ingest exited: %v\n%s", p.err, p.output())
			}
			return fmt.Errorf("%d records on the dead-letter topic, want more than wave 1's %d", n, first)
		}
		return nil
	})
	p.kill()
	time.Sleep(time.Second) // what the broker took before the kill is readable
	atKill := len(e.readDLQ(dlq))
	held := e.offsets("a")
	for _, r := range wave2Bad {
		if r.Topic == ta && held[r.Partition] > r.Offset {
			t.Fatalf("the killed run committed table a past the dead-lettered %s/%d/%d (offsets %v), though its commits were held", r.Topic, r.Partition, r.Offset, held)
		}
	}
	t.Logf("killed with %d records on the dead-letter topic; table a holds %v", len(e.readDLQ(dlq)), held)

	// The next run re-reads wave 2 from the table's offsets and must not
	// dead-letter its bad records again.
	m3 := freePort(t)
	p = start(t, bin, env(m3, "INGEST_FLUSH_INTERVAL=1s"), "ingest-3.log")
	e.waitRows("a", goodA, p)
	e.waitRows("b", goodB, p)
	ends = topicEnds(t, ta)
	testenv.CheckFor(t, 60*time.Second, 500*time.Millisecond, func() error {
		if got := e.offsets("a"); got[0] != ends[0] || got[1] != ends[1] {
			return fmt.Errorf("table a holds offsets %v, want the ends %v", got, ends)
		}
		return nil
	})
	e.checkDLQ(dlq, bad, stages)
	if n := metricSum(m3, `ingest_dead_letter_records_total\{[^}]*\}`); n != len(bad)-atKill {
		t.Errorf("the run after the kill dead-lettered %d records, want the %d the killed run had not (%d of %d were on the topic)", n, len(bad)-atKill, atKill, len(bad))
	}
	if !strings.Contains(p.fullLog(t), "record already on the dead-letter topic") {
		t.Errorf("the run after the kill did not meet the dead-lettered records again (the kill came too late?):\n%s", p.output())
	}
	p.stop(t, 60*time.Second)

	// ingest status reports the count per table and no lag for a, whose
	// partition 1 holds bad records only.
	var rep struct {
		Tables []struct {
			Table       string `json:"table"`
			Lag         int64  `json:"lag"`
			DeadLetters int64  `json:"dead_letters"`
		} `json:"tables"`
	}
	out := runIngest(t, e.ingestEnv(group, "off"), "status", "-format=json", "-tables="+e.db+`\..*`)
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("ingest status: %v\n%s", err, out)
	}
	want := map[string][2]int64{e.db + ".a": {0, int64(len(kinds) + 2 + len(wave2) + 2)}, e.db + ".b": {0, 0}}
	got := map[string][2]int64{}
	for _, tb := range rep.Tables {
		got[tb.Table] = [2]int64{tb.Lag, tb.DeadLetters}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ingest status: [lag, dead letters] by table (-want +got):\n%s\n%s", diff, out)
	}
}
