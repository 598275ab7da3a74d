package snapshot

import (
	"bytes"
	"context"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/binlake/binlake/capture/internal/config"
	"github.com/binlake/binlake/capture/internal/envflag"
	"github.com/binlake/binlake/capture/internal/signal"
)

// captureConfig is capture's configuration from the environment e,
// validated, as capture snapshot takes it.
func captureConfig(t *testing.T, e map[string]string) config.Config {
	t.Helper()
	fs := flag.NewFlagSet("capture snapshot", flag.ContinueOnError)
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

func TestValidate(t *testing.T) {
	withKafka := captureConfig(t, map[string]string{"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_SIGNAL_ENABLED_CHANNELS": "kafka"})
	for _, tc := range []struct {
		cfg  Config
		want string // "" when valid
	}{
		{Config{Capture: captureConfig(t, map[string]string{"CAPTURE_TOPIC_PREFIX": "p"}), Tables: []string{"db.t1"}, Action: "execute"}, "no signal topic is configured"},
		{Config{Capture: withKafka, Tables: []string{" ", ""}, Action: "execute"}, "--tables is required"},
		{Config{Capture: withKafka, Action: "explode"}, "want execute, stop, pause or resume"},
		{Config{Capture: withKafka, Action: "stop"}, ""},
		{Config{Capture: withKafka, Tables: []string{"db.t1"}, Action: "pause"}, ""},
	} {
		err := tc.cfg.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %q: %v, want an error containing %q", tc.cfg.Action, tc.cfg.Tables, err, tc.want)
		}
	}
}

// TestSend: the signal Send writes is on the signal topic (created by
// Send) and is one the running capture parses; blank tables are dropped.
func TestSend(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cfg := captureConfig(t, map[string]string{"CAPTURE_KAFKA_BROKERS": strings.Join(fake.ListenAddrs(), ","),
		"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_SIGNAL_ENABLED_CHANNELS": "kafka"})

	res, err := Send(ctx, Config{Capture: cfg, Tables: []string{" db.t1", "", "db.t2 "}, Action: "execute"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Topic != "p-signal" || res.Offset != 0 || !slices.Equal(res.Tables, []string{"db.t1", "db.t2"}) || res.Type != signal.TypeExecuteSnapshot {
		t.Fatalf("result %+v", res)
	}
	if want := "signal execute-snapshot (id " + res.ID + ") written to p-signal at offset 0 for the capture with topic prefix p; tables db.t1,db.t2"; res.String() != want {
		t.Errorf("printed %q, want %q", res.String(), want)
	}
	res, err = Send(ctx, Config{Capture: cfg, Action: "stop"})
	if err != nil || res.Offset != 1 || res.Type != signal.TypeStopSnapshot {
		t.Fatalf("stop: %+v, %v", res, err)
	}

	rd, at, err := signal.NewReader(ctx, fake.ListenAddrs(), "p-signal", 0)
	if err != nil || at != 0 {
		t.Fatalf("reader at %d: %v", at, err)
	}
	defer rd.Close()
	recs := make(chan signal.Record, 2)
	go func() { _ = rd.Run(ctx, recs) }()
	for _, want := range []signal.Signal{{Type: signal.TypeExecuteSnapshot, Collections: []string{"db.t1", "db.t2"}}, {Type: signal.TypeStopSnapshot}} {
		select {
		case rec := <-recs:
			sig, err := signal.Parse("p", rec.Key, rec.Value)
			if err != nil || sig.Type != want.Type || !slices.Equal(sig.Collections, want.Collections) {
				t.Errorf("signal read: %+v, %v; want %s %q", sig, err, want.Type, want.Collections)
			}
		case <-ctx.Done():
			t.Fatal("the signal topic holds too few signals")
		}
	}
}
