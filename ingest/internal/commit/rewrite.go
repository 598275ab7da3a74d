package commit

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/keyindex"
)

// RewriteKey is set in the summary of every snapshot an in-ingest rewrite
// commits (see [RewriteConfig]), to the number of data files it rewrote.
const RewriteKey = "binlake.rewrite"

// DefaultRewriteMaxBytes is the default of RewriteConfig.MaxBytes.
const DefaultRewriteMaxBytes = 128 << 20

// RewriteConfig bounds a table's read cost as ingest writes to it, in the
// positional delete modes: after a commit lands, once the table's rows are
// too often dead (or a data file carries many delete files), the live rows
// of its most deleted data files are rewritten into new data files, in a
// commit of their own that removes the old files and the position deletes
// or deletion vectors that applied only to them. Readers then decode no
// dead row of those files and open none of their delete files. A data
// file whose rows are all deleted is dropped unread. The zero value is off.
type RewriteConfig struct {
	// DeadFraction rewrites once the table's dead rows (those the position
	// deletes and deletion vectors naming one data file delete) reach this
	// fraction of its data files' rows: the deadest files first, until the
	// table is back to half of it, so that a reader decodes at most
	// 1/(1-DeadFraction) rows per live row while a rewrite is a commit of
	// its own only every few commits, and moves as few live rows as it
	// can (0: never by dead rows).
	DeadFraction float64
	// DeleteFiles rewrites a data file once more than this many delete
	// files apply to it (0: never by delete files).
	DeleteFiles int
	// Manifests also merges the table's data manifests (in the rewrite's
	// commit, or in one of its own) once the current snapshot has more
	// than this many data manifests: every commit adds one, and a reader
	// plans by reading them all (0: never). Delete manifests are left
	// (iceberg-go merges data manifests only).
	Manifests int
	// MaxBytes bounds the data files (their size on storage) one rewrite
	// reads; the worst files are taken first, and at least one. Default
	// DefaultRewriteMaxBytes.
	MaxBytes int64
}

// Enabled reports whether a threshold is set.
func (r RewriteConfig) Enabled() bool {
	return r.DeadFraction > 0 || r.DeleteFiles > 0 || r.Manifests > 0
}

func (r RewriteConfig) validate() error {
	if r.DeadFraction < 0 || r.DeadFraction > 1 || r.DeleteFiles < 0 || r.Manifests < 0 || r.MaxBytes < 0 {
		return errors.New("commit: rewrite thresholds: dead fraction must be within 0..1, delete files and bytes not negative")
	}
	return nil
}

// RewriteResult describes a rewrite made after a commit.
type RewriteResult struct {
	// Files and Bytes are the data files rewritten and their size;
	// DeleteFiles the delete files (and deletion vectors) removed with
	// them; Rows the live rows moved and DeadRows the deleted rows
	// dropped; NewFiles the data files written.
	Files, DeleteFiles, NewFiles int
	Bytes, Rows, DeadRows        int64
	// Duration is the time the rewrite took, failed or not.
	Duration time.Duration
	// SnapshotID is the rewrite's snapshot (0: none).
	SnapshotID int64
	// Conflict means another writer committed first; the rewrite was
	// dropped (the next commit plans it again).
	Conflict bool
	// Manifests is the number of manifests merged (0: none).
	Manifests int
	// Unread is how many of the Files had every row deleted and were
	// dropped without reading them.
	Unread int
	// KeysUnread is how many of the Files the key index knew no key of
	// (every row deleted through it), whose keys were not read to update
	// it.
	KeysUnread int
	// Planned: the rewrite planned from the table's files (a scan plan);
	// it does not when the snapshot's totals show that no threshold is
	// met (see planDue).
	Planned bool
}

// rewriteCandidate is a data file of the current snapshot, with the
// deletes that apply to it.
type rewriteCandidate struct {
	task  table.FileScanTask
	dead  int64
	frac  float64
	dels  int
	bytes int64
}

// PlanRewrite picks, among tasks (a scan plan of the table: each data
// file with the delete files that apply to it), the data files cfg says to
// rewrite, within cfg.MaxBytes (at least one):
//   - when the table's dead fraction is at least cfg.DeadFraction, the
//     data files with dead rows, the deadest first, until what is left
//     would be at most half of it;
//   - every data file with more than cfg.DeleteFiles delete files.
//
// A data file's dead rows are counted from the position-delete files that
// name it alone (referenced_data_file, as ingest writes them) and its
// deletion vector; deletes grouped by partition are counted only as
// delete files. Only Parquet data files are taken.
func PlanRewrite(tasks []table.FileScanTask, cfg RewriteConfig) []table.FileScanTask {
	if !cfg.Enabled() {
		return nil
	}
	maxBytes := cfg.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultRewriteMaxBytes
	}
	var cands []rewriteCandidate
	var rows, dead int64
	for _, t := range tasks {
		if t.File.ContentType() != iceberg.EntryContentData || t.File.FileFormat() != iceberg.ParquetFile {
			continue
		}
		path := t.File.FilePath()
		c := rewriteCandidate{task: t, bytes: t.File.FileSizeBytes()}
		for _, d := range t.DeleteFiles {
			if ref, ok := deleteTarget(d); ok && ref == path {
				c.dead += d.Count()
			}
		}
		for _, d := range t.DeletionVectorFiles {
			c.dead += d.Count()
		}
		c.dels = len(t.DeleteFiles) + len(t.DeletionVectorFiles) + len(t.EqualityDeleteFiles)
		n := t.File.Count()
		c.dead = min(c.dead, max(n, 0))
		if n > 0 {
			c.frac = float64(c.dead) / float64(n)
			rows += n
			dead += c.dead
		}
		cands = append(cands, c)
	}
	byDead := cfg.DeadFraction > 0 && rows > 0 && float64(dead) >= cfg.DeadFraction*float64(rows)
	slices.SortFunc(cands, func(a, b rewriteCandidate) int {
		if c := cmp.Compare(b.frac, a.frac); c != 0 {
			return c
		}
		if c := cmp.Compare(b.dels, a.dels); c != 0 {
			return c
		}
		return cmp.Compare(a.task.File.FilePath(), b.task.File.FilePath())
	})
	var out []table.FileScanTask
	var total int64
	for _, c := range cands {
		crowded := cfg.DeleteFiles > 0 && c.dels > cfg.DeleteFiles
		deadest := byDead && c.dead > 0 && float64(dead) > cfg.DeadFraction/2*float64(rows)
		if !crowded && !deadest {
			continue
		}
		if len(out) > 0 && total+c.bytes > maxBytes {
			continue
		}
		out = append(out, c.task)
		total += c.bytes
		// Its live rows stay (in a new file), its dead ones go.
		rows -= c.dead
		dead -= c.dead
	}
	return out
}

// deleteTarget returns the one data file a position-delete file names:
// its referenced_data_file, else (format v2 manifests do not carry it) its
// file_path column's bounds when they are equal (ingest writes them in
// full).
func deleteTarget(d iceberg.DataFile) (string, bool) {
	if ref := d.ReferencedDataFile(); ref != nil {
		return *ref, true
	}
	lo, hi := d.LowerBoundValues()[filePathFieldID], d.UpperBoundValues()[filePathFieldID]
	if len(lo) == 0 || !bytes.Equal(lo, hi) {
		return "", false
	}
	return string(lo), true
}

// allDeleted reports whether t's data file has every row deleted: by its
// deletion vector alone (a vector's count is exact), or by its position
// deletes, whose record counts are summed first and, when they reach the
// file's rows, the distinct positions they name counted (a position may
// be deleted twice: by ingest and another writer). A file with equality
// deletes is read.
func allDeleted(ctx context.Context, fsys icebergio.IO, t table.FileScanTask) (bool, error) {
	rows := t.File.Count()
	switch {
	case len(t.EqualityDeleteFiles) > 0 || rows <= 0:
		return false, nil
	case len(t.DeleteFiles) == 0 && len(t.DeletionVectorFiles) == 1:
		return t.DeletionVectorFiles[0].Count() >= rows, nil
	case len(t.DeleteFiles) == 0 || len(t.DeletionVectorFiles) > 0:
		return false, nil
	}
	var sum int64
	for _, d := range t.DeleteFiles {
		sum += d.Count()
	}
	if sum < rows {
		return false, nil
	}
	n, err := keyindex.CountDeleted(ctx, fsys, t.File, t.DeleteFiles)
	return n >= rows, err
}

// filePathFieldID is the field id of a position-delete file's file_path
// column.
const filePathFieldID = 2147483546

// RewriteTasks reads the rows of tasks (data files of tbl, their deletes
// applied) and writes them into new data files of tbl's current partition
// spec, each at most about target bytes (0: the table's
// write.target-file-size-bytes). It commits nothing: the result names the
// old files, the new ones, and the position deletes and deletion vectors
// attached to the tasks. Row lineage is not kept.
func RewriteTasks(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, target int64) (table.CompactionGroupResult, error) {
	res := table.CompactionGroupResult{PartitionKey: g.PartitionKey, BytesBefore: g.TotalSizeBytes}
	if target <= 0 {
		target = int64(tbl.Properties().GetInt(table.WriteTargetFileSizeBytesKey, table.WriteTargetFileSizeBytesDefault))
	}
	arrowSchema, records, err := tbl.Scan().ReadTasks(ctx, g.Tasks)
	if err != nil {
		return res, fmt.Errorf("reading the files of group %q: %w", g.PartitionKey, err)
	}
	for df, err := range table.WriteRecords(ctx, tbl, arrowSchema, records, table.WithTargetFileSize(target)) {
		if err != nil {
			return res, fmt.Errorf("writing group %q in the current partition spec: %w", g.PartitionKey, err)
		}
		res.NewDataFiles = append(res.NewDataFiles, df)
		res.BytesAfter += df.FileSizeBytes()
	}
	for _, t := range g.Tasks {
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	res.SafePosDeletes = table.CollectSafePositionDeletes(g.Tasks)
	res.SafeDeletionVectors = table.CollectSafeDeletionVectors(g.Tasks)
	return res, nil
}

// planDue reports whether the rewrite must plan from the table's files
// (a scan plan reads every manifest) after a commit that left tbl: when
// asked to (c.replan), when rewrite-delete-files may be passed (see
// Committer.sincePlan), and when the snapshot's totals put the table's
// position deletes at DeadFraction of its rows or more (or do not say).
// PlanRewrite counts fewer dead rows than the totals, never more.
func (c *Committer) planDue(tbl *table.Table) bool {
	cfg := c.cfg.Rewrite
	if c.replan || (cfg.DeleteFiles > 0 && c.planDeletes+c.sincePlan > cfg.DeleteFiles) {
		return true
	}
	if cfg.DeadFraction <= 0 {
		return false
	}
	s := tbl.CurrentSnapshot()
	if s == nil || s.Summary == nil {
		return true
	}
	rows := s.Summary.Properties.GetInt(totalRecordsKey, -1)
	dead := s.Summary.Properties.GetInt(totalPositionDeletesKey, -1)
	if rows < 0 || dead < 0 {
		return true
	}
	return rows > 0 && float64(dead) >= cfg.DeadFraction*float64(rows)
}

// The snapshot summary's totals (Iceberg's spec, "Optional snapshot
// summary fields").
const (
	totalRecordsKey         = "total-records"
	totalPositionDeletesKey = "total-position-deletes"
)

// rewrite runs the in-ingest rewrite on the table as last committed; see
// RewriteConfig. It commits pinned to the snapshot it planned from: on a
// conflict the rewrite is dropped and its files removed (the next commit
// plans again, from the new table). The key index is brought to the
// rewrite's snapshot before it returns: the moved rows' keys at their new
// files and positions.
func (c *Committer) rewrite(ctx context.Context) (res RewriteResult, _ error) {
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	tbl := c.tbl
	if tbl.CurrentSnapshot() == nil {
		return res, nil
	}
	var pick []table.FileScanTask
	c.sincePlan++
	if c.planDue(tbl) {
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return res, fmt.Errorf("planning the files of %v: %w", c.ident, err)
		}
		res.Planned = true
		c.sincePlan, c.planDeletes = 0, 0
		for _, t := range tasks {
			c.planDeletes = max(c.planDeletes, len(t.DeleteFiles)+len(t.DeletionVectorFiles)+len(t.EqualityDeleteFiles))
		}
		pick = PlanRewrite(tasks, c.cfg.Rewrite)
	}
	if len(pick) == 0 {
		manifests, err := c.manifestsOver(ctx, tbl)
		if err != nil {
			return res, err
		}
		if manifests {
			return c.rewriteManifests(ctx, res)
		}
		return res, nil
	}
	g := table.CompactionTaskGroup{PartitionKey: "rewrite", Tasks: pick}
	var inRows int64
	rewritten := map[string]bool{}
	for _, t := range pick {
		g.TotalSizeBytes += t.File.FileSizeBytes()
		rewritten[t.File.FilePath()] = true
		inRows += t.File.Count()
	}
	fsys, ferr := tbl.FS(ctx)
	if ferr != nil {
		return res, ferr
	}
	// A data file whose every row is deleted has nothing to move: it is
	// dropped unread. Under upserts that is most files a rewrite meets (a
	// file of one commit's rows dies whole once they are all updated).
	var live []table.FileScanTask
	// A file the key index names no key of had every row deleted through
	// it (it held one entry per row when the index added it, and a landed
	// commit's position deletes removed each): known without reading its
	// delete files, and with no key entry to drop.
	unnamed := map[string]bool{}
	for _, t := range pick {
		dead := c.idx.Unnamed(t.File.FilePath())
		unnamed[t.File.FilePath()] = dead
		if !dead {
			var err error
			if dead, err = allDeleted(ctx, fsys, t); err != nil {
				return res, fmt.Errorf("counting the deleted rows of data file %s: %w", t.File.FilePath(), err)
			}
		}
		if dead {
			res.Unread++
		} else {
			live = append(live, t)
		}
	}
	var gr table.CompactionGroupResult
	var err error
	if len(live) > 0 {
		gr, err = RewriteTasks(ctx, tbl, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: live}, 0)
	}
	gr.OldDataFiles = nil
	for _, t := range pick {
		gr.OldDataFiles = append(gr.OldDataFiles, t.File)
	}
	gr.SafePosDeletes = table.CollectSafePositionDeletes(pick)
	gr.SafeDeletionVectors = table.CollectSafeDeletionVectors(pick)
	cleanup := func() {
		for _, df := range gr.NewDataFiles {
			if err := fsys.Remove(df.FilePath()); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				c.cfg.Logger.Warn("removing a file of a failed rewrite; orphan removal will", "table", c.ident, "path", df.FilePath(), "error", err)
			}
		}
	}
	if err != nil {
		cleanup()
		return res, fmt.Errorf("rewriting %d data files of %v: %w", len(pick), c.ident, err)
	}
	// A position-delete file is removed only when every data file it
	// names is rewritten: ingest's name one (referenced_data_file); one
	// grouped by partition stays (harmless, for maintenance to drop).
	var safe []iceberg.DataFile
	for _, d := range gr.SafePosDeletes {
		if ref, ok := deleteTarget(d); ok && rewritten[ref] {
			safe = append(safe, d)
		}
	}
	gr.SafePosDeletes = safe
	// The keys of the old files' rows (dead ones too) and of the new
	// files', for the index.
	keyIDs := tbl.Schema().IdentifierFieldIDs
	var removedKeys [][]byte
	var removed []string
	var added []keyindex.Added
	for _, t := range pick {
		removed = append(removed, t.File.FilePath())
		if unnamed[t.File.FilePath()] {
			res.KeysUnread++
			continue
		}
		keys, err := keyindex.ReadKeys(ctx, fsys, t.File, keyIDs)
		if err != nil {
			cleanup()
			return res, fmt.Errorf("reading the keys of rewritten data file %s: %w", t.File.FilePath(), err)
		}
		removedKeys = append(removedKeys, keys...)
	}
	for _, df := range gr.NewDataFiles {
		keys, err := keyindex.ReadKeys(ctx, fsys, df, keyIDs)
		if err == nil && int64(len(keys)) != df.Count() {
			err = fmt.Errorf("%d rows, %d keys", df.Count(), len(keys))
		}
		if err != nil {
			cleanup()
			return res, fmt.Errorf("reading back the keys of rewritten data file %s: %w", df.FilePath(), err)
		}
		added = append(added, keyindex.Added{File: df, Keys: keys})
	}
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		cleanup()
		return res, fmt.Errorf("pinning main: %w", err)
	}
	rw := tx.NewRewrite(iceberg.Properties{RewriteKey: fmt.Sprint(len(pick))})
	rw.ApplyResult(gr)
	if err := rw.Commit(ctx); err != nil {
		cleanup()
		return res, fmt.Errorf("staging the rewrite of %v: %w", c.ident, err)
	}
	// The rewrite itself adds data manifests (its new files', and the
	// old ones rewritten without the removed files).
	st, err := tx.StagedTable()
	if err != nil {
		cleanup()
		return res, fmt.Errorf("reading the staged rewrite: %w", err)
	}
	manifests, err := c.manifestsOver(ctx, st.Table)
	if err != nil {
		cleanup()
		return res, err
	}
	if manifests {
		mr, err := tx.RewriteManifests(ctx)
		if err != nil {
			cleanup()
			return res, fmt.Errorf("staging the manifest rewrite of %v: %w", c.ident, err)
		}
		res.Manifests = len(mr.RewrittenManifests)
	}
	if c.beforeRewriteCommit != nil {
		c.beforeRewriteCommit()
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			cleanup() // certainly not committed
			res.Conflict = true
			if rerr := c.reload(ctx); rerr != nil {
				return res, rerr
			}
			return res, nil
		}
		// Maybe committed: the next commit reloads and the index catches
		// up from the table either way.
		if rerr := c.reload(ctx); rerr != nil {
			return res, errors.Join(fmt.Errorf("committing the rewrite of %v: %w", c.ident, err), rerr)
		}
		return res, fmt.Errorf("committing the rewrite of %v: %w", c.ident, err)
	}
	c.tbl = next
	if s := next.CurrentSnapshot(); s != nil {
		res.SnapshotID = s.SnapshotID
	}
	res.Files, res.Bytes, res.NewFiles = len(pick), g.TotalSizeBytes, len(gr.NewDataFiles)
	res.DeleteFiles = len(gr.SafePosDeletes) + len(gr.SafeDeletionVectors)
	for _, df := range gr.NewDataFiles {
		res.Rows += df.Count()
	}
	res.DeadRows = inRows - res.Rows
	// The moved rows' new files and positions; when the index did not
	// reflect the rewrite's base, it catches up from the table instead.
	ok, err := c.idx.ApplyRewrite(next.CurrentSnapshot(), removed, removedKeys, added)
	if err != nil {
		c.cfg.Logger.Warn("updating the key index after the rewrite failed; it catches up from the table", "table", c.ident, "error", err)
	}
	if ok {
		return res, nil
	}
	if err := c.idx.Sync(ctx, next); err != nil {
		return res, fmt.Errorf("updating the key index after the rewrite: %w", err)
	}
	return res, nil
}

// rewriteManifests merges the table's data manifests in a pinned commit of
// its own (no data file to rewrite); the key index follows the snapshot,
// which changes no file.
func (c *Committer) rewriteManifests(ctx context.Context, res RewriteResult) (RewriteResult, error) {
	tbl := c.tbl
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return res, fmt.Errorf("pinning main: %w", err)
	}
	mr, err := tx.RewriteManifests(ctx)
	if err != nil {
		return res, fmt.Errorf("staging the manifest rewrite of %v: %w", c.ident, err)
	}
	if mr.IsNoOp() {
		return res, nil
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		if rerr := c.reload(ctx); rerr != nil {
			return res, errors.Join(fmt.Errorf("committing the manifest rewrite of %v: %w", c.ident, err), rerr)
		}
		if errors.Is(err, table.ErrCommitFailed) {
			res.Conflict = true
			return res, nil
		}
		return res, fmt.Errorf("committing the manifest rewrite of %v: %w", c.ident, err)
	}
	c.tbl = next
	res.Manifests = len(mr.RewrittenManifests)
	if s := next.CurrentSnapshot(); s != nil {
		res.SnapshotID = s.SnapshotID
	}
	if ok, err := c.idx.ApplyRewrite(next.CurrentSnapshot(), nil, nil, nil); err != nil || !ok {
		if err := c.idx.Sync(ctx, next); err != nil {
			return res, fmt.Errorf("updating the key index after the manifest rewrite: %w", err)
		}
	}
	return res, nil
}

// manifestsOver reports whether tbl's current snapshot has more data
// manifests than Config.Rewrite.Manifests (false when that is 0).
func (c *Committer) manifestsOver(ctx context.Context, tbl *table.Table) (bool, error) {
	n := c.cfg.Rewrite.Manifests
	if n <= 0 || tbl.CurrentSnapshot() == nil {
		return false, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return false, err
	}
	mfs, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		return false, fmt.Errorf("reading the manifest list of %v: %w", c.ident, err)
	}
	data := 0
	for _, mf := range mfs {
		if mf.ManifestContent() == iceberg.ManifestContentData {
			data++
		}
	}
	return data > n, nil
}
