package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/binlake/binlake/ingest/internal/cmd/status"
)

// runStatus is `ingest status`: it takes ingest's settings (the catalog,
// Kafka) and its own, and prints the report of package status.
func runStatus(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	ef, icfg, _ := bindFlags(getenv)
	fs := ef.FlagSet()
	fs.Init("ingest status", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var cfg status.Config
	cfg.Bind(fs)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: ingest status [flags]\n\n"+
			"Prints how far each Iceberg table ingest writes has got: the Kafka offsets it holds against the topics'\n"+
			"ends, how long its oldest waiting change has waited, the source time and GTID it holds, its files, and\n"+
			"the GTID up to which all tables are complete, and whether each source's table renames are followed (give it\n"+
			"ingest's topics or topic-regex for that). It reads the tables and the topics, not the running ingest.\n"+
			"It takes ingest's settings (catalog and Kafka, with their environment variables) and these:\n\n")
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
	_, err := status.Run(ctx, cfg, stdout)
	return err
}
