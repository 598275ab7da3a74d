package keyindex

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// writePositionDeletes writes a position-delete file of the given rows
// (path, position) to dir/name and returns it.
func writePositionDeletes(t *testing.T, dir, name string, paths []string, pos []int64) iceberg.DataFile {
	t.Helper()
	field := func(n string, typ arrow.DataType, id int) arrow.Field {
		return arrow.Field{Name: n, Type: typ, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})}
	}
	sch := arrow.NewSchema([]arrow.Field{field("file_path", arrow.BinaryTypes.String, filePathFieldID), field("pos", arrow.PrimitiveTypes.Int64, posFieldID)}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues(paths, nil)
	b.Field(1).(*array.Int64Builder).AppendValues(pos, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sch, f, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, p, iceberg.ParquetFile, nil, nil, nil, int64(len(pos)), 1)
	if err != nil {
		t.Fatal(err)
	}
	return db.Build()
}

// TestCountDeleted: the rows a data file's position deletes delete are
// counted once each, within the file's row count and for that file alone,
// not summed: a rewrite drops a file unread only when every row is gone.
func TestCountDeleted(t *testing.T) {
	dir := t.TempDir()
	const target = "s3://lake/t/data/a.parquet"
	dfb, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, target, iceberg.ParquetFile, nil, nil, nil, 4, 100)
	if err != nil {
		t.Fatal(err)
	}
	df := dfb.Build()
	// Five records, all naming a's rows, and the sum (6 with b's) over its
	// 4 rows; yet row 2 is live: 1 is deleted twice, 7 is past the end.
	d1 := writePositionDeletes(t, dir, "d1.parquet", []string{target, target, target, "s3://lake/t/data/b.parquet"}, []int64{0, 1, 1, 2})
	d2 := writePositionDeletes(t, dir, "d2.parquet", []string{target, target}, []int64{3, 7})
	fsys := icebergio.LocalFS{}
	n, err := CountDeleted(t.Context(), fsys, df, []iceberg.DataFile{d1, d2})
	if err != nil || n != 3 {
		t.Fatalf("CountDeleted = %d, %v; want 3 (rows 0, 1 and 3)", n, err)
	}
	d3 := writePositionDeletes(t, dir, "d3.parquet", []string{target}, []int64{2})
	n, err = CountDeleted(t.Context(), fsys, df, []iceberg.DataFile{d1, d2, d3})
	if err != nil || n != 4 {
		t.Fatalf("CountDeleted with row 2 deleted = %d, %v; want 4", n, err)
	}
}
