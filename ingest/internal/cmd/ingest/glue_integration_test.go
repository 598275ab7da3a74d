//go:build integration

package ingest

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/schemas/debezium"
	"github.com/binlake/binlake/test/gluesr"
	"github.com/binlake/binlake/test/s3tables"
	"github.com/binlake/binlake/test/testenv"
)

// glueFrame frames an Avro body as AWS's serde library does: header
// version 3, compression (0 none, 5 zlib), the schema version UUID, the
// body (deflated when zip).
func glueFrame(t *testing.T, id decode.GlueID, body []byte, zip bool) []byte {
	t.Helper()
	out := []byte{3, 0}
	if zip {
		out[1] = 5
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		_, _ = w.Write(body)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		body = b.Bytes()
	}
	return append(append(out, id[:]...), body...)
}

// TestIngestGlueSchemaRegistry runs ingest with a Glue Schema Registry
// (the stand-in, which checks every request's SigV4 signature) beside the
// stack's Confluent-compatible registry, on one topic carrying both
// framings, as during a migration: a producer registers the Debezium key
// and envelope schemas in Glue through the SDK and in the Confluent
// registry, and writes Glue-framed change records (plain and zlib) and
// Confluent-framed ones. The table holds exactly the rows they make; a
// record naming a schema version Glue does not know goes to the dead
// letter topic (errors-tolerance=dlq) and the rest flow on.
func TestIngestGlueSchemaRegistry(t *testing.T) {
	ice := testenv.IcebergEnv(t)
	brokers := testenv.KafkaBrokers(t)
	registryURL := testenv.RegistryURL(t)
	ctx := t.Context()
	db := testenv.Unique(t, "glue")
	topic := "bl." + db + ".t"
	dlq := topic + ".dlq"

	// The schemas, as capture (and Debezium) write them.
	tid := debezium.TableID{Prefix: "bl", DB: db, Table: "t"}
	keySchema := debezium.KeySchema(tid, []debezium.Field{{Name: "id", Schema: &debezium.Schema{Type: debezium.INT64}}})
	row := debezium.ValueSchema(tid, []debezium.Field{{Name: "id", Schema: &debezium.Schema{Type: debezium.INT64}}, {Name: "name", Schema: &debezium.Schema{Type: debezium.STRING, Optional: true}}})
	valueSchema := debezium.EnvelopeSchema(tid, debezium.FlavorMariaDB, row)
	keyText, err := debezium.AvroSchema(keySchema)
	if err != nil {
		t.Fatal(err)
	}
	valueText, err := debezium.AvroSchema(valueSchema)
	if err != nil {
		t.Fatal(err)
	}

	// Glue: the stand-in, registered through the SDK with the only
	// credentials it accepts, which ingest finds in AWS_*.
	standIn, endpoint := gluesr.Start(t, gluesr.Config{Credentials: s3tables.TestCredentials})
	s3tables.SetAWSEnv(t, s3tables.TestCredentials)
	gl := glue.New(glue.Options{Region: "us-east-1", Credentials: credentials.StaticCredentialsProvider{Value: s3tables.TestCredentials}, BaseEndpoint: aws.String(endpoint)})
	registerGlue := func(name string, text []byte) decode.GlueID {
		out, err := gl.CreateSchema(ctx, &glue.CreateSchemaInput{
			RegistryId: &types.RegistryId{RegistryName: aws.String("binlake")}, SchemaName: aws.String(name),
			DataFormat: types.DataFormatAvro, Compatibility: types.CompatibilityBackward, SchemaDefinition: aws.String(string(text)),
		})
		if err != nil {
			t.Fatalf("registering %s in Glue: %v", name, err)
		}
		id, err := decode.ParseGlueID(aws.ToString(out.SchemaVersionId))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	glueKey, glueValue := registerGlue(topic+"-key", keyText), registerGlue(topic+"-value", valueText)

	// Confluent: the stack's registry.
	src, err := sr.NewClient(sr.URLs(registryURL))
	if err != nil {
		t.Fatal(err)
	}
	registerSR := func(subject string, text []byte) uint32 {
		s, err := src.CreateSchema(ctx, subject, sr.Schema{Schema: string(text), Type: sr.TypeAvro})
		if err != nil {
			t.Fatalf("registering %s: %v", subject, err)
		}
		return uint32(s.ID)
	}
	srKey, srValue := registerSR(topic+"-key", keyText), registerSR(topic+"-value", valueText)

	pos := int64(1000)
	change := func(op debezium.Op, id int64, name string) (key, value []byte) {
		pos += 10
		env := debezium.Envelope{
			Source: debezium.Source{Version: "3.1.2.Final", Connector: debezium.FlavorMariaDB, Name: "bl", TsMs: 1_700_000_000_000, DB: db, Table: "t", File: "mysql-bin.000001", Pos: pos},
			Op:     op, TsMs: 1_700_000_000_000,
		}
		r := debezium.Struct{id, name}
		if op == debezium.OpDelete {
			env.Before = r
		} else {
			env.After = r
		}
		if key, err = debezium.AppendAvro(nil, keySchema, debezium.Struct{id}); err != nil {
			t.Fatal(err)
		}
		if value, err = debezium.AppendAvro(nil, valueSchema, env.Struct()); err != nil {
			t.Fatal(err)
		}
		return key, value
	}
	type framing int
	const (
		gluePlain framing = iota
		glueZlib
		confluent
		unknownGlue
	)
	record := func(f framing, op debezium.Op, id int64, name string) *kgo.Record {
		k, v := change(op, id, name)
		switch f {
		case gluePlain, glueZlib:
			return &kgo.Record{Key: glueFrame(t, glueKey, k, f == glueZlib), Value: glueFrame(t, glueValue, v, f == glueZlib)}
		case unknownGlue:
			return &kgo.Record{Key: glueFrame(t, glueKey, k, false), Value: glueFrame(t, decode.GlueID{0xde, 0xad}, v, false)}
		}
		return &kgo.Record{Key: debezium.AppendFrame(nil, srKey, k), Value: debezium.AppendFrame(nil, srValue, v)}
	}
	records := []*kgo.Record{
		record(gluePlain, debezium.OpCreate, 1, "one"),
		record(glueZlib, debezium.OpCreate, 2, "two"),
		record(confluent, debezium.OpCreate, 3, "three"),
		record(glueZlib, debezium.OpCreate, 4, "four"),
		record(unknownGlue, debezium.OpCreate, 5, "lost"),
		record(confluent, debezium.OpUpdate, 1, "one again"),
		record(gluePlain, debezium.OpDelete, 2, "two"),
		record(glueZlib, debezium.OpUpdate, 3, "three again"),
		record(confluent, debezium.OpCreate, 6, "six"),
	}
	want := map[int64]string{1: "one again", 3: "three again", 4: "four", 6: "six"}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(ctx), topic, dlq) })
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cat, err := rest.NewCatalog(ctx, "glue-test", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	ident := schemamap.Namer{}.Ident(db, "t")
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_ = cat.DropTable(ctx, ident)
		_ = cat.DropNamespace(ctx, table.Identifier{ident[0]})
	})

	env := map[string]string{
		"INGEST_KAFKA_BROKERS":          strings.Join(brokers, ","),
		"INGEST_GROUP_ID":               testenv.Unique(t, "g"),
		"INGEST_TOPICS":                 topic,
		"INGEST_SCHEMA_REGISTRY_URL":    registryURL,
		"INGEST_GLUE_REGISTRY_REGION":   "us-east-1",
		"INGEST_GLUE_REGISTRY_ENDPOINT": endpoint,
		"INGEST_CATALOG_URI":            ice.URI,
		"INGEST_WAREHOUSE":              ice.Warehouse,
		"INGEST_S3_ENDPOINT":            ice.S3Endpoint,
		"INGEST_S3_ACCESS_KEY_ID":       ice.AccessKey,
		"INGEST_S3_SECRET_ACCESS_KEY":   ice.SecretKey,
		"INGEST_S3_REGION":              "us-east-1",
		"INGEST_ERRORS_TOLERANCE":       "dlq",
		"INGEST_DLQ_TOPIC":              dlq,
		"INGEST_FLUSH_INTERVAL":         "1s",
		"INGEST_METRICS_ADDR":           "off",
	}
	getenv := func(k string) string { return env[k] }
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logs := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- runArgs(rctx, nil, getenv, logs) }()

	testenv.CheckFor(t, 90*time.Second, 500*time.Millisecond, func() error {
		select {
		case err := <-done:
			t.Fatalf("ingest stopped: %v\n%s", err, logs)
		default:
		}
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return fmt.Errorf("loading %v: %w", ident, err)
		}
		if tbl.CurrentSnapshot() == nil {
			return errors.New("no snapshot yet")
		}
		got, err := scanNames(ctx, tbl)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("rows %v, want %v", got, want)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ingest stopping: %v\n%s", err, logs)
	}
	if n := standIn.Denied(); n != 0 {
		t.Fatalf("the Glue stand-in refused %d requests of ingest:\n%s", n, logs)
	}
	// Two test registrations aside, ingest looked the key and the value
	// schema up once each (the unknown version is no lookup answered).
	if n := standIn.Lookups(); n != 2 {
		t.Errorf("%d GetSchemaVersion calls answered, want 2 (key and value, cached)", n)
	}

	// The unknown version id went to the dead letter topic, named.
	dc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
	defer fcancel()
	fs := dc.PollFetches(fctx)
	if err := fs.Err0(); err != nil {
		t.Fatalf("reading %s: %v", dlq, err)
	}
	var dead []*kgo.Record
	fs.EachRecord(func(r *kgo.Record) { dead = append(dead, r) })
	if len(dead) != 1 || !bytes.Equal(dead[0].Value, records[4].Value) {
		t.Fatalf("%d dead letters, want the unknown-version record alone", len(dead))
	}
	var says string
	for _, h := range dead[0].Headers {
		says += h.Key + "=" + string(h.Value) + "\n"
	}
	if !strings.Contains(says, "dead0000-0000-0000-0000-000000000000") {
		t.Errorf("the dead letter's headers do not name the version id:\n%s", says)
	}
	t.Logf("dead letter headers:\n%s", says)
}

// scanNames reads the table's id and name columns.
func scanNames(ctx context.Context, tbl *table.Table) (map[int64]string, error) {
	at, err := tbl.Scan(table.WithSelectedFields("id", "name")).ToArrowTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("scanning: %w", err)
	}
	defer at.Release()
	out := map[int64]string{}
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		r := tr.RecordBatch()
		ids, ok := r.Column(0).(*array.Int64)
		names, ok2 := r.Column(1).(*array.String)
		if !ok || !ok2 {
			return nil, fmt.Errorf("columns %s, %s", r.Column(0).DataType(), r.Column(1).DataType())
		}
		for i := range int(r.NumRows()) {
			out[ids.Value(i)] = names.Value(i)
		}
	}
	return out, nil
}
