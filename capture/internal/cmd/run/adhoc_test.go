package run

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/binlake/binlake/capture/internal/cmd/snapshot"
	"github.com/binlake/binlake/capture/internal/config"
	"github.com/binlake/binlake/capture/internal/envflag"
	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/signal"
	"github.com/binlake/binlake/capture/internal/stream"
)

// captureConfig is capture's configuration from the environment e,
// validated, as main hands it to Run.
func captureConfig(t *testing.T, e map[string]string) config.Config {
	t.Helper()
	fs := flag.NewFlagSet("capture", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	var cfg config.Config
	cfg.Bind(envflag.New(fs, "CAPTURE_", func(k string) string { return e[k] }))
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestSignalsOverSASL checks that `capture snapshot` and capture's signal
// reader connect with the Kafka security settings, as the publisher does:
// against a broker that requires SCRAM-SHA-512 (in-process, kfake), the
// signal the command writes is read by the reader incrementalSetup opens.
func TestSignalsOverSASL(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "capture", "s3cret"), kfake.SeedTopics(1, "offsets"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	brokers := strings.Join(fake.ListenAddrs(), ",")

	cfg := captureConfig(t, map[string]string{
		"CAPTURE_KAFKA_BROKERS": brokers, "CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_SIGNAL_ENABLED_CHANNELS": "kafka",
		"CAPTURE_KAFKA_SASL_MECHANISM": "scram-sha-512", "CAPTURE_KAFKA_SASL_USERNAME": "capture", "CAPTURE_KAFKA_SASL_PASSWORD": "s3cret",
	})
	opts, err := cfg.Kafka.ClientOpts(ctx, "binlake-capture")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := publish.New(ctx, publish.Config{
		Brokers: fake.ListenAddrs(), ID: "c1", OffsetsTopic: "offsets", TopicPartitions: 1, TopicReplication: 1,
		MaxRecordBytes: 1 << 20, TransactionTimeout: time.Minute, MaxBufferedBytes: 4 << 20, Opts: opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	var state stream.State
	_, rd, store, err := incrementalSetup(ctx, cfg, &state, false, nil, nil, pub, opts, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("incrementalSetup: %v", err)
	}
	if rd == nil || !store || state.SignalOffset == nil {
		t.Fatalf("no signal reader (%v) or no signal offset to store (%v, %v)", rd, store, state.SignalOffset)
	}
	defer rd.Close()

	if _, err := snapshot.Send(ctx, snapshot.Config{Capture: cfg, Tables: []string{"db.t1"}, Action: "execute"}); err != nil {
		t.Fatalf("capture snapshot: %v", err)
	}

	recs := make(chan signal.Record, 1)
	go func() { _ = rd.Run(ctx, recs) }()
	select {
	case rec := <-recs:
		sig, err := signal.Parse("p", rec.Key, rec.Value)
		if err != nil || sig.Type != signal.TypeExecuteSnapshot || !slices.Equal(sig.Collections, []string{"db.t1"}) {
			t.Errorf("signal read: %+v, %v", sig, err)
		}
	case <-ctx.Done():
		t.Fatal("the signal reader read nothing")
	}
}

// TestIncrementalSnapshotSettings: ad-hoc snapshots read with the
// snapshot settings of the initial one.
func TestIncrementalSnapshotSettings(t *testing.T) {
	cfg := config.Config{SnapshotChunkRows: 7, SnapshotReadAhead: 5}
	var state stream.State
	ic, rd, _, err := incrementalSetup(t.Context(), cfg, &state, false, nil, nil, nil, nil, slog.New(slog.DiscardHandler))
	if err != nil || rd != nil {
		t.Fatalf("incrementalSetup: reader %v, %v", rd, err)
	}
	if ic.ChunkRows != 7 || ic.ReadAhead != 5 {
		t.Errorf("chunk rows %d, read-ahead %d; want 7 and 5", ic.ChunkRows, ic.ReadAhead)
	}
}
