// Command capture reads the MySQL/MariaDB binlog and publishes
// Debezium-compatible Avro change events to Kafka, exactly once.
//
// Run `capture --help` for its settings; every flag also has an environment
// variable (CAPTURE_*), and secrets are read only from the environment or
// from files.
//
// Package main only parses the flags and the environment, validates them
// and hands over to the command's package: internal/cmd/run (capture),
// internal/cmd/status (capture status) and internal/cmd/snapshot (capture
// snapshot), each a Config in and a result or an error out.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/binlake/binlake/capture/internal/cmd/status"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if err != errHelp {
			fmt.Fprintln(os.Stderr, "capture:", err)
			if errors.Is(err, status.ErrStale) {
				os.Exit(3) // capture status: behind its max-lag, or nothing stored
			}
			os.Exit(1)
		}
	}
}
