//go:build integration

package status

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/source"
	"github.com/binlake/binlake/capture/internal/stream"
	"github.com/binlake/binlake/test/testenv"
)

// TestRunAgainstStack stores positions as capture does (in its own offsets
// topic) and runs the status command against the stack's MariaDB and
// Kafka: at the end of the binlog the capture is not stale; at the start of
// the binlog file it is behind by the bytes between, and stale past
// MaxLagBytes, with the report still returned.
func TestRunAgainstStack(t *testing.T) {
	m := testenv.MariaDBEnv(t)
	brokers := testenv.KafkaBrokers(t)
	id := testenv.Unique(t, "status")
	cfg := captureConfig(t, map[string]string{
		"CAPTURE_KAFKA_BROKERS": strings.Join(brokers, ","), "CAPTURE_TOPIC_PREFIX": id, "CAPTURE_OFFSETS_TOPIC": id + ".offsets",
		"CAPTURE_MYSQL_ADDR": m.Addr, "CAPTURE_MYSQL_USER": m.CaptureUser, "CAPTURE_MYSQL_PASSWORD": m.CapturePassword,
	})
	src, err := source.New(cfg.Source())
	if err != nil {
		t.Fatal(err)
	}
	db, err := src.OpenDB(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	server, err := binlog.Inspect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := publish.New(t.Context(), publish.Config{Brokers: brokers, ID: id, OffsetsTopic: cfg.OffsetsTopic, TopicPartitions: 1,
		TopicReplication: 1, MaxRecordBytes: 1 << 20, TransactionTimeout: time.Minute, MaxBufferedBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	store := func(p binlog.Position) {
		t.Helper()
		b, err := stream.MarshalState(stream.State{Position: p})
		if err != nil {
			t.Fatal(err)
		}
		if err := pub.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := pub.Commit(t.Context(), id, b); err != nil {
			t.Fatal(err)
		}
	}

	// At the end of the binlog (others may write to the shared server
	// meanwhile, so only the bytes limit is set, well above their writes).
	store(server.Current)
	rep, err := Run(t.Context(), Config{Capture: cfg, MaxLagBytes: 1 << 30})
	if err != nil || rep == nil || rep.Stale || rep.ID != id || rep.Stored != server.Current || rep.LagBytes < 0 {
		t.Fatalf("at the end of the binlog: %+v, %v; want a report, not stale, stored %v", rep, err, server.Current)
	}

	// At the start of the file: behind by at least the bytes up to where
	// the server was.
	start := binlog.Position{Flavor: server.Current.Flavor, File: server.Current.File, Pos: 4}
	store(start)
	rep, err = Run(t.Context(), Config{Capture: cfg, MaxLagBytes: 1})
	if !errors.Is(err, ErrStale) || rep == nil || !rep.Stale || rep.LagBytes < int64(server.Current.Pos)-4 || rep.LagSeconds <= 0 {
		t.Fatalf("at the start of the file: %+v, %v; want a stale report at least %d bytes and some seconds behind", rep, err, server.Current.Pos-4)
	}
	if !strings.Contains(err.Error(), "max-lag-bytes 1") {
		t.Errorf("the error does not name the limit: %v", err)
	}
}
