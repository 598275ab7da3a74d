// Package maintain keeps ingest's Iceberg tables healthy where the catalog
// does not do it on its own (the reference REST catalog, Glue on S3, Nessie,
// Polaris; S3 Tables runs its own maintenance): it converts equality
// deletes into position deletes or deletion vectors in bounded memory
// (before a compaction, and on request alone), compacts data files,
// applying and then dropping the delete files (equality, position and
// deletion vectors) they carry, rewrites manifests, expires old snapshots
// and removes orphan files, one table at a time.
//
// Guarantees:
//   - Nothing is lost or resurrected. A compaction reads the rows with every
//     delete applied and replaces the files it read in one snapshot; a
//     delete file is removed only when no data file it may still apply to
//     survives the rewrite (ingest writes one position-delete file per
//     partition, covering many data files, so the library's per-group
//     "safe" list is checked again against the whole rewrite).
//   - Every maintenance commit is pinned to the snapshot it read
//     (Transaction.AssertRefSnapshotID). A concurrent writer that commits
//     first makes it fail with table.ErrCommitFailed; the step then starts
//     over from a fresh load, up to Config.Attempts times. An ingest commit
//     that loses against a maintenance commit reloads and rebuilds its
//     deletes against the new files the same way (package commit).
//   - Ingest's Kafka offsets live in table properties, which no
//     maintenance commit changes, so expiring the snapshots that carried
//     them in their summaries does not move ingest's resume point. The
//     current snapshot of every branch is always kept.
//   - Orphan removal spares files younger than Config.OrphanAge: they may
//     belong to a commit in flight. It scans only the table's data and
//     metadata folders; Run refuses a table whose folders overlap another
//     table's of its namespace (ErrSharedLocation) before its first step
//     when orphan removal is among the steps; and it never deletes a
//     file that a snapshot of the table, reloaded just before, references.
//   - Tables lists only the tables ingest writes (Ours) of a namespace.
//   - A compaction that failed with a conflict removes the files it wrote;
//     one whose outcome is unknown leaves them for orphan removal.
package maintain

import (
	"context"
	"errors"
	"fmt"
	"github.com/binlake/binlake/ingest/internal/commit"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Step is one maintenance action.
type Step string

// The steps, in the order Run performs them.
const (
	StepCompact          Step = "compact"
	StepRewriteManifests Step = "rewrite-manifests"
	StepExpireSnapshots  Step = "expire-snapshots"
	StepRemoveOrphans    Step = "remove-orphans"
)

// StepConvert converts the equality deletes of the table into position
// deletes or deletion vectors. It is not one of AllSteps: Run performs it
// first when Config.ConvertEqualityDeletes is set or the compact step runs
// (compaction applies deletes in bounded memory only by position).
const StepConvert Step = "convert-equality-deletes"

// AllSteps are every step in Run's order.
var AllSteps = []Step{StepCompact, StepRewriteManifests, StepExpireSnapshots, StepRemoveOrphans}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("maintain: invalid configuration")

// ErrTooManyAttempts reports a step that kept conflicting with other
// writers; nothing of it was committed.
var ErrTooManyAttempts = errors.New("maintain: too many conflicting attempts")

// Config configures a Maintainer. The zero value of a field means its
// default, stated on the field.
type Config struct {
	// Steps to run, in Run's fixed order whatever their order here.
	// Default: AllSteps.
	Steps []Step

	// TargetFileSize is the size compaction aims for in the files it
	// writes, and below which (75% of it) a data file is a candidate.
	// Default: the table's write.target-file-size-bytes, else 512 MiB.
	TargetFileSize int64
	// MinInputFiles is the fewest small files of a partition worth
	// compacting together when none of them carries a delete. Default 5.
	MinInputFiles int
	// DeleteFileThreshold is the number of delete files attached to a data
	// file that makes it a candidate whatever its size. Default 1: every
	// data file a delete applies to is rewritten, so that the deletes can
	// be dropped (an equality delete only once every older data file of
	// its partition is rewritten).
	DeleteFileThreshold int

	// ConvertEqualityDeletes makes Run convert the table's equality
	// deletes (its own or another writer's) into position deletes
	// (format v2) or deletion vectors (v3) of the rows they delete, in one
	// commit that removes them, before its other steps. The compact step
	// does it anyway, first.
	ConvertEqualityDeletes bool
	// ConvertBatchRows bounds the memory of the conversion: the keys of
	// at most this many rows of data files (about 100 bytes each plus
	// the key; a larger data file is a batch of its own) are held at
	// once, and every equality delete applying to them is streamed past
	// them, one batch after the other. Default DefaultConvertBatchRows.
	ConvertBatchRows int

	// ExpireOlderThan: snapshots older than this are expired (beyond
	// RetainLast). Default 24h.
	ExpireOlderThan time.Duration
	// RetainLast is how many of the newest snapshots of each branch are
	// kept whatever their age (at least 1: the current one). Default 5.
	RetainLast int

	// OrphanAge: only files unreferenced by the table and older than this
	// are removed. Younger ones may belong to a commit in flight (ingest's
	// or another maintainer's). Default 24h.
	OrphanAge time.Duration

	// DryRun plans every step and reports what it would do, without
	// writing or deleting anything.
	DryRun bool

	// Attempts bounds the tries of one step that conflicts with other
	// writers. Default 10.
	Attempts int
	// MinBackoff and MaxBackoff bound the wait between attempts (jittered,
	// doubling). Defaults 200ms and 10s.
	MinBackoff, MaxBackoff time.Duration

	// StopTimeout is how long a step in progress may go on once Run's
	// context is done; then it is cancelled. Run starts no step after its
	// context is done. Default 0: cancel at once.
	StopTimeout time.Duration

	// Logger receives one line per table and step. Default slog.Default().
	Logger *slog.Logger

	// Hold, when set, is called before a table's first step; the steps
	// run until the release it returns is called. The in-process schedule
	// of ingest uses it to pause the table's own commits, which would
	// otherwise win every race against a compaction that takes longer
	// than the commit interval.
	Hold func(ctx context.Context, ident table.Identifier) (release func(), err error)
}

// Validate checks the settings.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	for _, s := range c.Steps {
		known := false
		for _, k := range AllSteps {
			known = known || s == k
		}
		if !known {
			bad("unknown step %q (want %v)", s, AllSteps)
		}
	}
	if c.TargetFileSize < 0 || (c.TargetFileSize > 0 && c.TargetFileSize < 1<<20) {
		bad("target file size %d: want at least 1 MiB", c.TargetFileSize)
	}
	if c.MinInputFiles < 0 || c.DeleteFileThreshold < 0 || c.ConvertBatchRows < 0 || c.RetainLast < 0 || c.Attempts < 0 {
		bad("min input files, delete file threshold, convert batch rows, retain last and attempts must not be negative")
	}
	if c.ExpireOlderThan < 0 || c.OrphanAge < 0 || c.MinBackoff < 0 || c.MaxBackoff < 0 || c.StopTimeout < 0 {
		bad("durations must not be negative")
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if len(c.Steps) == 0 {
		c.Steps = AllSteps
	}
	if c.MinInputFiles == 0 {
		c.MinInputFiles = 5
	}
	if c.DeleteFileThreshold == 0 {
		c.DeleteFileThreshold = 1
	}
	if c.ConvertBatchRows == 0 {
		c.ConvertBatchRows = DefaultConvertBatchRows
	}
	if c.ExpireOlderThan == 0 {
		c.ExpireOlderThan = 24 * time.Hour
	}
	if c.RetainLast == 0 {
		c.RetainLast = 5
	}
	if c.OrphanAge == 0 {
		c.OrphanAge = 24 * time.Hour
	}
	if c.Attempts == 0 {
		c.Attempts = 10
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = 200 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) runs(s Step) bool {
	for _, x := range c.Steps {
		if x == s {
			return true
		}
	}
	return false
}

// Maintainer runs maintenance on tables of one catalog.
type Maintainer struct {
	cat        catalog.Catalog
	cfg        Config
	neighbours neighbours // where the tables of each namespace keep their files
}

// New returns a Maintainer of cat's tables.
func New(cat catalog.Catalog, cfg Config) (*Maintainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Maintainer{cat: cat, cfg: cfg.withDefaults()}, nil
}

// Report is what Run did to one table (or, in a dry run, would do).
type Report struct {
	Table  table.Identifier
	DryRun bool
	// Before and After describe the table's current snapshot before the
	// first step and after the last one.
	Before, After Stats
	Convert       ConvertReport
	Compact       CompactReport
	Manifests     ManifestReport
	Expire        ExpireReport
	Orphans       OrphanReport
	// Steps are the steps completed, in order.
	Steps []Step
}

// Run maintains one table: compaction, manifest rewrite, snapshot expiry
// and orphan removal (those of Config.Steps), in that order. It checks ctx
// between steps, and a step in progress stops when ctx is done; what a
// step committed stays committed. The report covers the steps completed.
func (m *Maintainer) Run(ctx context.Context, ident table.Identifier) (Report, error) {
	stop := ctx
	// Steps get Config.StopTimeout to finish after stop is done.
	ctx, cancel := context.WithCancel(context.WithoutCancel(stop))
	defer cancel()
	go func() {
		select {
		case <-stop.Done():
			t := time.NewTimer(m.cfg.StopTimeout)
			defer t.Stop()
			select {
			case <-t.C:
				cancel()
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
	}()
	rep := Report{Table: ident, DryRun: m.cfg.DryRun}
	log := m.cfg.Logger.With("table", ident, "dry_run", m.cfg.DryRun)
	if m.cfg.Hold != nil && !m.cfg.DryRun {
		release, err := m.cfg.Hold(stop, ident)
		if err != nil {
			return rep, fmt.Errorf("pausing the commits of %v: %w", ident, err)
		}
		defer release()
	}
	tbl, err := m.cat.LoadTable(ctx, ident)
	if err != nil {
		return rep, fmt.Errorf("loading table %v: %w", ident, err)
	}
	if m.cfg.runs(StepRemoveOrphans) {
		// A table sharing its folders with another is not maintained
		// at all: which of the files there are its own is not for
		// maintenance to guess.
		if err := m.alone(ctx, ident, tbl); err != nil {
			return rep, fmt.Errorf("maintaining %v: %w", ident, err)
		}
	}
	if rep.Before, err = TableStats(ctx, tbl); err != nil {
		return rep, fmt.Errorf("reading the files of %v: %w", ident, err)
	}
	rep.After = rep.Before
	log.Info("maintaining table", rep.Before.attrs("before_")...)
	for _, s := range append([]Step{StepConvert}, AllSteps...) {
		if s == StepConvert {
			if !m.cfg.ConvertEqualityDeletes && !m.cfg.runs(StepCompact) {
				continue
			}
		} else if !m.cfg.runs(s) {
			continue
		}
		if err := stop.Err(); err != nil {
			return rep, fmt.Errorf("maintaining %v: stopped before %s: %w", ident, s, context.Cause(stop))
		}
		start := time.Now()
		var attrs []any
		switch s {
		case StepConvert:
			rep.Convert, err = m.convert(ctx, ident)
			attrs = rep.Convert.attrs()
		case StepCompact:
			rep.Compact, err = m.compact(ctx, ident)
			attrs = rep.Compact.attrs()
		case StepRewriteManifests:
			rep.Manifests, err = m.rewriteManifests(ctx, ident)
			attrs = rep.Manifests.attrs()
		case StepExpireSnapshots:
			rep.Expire, err = m.expire(ctx, ident)
			attrs = rep.Expire.attrs()
		case StepRemoveOrphans:
			rep.Orphans, err = m.removeOrphans(ctx, ident)
			attrs = rep.Orphans.attrs()
		}
		if err != nil {
			return rep, fmt.Errorf("maintaining %v: %s: %w", ident, s, err)
		}
		rep.Steps = append(rep.Steps, s)
		log.Info("step done", append([]any{"step", string(s), "duration", time.Since(start).Round(time.Millisecond)}, attrs...)...)
	}
	if tbl, err = m.cat.LoadTable(ctx, ident); err != nil {
		return rep, fmt.Errorf("loading table %v: %w", ident, err)
	}
	if rep.After, err = TableStats(ctx, tbl); err != nil {
		return rep, fmt.Errorf("reading the files of %v: %w", ident, err)
	}
	log.Info("table maintained", rep.After.attrs("after_")...)
	return rep, nil
}

// retry runs fn on a freshly loaded table until it does not fail with
// table.ErrCommitFailed, at most Config.Attempts times.
func (m *Maintainer) retry(ctx context.Context, ident table.Identifier, step Step, fn func(*table.Table) error) error {
	var last error
	for attempt := 1; attempt <= m.cfg.Attempts; attempt++ {
		tbl, err := m.cat.LoadTable(ctx, ident)
		if err != nil {
			return fmt.Errorf("loading table %v: %w", ident, err)
		}
		err = fn(tbl)
		if err == nil || !errors.Is(err, table.ErrCommitFailed) || ctx.Err() != nil {
			return err
		}
		last = err
		m.cfg.Logger.Info("maintenance commit conflicted with another writer; starting the step over",
			"table", ident, "step", string(step), "attempt", attempt, "error", err)
		if err := commit.Backoff(ctx, attempt, m.cfg.MinBackoff, m.cfg.MaxBackoff); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: %d attempts (raise maintain-attempts, or run maintenance when the table is less busy): %w", ErrTooManyAttempts, m.cfg.Attempts, last)
}

// pinned starts a transaction on tbl that commits only if main is still
// at the snapshot tbl holds.
func pinned(tbl *table.Table) (*table.Transaction, error) {
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return nil, fmt.Errorf("pinning main: %w", err)
	}
	return tx, nil
}

// commit commits tx. A table returned with an error means the catalog took
// the commit and only what follows it failed (deleting the files an expiry
// left unreferenced): that is logged, not returned, since retrying would
// apply the change twice; orphan removal deletes what is left.
func (m *Maintainer) commit(ctx context.Context, tx *table.Transaction, step Step) (*table.Table, error) {
	next, err := tx.Commit(ctx)
	if next != nil && err != nil {
		m.cfg.Logger.Warn("maintenance commit landed, but cleaning up after it failed; orphan removal deletes what is left",
			"table", next.Identifier(), "step", string(step), "error", err)
		return next, nil
	}
	return next, err
}
