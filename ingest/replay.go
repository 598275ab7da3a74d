package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/binlake/binlake/ingest/internal/cmd/replay"
)

// runReplay is `ingest replay`: it takes ingest's settings and its own, and
// runs package replay, which rebuilds tables in an Iceberg branch from an
// earlier snapshot and its offsets, while the running ingest keeps main
// current, and publishes the branch as main when asked.
func runReplay(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ef, icfg, _ := bindFlags(getenv)
	fs := ef.FlagSet()
	fs.Init("ingest replay", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var cfg replay.Config
	cfg.Bind(fs)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: ingest replay --tables REGEX (--from-snapshot ID | --from-time TIME | --from-offsets P=O,...) [--publish] [flags]\n\n"+
			"Rebuilds tables from an earlier snapshot: the branch starts at that snapshot and the topic is re-applied\n"+
			"from the offsets it recorded, exactly once, while the running ingest keeps main current. With --publish,\n"+
			"main then moves to the branch in one commit per table. A replay that stops half way resumes when run again.\n"+
			"It takes ingest's settings (catalog, Kafka, registry, delete mode, flush limits) and these; the topics are\n"+
			"those the tables hold offsets of (--topics and --topic-regex are ignored):\n\n")
		fs.PrintDefaults()
	}
	if err := ef.Parse(args[1:]); err != nil {
		return err
	}
	if icfg.S3Region == "" {
		icfg.S3Region = getenv("AWS_REGION")
	}
	cfg.Ingest = *icfg
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	return replay.Run(ctx, cfg, newLogger(stderr, cfg.Ingest.LogFormat, cfg.Ingest.LogLevel), stderr)
}
