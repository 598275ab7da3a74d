package maintain

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/keyindex"
)

// DefaultConvertBatchRows is the default of Config.ConvertBatchRows.
const DefaultConvertBatchRows = 2_000_000

// ConvertReport is what a conversion of equality deletes did (or, in a dry
// run, plans).
type ConvertReport struct {
	// EqualityDeletes are the equality-delete files removed, and
	// EqualityDeleteRows the keys they held.
	EqualityDeletes    int
	EqualityDeleteRows int64
	// DataFiles an equality delete applied to; Positions the rows of them
	// the deletes matched, now deleted by position.
	DataFiles int
	Positions int64
	// PositionDeletes are the position-delete files (v2) or deletion
	// vectors (v3) written; ReplacedVectors the vectors they replace.
	PositionDeletes, ReplacedVectors int
	// Batches is the number of passes over the equality deletes: the
	// data files' keys are held Config.ConvertBatchRows at a time.
	Batches    int
	SnapshotID int64 // the conversion snapshot; 0 when none
}

func (r ConvertReport) attrs() []any {
	return []any{
		"equality_deletes_removed", r.EqualityDeletes, "equality_delete_rows", r.EqualityDeleteRows,
		"data_files", r.DataFiles, "positions", r.Positions, "position_deletes_written", r.PositionDeletes,
		"vectors_replaced", r.ReplacedVectors, "batches", r.Batches, "snapshot_id", r.SnapshotID,
	}
}

// convert turns the equality deletes of the table into position deletes
// (format v2) or deletion vectors (v3) of the rows they delete, in one
// pinned commit that also removes the equality-delete files.
func (m *Maintainer) convert(ctx context.Context, ident table.Identifier) (ConvertReport, error) {
	var rep ConvertReport
	err := m.retry(ctx, ident, StepConvert, func(tbl *table.Table) error {
		var err error
		rep, err = m.convertOnce(ctx, tbl)
		return err
	})
	return rep, err
}

// convFile is a data file an equality delete applies to.
type convFile struct {
	task table.FileScanTask
	// dels are the indexes (into convPlan.dels) of the equality deletes
	// that apply to it: those of a higher data sequence number, in its
	// partition (or unpartitioned), as the scan planner matched them.
	dels []int
}

type convPlan struct {
	files []convFile
	dels  []iceberg.DataFile // every live equality-delete file
}

// planConvert lists the data files equality deletes apply to, and every
// live equality-delete file of the snapshot (those that apply to no data
// file any more too: they are removed as well).
func planConvert(ctx context.Context, tbl *table.Table) (convPlan, error) {
	var p convPlan
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return p, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return p, err
	}
	mfs, err := snap.Manifests(fsys)
	if err != nil {
		return p, fmt.Errorf("reading the manifest list: %w", err)
	}
	index := map[string]int{}
	for _, mf := range mfs {
		if mf.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		entries, err := mf.FetchEntries(fsys, true)
		if err != nil {
			return p, fmt.Errorf("reading manifest %s: %w", mf.FilePath(), err)
		}
		for _, e := range entries {
			if df := e.DataFile(); df.ContentType() == iceberg.EntryContentEqDeletes {
				if _, ok := index[df.FilePath()]; !ok {
					index[df.FilePath()] = len(p.dels)
					p.dels = append(p.dels, df)
				}
			}
		}
	}
	if len(p.dels) == 0 {
		return p, nil
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return p, fmt.Errorf("planning the table's files: %w", err)
	}
	seen := map[string]bool{}
	for _, t := range tasks {
		if len(t.EqualityDeleteFiles) == 0 || seen[t.File.FilePath()] {
			continue
		}
		seen[t.File.FilePath()] = true
		if err := checkReadable(t); err != nil {
			return p, err
		}
		f := convFile{task: t}
		for _, d := range t.EqualityDeleteFiles {
			i, ok := index[d.FilePath()]
			if !ok {
				return p, fmt.Errorf("the scan applies equality delete %s, which the snapshot's manifests do not list", d.FilePath())
			}
			f.dels = append(f.dels, i)
		}
		p.files = append(p.files, f)
	}
	return p, nil
}

// idsKey names a set of equality field ids.
func idsKey(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}

func (m *Maintainer) convertOnce(ctx context.Context, tbl *table.Table) (ConvertReport, error) {
	var rep ConvertReport
	plan, err := planConvert(ctx, tbl)
	if err != nil {
		return rep, err
	}
	if len(plan.dels) == 0 {
		return rep, nil
	}
	rep.EqualityDeletes = len(plan.dels)
	for _, d := range plan.dels {
		rep.EqualityDeleteRows += d.Count()
		if d.FileFormat() != iceberg.ParquetFile {
			return rep, fmt.Errorf("%w: equality delete %s is %s; only Parquet is read", ErrUnsupported, d.FilePath(), d.FileFormat())
		}
		for _, id := range d.EqualityFieldIDs() {
			if _, ok := tbl.Schema().FindFieldByID(id); !ok {
				return rep, fmt.Errorf("%w: equality delete %s is on field id %d, which the current schema does not have", ErrUnsupported, d.FilePath(), id)
			}
		}
	}
	rep.DataFiles = len(plan.files)
	batches := convertBatches(plan.files, int64(m.cfg.ConvertBatchRows))
	rep.Batches = len(batches)
	if m.cfg.DryRun {
		return rep, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return rep, err
	}
	v3 := tbl.Metadata().Version() >= 3
	var written, added, replaced []iceberg.DataFile
	cleanup := func() {
		for _, df := range written {
			if err := fsys.Remove(df.FilePath()); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				m.cfg.Logger.Warn("removing a file of a failed conversion; orphan removal will", "table", tbl.Identifier(), "path", df.FilePath(), "error", err)
			}
		}
	}
	for _, b := range batches {
		targets, err := matchBatch(ctx, fsys, plan, b)
		if err != nil {
			cleanup()
			return rep, err
		}
		for _, t := range targets {
			rep.Positions += int64(len(t.Pos))
		}
		if len(targets) == 0 {
			continue
		}
		var fresh, old []iceberg.DataFile
		if v3 {
			existing := map[string]iceberg.DataFile{}
			for _, i := range b {
				if dvs := plan.files[i].task.DeletionVectorFiles; len(dvs) > 0 {
					existing[plan.files[i].task.File.FilePath()] = dvs[0]
				}
			}
			fresh, old, _, err = commit.WriteDVs(ctx, tbl, fsys, targets, func(p string) (iceberg.DataFile, bool) { d, ok := existing[p]; return d, ok })
		} else {
			fresh, _, err = commit.WritePositionDeletes(ctx, tbl, fsys, targets)
		}
		// Puffin files hold several vectors: each distinct path once.
		for _, df := range fresh {
			if !slices.ContainsFunc(written, func(w iceberg.DataFile) bool { return w.FilePath() == df.FilePath() }) {
				written = append(written, df)
			}
		}
		if err != nil {
			cleanup()
			return rep, fmt.Errorf("writing the deletes of %d data files: %w", len(targets), err)
		}
		rep.PositionDeletes += len(fresh)
		rep.ReplacedVectors += len(old)
		replaced = append(replaced, old...)
		added = append(added, fresh...)
	}
	tx, err := pinned(tbl)
	if err != nil {
		cleanup()
		return rep, err
	}
	// iceberg-go's rewrite refuses to replace equality deletes with
	// position deletes, so the transaction stages two snapshots, sent to
	// the catalog as one commit: a row delta adding the position deletes
	// (replacing the vectors they merge), then a rewrite that only
	// removes the equality deletes. Readers of the first alone read
	// the same rows: its deletes are redundant, not missing.
	props := iceberg.Properties{MaintenanceKey: string(StepConvert)}
	if len(added) > 0 {
		rd := tx.NewRowDelta(props).AddDeletes(added...)
		if len(replaced) > 0 {
			rd.RemoveDeletes(replaced...)
		}
		if err := rd.Commit(ctx); err != nil {
			cleanup()
			return rep, fmt.Errorf("staging the position deletes: %w", err)
		}
	}
	rw := tx.NewRewrite(props)
	for _, d := range plan.dels {
		rw.DeleteFile(d)
	}
	if err := rw.Commit(ctx); err != nil {
		cleanup()
		return rep, fmt.Errorf("staging the removal of the equality deletes: %w", err)
	}
	next, err := m.commit(ctx, tx, StepConvert)
	if err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			cleanup() // certainly not committed
		}
		return rep, fmt.Errorf("committing the conversion: %w", err)
	}
	if s := next.CurrentSnapshot(); s != nil {
		rep.SnapshotID = s.SnapshotID
	}
	return rep, nil
}

// convertBatches splits the data files (indexes into files) into batches
// of at most maxRows rows; a file of more rows is a batch of its own.
func convertBatches(files []convFile, maxRows int64) [][]int {
	var out [][]int
	var rows int64
	for i, f := range files {
		n := f.task.File.Count()
		if len(out) == 0 || (rows > 0 && rows+n > maxRows) {
			out = append(out, nil)
			rows = 0
		}
		out[len(out)-1] = append(out[len(out)-1], i)
		rows += n
	}
	return out
}

// keyRow is one row of a batch's key table: a data file (index into the
// batch) and a position, chained to the next row of the same key.
type keyRow struct {
	file int32
	next int32 // index into rows of the next row of the same key; -1 ends
	pos  int64
}

// matchBatch finds the rows of the batch's data files that the equality
// deletes applying to them delete. For each set of equality field ids in
// use, it holds the keys of the batch's rows (only the files a delete of
// that set applies to) and streams every such delete file past them,
// counting a match only for a data file the delete applies to. Memory is
// the batch's keys, whatever the number and size of the delete files.
func matchBatch(ctx context.Context, fsys icebergio.IO, plan convPlan, batch []int) (map[string]*commit.Target, error) {
	// The delete files of the batch by set of equality ids, and for each
	// delete file the batch's files it applies to.
	applies := map[int]map[int32]bool{}
	groups := map[string][]int{}
	for bi, fi := range batch {
		for _, di := range plan.files[fi].dels {
			if applies[di] == nil {
				applies[di] = map[int32]bool{}
				k := idsKey(plan.dels[di].EqualityFieldIDs())
				groups[k] = append(groups[k], di)
			}
			applies[di][int32(bi)] = true
		}
	}
	hits := make([][]int64, len(batch))
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		dels := groups[k]
		ids := plan.dels[dels[0]].EqualityFieldIDs()
		index := map[string]int32{}
		var rows []keyRow
		var buf []byte
		for bi, fi := range batch {
			uses := false
			for _, di := range dels {
				uses = uses || applies[di][int32(bi)]
			}
			if !uses {
				continue
			}
			df := plan.files[fi].task.File
			err := keyindex.ReadColumns(ctx, fsys, df.FilePath(), ids, func(first int64, cols []arrow.Array) error {
				for i := range cols[0].Len() {
					var err error
					if buf, err = keyindex.AppendKey(buf[:0], cols, i); err != nil {
						return fmt.Errorf("%s: %w", df.FilePath(), err)
					}
					r := keyRow{file: int32(bi), pos: first + int64(i), next: -1}
					if prev, ok := index[string(buf)]; ok {
						r.next = prev
					}
					index[string(buf)] = int32(len(rows))
					rows = append(rows, r)
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("reading the keys (field ids %s) of data file %s: %w", k, df.FilePath(), err)
			}
		}
		for _, di := range dels {
			del := plan.dels[di]
			to := applies[di]
			err := keyindex.ReadColumns(ctx, fsys, del.FilePath(), ids, func(_ int64, cols []arrow.Array) error {
				for i := range cols[0].Len() {
					var err error
					if buf, err = keyindex.AppendKey(buf[:0], cols, i); err != nil {
						return fmt.Errorf("%s: %w", del.FilePath(), err)
					}
					r, ok := index[string(buf)]
					for ok && r >= 0 {
						row := rows[r]
						if to[row.file] {
							hits[row.file] = append(hits[row.file], row.pos)
						}
						r = row.next
					}
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("reading equality delete %s: %w", del.FilePath(), err)
			}
		}
	}
	out := map[string]*commit.Target{}
	for bi, pos := range hits {
		if len(pos) == 0 {
			continue
		}
		slices.Sort(pos)
		df := plan.files[batch[bi]].task.File
		out[df.FilePath()] = &commit.Target{File: df, Pos: slices.Compact(pos)}
	}
	return out, nil
}
