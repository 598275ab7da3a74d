//go:build integration

package run

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/testenv"
)

// TestRunInitialOnly runs the capture command in process against the
// stack: with snapshot-mode initial_only it snapshots a table of its own
// database to Kafka (through the schema registry) and returns nil once the
// snapshot is complete; a second Run finds the snapshot stored and returns
// at once.
func TestRunInitialOnly(t *testing.T) {
	m := testenv.MariaDBEnv(t)
	brokers := testenv.KafkaBrokers(t)
	registry := testenv.RegistryURL(t)
	db := m.CreateDatabase(t, "runcmd")
	admin := m.AdminDB(t, db)
	if _, err := admin.ExecContext(t.Context(), "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO t VALUES (1, 'a'), (2, 'b')"); err != nil {
		t.Fatal(err)
	}
	prefix := testenv.Unique(t, "runcmd")
	cfg := captureConfig(t, map[string]string{
		"CAPTURE_TOPIC_PREFIX": prefix, "CAPTURE_OFFSETS_TOPIC": prefix + ".offsets", "CAPTURE_DATABASE_INCLUDE_LIST": db,
		"CAPTURE_SNAPSHOT_MODE": "initial_only", "CAPTURE_METRICS_ADDR": "off", "CAPTURE_TOPIC_CREATION_DEFAULT_REPLICATION_FACTOR": "1",
		"CAPTURE_KAFKA_BROKERS": strings.Join(brokers, ","), "CAPTURE_SCHEMA_REGISTRY_URL": registry,
		"CAPTURE_MYSQL_ADDR": m.Addr, "CAPTURE_MYSQL_USER": m.CaptureUser, "CAPTURE_MYSQL_PASSWORD": m.CapturePassword,
	})
	var log bytes.Buffer
	for i := range 2 {
		log.Reset()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		err := Run(ctx, Config{Capture: cfg, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, log.String())
		}
	}
	if !strings.Contains(log.String(), "the snapshot is complete, nothing to do") {
		t.Errorf("the second run did not find the snapshot stored:\n%s", log.String())
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(prefix+"."+db+".t"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Read until the two rows are in, then for a few seconds more: a
	// third record would be a row written twice.
	deadline, settled := time.Now().Add(30*time.Second), false
	var n int
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(t.Context(), deadline)
		fetches := cl.PollFetches(ctx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			if len(r.Value) > 0 {
				n++
			}
		})
		if n >= 2 && !settled {
			deadline, settled = time.Now().Add(3*time.Second), true
		}
	}
	if n != 2 {
		t.Errorf("%d snapshot records, want 2 (one per row, written once)", n)
	}
}
