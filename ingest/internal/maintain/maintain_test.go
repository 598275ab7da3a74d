package maintain

import (
	"errors"
	"fmt"
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
