package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Offsets outside the log: a table's stored next offset is only a place to
// resume from while the topic's log holds it. Retention (capture creates
// topics with cleanup.policy=delete) or DeleteRecords can remove records
// the table has not applied, which puts the offset below the log's start;
// a deleted and recreated topic starts over at 0, which puts the offset
// above the log's end (or, once the new topic has grown past it, leaves it
// inside a log of other records: the topic ID the table recorded tells).
// Kafka's own answer, resetting to the log's start, would skip the gap, or
// take the new topic's records below the old offset as applied: ingest
// stops instead (OutsideLogError), naming the ways out.

// TopicIDKeyPrefix + topic is a table property: the Kafka topic ID of the
// topic whose offsets the table holds, recorded when the table's offsets
// are first found inside the topic's log. A different ID at a later
// assignment means the topic was deleted and recreated.
const TopicIDKeyPrefix = "binlake.topic-id."

// ErrOutsideLog reports a stored offset the topic's log does not hold
// (*OutsideLogError has the details).
var ErrOutsideLog = errors.New("pipeline: a stored offset is outside the topic's log")

// KeepHistory is the advice, shared with `ingest replay`, on keeping the
// records a restart or a replay needs.
const KeepHistory = "a longer retention.ms (or -1) on the topic, or compacted topics (capture's --topic-creation-default-cleanup-policy=compact; ingest/README.md, Replay)"

// OutsideLogError is a partition whose stored next offset is not in the
// topic's log, found when the partition was assigned.
type OutsideLogError struct {
	Topic     string
	Partition int32
	// Table holds the offset; empty when it came from the consumer group
	// (a topic whose table was renamed away).
	Table string
	// Stored is the next offset to consume, as stored; Start and End are
	// the log's start and end (high watermark).
	Stored, Start, End int64
	// Recreated says the topic is not the one the offset was stored for:
	// its ID differs from the one the table recorded (StoredID, ID), or its
	// log ends below the stored offset.
	Recreated    bool
	StoredID, ID string
	// Settings are the topic's cleanup.policy, retention.ms and
	// retention.bytes (TopicSettings).
	Settings string
}

func (e *OutsideLogError) Unwrap() error { return ErrOutsideLog }

func (e *OutsideLogError) Error() string {
	holder := "table " + e.Table
	prop := fmt.Sprintf("the table property %s%s", "binlake.offsets.", e.Topic)
	if e.Table == "" {
		holder = "the consumer group (the topic's table was renamed away)"
		prop = "the group's offset of the partition (kafka-consumer-groups --reset-offsets)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s holds next offset %d of topic %s partition %d, but the topic's log holds offsets %d to %d (%s). ",
		ErrOutsideLog, holder, e.Stored, e.Topic, e.Partition, e.Start, e.End, e.Settings)
	switch {
	case e.Recreated && e.StoredID != "" && e.StoredID != e.ID:
		fmt.Fprintf(&b, "The topic was deleted and recreated: its ID is %s, the offsets were stored for topic ID %s. ", e.ID, e.StoredID)
	case e.Recreated:
		b.WriteString("The log ends below the stored offset: the topic was deleted and recreated (or its log lost records). ")
	default:
		fmt.Fprintf(&b, "Records %d to %d were deleted (retention or DeleteRecords) before ingest applied them. ", e.Stored, e.Start-1)
	}
	b.WriteString("ingest does not skip them, nor take the records below the stored offset as applied. Ways out: ")
	if e.Recreated {
		fmt.Fprintf(&b, "re-snapshot the source tables into the new topic (capture snapshot --tables …) and drop the lake table to ingest the topic from its start; "+
			"or, if the new topic continues the old one's history, set %s to {\"%d\": %d} (its start)", prop, e.Partition, e.Start)
		if e.Table != "" {
			fmt.Fprintf(&b, " and remove the property %s%s", TopicIDKeyPrefix, e.Topic)
		}
		b.WriteString(".")
		return b.String()
	}
	fmt.Fprintf(&b, "re-snapshot the source tables (capture snapshot --tables …; the changes in the gap come back as their rows' current state); "+
		"or accept the gap: set %s to {\"%d\": %d} (the log's start). Then keep the history ingest needs: %s.", prop, e.Partition, e.Start, KeepHistory)
	return b.String()
}

// TopicSettings names the retention settings of the topics
// (cleanup.policy, retention.ms, retention.bytes), for messages about
// records the topics no longer hold.
func TopicSettings(ctx context.Context, adm *kadm.Client, topics []string) string {
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return "topic settings unavailable: " + err.Error()
	}
	var out []string
	for _, rc := range rcs {
		var kv []string
		for _, c := range rc.Configs {
			switch c.Key {
			case "cleanup.policy", "retention.ms", "retention.bytes":
				kv = append(kv, c.Key+"="+c.MaybeValue())
			}
		}
		slices.Sort(kv)
		out = append(out, rc.Name+": "+strings.Join(kv, " "))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// positioned is a partition whose fetch offset was set from a stored
// offset at assignment.
type positioned struct {
	topic string
	part  int32
	next  int64
	// table is the table that holds the offset (nil: the group's offset);
	// props its properties, when read (ids set): the recorded topic ID is
	// checked, or recorded when there is none.
	table table.Identifier
	props iceberg.Properties
	ids   bool
}

// checkLog returns an *OutsideLogError for the first partition of ps whose
// stored offset the topic's log does not hold, and records the topic's ID
// in the tables that hold none yet.
func (p *Pipeline) checkLog(ctx context.Context, ps []positioned) error {
	if len(ps) == 0 {
		return nil
	}
	var topics []string
	for _, x := range ps {
		topics = append(topics, x.topic)
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	adm := kadm.NewClient(p.cl)
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("listing the start offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("listing the end offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("describing topics %s: %w", strings.Join(topics, ", "), err)
	}
	type rec struct {
		ident table.Identifier
		topic string
	}
	var record []rec
	for _, x := range ps {
		s, ok := starts.Lookup(x.topic, x.part)
		if !ok {
			return fmt.Errorf("listing the start offset of %s partition %d: no answer", x.topic, x.part)
		}
		e, ok := ends.Lookup(x.topic, x.part)
		if !ok {
			return fmt.Errorf("listing the end offset of %s partition %d: no answer", x.topic, x.part)
		}
		if s.Err != nil {
			return fmt.Errorf("listing the start offset of %s partition %d: %w", x.topic, x.part, s.Err)
		}
		if e.Err != nil {
			return fmt.Errorf("listing the end offset of %s partition %d: %w", x.topic, x.part, e.Err)
		}
		id := ""
		if d, ok := details[x.topic]; ok && d.ID != (kadm.TopicID{}) {
			id = d.ID.String()
		}
		storedID := x.props[TopicIDKeyPrefix+x.topic]
		oe := &OutsideLogError{Topic: x.topic, Partition: x.part, Table: strings.Join(x.table, "."), Stored: x.next,
			Start: s.Offset, End: e.Offset, StoredID: storedID, ID: id}
		switch {
		case storedID != "" && id != "" && storedID != id:
			oe.Recreated = true
		case x.next > e.Offset:
			oe.Recreated = true
		case x.next < s.Offset:
		default:
			if x.ids && storedID == "" && id != "" {
				record = append(record, rec{x.table, x.topic})
			}
			continue
		}
		oe.Settings = TopicSettings(ctx, adm, []string{x.topic})
		return oe
	}
	// Recording an ID is what lets a later start tell a recreated topic
	// from this one; it is no reason to hold the partitions back. A
	// catalog that does not answer within recordTopicIDTimeout (down, or
	// slow) leaves the ID to the next assignment, with a warning, and the
	// partitions are consumed as usual.
	for _, r := range record {
		rctx, cancel := context.WithTimeout(ctx, recordTopicIDTimeout)
		err := p.recordTopicID(rctx, r.ident, r.topic, details[r.topic].ID.String())
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			p.log.Warn("could not record the topic ID in the table; a recreated topic is detected from the next assignment that records it",
				"table", strings.Join(r.ident, "."), "topic", r.topic, "error", err)
		}
	}
	return nil
}

// recordTopicIDTimeout bounds the catalog commit that records a topic's ID
// at assignment.
const recordTopicIDTimeout = 10 * time.Second

// recordTopicID sets the table property TopicIDKeyPrefix+topic of table
// ident to id, unless it is set already. It sets that property alone,
// so it does not race with commits (which never set it).
func (p *Pipeline) recordTopicID(ctx context.Context, ident table.Identifier, topic, id string) error {
	key := TopicIDKeyPrefix + topic
	return retryCatalog(ctx, func() error {
		tbl, err := p.cat.LoadTable(ctx, ident)
		if err != nil {
			return fmt.Errorf("loading table %v: %w", ident, err)
		}
		if tbl.Properties()[key] != "" {
			return nil
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{key: id}); err != nil {
			return fmt.Errorf("recording the topic ID of %s in table %v: %w", topic, ident, err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("recording the topic ID of %s in table %v: %w", topic, ident, err)
		}
		return nil
	})
}

// outOfRange is the error of a fetch that got OFFSET_OUT_OF_RANGE for
// partition part of topic while consuming (the client does not reset:
// ConsumeResetOffset is NoResetOffset): retention removed records before
// ingest read them, or the topic was recreated under it. It names the
// log's range and the topic's settings; a restart positions the partition
// at its table's offset and checks it (checkLog).
func (p *Pipeline) outOfRange(ctx context.Context, topic string, part int32, err error) error {
	adm := kadm.NewClient(p.cl)
	where := "the log's range unavailable"
	if starts, serr := adm.ListStartOffsets(ctx, topic); serr == nil {
		if ends, eerr := adm.ListEndOffsets(ctx, topic); eerr == nil {
			s, _ := starts.Lookup(topic, part)
			e, _ := ends.Lookup(topic, part)
			where = fmt.Sprintf("the log now holds offsets %d to %d", s.Offset, e.Offset)
		}
	}
	return fmt.Errorf("%w: fetching %s partition %d: %w: %s (%s); records were deleted before ingest read them (retention outpacing ingest, or DeleteRecords), "+
		"or the topic was recreated. ingest does not skip them: on restart the partition resumes from its table's offset and, if the log no longer holds it, "+
		"stops naming the ways out; keep the history ingest needs: %s",
		ErrOutsideLog, topic, part, err, where, TopicSettings(ctx, adm, []string{topic}), KeepHistory)
}
