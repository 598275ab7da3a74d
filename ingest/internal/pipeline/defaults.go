package pipeline

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/schemamap"
)

// backfillDefaults stages on tx, after the staged schema update that adds
// the columns of changes, the rewrite of every live row of the table with
// the source default of each added column that the table cannot carry as
// an initial-default (schemamap.Change.Backfill): one overwrite in the
// same commit as the schema change. The rows that existed before the ALTER
// then read the default, as in MariaDB, and exactly once: the commit
// either lands with the column (a restart then finds the column and
// rewrites nothing) or not at all.
//
// The rewrite reads the whole table into memory and writes it again; on a
// large table prefer a format v3 table (initial-default, no rewrite) where
// the column's type allows it.
func backfillDefaults(ctx context.Context, base *table.Table, tx *table.Transaction, changes []schemamap.Change) error {
	version := base.Metadata().Version()
	// Once rows are rewritten, every added column with a default is
	// written with it: a data file that holds a column reads its values,
	// not the column's initial-default, so a v3 column with one must be
	// filled as well.
	fill := map[string]schemamap.Change{}
	need := false
	for _, c := range changes {
		if c.Kind == schemamap.AddColumn && len(c.Path) == 1 && c.Default != nil && c.Column != nil {
			fill[c.Path[0]] = c
			need = need || c.Backfill(version)
		}
	}
	if !need || base.CurrentSnapshot() == nil {
		return nil
	}
	staged, err := tx.StagedTable()
	if err != nil {
		return err
	}
	// The rows are read under the old schema (a staged table cannot be
	// scanned) and laid out in the new one: the old columns as read, the
	// added ones holding their defaults, or nulls.
	target, err := table.SchemaToArrowSchema(staged.Schema(), nil, true, false)
	if err != nil {
		return err
	}
	_, recs, err := base.Scan().ToArrowRecords(ctx)
	if err != nil {
		return fmt.Errorf("scanning: %w", err)
	}
	var out []arrow.RecordBatch
	defer func() {
		for _, r := range out {
			r.Release()
		}
	}()
	var sc *arrow.Schema
	for rec, err := range recs {
		if err != nil {
			return fmt.Errorf("scanning: %w", err)
		}
		fields := make([]arrow.Field, target.NumFields())
		cols := make([]arrow.Array, target.NumFields())
		var made []arrow.Array
		for i, tf := range target.Fields() {
			if idx := rec.Schema().FieldIndices(tf.Name); len(idx) > 0 {
				fields[i], cols[i] = rec.Schema().Field(idx[0]), rec.Column(idx[0])
				continue
			}
			var arr arrow.Array
			if c, ok := fill[tf.Name]; ok {
				if arr, err = constantArray(tf.Type, c, int(rec.NumRows())); err != nil {
					rec.Release()
					return err
				}
			} else {
				arr = array.MakeArrayOfNull(memory.DefaultAllocator, tf.Type, int(rec.NumRows()))
			}
			fields[i], cols[i] = tf, arr
			made = append(made, arr)
		}
		sc = arrow.NewSchema(fields, nil)
		out = append(out, array.NewRecordBatch(sc, cols, rec.NumRows()))
		for _, a := range made {
			a.Release()
		}
		rec.Release()
	}
	if sc == nil {
		return nil // no live rows
	}
	rdr, err := array.NewRecordReader(sc, out)
	if err != nil {
		return err
	}
	defer rdr.Release()
	// The overwrite replaces every data file (filter: always true); the
	// table's delete files only apply to data files older than it.
	return tx.Overwrite(ctx, rdr, iceberg.Properties{"binlake.backfill-defaults": strconv.Itoa(len(fill))})
}

// constantArray is an Arrow array of n copies of c's default, of type dt
// (the staged table's Arrow type of the column).
func constantArray(dt arrow.DataType, c schemamap.Change, n int) (arrow.Array, error) {
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	b.Reserve(n)
	bad := func() error {
		return fmt.Errorf("default %v (%T) of column %s does not fit Arrow type %s", c.Default, c.Default, c.Path[0], dt)
	}
	for range n {
		switch bb := b.(type) {
		case *array.BooleanBuilder:
			v, ok := c.Default.(bool)
			if !ok {
				return nil, bad()
			}
			bb.Append(v)
		case *array.Int32Builder:
			v, ok := c.Default.(int32)
			if !ok {
				return nil, bad()
			}
			bb.Append(v)
		case *array.Int64Builder:
			v, ok := c.Default.(int64)
			if !ok {
				return nil, bad()
			}
			bb.Append(v)
		case *array.Float32Builder:
			v, ok := c.Default.(float32)
			if !ok {
				return nil, bad()
			}
			bb.Append(v)
		case *array.Float64Builder:
			v, ok := c.Default.(float64)
			if !ok {
				return nil, bad()
			}
			bb.Append(v)
		case *array.StringBuilder:
			v, ok := c.Default.(string)
			if !ok {
				return nil, bad()
			}
			bb.Append(v)
		case *array.LargeStringBuilder:
			v, ok := c.Default.(string)
			if !ok {
				return nil, bad()
			}
			bb.Append(v)
		case *array.BinaryBuilder:
			v, ok := c.Default.([]byte)
			if !ok {
				return nil, bad()
			}
			bb.Append(v)
		case *array.Decimal128Builder:
			v, ok := c.Default.(decimal128.Num)
			if !ok {
				return nil, bad()
			}
			bb.Append(v)
		case *array.Date32Builder:
			v, ok := c.Default.(int32)
			if !ok {
				return nil, bad()
			}
			bb.Append(arrow.Date32(v))
		case *array.TimestampBuilder:
			v, ok := c.Default.(int64)
			if !ok || dt.(*arrow.TimestampType).Unit != arrow.Microsecond {
				return nil, bad()
			}
			bb.Append(arrow.Timestamp(v))
		default:
			return nil, bad()
		}
	}
	return b.NewArray(), nil
}
