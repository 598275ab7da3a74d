package ingest

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/envflag"
	"github.com/binlake/binlake/ingest/internal/lake"
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

// TestRewriteAuto checks the in-ingest rewrite's settings: on by default
// (auto, the flags unset, at 0.3, 16 and 16) on every catalog but S3
// Tables, whose managed compaction rewrites the files; a value set turns
// it on everywhere, S3 Tables included, and 0 off; the byte bound stays
// within max-buffered-bytes; bad values are refused. It also holds auto
// to the S3 Tables rule whatever auto's thresholds.
func TestRewriteAuto(t *testing.T) {
	const maxBytes = 64 << 20
	off := commit.RewriteConfig{MaxBytes: maxBytes}
	on := commit.RewriteConfig{DeadFraction: 0.3, DeleteFiles: 16, Manifests: 16, MaxBytes: maxBytes}
	rest := lake.CatalogConfig{CatalogURI: "http://127.0.0.1:8181"}
	glue := lake.CatalogConfig{CatalogURI: "http://127.0.0.1:9000", SigV4: true, SigV4Service: "glue"}
	s3t := lake.CatalogConfig{CatalogURI: "https://s3tables.us-east-1.amazonaws.com/iceberg"}
	s3tSigV4 := lake.CatalogConfig{CatalogURI: "http://127.0.0.1:9000", SigV4: true, SigV4Service: "s3tables"}
	s3tARN := lake.CatalogConfig{CatalogURI: "http://proxy:8181", Warehouse: "arn:aws:s3tables:us-east-1:123456789012:bucket/lake"}
	for _, tc := range []struct {
		name    string
		cfg     Config
		auto    commit.RewriteConfig // what auto means off S3 Tables (autoRewrite unless set)
		want    commit.RewriteConfig
		wantErr string
	}{
		{"default, reference REST catalog", Config{CatalogConfig: rest}, autoRewrite, on, ""},
		{"default, embedded", Config{}, autoRewrite, on, ""},
		{"default, Glue", Config{CatalogConfig: glue}, autoRewrite, on, ""},
		{"default, S3 Tables", Config{CatalogConfig: s3t}, autoRewrite, off, ""},
		{"set", Config{CatalogConfig: rest, RewriteDeadFraction: "0.3", RewriteDeleteFiles: "16", RewriteManifests: "16"}, autoRewrite, on, ""},
		{"set on S3 Tables", Config{CatalogConfig: s3t, RewriteDeadFraction: "0.5", RewriteDeleteFiles: "4", RewriteManifests: "8"},
			autoRewrite, commit.RewriteConfig{DeadFraction: 0.5, DeleteFiles: 4, Manifests: 8, MaxBytes: maxBytes}, ""},
		{"one set", Config{CatalogConfig: rest, RewriteDeadFraction: " 0.25 "}, autoRewrite, commit.RewriteConfig{DeadFraction: 0.25, DeleteFiles: 16, Manifests: 16, MaxBytes: maxBytes}, ""},
		{"one set off", Config{CatalogConfig: rest, RewriteDeleteFiles: "0"}, autoRewrite, commit.RewriteConfig{DeadFraction: 0.3, Manifests: 16, MaxBytes: maxBytes}, ""},
		{"default off auto, one set", Config{CatalogConfig: rest, RewriteDeadFraction: " 0.25 "}, commit.RewriteConfig{}, commit.RewriteConfig{DeadFraction: 0.25, MaxBytes: maxBytes}, ""},
		{"auto on, REST", Config{CatalogConfig: rest}, on, on, ""},
		{"auto on, Glue", Config{CatalogConfig: glue}, on, on, ""},
		{"auto on, S3 Tables URI", Config{CatalogConfig: s3t}, on, off, ""},
		{"auto on, S3 Tables sigv4", Config{CatalogConfig: s3tSigV4}, on, off, ""},
		{"auto on, S3 Tables warehouse", Config{CatalogConfig: s3tARN}, on, off, ""},
		{"auto on, set off", Config{CatalogConfig: rest, RewriteDeadFraction: "0", RewriteDeleteFiles: "0", RewriteManifests: "0"}, on, off, ""},
		{"bytes within max-buffered-bytes", Config{RewriteDeadFraction: "0.3", MaxBufferedBytes: 32 << 20},
			autoRewrite, commit.RewriteConfig{DeadFraction: 0.3, DeleteFiles: 16, Manifests: 16, MaxBytes: 32 << 20}, ""},
		{"bad manifests", Config{RewriteManifests: "x"}, autoRewrite, off, "rewrite-manifests"},
		{"fraction over 1", Config{RewriteDeadFraction: "1.5"}, autoRewrite, off, "rewrite-dead-fraction"},
		{"fraction NaN", Config{RewriteDeadFraction: "NaN"}, autoRewrite, off, "rewrite-dead-fraction"},
		{"negative count", Config{RewriteDeleteFiles: "-1"}, autoRewrite, off, "rewrite-delete-files"},
		{"no bytes", Config{RewriteMaxBytes: -1}, autoRewrite, off, "rewrite-max-bytes"},
	} {
		cfg := tc.cfg
		for _, v := range []*string{&cfg.RewriteDeadFraction, &cfg.RewriteDeleteFiles, &cfg.RewriteManifests} {
			if *v == "" {
				*v = "auto"
			}
		}
		if cfg.MaxBufferedBytes == 0 {
			cfg.MaxBufferedBytes = 512 << 20
		}
		if cfg.RewriteMaxBytes == 0 {
			cfg.RewriteMaxBytes = maxBytes
		}
		got, err := cfg.rewriteConfigAuto(tc.auto)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want one naming %s", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: rewriteConfig = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// TestRewriteDefault: ingest as started with no rewrite setting (the
// flags' defaults, auto) rewrites at 0.3, 16 and 16 off S3 Tables and
// nothing on it; the variables set to 0 turn it off.
func TestRewriteDefault(t *testing.T) {
	args := []string{"-catalog-uri=http://127.0.0.1:8181", "-topics=p.db.t"}
	cfg, err := parseConfig(args, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := commit.RewriteConfig{DeadFraction: 0.3, DeleteFiles: 16, Manifests: 16, MaxBytes: commit.DefaultRewriteMaxBytes}
	if got, err := cfg.rewriteConfig(); err != nil || got != want {
		t.Errorf("defaults: rewriteConfig = %+v, %v; want %+v", got, err, want)
	}
	cfg, err = parseConfig([]string{"-catalog-uri=https://s3tables.us-east-1.amazonaws.com/iceberg", "-topics=p.db.t"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cfg.rewriteConfig(); err != nil || got.Enabled() {
		t.Errorf("defaults on S3 Tables: rewriteConfig = %+v, %v; want off", got, err)
	}
	cfg, err = parseConfig(args, env(map[string]string{
		"INGEST_REWRITE_DEAD_FRACTION": "0", "INGEST_REWRITE_DELETE_FILES": "0", "INGEST_REWRITE_MANIFESTS": "0",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cfg.rewriteConfig(); err != nil || got.Enabled() {
		t.Errorf("set to 0 from the environment: rewriteConfig = %+v, %v; want off", got, err)
	}
}
