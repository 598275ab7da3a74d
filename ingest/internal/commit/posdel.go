package commit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/keyindex"
)

// DeleteMode is how a commit deletes the old row of a key it changes or
// deletes.
type DeleteMode string

// Delete modes.
const (
	// DeleteEquality writes equality-delete files on the identifier fields
	// for every key the batch touched (format v2 and later). Some readers
	// (pyiceberg, Snowflake, Databricks) refuse them.
	DeleteEquality DeleteMode = "equality"
	// DeletePosition finds each key's live row in the table's key index
	// (package keyindex) and writes Parquet position-delete files against
	// the data files that hold them (format v2). No snapshot it commits
	// holds an equality delete.
	DeletePosition DeleteMode = "position"
	// DeleteDV finds the rows as DeletePosition does and writes deletion
	// vectors (Puffin, format v3): one per data file, merged with and
	// replacing the file's previous vector in the same snapshot.
	DeleteDV DeleteMode = "dv"
	// DeleteAuto is DeletePosition on a format v2 table and DeleteDV on v3
	// and later, decided by the table itself when it is opened (an
	// existing table keeps its version, whatever table-format-version
	// says).
	DeleteAuto DeleteMode = "auto"
)

// ParseDeleteMode parses a delete-mode setting; "" is DeleteEquality.
func ParseDeleteMode(s string) (DeleteMode, error) {
	switch m := DeleteMode(s); m {
	case "":
		return DeleteEquality, nil
	case DeleteEquality, DeletePosition, DeleteDV, DeleteAuto:
		return m, nil
	}
	return "", fmt.Errorf("delete-mode %q: want auto, position, dv or equality", s)
}

// Positional reports whether m finds old rows through the key index
// (position, dv and auto).
func (m DeleteMode) Positional() bool {
	return m == DeletePosition || m == DeleteDV || m == DeleteAuto
}

// indexUpdate is what a position-mode attempt tells the key index once the
// commit lands.
type indexUpdate struct {
	deleted [][]byte
	// removedFrom counts, by data file, the entries of deleted keys found
	// there (keyindex.Index.Apply).
	removedFrom map[string]int
	added       []keyindex.Added
	dvs         []iceberg.DataFile // deletion vectors added (dv mode)
	// stale: the commit also changed the table in ways the update does not
	// describe (a truncate); the index catches up from the table instead.
	stale bool
}

// positionDeletes finds, through the key index, the live rows of the keys
// col deletes or upserts, and writes the position-delete files that remove
// them, each in the partition (and spec) of the data file it targets. tbl
// is the attempt's base, with which the index is synced first; staged is
// non-nil when the transaction already removes data files (a truncate),
// whose rows need no delete. It needs none of the data files the attempt
// adds, so the attempt runs it while it writes them; readBackKeys then
// completes the index update with their keys.
//
// In dv mode the deletes are deletion vectors, and the vectors they
// replace (to be removed in the same snapshot) are returned too.
func (c *Committer) positionDeletes(ctx context.Context, tbl *table.Table, staged *table.Table, conv *batch.Converter, col *batch.Collapsed) (dels, replaced []iceberg.DataFile, upd *indexUpdate, n int, err error) {
	// The deletes are found against the attempt's base: the index must
	// reflect it (another writer or a compaction may have changed the
	// table since the last commit).
	if err := c.idx.Sync(ctx, tbl); err != nil {
		return nil, nil, nil, 0, err
	}
	upd = &indexUpdate{stale: col.Truncate || col.TruncateBefore > 0}
	if len(col.Deletes) > 0 {
		for rec, err := range conv.Keys(col.Deletes) {
			if err != nil {
				return nil, nil, nil, 0, err
			}
			var keys [][]byte
			keys, err = keyindex.EncodeKeys(rec.Columns())
			rec.Release()
			if err != nil {
				return nil, nil, nil, 0, err
			}
			upd.deleted = append(upd.deleted, keys...)
		}
	}
	var remaining map[string]iceberg.DataFile
	if staged != nil {
		if remaining, err = keyindex.LiveFiles(staged); err != nil {
			return nil, nil, nil, 0, fmt.Errorf("listing the data files left by the truncate: %w", err)
		}
	}
	targets := map[string]*target{}
	locs, found, err := c.idx.LookupAll(upd.deleted)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	for i, loc := range locs {
		if !found[i] {
			continue
		}
		p := loc.File.FilePath()
		if remaining != nil {
			if _, kept := remaining[p]; !kept {
				continue // the truncate drops the whole file
			}
		}
		t := targets[p]
		if t == nil {
			t = &target{file: loc.File}
			targets[p] = t
		}
		t.pos = append(t.pos, loc.Pos)
	}
	upd.removedFrom = make(map[string]int, len(targets))
	for p, t := range targets {
		upd.removedFrom[p] = len(t.pos)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	if c.cfg.DeleteMode == DeleteDV {
		existing := c.idx.DV
		if staged != nil {
			// The truncate may have written vectors of its own.
			live, err := keyindex.LiveDVs(staged)
			if err != nil {
				return nil, nil, nil, 0, fmt.Errorf("listing the deletion vectors left by the truncate: %w", err)
			}
			existing = func(p string) (iceberg.DataFile, bool) { d, ok := live[p]; return d, ok }
		}
		dels, replaced, n, err = writeDVs(ctx, tbl, fsys, targets, existing)
		upd.dvs = dels
		return dels, replaced, upd, n, err
	}
	dels, n, err = writePositionDeletes(ctx, tbl, fsys, targets)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	return dels, nil, upd, n, nil
}

// rowKeys collects the encoded keys of the rows a commit writes, from its
// record batches as they go to the writer. An unpartitioned table's rows
// go, in order, to one rolling writer; when it wrote a single file of as
// many rows, its keys by position are the keys collected, and the commit
// need not read the file back (readBackKeys, the fallback).
type rowKeys struct {
	cols []int         // the key columns' indices in the records, in identifier order
	arrs []arrow.Array // a batch's key columns, reused
	keys [][]byte
	err  error
}

func newRowKeys(sch *iceberg.Schema, rec *arrow.Schema, rows int) *rowKeys {
	r := &rowKeys{keys: make([][]byte, 0, rows)}
	for _, id := range sch.IdentifierFieldIDs {
		name, ok := sch.FindColumnName(id)
		idx := rec.FieldIndices(name)
		if !ok || len(idx) != 1 {
			r.err = fmt.Errorf("identifier field %d is not one column of the rows", id)
			return r
		}
		r.cols = append(r.cols, idx[0])
	}
	if len(r.cols) == 0 {
		r.err = errors.New("no identifier fields")
	}
	return r
}

// tap passes rows on, encoding each batch's keys first.
func (r *rowKeys) tap(rows iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range rows {
			if err == nil && r.err == nil {
				r.arrs = r.arrs[:0]
				for _, c := range r.cols {
					r.arrs = append(r.arrs, rec.Column(c))
				}
				var keys [][]byte
				if keys, r.err = keyindex.EncodeKeys(r.arrs); r.err == nil {
					r.keys = append(r.keys, keys...)
				}
			}
			if !yield(rec, err) {
				return
			}
		}
	}
}

// added is the index update of data, when it is one file holding the rows
// collected.
func (r *rowKeys) added(data []iceberg.DataFile) ([]keyindex.Added, bool) {
	if r == nil || r.err != nil || len(data) != 1 || data[0].Count() != int64(len(r.keys)) {
		return nil, false
	}
	return []keyindex.Added{{File: data[0], Keys: r.keys}}, true
}

// readBackKeys adds to upd the keys of the data files the attempt wrote,
// by position, read back from storage: what the index records is what the
// files hold, in their order.
func readBackKeys(ctx context.Context, tbl *table.Table, data []iceberg.DataFile, upd *indexUpdate) error {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	for _, df := range data {
		keys, err := keyindex.ReadKeys(ctx, fsys, df, tbl.Schema().IdentifierFieldIDs)
		if err != nil {
			return fmt.Errorf("reading back the keys of the new data file: %w", err)
		}
		if int64(len(keys)) != df.Count() {
			return fmt.Errorf("data file %s holds %d rows, its keys %d", df.FilePath(), df.Count(), len(keys))
		}
		upd.added = append(upd.added, keyindex.Added{File: df, Keys: keys})
	}
	return nil
}

type target struct {
	file iceberg.DataFile
	pos  []int64
}

// writePositionDeletes writes one position-delete file per targeted data
// file, or per partition (spec id and partition values) of them when the
// table's write.delete.granularity is partition, rows sorted by
// (file_path, pos) as the spec requires. It returns the files and the
// number of positions.
func writePositionDeletes(ctx context.Context, tbl *table.Table, fsys icebergio.IO, targets map[string]*target) ([]iceberg.DataFile, int, error) {
	if len(targets) == 0 {
		return nil, 0, nil
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return nil, 0, fmt.Errorf("the table's file IO cannot write files")
	}
	lp, err := tbl.LocationProvider()
	if err != nil {
		return nil, 0, err
	}
	// By the table's write.delete.granularity, as Iceberg's Java writers:
	// file (the default here) writes one delete file per data file it
	// targets, so that a reader of a data file loads only its own deletes
	// (partition-grouped files make every reader of every data file in
	// the partition read all of them); partition, one per partition.
	byFile := tbl.Properties().Get(DeleteGranularityKey, DeleteGranularityFile) != DeleteGranularityPartition
	groups := map[string][]*target{}
	for _, t := range targets {
		g := partitionKey(t.file)
		if byFile {
			g = t.file.FilePath()
		}
		groups[g] = append(groups[g], t)
	}
	names := slices.Sorted(maps.Keys(groups))
	write := uuid.NewString()
	var out []iceberg.DataFile
	total := 0
	// Encoded one by one, written concurrently: a commit of many updates
	// targets as many data files as the table has, and each delete file is
	// a round trip to storage.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(deleteWriters)
	var prep error
	for n, name := range names {
		ts := groups[name]
		slices.SortFunc(ts, func(a, b *target) int { return strings.Compare(a.file.FilePath(), b.file.FilePath()) })
		first := ts[0].file
		spec := tbl.Metadata().PartitionSpecByID(int(first.SpecID()))
		if spec == nil {
			prep = fmt.Errorf("data file %s has partition spec %d, which the table does not have", first.FilePath(), first.SpecID())
			break
		}
		body, fm, rows, err := encodePositions(ts)
		if err != nil {
			prep = fmt.Errorf("encoding position deletes: %w", err)
			break
		}
		path := lp.NewDataLocation(fmt.Sprintf("%s-%05d-deletes.parquet", write, n))
		props := maps.Clone(tbl.Properties())
		if props == nil {
			props = iceberg.Properties{}
		}
		props[table.MetricsModeColumnConfPrefix+".file_path"] = "full"
		args := table.DataFileArgs{
			Schema:        iceberg.PositionalDeleteSchema,
			Spec:          *spec,
			Format:        iceberg.ParquetFile,
			Metadata:      fm,
			FilePath:      path,
			FileSize:      int64(len(body)),
			Content:       iceberg.EntryContentPosDeletes,
			Properties:    props,
			FormatVersion: tbl.Metadata().Version(),
		}
		if !spec.IsUnpartitioned() {
			args.PartitionValues = first.Partition()
		}
		if len(ts) == 1 {
			p := first.FilePath()
			args.ReferencedDataFile = &p
		}
		df, err := table.DataFileFromMetadata(args)
		if err != nil {
			prep = fmt.Errorf("describing position-delete file %s: %w", path, err)
			break
		}
		out, total = append(out, df), total+rows
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			if err := wfs.WriteFile(path, body); err != nil {
				return fmt.Errorf("writing position-delete file %s: %w", path, err)
			}
			return nil
		})
	}
	if err := errors.Join(prep, g.Wait()); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// deleteWriters is how many position-delete files a commit writes at once.
const deleteWriters = 8

// DeleteGranularityKey is the table property that says how position deletes
// are grouped into files (Iceberg's write.delete.granularity): file or
// partition.
const (
	DeleteGranularityKey       = "write.delete.granularity"
	DeleteGranularityFile      = "file"
	DeleteGranularityPartition = "partition"
)

// partitionKey names a data file's partition: its spec id and partition
// values.
func partitionKey(df iceberg.DataFile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", df.SpecID())
	part := df.Partition()
	for _, id := range slices.Sorted(maps.Keys(part)) {
		fmt.Fprintf(&b, "/%d=%#v", id, part[id])
	}
	return b.String()
}

// positionChunkRows bounds the rows of the Arrow batches a position-delete
// file is encoded from: the file path repeats on every row, so a data
// file with a million deleted rows would otherwise hold about a hundred
// megabytes of paths before encoding (its Parquet dictionary holds one).
const positionChunkRows = 64 * 1024

// encodePositions encodes the sorted, de-duplicated positions of ts as one
// Parquet position-delete file (one row group, fed in chunks of
// positionChunkRows rows). It returns the bytes, their metadata and the
// rows.
func encodePositions(ts []*target) ([]byte, *metadata.FileMetaData, int, error) {
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(table.PositionalDeleteArrowSchema, &buf,
		parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)),
		pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, nil, 0, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.PositionalDeleteArrowSchema)
	defer b.Release()
	paths := b.Field(0).(*array.StringBuilder)
	pos := b.Field(1).(*array.Int64Builder)
	flush := func() error {
		rec := b.NewRecordBatch()
		defer rec.Release()
		return w.WriteBuffered(rec)
	}
	rows := 0
	for _, t := range ts {
		slices.Sort(t.pos)
		t.pos = slices.Compact(t.pos)
		for _, p := range t.pos {
			paths.Append(t.file.FilePath())
			pos.Append(p)
			rows++
			if pos.Len() >= positionChunkRows {
				if err := flush(); err != nil {
					return nil, nil, 0, err
				}
			}
		}
	}
	if pos.Len() > 0 || rows == 0 {
		if err := flush(); err != nil {
			return nil, nil, 0, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, nil, 0, err
	}
	fm, err := w.FileMetadata()
	if err != nil {
		return nil, nil, 0, err
	}
	return buf.Bytes(), fm, rows, nil
}

// dvReaders bounds the Puffin files a commit reads deletion vectors from
// at once.
const dvReaders = 8

// writeDVs writes one Puffin file holding a deletion vector per targeted
// data file: its new positions, plus those of the file's live vector
// (existing), which it replaces. It returns the new vectors, the replaced
// ones and the number of new positions.
func writeDVs(ctx context.Context, tbl *table.Table, fsys icebergio.IO, targets map[string]*target, existing func(string) (iceberg.DataFile, bool)) ([]iceberg.DataFile, []iceberg.DataFile, int, error) {
	if len(targets) == 0 {
		return nil, nil, 0, nil
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return nil, nil, 0, fmt.Errorf("the table's file IO cannot write files")
	}
	lp, err := tbl.LocationProvider()
	if err != nil {
		return nil, nil, 0, err
	}
	meta := tbl.Metadata()
	w := dv.NewDVWriter(wfs, func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	// The vectors replaced are read grouped by Puffin file (a commit's
	// vectors share one: its footer is read once) and the files
	// concurrently, then merged in path order.
	paths := slices.Sorted(maps.Keys(targets))
	olds := make([]iceberg.DataFile, len(paths))
	bitmaps := make([]*dv.RoaringPositionBitmap, len(paths))
	byPuffin := map[string][]int{}
	for i, p := range paths {
		if old, ok := existing(p); ok {
			olds[i] = old
			byPuffin[old.FilePath()] = append(byPuffin[old.FilePath()], i)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(dvReaders)
	for puffinPath, idx := range byPuffin {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			files := make([]iceberg.DataFile, len(idx))
			for j, i := range idx {
				files[j] = olds[i]
			}
			bms, err := dv.ReadDVs(fsys, files)
			if err != nil {
				return fmt.Errorf("reading the deletion vectors of %d data files from %s: %w", len(files), puffinPath, err)
			}
			for j, i := range idx {
				bitmaps[i] = bms[j]
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, 0, err
	}
	var replaced []iceberg.DataFile
	n := 0
	for i, p := range paths {
		t := targets[p]
		if old := olds[i]; old != nil {
			w.Load(p, bitmaps[i], t.file.SpecID(), t.file.Partition())
			replaced = append(replaced, old)
		}
		slices.Sort(t.pos)
		t.pos = slices.Compact(t.pos)
		if err := w.Add(p, t.pos, t.file.SpecID(), t.file.Partition()); err != nil {
			return nil, nil, 0, fmt.Errorf("adding deletes of %s: %w", p, err)
		}
		n += len(t.pos)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, err
	}
	loc := lp.NewDataLocation(uuid.NewString() + "-dv.puffin")
	added, err := w.Flush(ctx, loc)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("writing deletion vectors %s: %w", loc, err)
	}
	return added, replaced, n, nil
}

// Target is a data file and positions of its rows to delete.
type Target struct {
	File iceberg.DataFile
	Pos  []int64
}

// WritePositionDeletes writes position-delete files (format v2) for
// targets, keyed by data-file path, grouped by the table's
// write.delete.granularity as ingest's own commits are. It returns the
// files and the number of positions.
func WritePositionDeletes(ctx context.Context, tbl *table.Table, fsys icebergio.IO, targets map[string]*Target) ([]iceberg.DataFile, int, error) {
	return writePositionDeletes(ctx, tbl, fsys, internalTargets(targets))
}

// WriteDVs writes one Puffin file of deletion vectors (format v3), one per
// target, each merged with the data file's live vector (existing), which
// the caller must remove in the same snapshot. It returns the new vectors,
// the replaced ones and the number of new positions.
func WriteDVs(ctx context.Context, tbl *table.Table, fsys icebergio.IO, targets map[string]*Target, existing func(path string) (iceberg.DataFile, bool)) ([]iceberg.DataFile, []iceberg.DataFile, int, error) {
	return writeDVs(ctx, tbl, fsys, internalTargets(targets), existing)
}

func internalTargets(in map[string]*Target) map[string]*target {
	out := make(map[string]*target, len(in))
	for p, t := range in {
		out[p] = &target{file: t.File, pos: t.Pos}
	}
	return out
}
