package keyindex

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// Field IDs of a position-delete file's columns (Iceberg spec).
const (
	filePathFieldID = 2147483546
	posFieldID      = 2147483545
)

const readBatchRows = 64 * 1024

// readColumns reads the top-level columns with the given field IDs of the
// Parquet file at path, in row order, calling fn with the columns (in ids
// order) of each record batch and the position of its first row. Only those
// columns are fetched.
func readColumns(ctx context.Context, fsys icebergio.IO, path string, ids []int, fn func(first int64, cols []arrow.Array) error) error {
	f, err := fsys.Open(path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		return fmt.Errorf("reading the Parquet footer of %s: %w", path, err)
	}
	defer pr.Close()
	sch := pr.MetaData().Schema
	leaves := make([]int, len(ids))
	for k, id := range ids {
		leaves[k] = -1
		for i := range sch.NumColumns() {
			if sch.Column(i).SchemaNode().FieldID() == int32(id) {
				leaves[k] = i
				break
			}
		}
		if leaves[k] < 0 {
			return fmt.Errorf("%w: %s has no column with field id %d", ErrUnreadable, path, id)
		}
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: readBatchRows}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	defer rr.Release()
	// The reader returns the columns in file order: map them back to ids.
	order := make([]int, len(ids))
	for k, id := range ids {
		order[k] = -1
		for i, fld := range rr.Schema().Fields() {
			if v, ok := fld.Metadata.GetValue("PARQUET:field_id"); ok && v == strconv.Itoa(id) {
				order[k] = i
			}
		}
		if order[k] < 0 {
			return fmt.Errorf("%w: %s: column with field id %d not returned", ErrUnreadable, path, id)
		}
	}
	var first int64
	cols := make([]arrow.Array, len(ids))
	for rr.Next() {
		rec := rr.RecordBatch()
		for k := range ids {
			cols[k] = rec.Column(order[k])
		}
		if err := fn(first, cols); err != nil {
			return err
		}
		first += rec.NumRows()
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// ReadKeys returns the encoded key of every row of the data file df, by
// position, reading only its key columns (field ids keyIDs).
func ReadKeys(ctx context.Context, fsys icebergio.IO, df iceberg.DataFile, keyIDs []int) ([][]byte, error) {
	out := make([][]byte, 0, df.Count())
	err := readColumns(ctx, fsys, df.FilePath(), keyIDs, func(first int64, cols []arrow.Array) error {
		if first != int64(len(out)) {
			return fmt.Errorf("%w: %s: rows out of order", ErrUnreadable, df.FilePath())
		}
		keys, err := EncodeKeys(cols)
		if err != nil {
			return fmt.Errorf("%s: %w", df.FilePath(), err)
		}
		out = append(out, keys...)
		return nil
	})
	return out, err
}

// readPositionDeletes adds to out the positions the position-delete file
// del deletes in the data files that want selects.
func readPositionDeletes(ctx context.Context, fsys icebergio.IO, del iceberg.DataFile, want func(path string) bool, out map[string]map[int64]struct{}) error {
	return readColumns(ctx, fsys, del.FilePath(), []int{filePathFieldID, posFieldID}, func(_ int64, cols []arrow.Array) error {
		paths, ok1 := cols[0].(*array.String)
		pos, ok2 := cols[1].(*array.Int64)
		if !ok1 || !ok2 {
			if lp, ok := cols[0].(*array.LargeString); ok && ok2 {
				for i := range lp.Len() {
					add(out, want, lp.Value(i), pos.Value(i))
				}
				return nil
			}
			return fmt.Errorf("%w: position-delete file %s has columns %s, %s", ErrUnreadable, del.FilePath(), cols[0].DataType(), cols[1].DataType())
		}
		for i := range paths.Len() {
			add(out, want, paths.Value(i), pos.Value(i))
		}
		return nil
	})
}

func add(out map[string]map[int64]struct{}, want func(string) bool, path string, pos int64) {
	if !want(path) {
		return
	}
	m := out[path]
	if m == nil {
		m = map[int64]struct{}{}
		out[path] = m
	}
	m[pos] = struct{}{}
}

// ReadColumns reads the top-level columns with field ids ids of the
// Parquet file at path (a data file or an equality-delete file) in record
// batches of at most 64Ki rows, in row order, calling fn with the columns
// (in ids order) and the position of the batch's first row. Only those
// columns are fetched; the arrays are valid only during the call.
func ReadColumns(ctx context.Context, fsys icebergio.IO, path string, ids []int, fn func(first int64, cols []arrow.Array) error) error {
	return readColumns(ctx, fsys, path, ids, fn)
}

// CountDeleted returns how many distinct rows of the data file df the
// position-delete files dels delete: positions that name df and lie within
// its row count, each counted once however many files delete it (unlike
// the sum of their record counts). Only the delete files' two columns are
// read; memory is a bit per row of df.
func CountDeleted(ctx context.Context, fsys icebergio.IO, df iceberg.DataFile, dels []iceberg.DataFile) (int64, error) {
	rows, path := df.Count(), df.FilePath()
	if rows <= 0 {
		return 0, nil
	}
	bits := make([]uint64, (rows+63)/64)
	var n int64
	mark := func(p string, pos int64) {
		if pos < 0 || pos >= rows || p != path {
			return
		}
		if w, b := pos/64, uint64(1)<<(pos%64); bits[w]&b == 0 {
			bits[w] |= b
			n++
		}
	}
	for _, d := range dels {
		err := readColumns(ctx, fsys, d.FilePath(), []int{filePathFieldID, posFieldID}, func(_ int64, cols []arrow.Array) error {
			pos, ok := cols[1].(*array.Int64)
			if !ok {
				return fmt.Errorf("%w: position-delete file %s has a pos column of %s", ErrUnreadable, d.FilePath(), cols[1].DataType())
			}
			switch paths := cols[0].(type) {
			case *array.String:
				for i := range paths.Len() {
					if !paths.IsNull(i) && !pos.IsNull(i) {
						mark(paths.Value(i), pos.Value(i))
					}
				}
			case *array.LargeString:
				for i := range paths.Len() {
					if !paths.IsNull(i) && !pos.IsNull(i) {
						mark(paths.Value(i), pos.Value(i))
					}
				}
			default:
				return fmt.Errorf("%w: position-delete file %s has a file_path column of %s", ErrUnreadable, d.FilePath(), cols[0].DataType())
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}
