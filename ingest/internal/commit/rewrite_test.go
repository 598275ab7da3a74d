package commit

import (
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func dataFile(t *testing.T, path string, rows, size int64) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, rows, size)
	if err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

// posDeletes is a position-delete file of n rows naming target: by
// referenced_data_file, or (v2 manifests) by equal file_path bounds.
func posDeletes(t *testing.T, path, target string, n int64, byBounds bool) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile, nil, nil, nil, n, 100)
	if err != nil {
		t.Fatal(err)
	}
	if byBounds {
		b.LowerBoundValues(map[int][]byte{filePathFieldID: []byte(target)}).UpperBoundValues(map[int][]byte{filePathFieldID: []byte(target)})
	} else if target != "" {
		b.ReferencedDataFile(target)
	}
	return b.Build()
}

// TestPlanRewrite: once the table's dead fraction reaches the setting, the
// deadest files are picked until what is left is at most half of it (and
// no file while the table is under it, however dead the file); files over
// the delete-file count are picked whatever the table; all within the byte
// bound (at least one). Dead rows count from delete files naming the file
// alone (by referenced_data_file or file_path bounds), not from
// partition-wide ones.
func TestPlanRewrite(t *testing.T) {
	a := table.FileScanTask{File: dataFile(t, "a", 100, 1000), DeleteFiles: []iceberg.DataFile{
		posDeletes(t, "a-d1", "a", 20, false), posDeletes(t, "a-d2", "a", 20, true)}} // 0.4
	b := table.FileScanTask{File: dataFile(t, "b", 100, 1000), DeleteFiles: []iceberg.DataFile{
		posDeletes(t, "b-d1", "b", 35, true)}} // 0.35
	c := table.FileScanTask{File: dataFile(t, "c", 100, 1000), DeleteFiles: []iceberg.DataFile{
		posDeletes(t, "p-1", "", 90, false), posDeletes(t, "p-2", "", 90, false), posDeletes(t, "p-3", "", 90, false)}} // partition-wide: 0 dead, 3 files
	d := table.FileScanTask{File: dataFile(t, "d", 100, 1000), DeleteFiles: []iceberg.DataFile{
		posDeletes(t, "d-d1", "d", 10, false)}} // 0.1
	tasks := []table.FileScanTask{d, c, b, a}
	paths := func(ts []table.FileScanTask) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.File.FilePath())
		}
		return out
	}
	for _, tc := range []struct {
		name string
		cfg  RewriteConfig
		want []string
	}{
		{"off", RewriteConfig{}, nil},
		// 85 of 400 rows dead: 0.2125.
		{"dead fraction", RewriteConfig{DeadFraction: 0.2}, []string{"a", "b"}},
		{"table under the dead fraction", RewriteConfig{DeadFraction: 0.25}, nil},
		{"dead fraction, bound", RewriteConfig{DeadFraction: 0.2, MaxBytes: 1500}, []string{"a"}},
		{"dead fraction, bound below one file", RewriteConfig{DeadFraction: 0.2, MaxBytes: 10}, []string{"a"}},
		{"delete files", RewriteConfig{DeleteFiles: 2}, []string{"c"}},
		{"both", RewriteConfig{DeadFraction: 0.21, DeleteFiles: 2}, []string{"a", "b", "c"}},
		{"delete files, table under the dead fraction", RewriteConfig{DeadFraction: 0.25, DeleteFiles: 2}, []string{"c"}},
	} {
		if got := paths(PlanRewrite(tasks, tc.cfg)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: picked %v, want %v", tc.name, got, tc.want)
		}
	}
}
