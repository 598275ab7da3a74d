package ingest

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/binlake/binlake/ingest/internal/envflag"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// parseConfig is the configuration ingest makes of args (after the
// command's name) and the environment getenv reads, validated, as main
// makes it.
func parseConfig(args []string, getenv func(string) string) (Config, error) {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ef := envflag.New(fs, "INGEST_", getenv)
	var cfg Config
	cfg.Bind(ef)
	if err := ef.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.S3Region == "" {
		cfg.S3Region = getenv("AWS_REGION")
	}
	return cfg, cfg.Validate()
}

// runArgs runs ingest in-process with the settings of args and getenv,
// logging in the format and at the level they set to log.
func runArgs(ctx context.Context, args []string, getenv func(string) string, log io.Writer) error {
	cfg, err := parseConfig(args, getenv)
	if err != nil {
		return err
	}
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	var h slog.Handler = slog.NewTextHandler(log, &slog.HandlerOptions{Level: lvl})
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(log, &slog.HandlerOptions{Level: lvl})
	}
	return Run(ctx, cfg, slog.New(h))
}

// TestRunKafkaDown runs ingest in-process on an embedded catalog with no
// broker listening and startup-timeout 0: Run returns at the first failure
// with the setting to check, having opened the catalog in state-dir.
func TestRunKafkaDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	var log strings.Builder
	err = runArgs(t.Context(), []string{"-state-dir=" + t.TempDir(), "-topics=p.db.t", "-kafka-brokers=" + addr, "-startup-timeout=0", "-metrics-addr=off", "-schema-registry-url="}, env(nil), &log)
	if err == nil || !strings.Contains(err.Error(), "kafka "+addr) || !strings.Contains(err.Error(), "check kafka-brokers") {
		t.Fatalf("err %v, want Kafka named with the setting to check\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "embedded") {
		t.Errorf("the log does not say the embedded catalog was opened:\n%s", log.String())
	}
}
