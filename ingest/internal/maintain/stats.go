package maintain

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Stats counts the live files of a table's current snapshot and its
// snapshots.
type Stats struct {
	Snapshots                      int
	DataManifests, DeleteManifests int
	DataFiles                      int
	PositionDeleteFiles            int // Parquet position-delete files
	EqualityDeleteFiles            int
	DeletionVectors                int // Puffin deletion vectors
	DataBytes, DeleteBytes         int64
	DataRecords, DeleteRecords     int64 // as the manifests state them
}

// DeleteFiles is the number of delete files of every kind.
func (s Stats) DeleteFiles() int {
	return s.PositionDeleteFiles + s.EqualityDeleteFiles + s.DeletionVectors
}

func (s Stats) attrs(prefix string) []any {
	return []any{
		prefix + "snapshots", s.Snapshots,
		prefix + "data_files", s.DataFiles, prefix + "data_bytes", s.DataBytes,
		prefix + "position_delete_files", s.PositionDeleteFiles,
		prefix + "equality_delete_files", s.EqualityDeleteFiles,
		prefix + "deletion_vectors", s.DeletionVectors,
		prefix + "delete_bytes", s.DeleteBytes,
		prefix + "manifests", s.DataManifests + s.DeleteManifests,
	}
}

// TableStats reads the manifests of tbl's current snapshot.
func TableStats(ctx context.Context, tbl *table.Table) (Stats, error) {
	st := Stats{Snapshots: len(tbl.Metadata().Snapshots())}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return st, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return st, err
	}
	mfs, err := snap.Manifests(fsys)
	if err != nil {
		return st, fmt.Errorf("reading the manifest list: %w", err)
	}
	for _, mf := range mfs {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if mf.ManifestContent() == iceberg.ManifestContentDeletes {
			st.DeleteManifests++
		} else {
			st.DataManifests++
		}
		entries, err := mf.FetchEntries(fsys, true)
		if err != nil {
			return st, fmt.Errorf("reading manifest %s: %w", mf.FilePath(), err)
		}
		for _, e := range entries {
			df := e.DataFile()
			switch {
			case df.ContentType() == iceberg.EntryContentData:
				st.DataFiles++
				st.DataBytes += df.FileSizeBytes()
				st.DataRecords += df.Count()
				continue
			case df.ContentType() == iceberg.EntryContentEqDeletes:
				st.EqualityDeleteFiles++
			case table.IsDeletionVector(df):
				st.DeletionVectors++
			default:
				st.PositionDeleteFiles++
			}
			st.DeleteBytes += df.FileSizeBytes()
			st.DeleteRecords += df.Count()
		}
	}
	return st, nil
}
