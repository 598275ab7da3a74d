package maintain

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero is defaults", Config{}, true},
		{"steps", Config{Steps: []Step{StepExpireSnapshots, StepCompact}}, true},
		{"unknown step", Config{Steps: []Step{"vacuum"}}, false},
		{"tiny target", Config{TargetFileSize: 1000}, false},
		{"target", Config{TargetFileSize: 128 << 20}, true},
		{"negative retain", Config{RetainLast: -1}, false},
		{"negative age", Config{OrphanAge: -time.Second}, false},
		{"negative stop timeout", Config{StopTimeout: -time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
		})
	}
	d := Config{}.withDefaults()
	if d.MinInputFiles != 5 || d.DeleteFileThreshold != 1 || d.RetainLast != 5 || d.OrphanAge != 24*time.Hour ||
		d.ExpireOlderThan != 24*time.Hour || d.Attempts != 10 || len(d.Steps) != len(AllSteps) {
		t.Errorf("defaults %+v", d)
	}
}

func dataFile(t *testing.T, path string, content iceberg.ManifestEntryContent, format iceberg.FileFormat, size int64) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, content, path, format, nil, nil, nil, 100, size)
	if err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

func task(t *testing.T, n int, size int64, posDeletes, eqDeletes int) table.FileScanTask {
	t.Helper()
	tk := table.FileScanTask{File: dataFile(t, fmt.Sprintf("s3://b/t/data/%d.parquet", n), iceberg.EntryContentData, iceberg.ParquetFile, size)}
	for i := range posDeletes {
		tk.DeleteFiles = append(tk.DeleteFiles, dataFile(t, fmt.Sprintf("s3://b/t/data/pos-%d-%d.parquet", n, i), iceberg.EntryContentPosDeletes, iceberg.ParquetFile, 100))
	}
	for i := range eqDeletes {
		tk.EqualityDeleteFiles = append(tk.EqualityDeleteFiles, dataFile(t, fmt.Sprintf("s3://b/t/data/eq-%d-%d.parquet", n, i), iceberg.EntryContentEqDeletes, iceberg.ParquetFile, 100))
	}
	return tk
}

// TestPlanning checks which files the compaction takes: small files only
// in groups of at least MinInputFiles, any file a delete applies to (so
// that the delete can be dropped), whatever its size, and never a lone
// file without deletes (which would be copied at every run).
func TestPlanning(t *testing.T) {
	const mib = 1 << 20
	m, err := New(nil, Config{TargetFileSize: 64 * mib})
	if err != nil {
		t.Fatal(err)
	}
	cfg := m.planner(64 * mib)
	for _, tc := range []struct {
		name      string
		tasks     []table.FileScanTask
		wantFiles int
	}{
		{"one small file", []table.FileScanTask{task(t, 1, mib, 0, 0)}, 0},
		{"four small files", []table.FileScanTask{task(t, 1, mib, 0, 0), task(t, 2, mib, 0, 0), task(t, 3, mib, 0, 0), task(t, 4, mib, 0, 0)}, 0},
		{"five small files", []table.FileScanTask{task(t, 1, mib, 0, 0), task(t, 2, mib, 0, 0), task(t, 3, mib, 0, 0), task(t, 4, mib, 0, 0), task(t, 5, mib, 0, 0)}, 5},
		{"right-sized files", []table.FileScanTask{task(t, 1, 60*mib, 0, 0), task(t, 2, 60*mib, 0, 0), task(t, 3, 60*mib, 0, 0), task(t, 4, 60*mib, 0, 0), task(t, 5, 60*mib, 0, 0)}, 0},
		{"a lone file with a position delete", []table.FileScanTask{task(t, 1, mib, 1, 0)}, 1},
		{"a big file with an equality delete", []table.FileScanTask{task(t, 1, 500*mib, 0, 1), task(t, 2, 60*mib, 0, 0)}, 1},
		{"small files with one delete among them", []table.FileScanTask{task(t, 1, mib, 0, 1), task(t, 2, mib, 0, 0), task(t, 3, mib, 0, 0)}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := cfg.PlanCompaction(tc.tasks)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, g := range selectGroups(plan, m.cfg.MinInputFiles) {
				n += len(g.Tasks)
			}
			if n != tc.wantFiles {
				t.Errorf("compacts %d files, want %d", n, tc.wantFiles)
			}
		})
	}
}

func TestCheckReadable(t *testing.T) {
	ok := task(t, 1, 1, 1, 1)
	if err := checkReadable(ok); err != nil {
		t.Errorf("parquet files refused: %v", err)
	}
	orc := table.FileScanTask{File: dataFile(t, "s3://b/t/data/1.orc", iceberg.EntryContentData, iceberg.OrcFile, 1)}
	if err := checkReadable(orc); !errors.Is(err, ErrUnsupported) {
		t.Errorf("ORC data file: %v, want ErrUnsupported", err)
	}
	avroDel := task(t, 2, 1, 0, 0)
	avroDel.EqualityDeleteFiles = []iceberg.DataFile{dataFile(t, "s3://b/t/data/d.avro", iceberg.EntryContentEqDeletes, iceberg.AvroFile, 1)}
	if err := checkReadable(avroDel); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Avro delete file: %v, want ErrUnsupported", err)
	}
}

func TestOurs(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  bool
	}{
		{map[string]string{"binlake.source": "shop.orders"}, true},
		{map[string]string{"binlake.offsets.it.shop.orders": `{"0":5}`}, true}, // created before binlake.source
		{map[string]string{"format-version": "2", "binlake.sourcery": "x"}, false},
		{nil, false},
	} {
		if got := Ours(tc.props); got != tc.want {
			t.Errorf("Ours(%v) = %v, want %v", tc.props, got, tc.want)
		}
	}
}

func TestOverlap(t *testing.T) {
	at := func(name, loc string) placed {
		return placed{ident: table.Identifier{"ns", name}, location: loc, data: loc + "/data", meta: loc + "/metadata"}
	}
	lake, other, wide := at("lake", "s3://b/ns/lake"), at("other", "s3://b/ns/other"), at("wide", "s3://b/ns")
	lakeNear := at("lake2", "s3://b/ns/lake2") // a name lake is a prefix of
	for _, tc := range []struct {
		t, o placed
		want bool
	}{
		{lake, other, false},
		{lake, lakeNear, false},
		{lake, wide, false}, // lake lies in wide's location, not in its folders
		{wide, lake, true},  // wide's location holds lake's
		{wide, wide, true},
		{placed{ident: lake.ident, location: lake.location, data: "s3a://b/ns/other", meta: lake.meta}, other, true}, // write.data.path at other's location
		{placed{ident: lake.ident, location: lake.location, data: "s3://b/ns/other/data/x", meta: lake.meta}, other, true},
	} {
		if got := overlap(tc.t, tc.o) != ""; got != tc.want {
			t.Errorf("overlap(%+v, %+v) = %q, want overlap %v", tc.t, tc.o, overlap(tc.t, tc.o), tc.want)
		}
	}
}

func TestGuard(t *testing.T) {
	folders := []string{"s3://b/ns/t/data", "s3://b/ns/t/metadata"}
	refs := map[string]struct{}{"s3://b/ns/t/data/live.parquet": {}}
	keep, outside, live := guard([]table.OrphanFile{
		{Path: "s3://b/ns/t/data/orphan.parquet"},
		{Path: "s3a://b/ns/t/data/live.parquet"}, // referenced, spelled with another scheme
		{Path: "s3://b/ns/t/notes.txt"},
		{Path: "s3://b/ns/t/database/x.parquet"},
		{Path: "s3://b/ns/other/data/y.parquet"},
	}, folders, refs)
	if len(keep) != 1 || keep[0].Path != "s3://b/ns/t/data/orphan.parquet" || len(live) != 1 || len(outside) != 3 {
		t.Errorf("guard kept %v for deletion, spared %v outside and %v referenced", keep, outside, live)
	}
}

func TestFolders(t *testing.T) {
	md, err := table.NewMetadata(iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64}),
		iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "s3://b/ns/t/", iceberg.Properties{table.WriteDataPathKey: "s3://b/elsewhere/"})
	if err != nil {
		t.Fatal(err)
	}
	if data, meta := Folders(md); data != "s3://b/elsewhere" || meta != "s3://b/ns/t/metadata" {
		t.Errorf("Folders = %q, %q", data, meta)
	}
}

func TestConvertBatches(t *testing.T) {
	files := func(rows ...int64) []convFile {
		var out []convFile
		for _, n := range rows {
			df, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, fmt.Sprintf("s3://b/%d.parquet", len(out)), iceberg.ParquetFile, nil, nil, nil, n, 100)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, convFile{task: table.FileScanTask{File: df.Build()}})
		}
		return out
	}
	for _, tc := range []struct {
		rows []int64
		max  int64
		want [][]int
	}{
		{[]int64{3, 3, 3}, 6, [][]int{{0, 1}, {2}}},
		{[]int64{10, 1, 1}, 6, [][]int{{0}, {1, 2}}}, // a file over the bound is a batch of its own
		{[]int64{1, 10, 1}, 6, [][]int{{0}, {1}, {2}}},
		{nil, 6, nil},
	} {
		if got := convertBatches(files(tc.rows...), tc.max); !slices.EqualFunc(got, tc.want, slices.Equal[[]int]) {
			t.Errorf("convertBatches(%v, %d) = %v, want %v", tc.rows, tc.max, got, tc.want)
		}
	}
}
