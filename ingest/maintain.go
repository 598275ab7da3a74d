package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/binlake/binlake/ingest/internal/cmd/maintain"
	"github.com/binlake/binlake/ingest/internal/envflag"
)

// runMaintain is `ingest maintain`: one pass of table maintenance.
func runMaintain(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ingest maintain", flag.ContinueOnError)
	fs.SetOutput(stdout)
	ef := envflag.New(fs, "INGEST_", getenv)
	var cfg maintain.Config
	cfg.Bind(ef)
	checkOnly := fs.Bool("check-config", false, "validate the configuration and exit")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: ingest maintain [flags]\n\n"+
			"ingest maintain runs table maintenance once, one table at a time: conversion of equality deletes into\n"+
			"position deletes (with compact or -convert-equality-deletes), compaction (applying and dropping\n"+
			"delete files), manifest rewrite, snapshot expiry and orphan-file removal. Do not run it on S3 Tables\n"+
			"with its own maintenance enabled: choose one owner. It may run while ingest writes the tables.\n"+
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
	logger.Info("starting ingest maintain", cfg.Redacted()...)
	return maintain.Run(ctx, cfg, logger)
}
