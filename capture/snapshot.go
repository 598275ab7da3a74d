package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/binlake/binlake/capture/internal/cmd/snapshot"
	"github.com/binlake/binlake/capture/internal/config"
	"github.com/binlake/binlake/capture/internal/envflag"
)

// runSnapshot is `capture snapshot`: it parses capture's flags and
// environment and the command's own (CAPTURE_SNAPSHOT_TABLES,
// CAPTURE_SNAPSHOT_ACTION), and hands over to package snapshot.
func runSnapshot(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("capture snapshot", flag.ContinueOnError)
	fs.SetOutput(stdout)
	ef := envflag.New(fs, "CAPTURE_", getenv)
	var cfg config.Config
	cfg.Bind(ef)
	var tables, action string
	cmdFlags := envflag.New(fs, "CAPTURE_SNAPSHOT_", getenv)
	cmdFlags.String(&tables, "tables", "", "comma-separated tables to snapshot, db.table (Debezium data-collections: regexes matching whole names)")
	cmdFlags.String(&action, "action", "execute", "execute (execute-snapshot), stop (stop-snapshot of --tables, or of everything when empty), pause or resume")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: capture snapshot --tables db.t1,db.t2 [flags]\n\n"+
			"Asks the running capture (same topic prefix and signal settings) for an incremental snapshot of tables,\n"+
			"by writing a Debezium execute-snapshot signal to its signal topic, and exits.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("capture snapshot: unexpected arguments %q (tables go in --tables)", fs.Args())
	}
	if err := errors.Join(ef.Err(), cmdFlags.Err()); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	res, err := snapshot.Send(ctx, snapshot.Config{Capture: cfg, Tables: strings.Split(tables, ","), Action: action})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, res)
	return nil
}
