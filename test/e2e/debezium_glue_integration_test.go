//go:build integration

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/gluesr"
	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// TestDebeziumGlueConverter runs the real Debezium MariaDB connector with
// AWS's own Glue converter (AWSKafkaAvroConverter, from Maven Central's
// software.amazon.glue:schema-registry-kafkaconnect-converter, installed by
// deploy/local/debezium.sh) as key and value converter, registering in the
// signed Glue stand-in of this process with the credentials in the Connect
// worker's environment; ingest consumes the topic through the same
// stand-in, and the Iceberg table ends equal to MariaDB after inserts,
// updates, deletes, a primary-key update and an added column. Every
// request of AWS's Java serde and of ingest must pass the stand-in's SigV4
// check. It skips only when the converter could not be installed here.
func TestDebeziumGlueConverter(t *testing.T) {
	if err := debezium.InstallGlueConverter(t); err != nil {
		t.Skipf("AWS's Glue converter is not installed: its install step failed on this machine: %v", err)
	}
	h, endpoint := gluesr.Start(t, gluesr.Config{Region: "us-east-1", Credentials: glueCreds})
	const registry = "binlake-dbz-glue"
	awsEnv := []string{"AWS_ACCESS_KEY_ID=" + glueCreds.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + glueCreds.SecretAccessKey, "AWS_SESSION_TOKEN=", "AWS_REGION=us-east-1"}

	m, dbName := lakeDatabase(t)
	c := &captureEnv{db: m, dbName: dbName, prefix: testenv.Unique(t, "dbzglue")}
	exec1(t, c, typesDDL)
	debezium.Run(t, debezium.Config{
		Database: dbName, TopicPrefix: c.prefix, ServerID: 7900 + uint32(time.Now().UnixNano()%100000), SnapshotMode: "no_data",
		// AWS's converter names key and value schemas alike, after the
		// topic: Glue would refuse the value as a BACKWARD-compatible
		// version of the key (the stand-in checks no compatibility), so
		// NONE, as the converter must be set up against AWS.
		Converter: "glue", Glue: debezium.GlueConverter{Region: "us-east-1", Endpoint: endpoint, Registry: registry, Compatibility: "NONE"},
		Env: awsEnv,
	})

	l := keyedLake(t)
	r := newIngestRunOn(t, c, l, append([]string{
		"INGEST_GLUE_REGISTRY_REGION=us-east-1", "INGEST_GLUE_REGISTRY_ENDPOINT=" + endpoint,
		// Unused with Glue on: a registry nothing answers at.
		"INGEST_SCHEMA_REGISTRY_URL=http://127.0.0.1:1",
	}, awsEnv...)...)
	ip := r.start(t)

	exec1(t, c,
		`INSERT INTO t VALUES
		 (1, 10000000000, 'one', 1.50, '2024-02-29 23:59:59.123456', '2024-01-01 10:00:00.123', '2024-02-29', '{"a": [1, 2]}', NULL),
		 (2, -5, 'two ü😀', -2.25, '1970-01-01 00:00:00.000000', '2038-01-19 03:14:07.999', '1999-12-31', NULL, 'x'),
		 (3, 0, '', 99999999.99, '9999-12-31 23:59:59.999999', '2001-09-09 01:46:40.000', '1000-01-01', '[]', 'n')`,
		"UPDATE t SET name = 'TWO', amount = amount + 1, note = NULL WHERE id = 2",
		"UPDATE t SET id = 4 WHERE id = 1",
		"DELETE FROM t WHERE id = 3",
		"ALTER TABLE t ADD COLUMN extra INT NULL",
		"INSERT INTO t (id, b, name, amount, dt, d, extra) VALUES (5, 5, 'five', 0.01, '2024-06-01 12:00:00', '2024-06-01', 5)",
	)
	r.waitEqual(t, 90*time.Second, ip)

	// AWS's converter wrote Glue framing (header 3, no compression) and
	// names key and value schemas after the topic: one Glue schema, its
	// versions the key, the value and the altered value.
	var first *kgo.Record
	kafkatest.Consume(t, testenv.KafkaBrokers(t), r.topic, 1, 30*time.Second, func(rec *kgo.Record) {
		if first == nil && rec.Value != nil {
			first = rec
		}
	})
	if first == nil || len(first.Value) < 18 || first.Value[0] != 3 || first.Value[1] != 0 || len(first.Key) < 18 || first.Key[0] != 3 {
		t.Fatalf("first record of %s is not Glue-framed: key %x value %x", r.topic, head(first, true), head(first, false))
	}
	// The serde tags every version it registers with the topic
	// (PutSchemaVersionMetadata x-amz-meta-transport).
	info, ok := h.Schema(registry, r.topic)
	if !ok || info.DataFormat != "AVRO" || info.Compatibility != "NONE" || len(info.Versions) != 3 {
		t.Errorf("Glue schema %s in %s: %+v (found %v), want AVRO, NONE, with 3 versions (key, value, altered value)", r.topic, registry, info, ok)
	}
	for i, md := range info.Metadata {
		if !slices.Contains(md, "x-amz-meta-transport="+r.topic) {
			t.Errorf("version %d of schema %s has metadata %q, want x-amz-meta-transport=%s", i+1, r.topic, md, r.topic)
		}
	}
	if u := h.Unknown(); len(u) > 0 {
		t.Errorf("AWS's serde or ingest called operations the stand-in does not implement: %v", u)
	}
	if h.Denied() != 0 || h.Lookups() == 0 {
		t.Errorf("the stand-in refused %d signatures and answered %d lookups", h.Denied(), h.Lookups())
	}
	var calls []string
	for _, op := range []string{"GetSchemaByDefinition", "CreateSchema", "RegisterSchemaVersion", "PutSchemaVersionMetadata", "GetSchemaVersion", "GetRegistry"} {
		calls = append(calls, fmt.Sprintf("%s=%d", op, h.Calls(op)))
	}
	fmt.Printf("DBZGLUE converter=%s versions=%d signed=%s denied=%d\n", debezium.GlueConverterClass, len(info.Versions), strings.Join(calls, ","), h.Denied())
	ip.stop(t, 60*time.Second)
}
