//go:build integration

package e2e

import (
	"bytes"
	"compress/zlib"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/gluesr"
	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// glueCreds are the only credentials the Glue stand-in accepts: both
// processes find them in AWS_* (the default chain), while ingest reaches
// MinIO with its own INGEST_S3_* keys.
var glueCreds = aws.Credentials{AccessKeyID: "AKIDGLUEE2E", SecretAccessKey: "glue-e2e-secret"}

// TestGlueSchemaRegistryPipeline runs capture and ingest as processes with
// AWS Glue Schema Registry in place of the Confluent one (the signed
// stand-in, in this process): capture registers the table's schemas in
// Glue and writes zlib-compressed Glue-framed records, ingest looks them
// up by version id, and the Iceberg table ends equal to MariaDB after a
// snapshot, inserts, updates, deletes and a primary-key update, then
// again after both are killed and restarted and a column is added (a
// second value schema version). A capture with a wrong AWS secret exits
// at start first.
func TestGlueSchemaRegistryPipeline(t *testing.T) {
	h, endpoint := gluesr.Start(t, gluesr.Config{Region: "us-east-1", Credentials: glueCreds})
	const registry = "binlake-e2e"
	awsEnv := []string{"AWS_ACCESS_KEY_ID=" + glueCreds.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + glueCreds.SecretAccessKey, "AWS_SESSION_TOKEN=", "AWS_REGION=us-east-1"}
	c := newCaptureEnv(t, append([]string{
		"CAPTURE_GLUE_REGISTRY_REGION=us-east-1", "CAPTURE_GLUE_REGISTRY_ENDPOINT=" + endpoint,
		"CAPTURE_GLUE_REGISTRY_NAME=" + registry, "CAPTURE_GLUE_COMPATIBILITY=FULL", "CAPTURE_GLUE_COMPRESSION=zlib",
		// Unused with Glue on: a registry nothing answers at.
		"CAPTURE_SCHEMA_REGISTRY_URL=http://127.0.0.1:1",
	}, awsEnv...)...)
	exec1(t, c, typesDDL,
		`INSERT INTO t VALUES (1, 10000000000, 'one', 1.50, '2024-02-29 23:59:59.123456', '2024-01-01 10:00:00.123', '2024-02-29', '{"a": [1, 2]}', NULL)`)
	// A wrong secret: capture stops at start, naming the settings to check.
	bad := start(t, binary(t, "capture"), append(c.env[:len(c.env):len(c.env)], "AWS_SECRET_ACCESS_KEY=wrong"), "capture-refused.log")
	select {
	case <-bad.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("capture with a wrong AWS secret still runs:\n%s", bad.output())
	}
	if out := bad.fullLog(t); bad.err == nil || !strings.Contains(out, "refused") || !strings.Contains(out, "glue-registry-region us-east-1") {
		t.Fatalf("capture with a wrong AWS secret: %v, want an exit naming glue-registry-region:\n%s", bad.err, out)
	}
	if h.Denied() == 0 {
		t.Fatal("the stand-in refused nothing")
	}
	denied := h.Denied()

	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 30*time.Second)

	l := keyedLake(t)
	r := newIngestRunOn(t, c, l, append([]string{
		"INGEST_GLUE_REGISTRY_REGION=us-east-1", "INGEST_GLUE_REGISTRY_ENDPOINT=" + endpoint,
		"INGEST_SCHEMA_REGISTRY_URL=http://127.0.0.1:1",
		"INGEST_GROUP_SESSION_TIMEOUT=6s", // the kill -9 below: rejoin after 6 s, not 45
	}, awsEnv...)...)
	ip := r.start(t)

	exec1(t, c, append(slices.Clone(typesChanges),
		"INSERT INTO t (id, b, name, amount, dt, d) VALUES (5, 5, 'five', 0.01, '2024-06-01 12:00:00', '2024-06-01')",
		"UPDATE t SET j = '{\"k\": \"v\"}' WHERE id = 5")...)
	r.waitEqual(t, 90*time.Second, ip)
	creates, registers := h.Calls("CreateSchema"), h.Calls("RegisterSchemaVersion")

	// Both killed with SIGKILL, changes made while capture is down, both
	// restarted: capture finds its versions by definition (no new
	// schema); a column added makes a second value version.
	cp.kill()
	ip.kill()
	exec1(t, c,
		"INSERT INTO t (id, b, name, amount, dt, d) VALUES (6, 6, 'six', 6.00, '2024-06-02 12:00:00', '2024-06-02')",
		"UPDATE t SET note = 'down' WHERE id = 2")
	cp = start(t, binary(t, "capture"), c.env, "capture-2.log")
	ip = r.start(t)
	exec1(t, c,
		"ALTER TABLE t ADD COLUMN extra INT NULL",
		"INSERT INTO t (id, b, name, amount, dt, d, extra) VALUES (7, 7, 'seven', 7.00, '2024-06-03 12:00:00', '2024-06-03', 7)",
		"DELETE FROM t WHERE id = 5")
	r.waitEqual(t, 90*time.Second, ip)
	// Only the altered value schema is registered after the restart: its
	// CreateSchema answers AlreadyExists, then RegisterSchemaVersion.
	if c, r := h.Calls("CreateSchema")-creates, h.Calls("RegisterSchemaVersion")-registers; c != 1 || r != 1 {
		t.Errorf("after the restart: %d CreateSchema and %d RegisterSchemaVersion calls, want 1 and 1 (the altered value schema)", c, r)
	}

	// The records are Glue-framed (header 3, zlib) with the version ids
	// the stand-in handed out, and the stand-in holds the schemas under
	// the subject names with the compatibility asked for.
	var first *kgo.Record
	kafkatest.Consume(t, testenv.KafkaBrokers(t), r.topic, 1, 30*time.Second, func(rec *kgo.Record) {
		if first == nil && rec.Value != nil {
			first = rec
		}
	})
	if first == nil || len(first.Value) < 18 || first.Value[0] != 3 || first.Value[1] != 5 || len(first.Key) < 18 || first.Key[0] != 3 || first.Key[1] != 5 {
		t.Fatalf("first record of %s is not Glue-framed with zlib: key %x value %x", r.topic, head(first, true), head(first, false))
	}
	zr, err := zlib.NewReader(bytes.NewReader(first.Value[18:]))
	if err != nil {
		t.Fatalf("the value body is not zlib: %v", err)
	}
	if _, err := io.ReadAll(zr); err != nil {
		t.Fatalf("the value body does not inflate: %v", err)
	}
	for subject, versions := range map[string]int{r.topic + "-key": 1, r.topic + "-value": 2} {
		info, ok := h.Schema(registry, subject)
		if !ok || info.DataFormat != "AVRO" || info.Compatibility != "FULL" || len(info.Versions) != versions {
			t.Errorf("Glue schema %s in %s: %d versions, want %d: %+v, %v", subject, registry, len(info.Versions), versions, info, ok)
		}
	}
	if h.Denied() != denied || h.Lookups() == 0 {
		t.Errorf("the stand-in refused %d requests of the good runs and answered %d lookups", h.Denied()-denied, h.Lookups())
	}
	if n := h.Calls("CreateSchema"); n < 2 {
		t.Errorf("%d CreateSchema calls, want at least the key and value schemas of t", n)
	}
	ip.stop(t, 60*time.Second)
	cp.stop(t, 30*time.Second)
	if !strings.Contains(cp.fullLog(t), "registering schemas in AWS Glue Schema Registry") {
		t.Errorf("capture did not log that it uses Glue:\n%s", cp.output())
	}
}

func head(r *kgo.Record, key bool) []byte {
	if r == nil {
		return nil
	}
	b := r.Value
	if key {
		b = r.Key
	}
	return b[:min(len(b), 20)]
}
