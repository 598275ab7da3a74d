package status

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/config"
	"github.com/binlake/binlake/capture/internal/envflag"
	"github.com/binlake/binlake/capture/internal/snapshot"
)

// captureConfig is capture's configuration from the environment e,
// validated, as capture status takes it.
func captureConfig(t *testing.T, e map[string]string) config.Config {
	t.Helper()
	fs := flag.NewFlagSet("capture status", flag.ContinueOnError)
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

// TestNothingStored: a capture that stored no position is stale (exit 3),
// and the error names its id and offsets topic; the source is not needed
// to tell.
func TestNothingStored(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "offsets"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cfg := captureConfig(t, map[string]string{"CAPTURE_KAFKA_BROKERS": strings.Join(fake.ListenAddrs(), ","),
		"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_OFFSETS_TOPIC": "offsets", "CAPTURE_MYSQL_ADDR": "127.0.0.1:1"})
	rep, err := Run(ctx, Config{Capture: cfg})
	if !errors.Is(err, ErrStale) || rep != nil || !strings.Contains(err.Error(), "capture p has stored no position in offsets") {
		t.Fatalf("Run: %v, %v; want ErrStale naming the id and the offsets topic", rep, err)
	}
}

// TestNoOffsetsTopic: a capture that never started, whose offsets topic
// does not exist yet, is stale too (exit 3), not a failure (exit 1 with
// UNKNOWN_TOPIC_OR_PARTITION, before).
func TestNoOffsetsTopic(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cfg := captureConfig(t, map[string]string{"CAPTURE_KAFKA_BROKERS": strings.Join(fake.ListenAddrs(), ","),
		"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_OFFSETS_TOPIC": "offsets", "CAPTURE_MYSQL_ADDR": "127.0.0.1:1"})
	rep, err := Run(ctx, Config{Capture: cfg})
	if !errors.Is(err, ErrStale) || rep != nil || !strings.Contains(err.Error(), "capture p has stored no position in offsets") {
		t.Fatalf("Run: %v, %v; want ErrStale naming the id and the offsets topic", rep, err)
	}
}

// TestReportWrite: the table names every part of the report, and the JSON
// form keeps its field names (scripts read them).
func TestReportWrite(t *testing.T) {
	off := int64(41)
	rep := &Report{
		ID:       "c1",
		Stored:   binlog.Position{File: "bin.000002", Pos: 400, GTIDSet: "0-1-9"},
		Server:   binlog.Position{File: "bin.000002", Pos: 900},
		LagBytes: 500, LagSeconds: 2.5,
		Snapshot:     snapStatus(&snapshot.Progress{Tables: []snapshot.TableID{{DB: "d", Table: "a"}, {DB: "d", Table: "b"}}, Table: 1, Rows: 7}, false),
		Incremental:  snapStatus(&snapshot.Progress{Tables: []snapshot.TableID{{DB: "d", Table: "a"}}, Table: 1, Rows: 3}, false),
		SignalOffset: &off,
		Stale:        true,
	}
	var table bytes.Buffer
	if err := rep.Write(&table, "table"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"capture  ", "c1", "bin.000002:400 gtid 0-1-9", "bin.000002:900", "500 bytes, 2.5 s",
		"table 2 of 2 (d.b), 7 rows emitted", "done: 1 tables, 3 rows", "signal offset", "41", "stale", "yes"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
	var out bytes.Buffer
	if err := rep.Write(&out, "json"); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"id", "stored", "server", "lag_bytes", "lag_seconds", "snapshot", "incremental_snapshot", "signal_offset", "stale"} {
		if _, ok := m[key]; !ok {
			t.Errorf("the JSON report lacks %q: %s", key, out.String())
		}
	}
}
