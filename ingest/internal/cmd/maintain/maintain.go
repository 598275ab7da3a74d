// Package maintain is the command `ingest maintain`, and the schedule of
// the same maintenance inside ingest (-maintain-interval): its settings,
// and the pass over the tables they name, one table at a time, with the
// steps of package ingest/internal/maintain (conversion of equality
// deletes, compaction, manifest rewrite, snapshot expiry, orphan removal).
// Only tables ingest writes are maintained unless named one by one.
package maintain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/envflag"
	"github.com/binlake/binlake/ingest/internal/lake"
	tablemaint "github.com/binlake/binlake/ingest/internal/maintain"
	"github.com/binlake/binlake/ingest/internal/schemamap"
)

// Config is the configuration of `ingest maintain`. Each field's flag,
// environment variable and default are in Bind.
type Config struct {
	lake.CatalogConfig
	Settings
	LogFormat, LogLevel string
}

// Settings are the maintenance settings `ingest maintain` and the
// in-process schedule of ingest (-maintain-interval) share.
type Settings struct {
	Tables     string // comma-separated <namespace>.<table>
	Namespaces string // or: comma-separated namespaces, every table of each
	Steps      string // comma-separated tablemaint.Step names

	TargetFileSize      int
	MinInputFiles       int
	DeleteFileThreshold int
	ConvertEqDeletes    bool
	ConvertBatchRows    int
	ExpireOlderThan     time.Duration
	RetainLast          int
	OrphanAge           time.Duration
	DryRun              bool
	Attempts            int
	StopTimeout         time.Duration
}

// minOrphanAge is the least orphan-age the command takes: a younger file
// may belong to a commit in flight.
const minOrphanAge = time.Hour

// Bind adds the settings to f.
func (c *Config) Bind(f *envflag.Set) {
	c.CatalogConfig.Bind(f)
	c.Settings.Bind(f)
	f.String(&c.LogFormat, "log-format", "text", "log format: text or json")
	f.String(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
}

// Bind adds the settings to f.
func (c *Settings) Bind(f *envflag.Set) {
	f.String(&c.Tables, "maintain-tables", "", "comma-separated tables <namespace>.<table> to maintain (or use -maintain-namespaces)")
	f.String(&c.Namespaces, "maintain-namespaces", "", "comma-separated namespaces whose tables ingest writes (those with binlake.source or binlake offsets) are maintained; others are left alone")
	f.String(&c.Steps, "maintain-steps", "compact,rewrite-manifests,expire-snapshots,remove-orphans", "comma-separated steps, always run in this order: compact, rewrite-manifests, expire-snapshots, remove-orphans")
	f.Int(&c.TargetFileSize, "compact-target-file-size", 0, "size in bytes of the files compaction writes; files under 75% of it are compacted (0: the table's write.target-file-size-bytes, else 512 MiB)")
	f.Int(&c.MinInputFiles, "compact-min-input-files", 5, "fewest small files of a partition worth compacting when none carries a delete")
	f.Int(&c.DeleteFileThreshold, "compact-delete-file-threshold", 1, "number of delete files applying to a data file that makes compaction rewrite it whatever its size (1: apply every delete)")
	f.Bool(&c.ConvertEqDeletes, "convert-equality-deletes", false, "before the steps, turn the table's equality deletes (any writer's) into position deletes (v2) or deletion vectors (v3) and remove them, in one commit, so that every reader can read it; compact does it anyway")
	f.Int(&c.ConvertBatchRows, "convert-batch-rows", tablemaint.DefaultConvertBatchRows, "keys of data-file rows the equality-delete conversion holds at once (about 100 bytes each plus the key): bounds its memory; more rows take more passes over the deletes")
	f.Duration(&c.ExpireOlderThan, "expire-older-than", 24*time.Hour, "expire snapshots older than this (beyond expire-retain-last); readers on an expired snapshot lose its files")
	f.Int(&c.RetainLast, "expire-retain-last", 5, "newest snapshots of each branch kept whatever their age (at least 1)")
	f.Duration(&c.OrphanAge, "orphan-age", 24*time.Hour, "remove only unreferenced files older than this (at least 1h: younger ones may belong to a commit in flight)")
	f.Bool(&c.DryRun, "dry-run", false, "plan every step and log what it would do; write and delete nothing")
	f.Int(&c.Attempts, "maintain-attempts", 10, "attempts of a step that conflicts with other writers (each starts over from the table as it is)")
	f.Duration(&c.StopTimeout, "maintain-stop-timeout", 30*time.Second, "on SIGTERM, how long the step in progress may go on before it is cancelled; no further step starts")
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// tables parses Tables: the namespace is everything before the last dot.
func (c *Settings) tables() ([]table.Identifier, error) {
	var out []table.Identifier
	for _, t := range splitList(c.Tables) {
		i := strings.LastIndex(t, ".")
		if i <= 0 || i == len(t)-1 {
			return nil, fmt.Errorf("maintain-tables: %q is not <namespace>.<table>", t)
		}
		out = append(out, table.Identifier{t[:i], t[i+1:]})
	}
	return out, nil
}

func (c *Settings) steps() ([]tablemaint.Step, error) {
	var out []tablemaint.Step
	for _, s := range splitList(c.Steps) {
		known := false
		for _, k := range tablemaint.AllSteps {
			known = known || tablemaint.Step(s) == k
		}
		if !known {
			return nil, fmt.Errorf("maintain-steps: unknown step %q (want compact, rewrite-manifests, expire-snapshots or remove-orphans)", s)
		}
		out = append(out, tablemaint.Step(s))
	}
	if len(out) == 0 {
		return nil, errors.New("maintain-steps is empty")
	}
	return out, nil
}

// Validate checks the settings against each other.
func (c *Config) Validate() error {
	errs := c.Settings.Check()
	if err := c.CatalogConfig.Validate(); err != nil {
		errs = append([]error{err}, errs...)
	}
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("log-format %q: want text or json", c.LogFormat)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		bad("log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	return errors.Join(errs...)
}

// Check checks the settings against each other: one error for each
// setting to fix.
func (c *Settings) Check() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if (c.Tables == "") == (c.Namespaces == "") {
		bad("set exactly one of maintain-tables and maintain-namespaces (INGEST_MAINTAIN_TABLES, INGEST_MAINTAIN_NAMESPACES)")
	}
	if _, err := c.tables(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.steps(); err != nil {
		errs = append(errs, err)
	}
	if c.TargetFileSize != 0 && c.TargetFileSize < 1<<20 {
		bad("compact-target-file-size %d: want 0 (the table's setting) or at least 1 MiB (1048576)", c.TargetFileSize)
	}
	if c.MinInputFiles < 1 {
		bad("compact-min-input-files must be at least 1")
	}
	if c.DeleteFileThreshold < 1 {
		bad("compact-delete-file-threshold must be at least 1")
	}
	if c.ConvertBatchRows < 1 {
		bad("convert-batch-rows must be at least 1")
	}
	if c.ExpireOlderThan <= 0 {
		bad("expire-older-than must be positive")
	}
	if c.RetainLast < 1 {
		bad("expire-retain-last must be at least 1: the current snapshot is always kept")
	}
	if c.OrphanAge < minOrphanAge {
		bad("orphan-age %s: want at least %s, or files of a commit in flight (ingest's, or another maintenance run's) could be deleted", c.OrphanAge, minOrphanAge)
	}
	if c.Attempts < 1 {
		bad("maintain-attempts must be at least 1")
	}
	if c.StopTimeout < 0 {
		bad("maintain-stop-timeout must not be negative")
	}
	return errs
}

// maintainer is the package configuration of the settings.
func (c *Settings) maintainer(logger *slog.Logger) tablemaint.Config {
	steps, _ := c.steps()
	return tablemaint.Config{
		Steps:                  steps,
		TargetFileSize:         int64(c.TargetFileSize),
		MinInputFiles:          c.MinInputFiles,
		DeleteFileThreshold:    c.DeleteFileThreshold,
		ConvertEqualityDeletes: c.ConvertEqDeletes,
		ConvertBatchRows:       c.ConvertBatchRows,
		ExpireOlderThan:        c.ExpireOlderThan,
		RetainLast:             c.RetainLast,
		OrphanAge:              c.OrphanAge,
		DryRun:                 c.DryRun,
		Attempts:               c.Attempts,
		StopTimeout:            c.StopTimeout,
		Logger:                 logger,
	}
}

// Redacted is the configuration as logged: no secrets.
func (c *Config) Redacted() []any {
	return append([]any{
		"catalog_uri", lake.RedactURL(c.CatalogURI), "warehouse", c.Warehouse,
		"catalog_credential_set", c.CatalogCredential != "", "catalog_token_set", c.CatalogToken != "",
		"sigv4", c.SigV4, "s3_endpoint", c.S3Endpoint, "s3_region", c.S3Region,
	}, c.Settings.Redacted()...)
}

// Redacted is the settings as logged.
func (c *Settings) Redacted() []any {
	return []any{
		"maintain_tables", c.Tables, "maintain_namespaces", c.Namespaces, "maintain_steps", c.Steps,
		"compact_target_file_size", c.TargetFileSize, "compact_min_input_files", c.MinInputFiles,
		"compact_delete_file_threshold", c.DeleteFileThreshold, "convert_equality_deletes", c.ConvertEqDeletes,
		"convert_batch_rows", c.ConvertBatchRows, "expire_older_than", c.ExpireOlderThan,
		"expire_retain_last", c.RetainLast, "orphan_age", c.OrphanAge, "dry_run", c.DryRun,
		"maintain_attempts", c.Attempts, "maintain_stop_timeout", c.StopTimeout,
	}
}

// Run is `ingest maintain`: one pass of table maintenance over the tables
// of cfg (validated), one after the other. A table that fails does not
// stop the others; the error lists them. A done ctx stops after the step
// in progress (nil error).
func Run(ctx context.Context, cfg Config, logger *slog.Logger) error {
	cat, err := lake.Open(ctx, cfg.CatalogConfig, logger)
	if err != nil {
		return err
	}
	defer lake.Close(cat, logger)
	m, err := tablemaint.New(cat, cfg.maintainer(logger))
	if err != nil {
		return err
	}
	return maintainTables(ctx, cat, m, cfg.Settings, logger)
}

// maintainTables runs m over the tables of the settings, one after the
// other. A table that fails does not stop the others; the error lists
// them. A done ctx stops after the table in progress (nil error).
func maintainTables(ctx context.Context, cat catalog.Catalog, m *tablemaint.Maintainer, cfg Settings, logger *slog.Logger) error {
	idents, err := cfg.tables()
	if err != nil {
		return err
	}
	if cfg.Namespaces != "" {
		var nss []table.Identifier
		for _, ns := range splitList(cfg.Namespaces) {
			nss = append(nss, table.Identifier{ns})
		}
		var foreign []table.Identifier
		if idents, foreign, err = tablemaint.Tables(ctx, cat, nss); err != nil {
			return fmt.Errorf("%w (check maintain-namespaces)", err)
		}
		if len(foreign) > 0 {
			// Only tables ingest writes are maintained unless named
			// in maintain-tables: another engine's table is its
			// owner's to maintain.
			logger.Info("leaving alone the tables ingest does not write (no "+schemamap.SourceProperty+" nor offsets); name them in maintain-tables to maintain them",
				"tables", foreign)
		}
	}
	start := time.Now()
	var failed []error
	var before, after tablemaint.Stats
	for i, ident := range idents {
		if ctx.Err() != nil {
			logger.Info("stopping: no further table is maintained", "tables_done", i, "tables", len(idents))
			break
		}
		logger.Info("table", "n", i+1, "of", len(idents), "table", ident)
		rep, err := m.Run(ctx, ident)
		before, after = addStats(before, rep.Before), addStats(after, rep.After)
		if err != nil {
			if ctx.Err() != nil {
				logger.Info("stopped", "table", ident, "steps_done", len(rep.Steps), "error", err)
				break
			}
			// The other tables are still maintained; the command fails
			// at the end.
			logger.Error("maintaining a table failed", "table", ident, "error", err)
			failed = append(failed, err)
		}
	}
	logger.Info("maintenance done", "tables", len(idents), "failed", len(failed), "duration", time.Since(start).Round(time.Millisecond),
		"data_files_before", before.DataFiles, "data_files_after", after.DataFiles,
		"delete_files_before", before.DeleteFiles(), "delete_files_after", after.DeleteFiles(),
		"snapshots_before", before.Snapshots, "snapshots_after", after.Snapshots, "dry_run", cfg.DryRun)
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d tables failed: %w", len(failed), len(idents), errors.Join(failed...))
	}
	return nil
}

// Every is ingest's in-process schedule: maintenance of the
// tables every interval, the first after one interval, until ctx is done.
// hold pauses this process's commits of a table while it is maintained.
// Failures are logged and tried again at the next round; they never stop
// ingest.
func Every(ctx context.Context, cat catalog.Catalog, cfg Settings, interval time.Duration, hold func(context.Context, table.Identifier) (func(), error), logger *slog.Logger) error {
	logger = logger.With("component", "maintain")
	mc := cfg.maintainer(logger)
	mc.Hold = hold
	m, err := tablemaint.New(cat, mc)
	if err != nil {
		return err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := maintainTables(ctx, cat, m, cfg, logger); err != nil {
			logger.Warn("scheduled maintenance failed; trying again at the next interval", "error", err, "maintain_interval", interval)
		}
	}
}

func addStats(a, b tablemaint.Stats) tablemaint.Stats {
	a.Snapshots += b.Snapshots
	a.DataManifests += b.DataManifests
	a.DeleteManifests += b.DeleteManifests
	a.DataFiles += b.DataFiles
	a.PositionDeleteFiles += b.PositionDeleteFiles
	a.EqualityDeleteFiles += b.EqualityDeleteFiles
	a.DeletionVectors += b.DeletionVectors
	a.DataBytes += b.DataBytes
	a.DeleteBytes += b.DeleteBytes
	a.DataRecords += b.DataRecords
	a.DeleteRecords += b.DeleteRecords
	return a
}
