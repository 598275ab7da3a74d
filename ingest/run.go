package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/binlake/binlake/ingest/internal/cmd/ingest"
	"github.com/binlake/binlake/ingest/internal/envflag"
)

// errHelp reports that --help was answered; main exits 0 on it.
var errHelp = flag.ErrHelp

// bindFlags is the flag set of ingest: every setting of ingest.Config (each with
// its environment variable) and --check-config. The configuration table of
// ingest/README.md is rendered from it (TestConfigurationTable).
func bindFlags(getenv func(string) string) (*envflag.Set, *ingest.Config, *bool) {
	ef := envflag.New(flag.NewFlagSet("ingest", flag.ContinueOnError), "INGEST_", getenv)
	cfg := &ingest.Config{}
	cfg.Bind(ef)
	checkOnly := ef.FlagSet().Bool("check-config", false, "validate the configuration and exit")
	return ef, cfg, checkOnly
}

// run is the whole program: it parses the settings of the command named in
// args (ingest, ingest status, ingest maintain, ingest replay), validates
// them and runs the command's package. main only provides the process
// environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 && args[1] == "status" {
		return runStatus(ctx, args[1:], getenv, stdout)
	}
	if len(args) > 1 && args[1] == "replay" {
		return runReplay(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 1 && args[1] == "maintain" {
		return runMaintain(ctx, args[1:], getenv, stdout, stderr)
	}
	ef, cfg, checkOnly := bindFlags(getenv)
	fs := ef.FlagSet()
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: ingest [flags]\n       ingest maintain [flags]  (table maintenance; see ingest maintain -help)\n       ingest status [flags]    (how far each table has got; see ingest status -help)\n       ingest replay [flags]    (rebuild tables from an earlier snapshot; see ingest replay -help)\n\n"+
			"ingest upserts Debezium change events from Kafka into Apache Iceberg tables, exactly once.\n"+
			"Every flag can also be set through the environment variable shown; secrets only through the environment:\n"+
			"INGEST_CATALOG_CREDENTIAL, INGEST_CATALOG_TOKEN (or <NAME>_FILE), and AWS_* for S3 and SigV4.\n\n")
		fs.PrintDefaults()
	}
	if err := ef.Parse(args[1:]); err != nil {
		return err
	}
	if cfg.S3Region == "" {
		cfg.S3Region = getenv("AWS_REGION")
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	if *checkOnly {
		fmt.Fprintln(stdout, "configuration ok")
		return nil
	}
	logger := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	logger.Info("starting ingest", cfg.Redacted()...)
	if err := ingest.Run(ctx, *cfg, logger); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
