package signal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Record is one record of the signal topic.
type Record struct {
	Offset     int64
	Key, Value []byte
}

// Reader reads partition 0 of a signal topic, read_committed, from a given
// offset. It keeps no offsets of its own: its user stores the offset of each
// record it acts on (with capture's position) and starts the next Reader
// after it.
type Reader struct {
	cl    *kgo.Client
	topic string
}

// TopicConfigs returns the settings of a signal topic capture creates:
// deletion by time, never compaction (every signal has the same key).
func TopicConfigs() map[string]*string {
	return map[string]*string{"cleanup.policy": kadm.StringPtr("delete")}
}

// NewReader returns a Reader of topic starting at offset from, or, when
// from is negative, at the end of the topic as it is now (signals sent
// before then are not read).
func NewReader(ctx context.Context, brokers []string, topic string, from int64, opts ...kgo.Opt) (*Reader, int64, error) {
	if from < 0 {
		adm, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
		if err != nil {
			return nil, 0, err
		}
		ends, err := listEnds(ctx, kadm.NewClient(adm), topic)
		adm.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("listing the end of signal topic %s: %w", topic, err)
		}
		from = 0
		if o, ok := ends.Lookup(topic, 0); ok {
			from = o.Offset
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Signals deleted by retention before they were read: start at
		// the oldest one left.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		return nil, 0, fmt.Errorf("creating the signal topic reader: %w", err)
	}
	return &Reader{cl: cl, topic: topic}, from, nil
}

// topicSettle bounds how long a topic that was just created may be
// unknown to the broker that leads its partition.
const topicSettle = 30 * time.Second

// listEnds lists the end offsets of topic, waiting out
// UNKNOWN_TOPIC_OR_PARTITION for up to topicSettle: a topic capture created
// a moment before is not yet known to every broker (capture exited on it
// at start in CI, TestAdhocSnapshotKill9).
func listEnds(ctx context.Context, adm *kadm.Client, topic string) (kadm.ListedOffsets, error) {
	deadline := time.Now().Add(topicSettle)
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil || !errors.Is(err, kerr.UnknownTopicOrPartition) || time.Now().After(deadline) {
			return ends, err
		}
		select {
		case <-ctx.Done():
			return ends, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Run sends every record to out, in offset order, until ctx ends (then it
// returns nil) or the topic cannot be read.
func (r *Reader) Run(ctx context.Context, out chan<- Record) error {
	for {
		fs := r.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !kgo.IsRetryableBrokerErr(err) && ferr == nil {
				ferr = fmt.Errorf("reading signal topic %s[%d]: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		var sendErr error
		fs.EachRecord(func(rec *kgo.Record) {
			if sendErr != nil {
				return
			}
			select {
			case out <- Record{Offset: rec.Offset, Key: rec.Key, Value: rec.Value}:
			case <-ctx.Done():
				sendErr = ctx.Err()
			}
		})
		if sendErr != nil {
			return nil
		}
	}
}

// Close releases the client.
func (r *Reader) Close() { r.cl.Close() }

// Send writes one signal record (key: the topic prefix) to partition 0 of
// topic and waits for it to be acknowledged. cl must be built with
// kgo.RecordPartitioner(kgo.ManualPartitioner()).
func Send(ctx context.Context, cl *kgo.Client, topic, prefix string, value []byte) (offset int64, err error) {
	rec := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(prefix), Value: value}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return 0, fmt.Errorf("writing the signal to %s: %w", topic, err)
	}
	return rec.Offset, nil
}
