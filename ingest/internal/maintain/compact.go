package maintain

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/binlake/binlake/ingest/internal/commit"
)

// ErrUnsupported reports a table the compaction refuses to rewrite because
// it could not apply all of its content; the error names why.
var ErrUnsupported = errors.New("maintain: cannot compact the table")

// MaintenanceKey is set in the summary of every snapshot maintenance
// commits, to the step that made it.
const MaintenanceKey = "binlake.maintenance"

// CompactReport is what a compaction did (or, in a dry run, plans).
type CompactReport struct {
	Groups int
	// Input: data files rewritten, their bytes and the distinct delete
	// files attached to them.
	InputFiles       int
	InputBytes       int64
	InputDeleteFiles int
	// Output data files written and their bytes (0 in a dry run).
	OutputFiles int
	OutputBytes int64
	// Delete files removed because nothing they apply to is left.
	RemovedPositionDeletes, RemovedEqualityDeletes, RemovedDeletionVectors int
	// OtherSpecFiles counts the input data files of an older partition
	// spec: every one is rewritten, into the current spec's partitions.
	OtherSpecFiles int
	SnapshotID     int64 // the compaction snapshot; 0 when none
}

func (r CompactReport) attrs() []any {
	return []any{
		"groups", r.Groups, "input_files", r.InputFiles, "input_bytes", r.InputBytes,
		"input_delete_files", r.InputDeleteFiles, "output_files", r.OutputFiles, "output_bytes", r.OutputBytes,
		"removed_position_deletes", r.RemovedPositionDeletes, "removed_equality_deletes", r.RemovedEqualityDeletes,
		"removed_deletion_vectors", r.RemovedDeletionVectors, "other_spec_files", r.OtherSpecFiles,
		"snapshot_id", r.SnapshotID,
	}
}

// targetFileSize is Config.TargetFileSize, else the table's
// write.target-file-size-bytes.
func (m *Maintainer) targetFileSize(tbl *table.Table) int64 {
	if m.cfg.TargetFileSize > 0 {
		return m.cfg.TargetFileSize
	}
	return int64(tbl.Properties().GetInt(table.WriteTargetFileSizeBytesKey, table.WriteTargetFileSizeBytesDefault))
}

// planner is the bin-pack planner: small files and files with at least
// Config.DeleteFileThreshold deletes are candidates. Groups are filtered
// afterwards by selectGroups.
func (m *Maintainer) planner(target int64) compaction.Config {
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = target
	cfg.MinFileSizeBytes = target * 3 / 4
	cfg.MaxFileSizeBytes = target * 9 / 5
	cfg.MinInputFiles = 1
	cfg.DeleteFileThreshold = m.cfg.DeleteFileThreshold
	return cfg
}

// selectGroups keeps the planned groups worth a rewrite: those with a
// delete to apply, and those of at least minInput small files. A lone file
// without deletes would only be copied, at every run.
func selectGroups(plan compaction.Plan, minInput int) []table.CompactionTaskGroup {
	var out []table.CompactionTaskGroup
	for _, g := range plan.Groups {
		if g.DeleteFileCount == 0 && len(g.Tasks) < minInput {
			continue
		}
		out = append(out, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
	}
	return out
}

// checkReadable refuses files iceberg-go cannot read with their deletes:
// only Parquet data and delete files and Puffin deletion vectors.
func checkReadable(t table.FileScanTask) error {
	if f := t.File.FileFormat(); f != iceberg.ParquetFile {
		return fmt.Errorf("%w: data file %s is %s; iceberg-go reads only Parquet (compact this table with another engine)", ErrUnsupported, t.File.FilePath(), f)
	}
	for _, d := range append(append([]iceberg.DataFile{}, t.DeleteFiles...), t.EqualityDeleteFiles...) {
		if d.FileFormat() != iceberg.ParquetFile && !table.IsDeletionVector(d) {
			return fmt.Errorf("%w: delete file %s is %s; iceberg-go applies only Parquet delete files and Puffin deletion vectors (compact this table with another engine)", ErrUnsupported, d.FilePath(), d.FileFormat())
		}
	}
	return nil
}

func (m *Maintainer) compact(ctx context.Context, ident table.Identifier) (CompactReport, error) {
	var rep CompactReport
	err := m.retry(ctx, ident, StepCompact, func(tbl *table.Table) error {
		var err error
		rep, err = m.compactOnce(ctx, tbl)
		return err
	})
	return rep, err
}

func (m *Maintainer) compactOnce(ctx context.Context, tbl *table.Table) (CompactReport, error) {
	var rep CompactReport
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return rep, nil
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return rep, fmt.Errorf("planning the table's files: %w", err)
	}
	spec := int32(tbl.Metadata().DefaultPartitionSpec())
	current := tasks[:0:0]
	var other []table.FileScanTask
	for _, t := range tasks {
		if err := checkReadable(t); err != nil {
			return rep, err
		}
		if t.File.SpecID() != spec {
			other = append(other, t)
			continue
		}
		current = append(current, t)
	}
	target := m.targetFileSize(tbl)
	plan, err := m.planner(target).PlanCompaction(current)
	if err != nil {
		return rep, fmt.Errorf("planning the compaction (target file size %d): %w", target, err)
	}
	groups := selectGroups(plan, m.cfg.MinInputFiles)
	// Files of older specs are all rewritten, whatever their size: into the
	// current spec, so that the table converges on one layout (readers
	// prune by it, and equality deletes of the current spec apply to
	// them).
	rep.OtherSpecFiles = len(other)
	groups = append(groups, otherSpecGroups(other, target)...)
	deletes := map[string]bool{}
	for _, g := range groups {
		rep.Groups++
		rep.InputBytes += g.TotalSizeBytes
		for _, t := range g.Tasks {
			rep.InputFiles++
			for _, d := range t.DeleteFiles {
				deletes[d.FilePath()] = true
			}
			for _, d := range t.EqualityDeleteFiles {
				deletes[d.FilePath()] = true
			}
			for _, d := range t.DeletionVectorFiles {
				deletes[d.FilePath()+"#"+fmt.Sprint(derefInt64(d.ContentOffset()))] = true
			}
		}
	}
	rep.InputDeleteFiles = len(deletes)
	if len(groups) == 0 || m.cfg.DryRun {
		return rep, nil
	}
	err = m.rewrite(ctx, tbl, groups, target, &rep)
	return rep, err
}

// rewrite compacts groups of tbl's current snapshot in one pinned commit,
// removing the delete files nothing left refers to.
func (m *Maintainer) rewrite(ctx context.Context, tbl *table.Table, groups []table.CompactionTaskGroup, target int64, rep *CompactReport) error {
	snap := tbl.CurrentSnapshot()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	var results []table.CompactionGroupResult
	cleanup := func() {
		for _, gr := range results {
			for _, df := range gr.NewDataFiles {
				if err := fsys.Remove(df.FilePath()); err != nil && !errors.Is(err, iofs.ErrNotExist) {
					m.cfg.Logger.Warn("removing a file of a failed compaction; orphan removal will", "table", tbl.Identifier(), "path", df.FilePath(), "error", err)
				}
			}
		}
	}
	rewritten := map[string]struct{}{}
	spec := int32(tbl.Metadata().DefaultPartitionSpec())
	for _, g := range groups {
		var gr table.CompactionGroupResult
		var err error
		if g.Tasks[0].File.SpecID() != spec {
			gr, err = respec(ctx, tbl, g, target)
		} else {
			gr, err = table.ExecuteCompactionGroup(ctx, tbl, g, table.WithCompactionTargetFileSize(target))
		}
		results = append(results, gr)
		if err != nil {
			cleanup()
			return fmt.Errorf("rewriting group %q: %w", g.PartitionKey, err)
		}
		for _, df := range gr.OldDataFiles {
			rewritten[df.FilePath()] = struct{}{}
		}
	}

	// Which delete files are dead: the library's per-group lists hold
	// every position-delete file attached to a group's tasks, but one of
	// ingest's position-delete files covers many data files, some of which
	// the plan may leave alone. Only the whole-rewrite check may drop one.
	deadPos, err := compaction.CollectDeadPositionDeletes(ctx, fsys, snap, rewritten)
	if err != nil {
		cleanup()
		return fmt.Errorf("finding the position deletes the rewrite makes dead: %w", err)
	}
	deadEq, err := compaction.CollectDeadEqualityDeletesWithSpecs(ctx, fsys, tbl.Metadata(), snap, rewritten)
	if err != nil {
		cleanup()
		return fmt.Errorf("finding the equality deletes the rewrite makes dead: %w", err)
	}
	dead := map[string]bool{}
	for _, df := range deadPos {
		dead[df.FilePath()] = true
	}
	tx, err := pinned(tbl)
	if err != nil {
		cleanup()
		return err
	}
	rw := tx.NewRewrite(iceberg.Properties{MaintenanceKey: string(StepCompact)})
	staged := map[string]bool{}
	for _, gr := range results {
		var safe []iceberg.DataFile
		for _, df := range gr.SafePosDeletes {
			if dead[df.FilePath()] && !staged[df.FilePath()] {
				staged[df.FilePath()] = true
				safe = append(safe, df)
				rep.RemovedPositionDeletes++
			}
		}
		gr.SafePosDeletes = safe
		rep.RemovedDeletionVectors += len(gr.SafeDeletionVectors)
		rep.OutputFiles += len(gr.NewDataFiles)
		rep.OutputBytes += gr.BytesAfter
		rw.ApplyResult(gr)
	}
	for _, df := range deadPos {
		if !staged[df.FilePath()] {
			staged[df.FilePath()] = true
			rw.DeleteFile(df)
			rep.RemovedPositionDeletes++
		}
	}
	for _, df := range deadEq {
		if !staged[df.FilePath()] {
			staged[df.FilePath()] = true
			rw.DeleteFile(df)
			rep.RemovedEqualityDeletes++
		}
	}
	if err := rw.Commit(ctx); err != nil {
		cleanup()
		return fmt.Errorf("staging the rewrite: %w", err)
	}
	next, err := m.commit(ctx, tx, StepCompact)
	if err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			cleanup() // certainly not committed
		}
		return fmt.Errorf("committing the compaction: %w", err)
	}
	if s := next.CurrentSnapshot(); s != nil {
		rep.SnapshotID = s.SnapshotID
	}
	return nil
}

// otherSpecGroups groups data files of older partition specs by spec and
// partition, each group at most about target bytes of input.
func otherSpecGroups(tasks []table.FileScanTask, target int64) []table.CompactionTaskGroup {
	var out []table.CompactionTaskGroup
	open := map[string]int{} // spec and partition → index of its group being filled
	for _, t := range tasks {
		base := fmt.Sprintf("spec-%d/%v", t.File.SpecID(), t.File.Partition())
		i, ok := open[base]
		if !ok || (out[i].TotalSizeBytes > 0 && out[i].TotalSizeBytes+t.File.FileSizeBytes() > target) {
			out = append(out, table.CompactionTaskGroup{PartitionKey: fmt.Sprintf("%s#%d", base, len(out))})
			i = len(out) - 1
			open[base] = i
		}
		out[i].Tasks = append(out[i].Tasks, t)
		out[i].TotalSizeBytes += t.File.FileSizeBytes()
	}
	return out
}

// respec rewrites a group of data files of an older partition spec, their
// deletes applied, into the table's current spec: the rows are read as a
// compaction group is, and written by the fanout writer, which partitions
// them by the current spec (ExecuteCompactionGroup's clustered writer
// expects rows of one partition of it). Row lineage is not kept (as
// ExecuteCompactionGroup does for a group of mixed lineage).
func respec(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, target int64) (table.CompactionGroupResult, error) {
	return commit.RewriteTasks(ctx, tbl, g, target)
}

func derefInt64(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
