package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/binlake/binlake/capture/internal/cmd/status"
)

// runStatus is `capture status`: it parses capture's settings and its
// own, and hands over to package status.
func runStatus(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	ef, cfg, _ := bindFlags(getenv)
	fs := ef.FlagSet()
	fs.Init("capture status", flag.ContinueOnError)
	fs.SetOutput(stdout)
	format := fs.String("format", "table", "output: table or json")
	maxLag := fs.Duration("max-lag", 0, "exit 3 when the oldest change not yet committed is older than this (0: never)")
	maxLagBytes := fs.Int64("max-lag-bytes", 0, "exit 3 when more binlog than this lies past the stored position (0: never)")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: capture status [flags]\n\n"+
			"Prints the position a capture stored against the end of the server's binlog: the lag in bytes and in\n"+
			"seconds, the snapshots' progress and the signal offset. It reads Kafka and the server, not the running\n"+
			"capture. It takes capture's settings (with their environment variables) and these:\n\n")
		fs.PrintDefaults()
	}
	if err := ef.Parse(args[1:]); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("invalid configuration: format %q: want table or json", *format)
	}
	rep, err := status.Run(ctx, status.Config{Capture: *cfg, MaxLag: *maxLag, MaxLagBytes: *maxLagBytes})
	if rep != nil {
		if err := rep.Write(stdout, *format); err != nil {
			return err
		}
	}
	return err
}
