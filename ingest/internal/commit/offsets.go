package commit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/batch"
)

// Snapshot summary properties written by every ingest commit. They are the
// source of truth for what a table holds: consumption resumes from
// OffsetsKeyPrefix+topic, and CommitIDKey resolves ambiguous commits.
const (
	// OffsetsKeyPrefix + topic holds the next Kafka offset to consume per
	// partition of topic, as JSON {"<partition>": <next offset>, ...}. The
	// map is cumulative: it includes partitions from earlier commits.
	OffsetsKeyPrefix = "binlake.offsets."
	// CommitIDKey holds the UUID of the commit (one per Committer.Commit
	// call, kept across its retries).
	CommitIDKey = "binlake.commit-id"
	// SourceTsKey holds the largest source.ts_ms of the committed events
	// (database time, ms since epoch), for freshness monitoring.
	SourceTsKey = "binlake.source.ts-ms"
	// SourceGTIDKey holds the last source.gtid of the committed events in
	// Kafka order (absent when the events carried none).
	SourceGTIDKey = "binlake.source.gtid"
)

// encodeOffsets renders one topic's partition offsets as JSON.
func encodeOffsets(parts map[int32]int64) string {
	m := make(map[string]int64, len(parts))
	for p, n := range parts {
		m[strconv.FormatInt(int64(p), 10)] = n
	}
	b, _ := json.Marshal(m) // map[string]int64 always marshals; keys come out sorted
	return string(b)
}

func decodeOffsets(s string) (map[int32]int64, error) {
	var m map[string]int64
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	out := make(map[int32]int64, len(m))
	for k, v := range m {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("partition %q: %w", k, err)
		}
		out[int32(p)] = v
	}
	return out, nil
}

// summaryProps builds the snapshot properties of a commit.
func summaryProps(commitID string, offsets batch.Offsets, col *batch.Collapsed) iceberg.Properties {
	props := iceberg.Properties{CommitIDKey: commitID}
	for topic, parts := range offsets {
		props[OffsetsKeyPrefix+topic] = encodeOffsets(parts)
	}
	if col.MaxTsMs > 0 {
		props[SourceTsKey] = strconv.FormatInt(col.MaxTsMs, 10)
	}
	if col.LastGTID != "" {
		props[SourceGTIDKey] = col.LastGTID
	}
	return props
}

// Offsets recovers the Kafka offsets a table holds: walking the snapshot
// chain back from the current snapshot of main, for each topic the offsets
// of the newest snapshot that carries OffsetsKeyPrefix+topic. Snapshots
// without ingest properties (compaction, maintenance, other writers) are
// skipped. A table without any returns empty Offsets.
func Offsets(tbl *table.Table) (batch.Offsets, error) {
	out := batch.Offsets{}
	if offsetStoreDisabled {
		return out, nil
	}
	err := walk(tbl, -1, func(s *table.Snapshot) bool {
		if s.Summary == nil {
			return true
		}
		for k, v := range s.Summary.Properties {
			topic, ok := strings.CutPrefix(k, OffsetsKeyPrefix)
			if !ok {
				continue
			}
			if _, seen := out[topic]; seen {
				continue
			}
			parts, err := decodeOffsets(v)
			if err != nil {
				// A corrupt value is ignored for this snapshot; an older
				// one may still be valid. Keep walking.
				continue
			}
			out[topic] = parts
		}
		return true
	})
	return out, err
}

// walk calls fn for each snapshot from the current snapshot of main back
// through its ancestors, stopping after the snapshot stop (exclusive), when
// fn returns false, or when an ancestor is missing (expired).
func walk(tbl *table.Table, stop int64, fn func(*table.Snapshot) bool) error {
	s := tbl.CurrentSnapshot()
	for seen := 0; s != nil; seen++ {
		if s.SnapshotID == stop || !fn(s) {
			return nil
		}
		if s.ParentSnapshotID == nil {
			return nil
		}
		if seen > 1_000_000 {
			return fmt.Errorf("snapshot chain of %s has a cycle or is too long", tbl.Identifier())
		}
		s = tbl.SnapshotByID(*s.ParentSnapshotID)
	}
	return nil
}

// findCommit reports whether a snapshot committed after base (exclusive;
// -1 = search everything) carries commitID.
func findCommit(tbl *table.Table, base int64, commitID string) (int64, bool) {
	var found int64
	ok := false
	_ = walk(tbl, base, func(s *table.Snapshot) bool {
		if s.Summary != nil && s.Summary.Properties[CommitIDKey] == commitID {
			found, ok = s.SnapshotID, true
			return false
		}
		return true
	})
	return found, ok
}
