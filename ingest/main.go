// Command ingest consumes Debezium change events from Kafka and upserts them,
// exactly once, into Apache Iceberg tables through an Iceberg REST catalog.
//
// Run `ingest --help` for its settings; every flag also has an environment
// variable (INGEST_*), and secrets are read only from the environment or
// from files.
//
// Package main only parses each command's flags and environment, validates
// them and dispatches: the commands are packages under internal/cmd, each a
// Config in and a result or error out (ingest itself, status, maintain,
// replay).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/binlake/binlake/ingest/internal/cmd/status"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if err != errHelp {
			fmt.Fprintln(os.Stderr, "ingest:", err)
			if errors.Is(err, status.ErrStale) {
				os.Exit(3) // ingest status: a table is behind its max-lag
			}
			os.Exit(1)
		}
	}
}
