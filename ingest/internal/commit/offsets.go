package commit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/batch"
)

// Properties written by every ingest commit, both in the snapshot summary
// and, in the same commit, in the table properties (where snapshot expiry
// cannot remove them). They are the source of truth for what a table holds:
// consumption resumes from OffsetsKeyPrefix+topic, and CommitIDKey resolves
// ambiguous commits.
const (
	// OffsetsKeyPrefix + topic holds the next Kafka offset to consume per
	// partition of topic, as JSON {"<partition>": <next offset>, ...}. The
	// map is cumulative: it includes partitions from earlier commits.
	OffsetsKeyPrefix = "binlake.offsets."
	// FirstOffsetsKeyPrefix + topic, in the snapshot summary only, holds
	// the offset of the first record the commit applied in each partition
	// it advanced, as JSON {"<partition>": <offset>, ...}: with the
	// offsets of the snapshot before, a validator can tell that no record
	// between them was skipped (Kafka offsets have gaps of their own:
	// transaction markers, compaction). Not a prefix of OffsetsKeyPrefix.
	FirstOffsetsKeyPrefix = "binlake.first-offsets."
	// CommitIDKey holds the UUID of the commit (one per Committer.Commit
	// call, kept across its retries).
	CommitIDKey = "binlake.commit-id"
	// SourceTsKey holds the largest source.ts_ms of the committed events
	// (database time, ms since epoch), for freshness monitoring.
	SourceTsKey = "binlake.source.ts-ms"
	// SourceGTIDKey holds the last source.gtid of the committed events in
	// Kafka order (absent when the events carried none).
	SourceGTIDKey = "binlake.source.gtid"
	// TruncateWatermarkKey is a table property: the source order
	// (batch.SourceOrder) of the latest truncate the table applied. Rows
	// below it were deleted, and a change below it that arrives later (from
	// a lagging partition or process) is dropped.
	TruncateWatermarkKey = "binlake.truncate.source-order"
	// EpochsKey is a table property: the binlog histories the table's
	// changes came from (batch.Epochs, JSON), whose index is the epoch in
	// the top bits of every source order the table holds, the truncate
	// watermark's included.
	EpochsKey = "binlake.source.epochs"
	// DeadLettersKey holds the number of the table's topic records that
	// went to the dead-letter topic (errors-tolerance=dlq) and that the
	// table's offsets have passed, cumulative over the table's commits; set
	// by the commits that pass such records (a table property, and in the
	// summary of a commit that makes a snapshot).
	DeadLettersKey = "binlake.dead-letters"
)

// DeadLetters is the table's count of dead-lettered records its offsets
// have passed (DeadLettersKey), 0 when it has none or the value is not a
// number.
func DeadLetters(tbl *table.Table) int64 {
	n, err := strconv.ParseInt(tbl.Properties()[DeadLettersKey], 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// ErrOffsetsLost reports a table that has snapshots but whose consumed
// Kafka offsets are nowhere to be found: ingest does not know where to
// resume and will not start the table's partitions over on its own.
var ErrOffsetsLost = errors.New("commit: the table's Kafka offsets are lost")

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

// tableProps builds the table properties a commit sets: its offsets, its
// commit id and the truncate watermark when it rose.
func tableProps(commitID string, offsets batch.Offsets, watermark int64) iceberg.Properties {
	props := iceberg.Properties{CommitIDKey: commitID}
	for topic, parts := range offsets {
		props[OffsetsKeyPrefix+topic] = encodeOffsets(parts)
	}
	if watermark > 0 {
		props[TruncateWatermarkKey] = strconv.FormatInt(watermark, 10)
	}
	return props
}

// summaryProps builds the snapshot properties of a commit.
func summaryProps(commitID string, offsets batch.Offsets, col *batch.Collapsed) iceberg.Properties {
	props := iceberg.Properties{CommitIDKey: commitID}
	for topic, parts := range offsets {
		props[OffsetsKeyPrefix+topic] = encodeOffsets(parts)
	}
	for topic, parts := range col.First {
		props[FirstOffsetsKeyPrefix+topic] = encodeOffsets(parts)
	}
	if col.MaxTsMs > 0 {
		props[SourceTsKey] = strconv.FormatInt(col.MaxTsMs, 10)
	}
	if col.LastGTID != "" {
		props[SourceGTIDKey] = col.LastGTID
	}
	return props
}

// Offsets recovers the Kafka offsets a table holds. They are read from the
// table properties (OffsetsKeyPrefix+topic, written with every commit), and,
// for a table last written before ingest kept them there, from the
// snapshots of main: each topic's from the newest whose summary carries
// that topic's. A table without snapshots or offsets holds none (empty
// Offsets). A table that has snapshots but no offsets anywhere (its ingest
// snapshots expired, or written by another tool) returns an error wrapping
// ErrOffsetsLost that names the table and the way out.
func Offsets(tbl *table.Table) (batch.Offsets, error) {
	out := batch.Offsets{}
	if offsetStoreDisabled {
		return out, nil
	}
	found, err := readOffsets(tbl.Properties(), out)
	if err != nil {
		return nil, fmt.Errorf("reading the offsets in the properties of table %v: %w", tbl.Identifier(), err)
	}
	if found {
		return out, nil
	}
	var werr error
	err = walk(tbl, -1, func(s *table.Snapshot) bool {
		if s.Summary == nil {
			return true
		}
		// Each topic's offsets from the newest snapshot that has them: a
		// commit records only the topics it consumed.
		these := batch.Offsets{}
		var has bool
		has, werr = readOffsets(s.Summary.Properties, these)
		if werr != nil {
			werr = fmt.Errorf("reading the offsets in snapshot %d of table %v: %w", s.SnapshotID, tbl.Identifier(), werr)
			return false
		}
		for topic, parts := range these {
			if _, ok := out[topic]; !ok {
				out[topic] = parts
			}
		}
		found = found || has
		return true
	})
	switch {
	case err != nil:
		return nil, err
	case werr != nil:
		return nil, werr
	case found || tbl.CurrentSnapshot() == nil:
		return out, nil
	}
	return nil, fmt.Errorf("%w: table %v has snapshots (current %d) but neither its properties nor a retained snapshot carries %s<topic>: "+
		"its ingest snapshots were expired before offsets were kept in the properties, or another tool wrote it. "+
		"ingest will not start its partitions over: set the table property %s<topic> to the next offsets to consume, "+
		`as JSON {"<partition>": <offset>, ...} (from the group's committed offsets or an old metadata file), or drop the table to ingest the topic from its start`,
		ErrOffsetsLost, tbl.Identifier(), tbl.CurrentSnapshot().SnapshotID, OffsetsKeyPrefix, OffsetsKeyPrefix)
}

// readOffsets adds to out the offsets in props and reports whether there
// were any.
func readOffsets(props map[string]string, out batch.Offsets) (bool, error) {
	found := false
	for k, v := range props {
		topic, ok := strings.CutPrefix(k, OffsetsKeyPrefix)
		if !ok {
			continue
		}
		parts, err := decodeOffsets(v)
		if err != nil {
			return false, fmt.Errorf("%s: %w", k, err)
		}
		out[topic] = parts
		found = true
	}
	return found, nil
}

// Watermark returns the table's truncate watermark (TruncateWatermarkKey),
// 0 when it has none.
func Watermark(tbl *table.Table) (int64, error) {
	v, ok := tbl.Properties()[TruncateWatermarkKey]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("table %v: property %s=%q: %w (set it to the source order of the table's last truncate, or remove it)", tbl.Identifier(), TruncateWatermarkKey, v, err)
	}
	return n, nil
}

// Epochs returns the table's binlog histories (EpochsKey), none when it
// has none.
func Epochs(tbl *table.Table) (batch.Epochs, error) {
	hs, err := batch.ParseEpochs(tbl.Properties()[EpochsKey])
	if err != nil {
		return nil, fmt.Errorf("table %v: property %s: %w (remove it only with the truncate watermark %s)", tbl.Identifier(), EpochsKey, err, TruncateWatermarkKey)
	}
	return hs, nil
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

// findCommit reports whether the table properties or a snapshot committed
// after base (exclusive; -1 = search everything) carry commitID. A commit
// found in the properties alone (one that wrote no snapshot) reports the
// current snapshot, or 0.
func findCommit(tbl *table.Table, base int64, commitID string) (int64, bool) {
	var found int64
	ok := false
	if tbl.Properties()[CommitIDKey] == commitID {
		if s := tbl.CurrentSnapshot(); s != nil {
			found = s.SnapshotID
		}
		return found, true
	}
	_ = walk(tbl, base, func(s *table.Snapshot) bool {
		if s.Summary != nil && s.Summary.Properties[CommitIDKey] == commitID {
			found, ok = s.SnapshotID, true
			return false
		}
		return true
	})
	return found, ok
}

// ParseOffsets returns the offsets held by props (table properties or a
// snapshot summary: OffsetsKeyPrefix+topic keys); empty when none.
func ParseOffsets(props map[string]string) (batch.Offsets, error) {
	out := batch.Offsets{}
	if _, err := readOffsets(props, out); err != nil {
		return nil, err
	}
	return out, nil
}
