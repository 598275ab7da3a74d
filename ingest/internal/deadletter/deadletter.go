// Package deadletter sends the records ingest cannot decode or map to a
// dead-letter topic (errors-tolerance=dlq), and knows which records an
// earlier run already sent there.
//
// A dead-lettered record is the consumed record unchanged: the same key and
// value bytes, its headers and its timestamp, plus Kafka Connect's context
// headers (errors.deadletterqueue.context.headers.enable=true):
// [HeaderTopic], [HeaderPartition], [HeaderOffset] (decimal text, as
// Connect writes them), [HeaderStage], [HeaderConnector] (the consumer
// group, which plays the part of Connect's connector name),
// [HeaderExceptionClass] and [HeaderMessage].
//
// Guarantees:
//   - Send returns only once the broker has acknowledged the record
//     (idempotent producer, acks=all), so the table commit whose offsets
//     pass a record always follows the record's durable copy on the
//     dead-letter topic: a record is never lost.
//   - Send sends a record at most once per consumer group: a record whose
//     copy the topic already holds (the group's context headers naming its
//     source topic, partition and offset, and the same key and value
//     bytes) was sent by an earlier run (one that died before the table
//     commit that passes it) and is not sent again. The topic is read for
//     that at start ([Writer.Load]) and again for a partition after it is
//     (re)assigned ([Writer.Assigned]), so a record another member sent
//     before a rebalance is not sent again either.
//   - Records already in the topic cannot suppress a dead letter: anyone
//     who may produce to the topic can write any headers, so a record is
//     passed as sent only when the topic holds that very record (its key
//     and value, at its position); a record claiming a position with other
//     bytes is logged and the record is sent anyway. What the topic holds
//     is remembered per source partition up to maxRemembered positions
//     (beyond them the lowest are forgotten: at worst a duplicate).
package deadletter

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka Connect's dead-letter context headers (DeadLetterQueueReporter).
const (
	HeaderTopic          = "__connect.errors.topic"
	HeaderPartition      = "__connect.errors.partition"
	HeaderOffset         = "__connect.errors.offset"
	HeaderConnector      = "__connect.errors.connector.name"
	HeaderStage          = "__connect.errors.stage"
	HeaderExceptionClass = "__connect.errors.exception.class.name"
	HeaderMessage        = "__connect.errors.exception.message"
)

// Stage is where in ingest a record failed; it is the value of
// [HeaderStage] and the stage label of the dead-letter metric.
type Stage string

const (
	// StageDecode: the record cannot be decoded (encoding, schema id,
	// malformed Avro or JSON, not a change envelope, a value its column
	// cannot hold).
	StageDecode Stage = "decode"
	// StageMap: the record decodes, but its schema cannot be mapped onto
	// the table (a type Iceberg cannot hold, a change Iceberg cannot
	// follow).
	StageMap Stage = "map"
)

// Config configures a Writer.
type Config struct {
	// Topic is the dead-letter topic; it is created (one partition, the
	// broker's replication factor) when it does not exist.
	Topic string
	// Group is the consumer group: written as [HeaderConnector], and only
	// the records of this group count when reading what was sent.
	Group string
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

type sourcePart struct {
	topic string
	part  int32
}

// Writer produces dead-lettered records and remembers, per source
// position, the content the topic holds. It is safe for concurrent use.
type Writer struct {
	topic, group string
	log          *slog.Logger
	pr           *kgo.Client // producer
	rd           *kgo.Client // reader of the topic, no group
	adm          *kadm.Client

	mu    sync.Mutex                      // guards the fields below; held during a catch-up
	sent  map[sourcePart]map[int64]digest // what the topic holds, by source position
	stale map[sourcePart]bool             // assigned since the last catch-up
	read  map[int32]int64                 // next offset of the dead-letter topic read, by partition
}

// New returns a Writer with its own Kafka clients built from opts (the
// seed brokers and the security options). Close it.
func New(cfg Config, opts ...kgo.Opt) (*Writer, error) {
	if cfg.Topic == "" {
		return nil, errors.New("deadletter: no topic")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pr, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))...)
	if err != nil {
		return nil, fmt.Errorf("creating the dead-letter producer: %w", err)
	}
	rd, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(cfg.Topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		pr.Close()
		return nil, fmt.Errorf("creating the dead-letter reader: %w", err)
	}
	return &Writer{
		topic: cfg.Topic, group: cfg.Group, log: cfg.Logger, pr: pr, rd: rd, adm: kadm.NewClient(pr),
		sent: map[sourcePart]map[int64]digest{}, stale: map[sourcePart]bool{}, read: map[int32]int64{},
	}, nil
}

// Topic is the dead-letter topic.
func (w *Writer) Topic() string { return w.topic }

// Close closes the Kafka clients.
func (w *Writer) Close() {
	w.pr.Close()
	w.rd.Close()
}

// Load creates the dead-letter topic if it is missing and reads it to its
// end: what earlier runs of the group sent.
func (w *Writer) Load(ctx context.Context) error {
	resp, err := w.adm.CreateTopic(ctx, 1, -1, nil, w.topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		w.log.Info("created the dead-letter topic", "topic", w.topic)
	case errors.Is(err, kerr.TopicAlreadyExists):
	default:
		return fmt.Errorf("creating the dead-letter topic %s: %w", w.topic, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.catchUp(ctx)
	if err != nil {
		return err
	}
	w.log.Info("read the dead-letter topic", "topic", w.topic, "records", n, "partitions", len(w.sent))
	return nil
}

// Assigned notes that the source partitions were (re)assigned to this
// process: before its next record of one of them is sent, the topic is
// read again, for what another member sent meanwhile.
func (w *Writer) Assigned(assigned map[string][]int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for topic, parts := range assigned {
		for _, p := range parts {
			w.stale[sourcePart{topic, p}] = true
		}
	}
}

// catchUp reads the dead-letter topic from where it stopped to its current
// end, noting the source positions of the group's records; w.mu is held.
// It returns the number of the group's records read.
func (w *Writer) catchUp(ctx context.Context) (int, error) {
	ends, err := w.adm.ListEndOffsets(ctx, w.topic)
	if err != nil {
		return 0, fmt.Errorf("reading the end of the dead-letter topic %s: %w", w.topic, err)
	}
	starts, err := w.adm.ListStartOffsets(ctx, w.topic)
	if err != nil {
		return 0, fmt.Errorf("reading the start of the dead-letter topic %s: %w", w.topic, err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			err = o.Err
			return
		}
		start, _ := starts.Lookup(w.topic, o.Partition)
		if o.Offset > max(w.read[o.Partition], start.Offset) {
			want[o.Partition] = o.Offset
		}
	})
	if err != nil {
		return 0, fmt.Errorf("reading the offsets of the dead-letter topic %s: %w", w.topic, err)
	}
	n := 0
	for len(want) > 0 {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fetches := w.rd.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return n, context.Cause(ctx)
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			return n, fmt.Errorf("reading the dead-letter topic %s: %w", w.topic, ferr)
		}
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if len(fp.Records) > 0 {
				w.read[fp.Partition] = fp.Records[len(fp.Records)-1].Offset + 1
			}
			if fp.LastStableOffset >= 0 && fp.LastStableOffset >= want[fp.Partition] && w.read[fp.Partition] >= fp.LastStableOffset {
				// Read up to the end known now (transaction markers or
				// aborted records may fill the last offsets).
				w.read[fp.Partition] = max(w.read[fp.Partition], want[fp.Partition])
			}
			for _, r := range fp.Records {
				if pos, ok := w.source(r); ok {
					n++
					w.remember(pos, digestOf(r))
				}
			}
		})
		for p, end := range want {
			if w.read[p] >= end {
				delete(want, p)
			}
		}
	}
	return n, nil
}

type sourcePos struct {
	sp     sourcePart
	offset int64
}

// digest identifies a record's content: SHA-256 of its key and value.
type digest [sha256.Size]byte

func digestOf(r *kgo.Record) digest {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(r.Key)))
	h.Write(n[:])
	h.Write(r.Key)
	h.Write(r.Value)
	var d digest
	h.Sum(d[:0])
	return d
}

// maxRemembered bounds the positions remembered per source partition, so
// that a topic flooded with records claiming one does not exhaust memory.
const maxRemembered = 1 << 16

// remember notes that the topic holds a record of content d at pos; w.mu
// is held.
func (w *Writer) remember(pos sourcePos, d digest) {
	m := w.sent[pos.sp]
	if m == nil {
		m = map[int64]digest{}
		w.sent[pos.sp] = m
	}
	m[pos.offset] = d
	if len(m) <= maxRemembered {
		return
	}
	offs := make([]int64, 0, len(m))
	for o := range m {
		offs = append(offs, o)
	}
	slices.Sort(offs)
	for _, o := range offs[:len(offs)/2] {
		delete(m, o)
	}
}

// source is where a dead-lettered record came from, when it is one of the
// group's.
func (w *Writer) source(r *kgo.Record) (sourcePos, bool) {
	var pos sourcePos
	var group string
	var okT, okP, okO bool
	for _, h := range r.Headers {
		switch h.Key {
		case HeaderTopic:
			pos.sp.topic, okT = string(h.Value), true
		case HeaderPartition:
			p, err := strconv.ParseInt(string(h.Value), 10, 32)
			pos.sp.part, okP = int32(p), err == nil
		case HeaderOffset:
			o, err := strconv.ParseInt(string(h.Value), 10, 64)
			pos.offset, okO = o, err == nil
		case HeaderConnector:
			group = string(h.Value)
		}
	}
	return pos, okT && okP && okO && group == w.group
}

// Send sends rec, which failed at stage with cause, to the dead-letter
// topic and waits for the broker's acknowledgement. It returns sent false,
// and sends nothing, when the group's records on the topic already hold
// rec (an earlier run sent it).
func (w *Writer) Send(ctx context.Context, rec *kgo.Record, stage Stage, cause error) (sent bool, err error) {
	sp := sourcePart{rec.Topic, rec.Partition}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stale[sp] {
		if _, err := w.catchUp(ctx); err != nil {
			return false, err
		}
		delete(w.stale, sp)
	}
	if held, ok := w.sent[sp][rec.Offset]; ok {
		if held == digestOf(rec) {
			return false, nil
		}
		w.log.Warn("a record on the dead-letter topic claims this record's position but holds other bytes (forged, or another source); sending the record",
			"dlq_topic", w.topic, "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset)
	}
	out := &kgo.Record{
		Topic:     w.topic,
		Key:       rec.Key,
		Value:     rec.Value,
		Timestamp: rec.Timestamp,
		Headers:   make([]kgo.RecordHeader, 0, len(rec.Headers)+7),
	}
	out.Headers = append(out.Headers, rec.Headers...)
	out.Headers = append(out.Headers,
		kgo.RecordHeader{Key: HeaderTopic, Value: []byte(rec.Topic)},
		kgo.RecordHeader{Key: HeaderPartition, Value: []byte(strconv.FormatInt(int64(rec.Partition), 10))},
		kgo.RecordHeader{Key: HeaderOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
		kgo.RecordHeader{Key: HeaderConnector, Value: []byte(w.group)},
		kgo.RecordHeader{Key: HeaderStage, Value: []byte(stage)},
		kgo.RecordHeader{Key: HeaderExceptionClass, Value: []byte(fmt.Sprintf("%T", errors.Unwrap(cause)))},
		kgo.RecordHeader{Key: HeaderMessage, Value: []byte(cause.Error())},
	)
	if err := w.pr.ProduceSync(ctx, out).FirstErr(); err != nil {
		return false, fmt.Errorf("sending %s/%d/%d to the dead-letter topic %s: %w", rec.Topic, rec.Partition, rec.Offset, w.topic, err)
	}
	w.remember(sourcePos{sp, rec.Offset}, digestOf(rec))
	return true, nil
}
