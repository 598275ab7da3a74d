package commit

import (
	"fmt"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/batch"
)

// Progress is how far a table has got, as the table itself records it:
// what status views print without the running ingest.
type Progress struct {
	// Offsets are the next Kafka offsets to consume per topic and
	// partition ([Offsets]).
	Offsets batch.Offsets
	// SourceTsMs is the newest source.ts_ms applied (database time, ms
	// since the epoch) and SourceGTID the last source.gtid applied, from
	// the newest ingest snapshot that carries them (0 and "": none does).
	SourceTsMs int64
	SourceGTID string
	// LastCommit is the time of the newest ingest snapshot (zero: none is
	// retained).
	LastCommit time.Time
	// DataFiles, DeleteFiles and Bytes are the current snapshot's totals
	// (all zero for a table without snapshots).
	DataFiles, DeleteFiles, Bytes int64
	// DeadLetters counts the table's topic records sent to the dead-letter
	// topic that its offsets have passed (DeadLettersKey).
	DeadLetters int64
}

// ReadProgress reads tbl's Progress. Snapshots another writer made (a
// compaction, S3 Tables' maintenance) carry none of ingest's summary keys
// and are passed over.
func ReadProgress(tbl *table.Table) (Progress, error) {
	offsets, err := Offsets(tbl)
	if err != nil {
		return Progress{}, err
	}
	p := Progress{Offsets: offsets, DeadLetters: DeadLetters(tbl)}
	if cur := tbl.CurrentSnapshot(); cur != nil && cur.Summary != nil {
		total := func(key string) int64 {
			n, _ := strconv.ParseInt(cur.Summary.Properties[key], 10, 64)
			return n
		}
		p.DataFiles, p.DeleteFiles, p.Bytes = total("total-data-files"), total("total-delete-files"), total("total-files-size")
	}
	var perr error
	err = walk(tbl, -1, func(s *table.Snapshot) bool {
		if s.Summary == nil || s.Summary.Properties[CommitIDKey] == "" {
			return true
		}
		if p.LastCommit.IsZero() {
			p.LastCommit = time.UnixMilli(s.TimestampMs)
		}
		props := s.Summary.Properties
		if v, ok := props[SourceTsKey]; ok {
			if p.SourceTsMs, perr = strconv.ParseInt(v, 10, 64); perr != nil {
				perr = fmt.Errorf("snapshot %d of %v: %s=%q: %w", s.SnapshotID, tbl.Identifier(), SourceTsKey, v, perr)
				return false
			}
			p.SourceGTID = props[SourceGTIDKey]
			return false
		}
		return true
	})
	if err != nil {
		return Progress{}, err
	}
	return p, perr
}
