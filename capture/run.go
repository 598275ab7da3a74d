package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	runcmd "github.com/binlake/binlake/capture/internal/cmd/run"
	"github.com/binlake/binlake/capture/internal/config"
	"github.com/binlake/binlake/capture/internal/envflag"
	"github.com/binlake/binlake/capture/internal/progress"
)

// errHelp reports that --help was answered; main exits 0 on it.
var errHelp = flag.ErrHelp

// bindFlags is the flag set of capture: every setting of Config (each with
// its environment variable) and --check-config. The configuration table of
// capture/README.md is rendered from it (TestConfigurationTable).
func bindFlags(getenv func(string) string) (*envflag.Set, *config.Config, *bool) {
	ef := envflag.New(flag.NewFlagSet("capture", flag.ContinueOnError), "CAPTURE_", getenv)
	cfg := &config.Config{}
	cfg.Bind(ef)
	checkOnly := ef.FlagSet().Bool("check-config", false, "validate the configuration and exit")
	return ef, cfg, checkOnly
}

// run is the whole program: it parses the settings, validates them and
// hands over to the command's package (cmd/run, cmd/status, cmd/snapshot).
// main only provides the process environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 && args[1] == "snapshot" {
		return runSnapshot(ctx, args, getenv, stdout)
	}
	if len(args) > 1 && args[1] == "status" {
		return runStatus(ctx, args[1:], getenv, stdout)
	}
	ef, cfg, checkOnly := bindFlags(getenv)
	fs := ef.FlagSet()
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: capture [flags]\n       capture snapshot --tables db.t1,db.t2 [flags]   (ad-hoc snapshot: see capture snapshot --help)\n\n"+
			"capture streams MySQL/MariaDB binlog changes to Kafka as Debezium-compatible Avro events.\n"+
			"Every flag can also be set through the environment variable shown; secrets only through the environment.\n\n")
		fs.PrintDefaults()
	}
	if err := ef.Parse(args[1:]); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	if *checkOnly {
		fmt.Fprintln(stdout, "configuration ok")
		return nil
	}
	// On a terminal, snapshot progress bars stay below the log lines.
	var term *progress.Terminal
	logOut := stderr
	if progress.IsTerminal(stderr, getenv("TERM")) {
		cols, _ := strconv.Atoi(getenv("COLUMNS"))
		term = progress.NewTerminal(stderr, cols)
		logOut = term
	}
	logger := newLogger(logOut, cfg.LogFormat, cfg.LogLevel)
	return runcmd.Run(ctx, runcmd.Config{Capture: *cfg, Logger: logger, Terminal: term})
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
