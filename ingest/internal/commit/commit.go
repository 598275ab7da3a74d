// Package commit writes one table's batch of change events into Iceberg as
// exactly one RowDelta snapshot, and recovers the Kafka offsets a table
// holds.
//
// Exactly-once rests on three rules:
//   - The table is the source of truth for consumed offsets: every commit
//     stores the next offset per topic partition in its snapshot summary
//     (see [OffsetsKeyPrefix]), and [Offsets] reads them back.
//   - Every attempt pins main to the snapshot it read
//     (Transaction.AssertRefSnapshotID), so it commits only on top of what
//     it has seen; iceberg-go never rebases it.
//   - On a conflict (table.ErrCommitFailed, HTTP 409) the Committer reloads
//     the table, re-reads the offsets, drops the events already committed
//     and rebuilds the files. On an ambiguous outcome
//     (rest.ErrCommitStateUnknown, 5xx, timeouts, transport errors) it
//     reloads and looks for its commit id ([CommitIDKey]) among the
//     snapshots committed since its base before trying again.
//
// Upserts are merge-on-read: data files for the last image of each key plus
// deletes of the keys' old rows, in one snapshot. How the old rows are
// deleted is Config.DeleteMode: equality deletes on the identifier fields
// for every key the batch touched (DeleteEquality), or position deletes of
// the rows the table's key index (package keyindex) finds, each against the
// data file that holds the row, in that file's partition spec and
// partition (DeletePosition). In position mode every attempt first brings
// the index to the attempt's base snapshot, so a conflict with another
// writer or a compaction rebuilds the deletes against what is there; no
// snapshot committed in position mode holds an equality delete.
//
// Truncates follow source order (batch.SourceOrder, kept per row in the
// batch.OrderColumn column): a truncate at source order T deletes the rows
// whose order is below T (or null: rows written before the column existed)
// with a merge-on-read delete (position deletes, so equality deletes older
// than the truncate keep applying to the files it leaves), then the batch's
// RowDelta, in one transaction; T is kept in the table property
// [TruncateWatermarkKey] so that a change below T committed later, by a
// lagging partition or another ingest process, is dropped. Pinning makes
// the watermark current at every commit. Orders of different binlog
// histories (failover, RESET MASTER) are never compared as one: every
// attempt first places the batch's changes in the table's histories
// (batch.Buffer.Place, [EpochsKey]), which puts each history's epoch in
// the top bits of its orders, and stops on a change it cannot place
// (batch.ErrHistoryUnordered). A truncate without a source
// position (not from a binlog) is the older copy-on-write overwrite that
// drops every data file.
//
// In the positional modes a commit may be followed by a rewrite
// (Config.Rewrite, [RewriteConfig]): the live rows of the table's most
// deleted data files are moved into new files in a commit of their own,
// pinned like every commit, and the key index follows them, so that the
// read cost of the table stays bounded without a compaction job.
//
// A commit that has nothing to write (only dropped or passed records, or a
// truncate of a table without snapshots) still commits its offsets and
// watermark: in an empty snapshot, pinned like any other, so that a
// writer that read main before it conflicts rather than overwriting its
// offsets properties.
//
// Data files of failed attempts are left behind as orphans (iceberg-go
// does not remove them); table maintenance removes unreferenced files.
package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/keyindex"
)

// ErrTooManyAttempts reports that a commit did not land within
// Config.MaxAttempts attempts; it wraps the last attempt's error.
var ErrTooManyAttempts = errors.New("commit: too many attempts")

// ErrTableReplaced reports that the name a Committer commits under now
// holds another table (another table UUID), or none: the table was renamed
// away (a followed RENAME TABLE, a swap that gave the name to another
// table) or dropped. A batch built for the first table is never committed
// to the second; the caller decides where its events belong.
var ErrTableReplaced = errors.New("commit: the table under the name was replaced")

// Config configures a Committer.
type Config struct {
	// MaxAttempts bounds the attempts of one Commit; default 10.
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the jittered exponential wait between
	// attempts; defaults 100ms and 10s.
	MinBackoff, MaxBackoff time.Duration
	// RecordRows is the number of rows per Arrow record batch handed to the
	// Parquet writer; default batch.DefaultRecordRows.
	RecordRows int
	// Logger receives retry and lifecycle logs; nil means slog.Default().
	Logger *slog.Logger
	// DeleteMode is how old rows are deleted; default DeleteEquality.
	// DeletePosition needs Index and format v2 tables, DeleteDV Index and
	// format v3 tables; DeleteAuto (Index) is either, by the table's
	// version.
	DeleteMode DeleteMode
	// Index holds the key indexes of the tables (DeletePosition and
	// DeleteDV).
	Index *keyindex.Store
	// TableUUID, when set, is the table the Committer must commit to: New
	// fails with ErrTableReplaced when the name holds another one. Every
	// Committer checks, at each reload, that the name still holds the
	// table it first loaded.
	TableUUID string
	// Rewrite, in the positional delete modes, rewrites the live rows of
	// the table's most deleted data files after a commit lands (see
	// RewriteConfig); the zero value is off.
	Rewrite RewriteConfig
}

// Validate checks the settings.
func (c Config) Validate() error {
	if c.MaxAttempts < 0 || c.MinBackoff < 0 || c.MaxBackoff < 0 || c.RecordRows < 0 {
		return errors.New("commit: negative setting")
	}
	if c.MaxBackoff > 0 && c.MinBackoff > c.MaxBackoff {
		return errors.New("commit: min backoff above max backoff")
	}
	if err := c.Rewrite.validate(); err != nil {
		return err
	}
	switch c.DeleteMode {
	case "", DeleteEquality:
	case DeletePosition, DeleteDV, DeleteAuto:
		if c.Index == nil {
			return fmt.Errorf("commit: delete-mode=%s needs a key index (state-dir)", c.DeleteMode)
		}
	default:
		return fmt.Errorf("commit: delete-mode %q: want auto, position, dv or equality", c.DeleteMode)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 10
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.DeleteMode == "" {
		c.DeleteMode = DeleteEquality
	}
	return c
}

// Committer commits batches to one table. It keeps the last loaded table
// and is not safe for concurrent use: one goroutine per table owns it.
type Committer struct {
	cat   catalog.Catalog
	ident table.Identifier
	cfg   Config
	tbl   *table.Table
	uuid  string // the table's UUID, as first loaded (or Config.TableUUID)
	// idx is the table's key index in position mode (nil for a table
	// without identifier fields: an append-only change log deletes
	// nothing).
	idx *keyindex.Index
	// replan: the next commit plans a rewrite even if it deletes nothing
	// (the first commit; after a rewrite, which may have left files over
	// the byte bound; after one that failed; after a reload, since
	// another writer may have changed the table).
	replan bool
	// sincePlan is the number of commits since the rewrite last planned
	// from the table's files, and planDeletes the most delete files that
	// applied to one data file then: a commit adds at most one to a file,
	// so rewrite-delete-files cannot be passed before sincePlan +
	// planDeletes exceeds it (see planDue).
	sincePlan, planDeletes int
	// beforeRewriteCommit, when set (tests), runs just before a rewrite's
	// catalog commit.
	beforeRewriteCommit func()
}

// New loads the table ident and returns its Committer. The table must be
// format v2 or later and have identifier fields.
func New(ctx context.Context, cat catalog.Catalog, ident table.Identifier, cfg Config) (*Committer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Committer{cat: cat, ident: ident, cfg: cfg.withDefaults(), uuid: cfg.TableUUID, replan: true}
	if err := c.reload(ctx); err != nil {
		return nil, err
	}
	v := c.tbl.Metadata().Version()
	if v < 2 {
		return nil, fmt.Errorf("commit: table %v is format v%d, row-level deletes need v2", ident, v)
	}
	if c.cfg.DeleteMode == DeleteAuto {
		c.cfg.DeleteMode = DeletePosition
		if v >= 3 {
			c.cfg.DeleteMode = DeleteDV
		}
	}
	if mode := c.cfg.DeleteMode; mode != DeleteEquality && len(c.tbl.Schema().IdentifierFieldIDs) > 0 {
		if mode == DeletePosition && v != 2 {
			return nil, fmt.Errorf("commit: table %v is format v%d, which takes deletion vectors, not position-delete files: "+
				"delete-mode=position needs format v2 tables; use delete-mode=dv (or equality) for v%d tables", ident, v, v)
		}
		if mode == DeleteDV && v < 3 {
			return nil, fmt.Errorf("commit: table %v is format v%d: delete-mode=dv writes deletion vectors, which need format v3 tables (table-format-version=3); use delete-mode=position (or equality) for v2 tables", ident, v)
		}
		idx, err := c.cfg.Index.Table(c.tbl.Metadata().TableUUID().String(), ident)
		if err != nil {
			return nil, fmt.Errorf("opening the key index of %v: %w", ident, err)
		}
		c.idx = idx
	}
	return c, nil
}

// Table returns the table as of the last load or commit.
func (c *Committer) Table() *table.Table { return c.tbl }

// Offsets returns the offsets the table holds as of the last load or
// commit (see the package function [Offsets]).
func (c *Committer) Offsets() (batch.Offsets, error) { return Offsets(c.tbl) }

// TableUUID is the UUID of the Committer's table.
func (c *Committer) TableUUID() string { return c.uuid }

// reload loads the table again; it fails with ErrTableReplaced when the
// name no longer holds the Committer's table.
func (c *Committer) reload(ctx context.Context) error {
	tbl, err := c.cat.LoadTable(ctx, c.ident)
	if errors.Is(err, catalog.ErrNoSuchTable) && c.uuid != "" {
		return fmt.Errorf("%w: table %v (uuid %s) is no longer under its name: %w", ErrTableReplaced, c.ident, c.uuid, err)
	}
	if err != nil {
		return fmt.Errorf("loading table %v: %w", c.ident, err)
	}
	id := tbl.Metadata().TableUUID().String()
	if c.uuid == "" {
		c.uuid = id
	} else if id != c.uuid {
		return fmt.Errorf("%w: table %v is now table uuid %s, not %s", ErrTableReplaced, c.ident, id, c.uuid)
	}
	c.tbl = tbl
	// Another writer may have changed the table: the rewrite's bounds on
	// what it holds no longer hold.
	c.replan = true
	return nil
}

// Result describes a Commit.
type Result struct {
	// CommitID is the commit's UUID (also in the snapshot summary).
	CommitID string
	// SnapshotID is the snapshot that holds the batch; 0 when nothing was
	// committed.
	SnapshotID int64
	// AlreadyCommitted means every event of the batch was already in the
	// table (a replay), so nothing was written.
	AlreadyCommitted bool
	// Attempts is the number of commit attempts made (0 when nothing was
	// to be written).
	Attempts int
	// Rows and Deletes count the data rows and the deletes written
	// (equality-delete keys, or row positions in position mode);
	// Truncated says the table was emptied first.
	Rows, Deletes int
	Truncated     bool
	// Events and SkippedEvents count the batch's events committed now and
	// those found already committed; StaleEvents those committed as
	// consumed but dropped because a truncate later in source order erased
	// them.
	Events, SkippedEvents, StaleEvents int
	// StaleFirst are the first few stale events (batch.MaxStaleSamples)
	// and Watermark the table's truncate watermark they are below: the
	// source order of the latest truncate applied, this commit's included.
	StaleFirst []batch.StaleEvent
	Watermark  int64
	// StaleAfterTruncate counts the stale events that follow, in their
	// partition, the truncate that made them stale: a broken order
	// (batch.Collapsed.StaleAfterTruncate).
	StaleAfterTruncate int
	// Passed counts the records passed without an event (batch.Buffer.Pass:
	// dead-lettered) whose offsets the commit advanced past.
	Passed int
	// Offsets are the table's offsets after the commit for the batch's
	// topics.
	Offsets batch.Offsets
	// Rewrite is the rewrite made after the commit (Config.Rewrite), and
	// RewriteErr why it failed: the commit landed all the same, and the
	// next commit plans the rewrite again.
	Rewrite    RewriteResult
	RewriteErr error
}

// Commit writes the net effect of buf's events to the table in one
// snapshot, skipping events the table already holds, and retries conflicts
// and ambiguous failures as described in the package documentation. The
// buffer is not modified; the caller resets it after a nil error.
//
// An error wrapping batch.ErrInvalidEvent is terminal (the batch does not
// fit the table schema). Other errors mean the batch may or may not be
// committed; the caller must reload offsets (e.g. by restarting from
// [Offsets]) before trying again.
func (c *Committer) Commit(ctx context.Context, buf *batch.Buffer) (Result, error) {
	res := Result{CommitID: uuid.NewString()}
	log := c.cfg.Logger.With("table", c.ident, "commit_id", res.CommitID)
	var lastErr error
	for attempt := 1; attempt <= c.cfg.MaxAttempts; attempt++ {
		committed, err := Offsets(c.tbl)
		if err != nil {
			return res, err
		}
		watermark, err := Watermark(c.tbl)
		if err != nil {
			return res, err
		}
		epochs, err := Epochs(c.tbl)
		if err != nil {
			return res, err
		}
		placed, err := buf.Place(epochs, committed)
		if err != nil {
			return res, fmt.Errorf("%w: table %v: %w; ingest stops rather than drop or keep a change a truncate decides: find the history the event belongs to and set the table property %s (the epochs, oldest first) accordingly, or re-create the table and re-snapshot it", batch.ErrInvalidEvent, c.ident, err, EpochsKey)
		}
		col := buf.Collapse(committed, watermark)
		res.SkippedEvents = col.Skipped
		if col.Events == 0 && col.Passed == 0 {
			res.AlreadyCommitted = buf.Pending() > 0
			return res, nil
		}
		offsets := batch.Offsets{}
		for topic := range col.Offsets {
			offsets[topic] = map[int32]int64{}
			for p, n := range committed[topic] {
				offsets[topic][p] = n
			}
		}
		offsets.Merge(col.Offsets)
		props := summaryProps(res.CommitID, offsets, col)
		if mark := max(watermark, col.Watermark); mark > 0 {
			// Also in the summary: a branch (package branch) has no
			// table properties of its own.
			props[TruncateWatermarkKey] = strconv.FormatInt(mark, 10)
		}
		var newMark int64
		if col.Watermark > watermark {
			newMark = col.Watermark
		}
		tprops := tableProps(res.CommitID, offsets, newMark)
		if len(placed) > 0 {
			// In the summary too, for branches, as the watermark.
			props[EpochsKey] = placed.String()
			if props[EpochsKey] != epochs.String() {
				tprops[EpochsKey] = props[EpochsKey]
			}
		}
		if col.Passed > 0 {
			n := strconv.FormatInt(DeadLetters(c.tbl)+int64(col.Passed), 10)
			props[DeadLettersKey], tprops[DeadLettersKey] = n, n
		}

		var base int64 = -1
		if s := c.tbl.CurrentSnapshot(); s != nil {
			base = s.SnapshotID
		}
		res.Attempts = attempt
		out, stage, err := c.attempt(ctx, c.tbl, buf, col, props, tprops)
		if err == nil {
			c.tbl = out.tbl
			if s := out.tbl.CurrentSnapshot(); s != nil {
				res.SnapshotID = s.SnapshotID
			}
			res.Events, res.Offsets, res.Truncated = col.Events, offsets, col.Truncate || col.TruncateBefore > 0
			res.Rows, res.Deletes, res.StaleEvents, res.Passed = len(col.Upserts), out.deletes, col.Stale, col.Passed
			res.StaleFirst, res.Watermark, res.StaleAfterTruncate = col.StaleFirst, col.Watermark, col.StaleAfterTruncate
			if err := c.applyIndex(out); err != nil {
				// The commit landed; the index catches up from the table
				// at the next attempt.
				log.Warn("updating the key index failed; it catches up from the table", "error", err)
			}
			// A commit that deleted no row made no file deader: nothing to
			// plan, unless the last plan asked for another.
			if c.idx != nil && c.cfg.Rewrite.Enabled() && (out.deletes > 0 || c.replan) {
				res.Rewrite, res.RewriteErr = c.rewrite(ctx)
				c.replan = res.RewriteErr != nil || res.Rewrite.Conflict || res.Rewrite.Files > 0
				switch rw := res.Rewrite; {
				case res.RewriteErr != nil:
					log.Warn("rewriting the table's most deleted data files failed; the next commit tries again", "error", res.RewriteErr)
				case rw.Conflict:
					log.Info("another writer committed during the rewrite of the table's most deleted data files; the next commit plans it again")
				case rw.Files == 0 && rw.Manifests > 0:
					log.Info("merged the table's data manifests", "manifests", rw.Manifests, "snapshot_id", rw.SnapshotID, "seconds", rw.Duration.Seconds())
				case rw.Files > 0:
					log.Info("rewrote the table's most deleted data files", "files", rw.Files, "unread", rw.Unread, "keys_unread", rw.KeysUnread, "bytes", rw.Bytes,
						"rows", rw.Rows, "dead_rows", rw.DeadRows, "delete_files_removed", rw.DeleteFiles,
						"new_files", rw.NewFiles, "manifests_merged", rw.Manifests, "snapshot_id", rw.SnapshotID, "seconds", rw.Duration.Seconds())
				}
			}
			return res, nil
		}
		if errors.Is(err, batch.ErrInvalidEvent) {
			return res, err
		}
		if ctx.Err() != nil {
			return res, fmt.Errorf("committing to %v: %w", c.ident, context.Cause(ctx))
		}
		lastErr = err
		switch {
		case stage == stageWrite:
			log.Warn("writing files failed, retrying", "attempt", attempt, "error", err)
		case errors.Is(err, table.ErrCommitFailed):
			log.Info("commit conflict, reloading and rebuilding", "attempt", attempt, "error", err)
		default:
			log.Warn("commit outcome unknown, checking the table", "attempt", attempt, "error", err)
		}
		if err := c.reloadWithRetry(ctx, attempt); err != nil {
			return res, err
		}
		if stage == stageCommit && !errors.Is(err, table.ErrCommitFailed) {
			if id, ok := findCommit(c.tbl, base, res.CommitID); ok {
				log.Info("ambiguous commit landed", "snapshot_id", id)
				res.SnapshotID = id
				res.Events, res.Offsets, res.Truncated = col.Events, offsets, col.Truncate || col.TruncateBefore > 0
				res.Rows, res.Deletes, res.StaleEvents, res.Passed = len(col.Upserts), out.deletes, col.Stale, col.Passed
				res.StaleFirst, res.Watermark, res.StaleAfterTruncate = col.StaleFirst, col.Watermark, col.StaleAfterTruncate
				return res, nil
			}
		}
		if err := c.sleep(ctx, attempt); err != nil {
			return res, err
		}
	}
	return res, fmt.Errorf("%w: %d attempts on %v: %w", ErrTooManyAttempts, c.cfg.MaxAttempts, c.ident, lastErr)
}

func (c *Committer) reloadWithRetry(ctx context.Context, attempt int) error {
	for i := 0; ; i++ {
		err := c.reload(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || i >= c.cfg.MaxAttempts || errors.Is(err, ErrTableReplaced) {
			return err
		}
		if err := c.sleep(ctx, attempt+i); err != nil {
			return err
		}
	}
}

func (c *Committer) sleep(ctx context.Context, attempt int) error {
	return Backoff(ctx, attempt, c.cfg.MinBackoff, c.cfg.MaxBackoff)
}

// Backoff waits before retry attempt+1 of a commit that conflicted: a
// jittered exponential wait from minWait, at most maxWait, or until ctx
// ends (its cause returned). Every writer of a table (ingest's commits,
// maintenance) backs off the same way.
func Backoff(ctx context.Context, attempt int, minWait, maxWait time.Duration) error {
	d := minWait << min(attempt-1, 20)
	if d > maxWait || d <= 0 {
		d = maxWait
	}
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

type stage uint8

const (
	stageWrite  stage = iota + 1 // before the catalog commit: nothing can have landed
	stageCommit                  // the catalog commit itself
)

// attempted is a landed attempt.
type attempted struct {
	tbl *table.Table
	// deletes is the number of equality-delete keys or position deletes
	// written.
	deletes int
	// upd is the key-index update of a position-mode commit.
	upd *indexUpdate
}

// applyIndex records a landed position-mode commit in the key index.
func (c *Committer) applyIndex(out attempted) error {
	if c.idx == nil || out.upd == nil || out.upd.stale {
		return nil
	}
	snap := out.tbl.CurrentSnapshot()
	if snap == nil || snap.SnapshotID == c.idx.Snapshot() {
		return nil // nothing but properties committed
	}
	return c.idx.Apply(snap, out.upd.deleted, out.upd.removedFrom, out.upd.added, out.upd.dvs)
}

// attempt builds and commits one transaction on tbl.
func (c *Committer) attempt(ctx context.Context, tbl *table.Table, buf *batch.Buffer, col *batch.Collapsed, props, tprops iceberg.Properties) (attempted, stage, error) {
	var out attempted
	if col.Empty() && len(col.Upserts) == 0 {
		// Nothing to write, only offsets to record (records passed, e.g.
		// dead-lettered, by a buffer that may have no row layout yet): an
		// empty snapshot that carries them, pinned like any attempt.
		tx := tbl.NewTransaction()
		if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
			return out, stageWrite, fmt.Errorf("pinning main: %w", err)
		}
		if err := stageSnapshot(ctx, tx, tbl, props); err != nil {
			return out, stageWrite, err
		}
		if err := tx.SetProperties(tprops); err != nil {
			return out, stageWrite, fmt.Errorf("staging the offsets properties: %w", err)
		}
		tbl, err := tx.Commit(ctx)
		if err != nil {
			return out, stageCommit, fmt.Errorf("committing to %v: %w", c.ident, err)
		}
		out.tbl = tbl
		return out, stageCommit, nil
	}
	// By field id: another writer may have renamed columns since the
	// buffer's layout was made (column renames, several processes).
	cols, key := buf.ColumnsIn(tbl.Schema())
	conv, err := batch.NewConverter(tbl.Schema(), cols, key, nil)
	if err != nil {
		return out, stageWrite, err
	}
	if c.cfg.RecordRows > 0 {
		conv.RecordRows = c.cfg.RecordRows
	}
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return out, stageWrite, fmt.Errorf("pinning main: %w", err)
	}
	empty := tbl.CurrentSnapshot() == nil
	switch {
	case col.Truncate && !empty:
		rdr := newReader(conv.Schema(), conv.Rows(col.Upserts))
		defer rdr.Release()
		if err := tx.Overwrite(ctx, rdr, props, table.WithOverwriteFilter(iceberg.AlwaysTrue{})); err != nil {
			return out, stageWrite, fmt.Errorf("staging truncate overwrite: %w", err)
		}
		if c.idx != nil {
			out.upd = &indexUpdate{stale: true}
		}
	default:
		truncated := false
		if col.TruncateBefore > 0 && !empty {
			if err := truncateBefore(ctx, tx, tbl, col.TruncateBefore, props); err != nil {
				return out, stageWrite, err
			}
			truncated = true
		}
		var staged *table.Table
		if truncated && c.idx != nil {
			st, err := tx.StagedTable()
			if err != nil {
				return out, stageWrite, fmt.Errorf("reading the staged truncate: %w", err)
			}
			staged = st.Table
		}
		// In the positional modes the deletes are found and written while
		// the data files are: neither needs the other.
		var dels, replaced []iceberg.DataFile
		var data []iceberg.DataFile
		g, gctx := errgroup.WithContext(ctx)
		if c.idx != nil {
			g.Go(func() error {
				var err error
				dels, replaced, out.upd, out.deletes, err = c.positionDeletes(gctx, tbl, staged, conv, col)
				if err != nil {
					return fmt.Errorf("writing position deletes: %w", err)
				}
				return nil
			})
		}
		// The keys of the rows written, in their order, for the index
		// (positional modes, unpartitioned tables: see rowKeys).
		var written *rowKeys
		if c.idx != nil && tbl.Spec().IsUnpartitioned() {
			written = newRowKeys(tbl.Schema(), conv.Schema(), len(col.Upserts))
		}
		g.Go(func() error {
			if len(col.Upserts) == 0 {
				return nil
			}
			rows := conv.Rows(col.Upserts)
			if written != nil {
				rows = written.tap(rows)
			}
			for df, err := range table.WriteRecords(gctx, tbl, conv.Schema(), rows) {
				if err != nil {
					return fmt.Errorf("writing data files: %w", err)
				}
				data = append(data, df)
			}
			return nil
		})
		if err := g.Wait(); err != nil {
			return out, stageWrite, err
		}
		if c.idx != nil {
			if added, ok := written.added(data); ok {
				out.upd.added = added
			} else if err := readBackKeys(ctx, tbl, data, out.upd); err != nil {
				return out, stageWrite, fmt.Errorf("writing position deletes: %w", err)
			}
		}
		if c.idx == nil && len(col.Deletes) > 0 && !empty {
			// Deletes cannot match anything in a table without snapshots.
			dels, err = tx.WriteEqualityDeletes(ctx, conv.KeyFieldIDs(), conv.Keys(col.Deletes))
			if err != nil {
				return out, stageWrite, fmt.Errorf("writing equality deletes: %w", err)
			}
			out.deletes = len(col.Deletes)
		}
		if len(data) > 0 || len(dels) > 0 {
			rd := tx.NewRowDelta(props).AddRows(data...).AddDeletes(dels...)
			if len(replaced) > 0 {
				rd = rd.RemoveDeletes(replaced...)
			}
			if err := rd.Commit(ctx); err != nil {
				return out, stageWrite, fmt.Errorf("staging row delta: %w", err)
			}
		}
	}
	// A commit that found nothing to write (deletes that matched no row)
	// still makes a snapshot, so that it moves main.
	if err := stageSnapshot(ctx, tx, tbl, props); err != nil {
		return out, stageWrite, err
	}
	// The offsets also go where snapshot expiry cannot remove them, in the
	// same commit.
	if err := tx.SetProperties(tprops); err != nil {
		return out, stageWrite, fmt.Errorf("staging the offsets properties: %w", err)
	}
	tbl, err = tx.Commit(ctx)
	if err != nil {
		return out, stageCommit, fmt.Errorf("committing to %v: %w", c.ident, err)
	}
	out.tbl = tbl
	return out, stageCommit, nil
}

// stageSnapshot stages an empty append carrying the snapshot properties
// props when tx has not staged a snapshot on main yet. Every commit moves
// main: the next commit of another writer, pinned to the snapshot it read,
// then conflicts and reloads the offsets instead of writing its stale view
// of them back over this commit's (table properties are not pinned).
func stageSnapshot(ctx context.Context, tx *table.Transaction, tbl *table.Table, props iceberg.Properties) error {
	st, err := tx.StagedTable()
	if err != nil {
		return fmt.Errorf("reading the staged commit: %w", err)
	}
	before, now := tbl.CurrentSnapshot(), st.CurrentSnapshot()
	if now != nil && (before == nil || now.SnapshotID != before.SnapshotID) {
		return nil
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return fmt.Errorf("converting the schema of %v: %w", tbl.Identifier(), err)
	}
	rdr, err := array.NewRecordReader(sc, nil)
	if err != nil {
		return fmt.Errorf("staging an empty snapshot: %w", err)
	}
	defer rdr.Release()
	if err := tx.Append(ctx, rdr, props); err != nil {
		return fmt.Errorf("staging an empty snapshot for the offsets: %w", err)
	}
	return nil
}

// truncateBefore stages the deletion of every row whose source order is
// below order, or null, as a merge-on-read delete: whole files are dropped,
// files partly below get position deletes. A copy-on-write rewrite would
// give the surviving rows a new data sequence number, and the equality
// deletes of earlier commits would stop applying to them.
func truncateBefore(ctx context.Context, tx *table.Transaction, tbl *table.Table, order int64, props iceberg.Properties) error {
	if _, ok := tbl.Schema().FindFieldByName(batch.OrderColumn); !ok {
		return fmt.Errorf("%w: table %v has no %s column for a truncate by source order", batch.ErrInvalidEvent, tbl.Identifier(), batch.OrderColumn)
	}
	ref := iceberg.Reference(batch.OrderColumn)
	filter := iceberg.NewOr(iceberg.LessThan(ref, order), iceberg.IsNull(ref))
	prev, had := tbl.Properties()[table.WriteDeleteModeKey]
	if err := tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
		return fmt.Errorf("staging the delete mode: %w", err)
	}
	if err := tx.Delete(ctx, filter, props); err != nil {
		return fmt.Errorf("staging the truncate of %v before source order %s: %w", tbl.Identifier(), batch.FormatOrder(order), err)
	}
	var err error
	if had {
		err = tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: prev})
	} else {
		err = tx.RemoveProperties([]string{table.WriteDeleteModeKey})
	}
	if err != nil {
		return fmt.Errorf("restoring the delete mode: %w", err)
	}
	return nil
}

// reader adapts the converter's record iterator to an array.RecordReader
// for Transaction.Overwrite.
type reader struct {
	schema *arrow.Schema
	next   func() (arrow.RecordBatch, error, bool)
	stop   func()
	cur    arrow.RecordBatch
	err    error
	refs   int64
}

var _ array.RecordReader = (*reader)(nil)

func newReader(schema *arrow.Schema, seq func(func(arrow.RecordBatch, error) bool)) *reader {
	next, stop := pull2(seq)
	return &reader{schema: schema, next: next, stop: stop, refs: 1}
}

func (r *reader) Retain()                        { r.refs++ }
func (r *reader) Schema() *arrow.Schema          { return r.schema }
func (r *reader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *reader) Record() arrow.RecordBatch      { return r.cur }
func (r *reader) Err() error                     { return r.err }

func (r *reader) Release() {
	r.refs--
	if r.refs == 0 {
		if r.cur != nil {
			r.cur.Release()
			r.cur = nil
		}
		r.stop()
	}
}

func (r *reader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	rec, err, ok := r.next()
	if !ok {
		return false
	}
	if err != nil {
		r.err = err
		return false
	}
	r.cur = rec
	return true
}
