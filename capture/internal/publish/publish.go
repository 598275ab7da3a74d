// Package publish writes capture's change events and its source position
// to Kafka in one transaction, so that a read_committed consumer sees a
// change if and only if the position after it is stored.
//
// The position lives in a compacted topic, keyed by capture id: nothing is
// kept on local disk, which suits MSK-only deployments. New fences older
// producers with the same transactional id, so two captures started with
// the same id never interleave: the older one fails with ErrFenced.
//
// Schemas are registered, and records framed, by a Registry (the
// Confluent API: magic byte 0, 4-byte id) or a GlueRegistry (AWS Glue
// Schema Registry: header version 3, compression byte, 16-byte schema
// version id, as AWS's serde writes); both hand out a Frame per schema.
package publish

import (
	"cmp"
	"context"
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

// ErrFenced reports that another capture with the same id took over.
var ErrFenced = errors.New("publish: fenced by a newer capture with the same id")

// ErrCommitUnknown reports a commit that the broker answered with
// UNKNOWN_SERVER_ERROR or INVALID_TXN_STATE: whether the transaction
// committed is not known. Both were seen when a newer capture with the same
// id took the transactional id over during the commit (Kafka 4.3;
// INVALID_TXN_STATE in make test on 2026-12-06). capture stops; a restart
// resumes from the position Kafka holds, which is consistent either way.
var ErrCommitUnknown = errors.New("publish: Kafka could not say whether the transaction committed (usually a newer capture with the same id fencing this one)")

// ErrTransactionTimeout reports that the broker aborted the open
// transaction because it stayed open longer than the transaction timeout
// (a source transaction too long for --transaction-timeout). The broker
// then fences the producer, which without this check reads as ErrFenced.
var ErrTransactionTimeout = errors.New("publish: the Kafka transaction outlived its timeout and the broker aborted it")

// ErrTooLarge reports a record over the broker's or producer's size limit.
var ErrTooLarge = errors.New("publish: record too large")

// Config configures a Publisher.
type Config struct {
	// Brokers are the seed brokers.
	Brokers []string
	// ID identifies this capture; the transactional id is "binlake-capture-<ID>".
	ID string
	// OffsetsTopic holds positions (compacted, created if missing).
	OffsetsTopic string
	// TopicPartitions, TopicReplication and TopicCleanupPolicy apply to
	// change topics capture creates (Debezium's topic.creation.default.*).
	// Defaults: 1 partition, replication 1... see capture's config.
	TopicPartitions    int32
	TopicReplication   int16
	TopicCleanupPolicy string
	// MaxRecordBytes is the largest record capture produces (producer
	// batch max bytes); the topic's max.message.bytes must allow it.
	MaxRecordBytes int32
	// TransactionTimeout bounds one Kafka transaction (broker maximum: its
	// transaction.max.timeout.ms, 15 min by default).
	TransactionTimeout time.Duration
	// MaxBufferedBytes bounds the memory of records not yet acknowledged.
	MaxBufferedBytes int
	// Opts are extra client options (TLS, SASL for MSK).
	Opts []kgo.Opt
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Publisher is a transactional producer with a position topic.
type Publisher struct {
	cfg Config
	cl  *kgo.Client
	adm *kadm.Client
	log *slog.Logger

	topicsMu sync.Mutex
	topics   map[string]bool

	errMu sync.Mutex
	err   error // first produce error of the open transaction

	inTxn     bool
	opened    time.Time // when the open transaction began; zero when none
	closeOnce sync.Once
}

// Describer says what a record is, for error messages, without logging row
// values. It travels in the record's Context and is only called when the
// record fails, so a description costs nothing on the hot path.
type Describer interface {
	// Describe returns the source table (db.table) and the rendered key.
	Describe() (table, key string)
}

// New connects, creates the offsets topic if needed and fences any older
// producer with the same id (aborting its open transaction).
func New(ctx context.Context, cfg Config) (*Publisher, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.TransactionalID("binlake-capture-" + cfg.ID),
		kgo.TransactionTimeout(cfg.TransactionTimeout),
		kgo.ProducerBatchMaxBytes(cfg.MaxRecordBytes),
		kgo.MaxBufferedBytes(cfg.MaxBufferedBytes),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.Lz4Compression(), kgo.NoCompression()),
		// Records with a key go to murmur2(key) % partitions, as the
		// Java client's default partitioner does.
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(64<<10, true, true, nil)),
	}, cfg.Opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating kafka client: %w", err)
	}
	p := &Publisher{cfg: cfg, cl: cl, adm: kadm.NewClient(cl), log: logger, topics: map[string]bool{}}
	if err := p.EnsureTopic(ctx, cfg.OffsetsTopic, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, 1); err != nil {
		p.Close()
		return nil, err
	}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		p.Close()
		return nil, p.classify(fmt.Errorf("initialising the transactional producer: %w", err))
	}
	return p, nil
}

// Client is the underlying Kafka client (for metrics hooks and reads).
func (p *Publisher) Client() *kgo.Client { return p.cl }

// Close releases the client. It does not commit: an open transaction is
// aborted by the broker or by the next capture with the same id.
func (p *Publisher) Close() { p.closeOnce.Do(p.cl.Close) }

// EnsureTopic creates a topic if it does not exist. partitions 0 means the
// configured default.
func (p *Publisher) EnsureTopic(ctx context.Context, topic string, configs map[string]*string, partitions int32) error {
	p.topicsMu.Lock()
	known := p.topics[topic]
	p.topicsMu.Unlock()
	if known {
		return nil
	}
	if partitions == 0 {
		partitions = p.cfg.TopicPartitions
	}
	if configs == nil {
		configs = map[string]*string{}
		if p.cfg.TopicCleanupPolicy != "" {
			configs["cleanup.policy"] = kadm.StringPtr(p.cfg.TopicCleanupPolicy)
		}
	}
	if _, ok := configs["max.message.bytes"]; !ok && p.cfg.MaxRecordBytes > 0 {
		configs["max.message.bytes"] = kadm.StringPtr(strconv.Itoa(int(p.cfg.MaxRecordBytes) + 1024))
	}
	resp, err := p.adm.CreateTopic(ctx, partitions, p.cfg.TopicReplication, configs, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", topic, resp.Err)
	}
	if resp.Err == nil && err == nil {
		p.log.Info("created topic", "topic", topic, "partitions", partitions)
	}
	p.topicsMu.Lock()
	p.topics[topic] = true
	p.topicsMu.Unlock()
	return nil
}

// LoadPosition returns the last committed position stored under key, or
// found=false if there is none.
//
// The offsets topic is shared by every capture, so its last stable offset
// can be held back for up to a transaction timeout by another capture that
// died inside a transaction. Reading read_committed would then miss this
// capture's newest positions and resume from an older one (duplicates) or
// from none. So it reads up to the high watermark and resolves
// transactions itself from their commit and abort markers: a record counts
// only once its producer's commit marker follows it.
//
// New has fenced this capture's earlier producers by then, and the broker
// ends a fenced producer's open transaction with an abort marker. A
// position of this capture's producer still open below the high watermark
// is a hanging transaction (seen once, with Kafka 4.3.0, after a broker
// stopped while the transaction was open): its records, here and on the
// table topics, become visible with this capture's next commit marker on
// each partition, so the changes after the position loaded appear twice.
// It is logged as a warning naming the command that aborts it.
func (p *Publisher) LoadPosition(ctx context.Context, key string) (value []byte, found bool, err error) {
	value, found, open, err := loadPositionOpen(ctx, p.adm, p.cfg.Brokers, p.cfg.Opts, p.cfg.OffsetsTopic, key)
	if err != nil || len(open) == 0 {
		return value, found, err
	}
	if id, epoch, perr := p.cl.ProducerID(ctx); perr == nil {
		for _, r := range hangingOf(open, id, epoch) {
			p.log.Warn("the offsets topic holds a position of this capture's producer in a transaction the broker never ended (a hanging transaction): "+
				"its records become visible with this capture's next commit, which repeats the changes after the position resumed from on their topics; "+
				"abort it before starting capture with kafka-transactions.sh abort (find-hanging lists the partitions of table topics it holds)",
				"topic", r.Topic, "partition", r.Partition, "start_offset", r.Offset, "producer_id", r.ProducerID, "producer_epoch", r.ProducerEpoch,
				"resumed_from_committed", found)
		}
	}
	return value, found, nil
}

// hangingOf returns the records of open that producer id wrote at an
// epoch below epoch, the one it was fenced to.
func hangingOf(open []*kgo.Record, id int64, epoch int16) []*kgo.Record {
	var out []*kgo.Record
	for _, r := range open {
		if r.ProducerID == id && r.ProducerEpoch < epoch {
			out = append(out, r)
		}
	}
	return out
}

// Reader reads capture's stored positions without a producer: status
// views use it beside a running capture, which a Publisher (transactional,
// with capture's id) would fence.
type Reader struct {
	brokers []string
	opts    []kgo.Opt
	cl      *kgo.Client
	adm     *kadm.Client
}

// NewReader connects to brokers with opts (TLS, SASL).
func NewReader(brokers []string, opts []kgo.Opt) (*Reader, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("creating kafka client: %w", err)
	}
	return &Reader{brokers: brokers, opts: opts, cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Close releases the connections.
func (r *Reader) Close() { r.cl.Close() }

// LoadPosition is Publisher.LoadPosition on topic.
func (r *Reader) LoadPosition(ctx context.Context, topic, key string) ([]byte, bool, error) {
	return loadPosition(ctx, r.adm, r.brokers, r.opts, topic, key)
}

func loadPosition(ctx context.Context, adm *kadm.Client, brokers []string, opts []kgo.Opt, topic, key string) (value []byte, found bool, err error) {
	value, found, _, err = loadPositionOpen(ctx, adm, brokers, opts, topic, key)
	return value, found, err
}

// loadPositionOpen is loadPosition, and also returns the records stored
// under key in transactions that no marker ended below the high
// watermark.
func loadPositionOpen(ctx context.Context, adm *kadm.Client, brokers []string, opts []kgo.Opt, topic, key string) (value []byte, found bool, open []*kgo.Record, err error) {
	var pr positionReader
	pr.key = key
	err = readTopic(ctx, adm, brokers, opts, topic, false, pr.add)
	return pr.value, pr.found, pr.open(), err
}

// positionReader resolves the offsets topic's transactions from their
// markers, record by record, for the position stored under key.
type positionReader struct {
	key     string
	pending map[int64][]*kgo.Record // producer id → records of its open transaction
	value   []byte
	found   bool
}

func (pr *positionReader) add(r *kgo.Record) {
	switch {
	case r.Attrs.IsControl():
		recs := pr.pending[r.ProducerID]
		delete(pr.pending, r.ProducerID)
		// Control record key: version int16, type int16 (0 abort, 1 commit).
		if len(r.Key) >= 4 && r.Key[2] == 0 && r.Key[3] == 1 {
			for _, c := range recs {
				pr.value, pr.found = c.Value, c.Value != nil
			}
		}
	case string(r.Key) != pr.key:
	case r.Attrs.IsTransactional():
		if pr.pending == nil {
			pr.pending = map[int64][]*kgo.Record{}
		}
		pr.pending[r.ProducerID] = append(pr.pending[r.ProducerID], r)
	default:
		pr.value, pr.found = r.Value, r.Value != nil
	}
}

// open returns the records under key that no marker has ended, in
// offset order.
func (pr *positionReader) open() []*kgo.Record {
	var out []*kgo.Record
	for _, recs := range pr.pending {
		out = append(out, recs...)
	}
	slices.SortFunc(out, func(a, b *kgo.Record) int { return cmp.Compare(a.Offset, b.Offset) })
	return out
}

// ReadCommitted calls fn, in offset order per partition, for every
// committed record of topic that exists when it starts.
func (p *Publisher) ReadCommitted(ctx context.Context, topic string, fn func(*kgo.Record)) error {
	return p.read(ctx, topic, true, func(r *kgo.Record) {
		if !r.Attrs.IsControl() {
			fn(r)
		}
	})
}

// read calls fn for every record (control records included) up to the
// last stable offset (committed) or the high watermark (!committed, read
// uncommitted).
func (p *Publisher) read(ctx context.Context, topic string, committed bool, fn func(*kgo.Record)) error {
	return readTopic(ctx, p.adm, p.cfg.Brokers, p.cfg.Opts, topic, committed, fn)
}

func readTopic(ctx context.Context, adm *kadm.Client, brokers []string, opts []kgo.Opt, topic string, committed bool, fn func(*kgo.Record)) error {
	list, iso := adm.ListCommittedOffsets, kgo.ReadCommitted()
	if !committed {
		list, iso = adm.ListEndOffsets, kgo.ReadUncommitted()
	}
	// A topic capture has just created may not be served yet by its
	// leader (UNKNOWN_TOPIC_OR_PARTITION): ask again for a while.
	var ends, starts kadm.ListedOffsets
	for try := 0; ; try++ {
		var err error
		if ends, err = list(ctx, topic); err == nil {
			if starts, err = adm.ListStartOffsets(ctx, topic); err == nil {
				err = ends.Error()
			}
		}
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) || try >= 50 {
			return fmt.Errorf("listing offsets of %s: %w", topic, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("listing offsets of %s: %w", topic, context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
	}
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok && o.Offset > s.Offset {
			want[o.Partition] = o.Offset
			offsets[o.Partition] = kgo.NewOffset().At(s.Offset)
		}
	})
	if len(want) == 0 {
		return nil
	}
	rd, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(iso),
		// Transaction markers occupy offsets; keeping them lets the read
		// see that it reached the last stable offset.
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		return err
	}
	defer rd.Close()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for len(want) > 0 {
		fs := rd.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return fmt.Errorf("reading %s to offsets %v: %w", topic, want, err)
		}
		var ferr error
		fs.EachError(func(t string, part int32, e error) { ferr = fmt.Errorf("reading %s[%d]: %w", t, part, e) })
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := want[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			fn(r)
			if r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return nil
}

// Begin starts a transaction.
func (p *Publisher) Begin() error {
	if p.inTxn {
		return nil
	}
	if err := p.cl.BeginTransaction(); err != nil {
		return p.classify(fmt.Errorf("beginning a transaction: %w", err))
	}
	p.inTxn = true
	p.opened = time.Now()
	return nil
}

// InTxn reports whether a transaction is open.
func (p *Publisher) InTxn() bool { return p.inTxn }

// Produce buffers a record in the open transaction. It blocks when the
// buffer is full (back-pressure). A failure is reported by Commit.
func (p *Publisher) Produce(ctx context.Context, r *kgo.Record) {
	p.cl.Produce(ctx, r, p.promise)
}

func (p *Publisher) promise(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
		table, key := "?", "?"
		if d, ok := r.Context.Value(describerKey{}).(Describer); ok {
			table, key = d.Describe()
		}
		err = fmt.Errorf("%w: a change of table %s with key %s is %d bytes in topic %s; raise the capture setting max-record-bytes (CAPTURE_MAX_RECORD_BYTES) and the topic's max.message.bytes: %w",
			ErrTooLarge, table, key, len(r.Key)+len(r.Value), r.Topic, err)
	}
	p.errMu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.errMu.Unlock()
}

type describerKey struct{}

// WithDescriber returns a context carrying what a record is, for error messages.
func WithDescriber(ctx context.Context, d Describer) context.Context {
	return context.WithValue(ctx, describerKey{}, d)
}

// Err returns the first produce error of the open transaction, if any.
func (p *Publisher) Err() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	if p.err == nil {
		return nil
	}
	return p.classify(p.err)
}

// Commit writes the position under key and commits the transaction: the
// records produced since Begin and the position become visible together,
// or not at all.
func (p *Publisher) Commit(ctx context.Context, key string, position []byte) error {
	if !p.inTxn {
		return errors.New("publish: commit without a transaction")
	}
	p.Produce(ctx, &kgo.Record{Topic: p.cfg.OffsetsTopic, Key: []byte(key), Value: position, Partition: 0})
	if err := p.cl.Flush(ctx); err != nil {
		return p.abortAfter(ctx, fmt.Errorf("flushing: %w", err))
	}
	if err := p.Err(); err != nil {
		return p.abortAfter(ctx, err)
	}
	p.inTxn = false
	if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		if errors.Is(err, kerr.UnknownServerError) || errors.Is(err, kerr.InvalidTxnState) {
			return fmt.Errorf("%w: committing the transaction: %w", ErrCommitUnknown, err)
		}
		return p.classify(fmt.Errorf("committing the transaction: %w", err))
	}
	p.opened = time.Time{}
	return nil
}

func (p *Publisher) abortAfter(ctx context.Context, cause error) error {
	opened := p.opened
	aerr := p.Abort(ctx)
	p.opened = opened
	defer func() { p.opened = time.Time{} }()
	if aerr != nil {
		return p.classify(errors.Join(cause, aerr))
	}
	return p.classify(cause)
}

// Abort drops the open transaction's records.
func (p *Publisher) Abort(ctx context.Context) error {
	if !p.inTxn {
		return nil
	}
	p.inTxn = false
	defer func() { p.errMu.Lock(); p.err = nil; p.errMu.Unlock(); p.opened = time.Time{} }()
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		return fmt.Errorf("aborting buffered records: %w", err)
	}
	if err := p.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return p.classify(fmt.Errorf("aborting the transaction: %w", err))
	}
	return nil
}

// classify marks a fencing error as ErrFenced, or as ErrTransactionTimeout
// when the open transaction had outlived the transaction timeout: the
// broker aborted it and bumped the producer epoch, which the client then
// sees exactly as a newer producer's fencing.
func (p *Publisher) classify(err error) error {
	if errors.Is(err, ErrFenced) || errors.Is(err, ErrTransactionTimeout) {
		return err // classified already
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		return err
	}
	if age := time.Since(p.opened); !p.opened.IsZero() && age >= p.cfg.TransactionTimeout {
		return fmt.Errorf("%w: it was open %s, longer than --transaction-timeout (CAPTURE_TRANSACTION_TIMEOUT, now %s): raise it above the longest source transaction, and the broker's transaction.max.timeout.ms (the most a producer may ask for) with it if needed: %w",
			ErrTransactionTimeout, age.Round(time.Millisecond), p.cfg.TransactionTimeout, err)
	}
	return fmt.Errorf("%w: %w", ErrFenced, err)
}
