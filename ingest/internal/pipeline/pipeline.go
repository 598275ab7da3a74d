// Package pipeline consumes Debezium change topics from Kafka and upserts
// them into Iceberg tables, exactly once.
//
// One franz-go group consumer reads the topics (read_committed, so only
// committed capture transactions are seen) and routes each record to the
// goroutine that owns its table. A topic <prefix>.<db>.<table> is one table,
// named by schemamap.Namer. The table goroutine decodes its records, buffers
// them in a batch.Buffer and commits the buffer with commit.Committer when a
// limit (rows, bytes, age, or the shared memory bound) is reached.
//
// Guarantees:
//   - Iceberg is the source of truth for consumed offsets. When partitions
//     are assigned, their fetch offsets are set to the offsets recovered
//     from the table (commit.Offsets: its properties, kept with every
//     commit, or its snapshots). A table that holds other topics' offsets
//     but not its own took its name in a rename that swapped names: the
//     topic's offsets are those the renamed-away table carries
//     (carriedOffsets). Only a topic whose table does not exist (renamed
//     away, see rename.go; or new) resumes from the consumer group's offset,
//     else the start of the partition. A table with snapshots but no
//     offsets stops ingest (commit.ErrOffsetsLost): no partition is started
//     over on its own. Consumer-group offsets are committed only after the
//     Iceberg commit. A stored offset the topic's log does not hold (below
//     its start: retention; above its end or under another topic ID: a
//     recreated topic) stops ingest with an *OutsideLogError (logrange.go);
//     the consumer never resets an offset on its own.
//   - Table renames are followed from the schema-change topic (rename.go),
//     and so are column renames, as Iceberg column renames that keep the
//     field id (colrename.go; follower.go notes them).
//   - Truncates and change logs follow source order (batch.SourceOrder in
//     every row's schemamap.SourceOrderColumn), whatever the partitioning
//     and the number of ingest processes.
//   - Every commit stores its offsets in the same snapshot as its rows and
//     skips events a table already holds, so a replay after a crash, a
//     rebalance or an ambiguous commit never applies a change twice.
//   - Order per key is Kafka order (Debezium keys records by primary key).
//   - Bad records (errors-tolerance=dlq, Config.DeadLetter): a record
//     that cannot be decoded or mapped is sent to the dead-letter topic,
//     acknowledged before any commit whose offsets pass it, and then
//     passed (batch.Buffer.Pass) so that the table's next commit records
//     its offset; deadletter.Writer skips a record an earlier run sent.
//     Without a dead-letter topic such a record stops ingest.
//   - Backpressure: each table has a bounded queue, and the buffered
//     bytes of all tables are bounded; polling waits when either is full.
//   - Schema changes: a new value schema flushes the buffer, evolves the
//     table with schemamap.Evolve/Apply, and continues. An incompatible
//     change stops ingest with an error naming the column and the fix.
//
// Lock order: Pipeline.mu is never held while sending to a table queue;
// Pipeline.ownMu is a leaf (nothing is locked or sent while it is held);
// Pipeline.nameMu is taken before Pipeline.createMu.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/deadletter"
	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/schemamap"
)

// ErrIncompatible wraps a source schema change a table cannot follow; the
// error text carries schemamap's reason and fix.
var ErrIncompatible = errors.New("pipeline: incompatible schema change")

// Config configures a Pipeline.
type Config struct {
	// Brokers are the Kafka seed brokers.
	Brokers []string
	// Group is the consumer group id.
	Group string
	// Topics are consumed by name; TopicRegex, when set, instead consumes
	// every topic whose whole name matches it.
	Topics     []string
	TopicRegex string
	// Namer names the table of a topic <prefix>.<db>.<table>; its Prefix
	// is ignored (the topic's own prefix is used). Its Map's source names
	// are matched as topics spell them (characters Kafka does not allow
	// replaced by _).
	Namer schemamap.Namer
	// Limits bound each table's buffer (defaults: batch.Limits).
	Limits batch.Limits
	// MaxBufferedBytes bounds the bytes buffered by all tables together;
	// a table flushes early when it is exceeded. Default 512 MiB.
	MaxBufferedBytes int64
	// QueueRecords is the capacity of each table's queue. Default 4096.
	QueueRecords int
	// FetchPartitionBytes is the most a fetch takes of one partition
	// (Kafka's max.partition.fetch.bytes). Default 4 MiB: a table's
	// topic often has one partition, and at franz-go's 1 MiB the fetch
	// round trips pace a catch-up. Fetches of all partitions together
	// stay within franz-go's 50 MiB per broker.
	FetchPartitionBytes int32
	// Commit configures each table's Committer; its DeleteMode is replaced
	// by the table's entry in DeleteModes.
	Commit commit.Config
	// DeleteModes are the tables' delete modes (the zero value: equality for
	// every table).
	DeleteModes DeleteModes
	// ShutdownTimeout bounds the final commits on shutdown. Default 30s.
	ShutdownTimeout time.Duration
	// SessionTimeout is the group session timeout: how long the group
	// waits for a member that stopped heartbeating before its partitions
	// go to the others. Default 45s (franz-go's). Heartbeats are sent
	// every third of it, at most every 3s.
	SessionTimeout time.Duration
	// KeylessAppend keeps tables without a primary key as append-only
	// change logs (schemamap.ChangeLog); false stops ingest at their first
	// change.
	KeylessAppend bool
	// Partitions are the partition specs of tables ingest creates
	// (default: unpartitioned). Only primary-key columns are accepted.
	Partitions PartitionSpecs
	// LowerCaseColumns names the columns of tables lower-case
	// (schemamap.LowerColumns), for catalogs whose readers need it (S3
	// Tables and Glue: Athena sees no table with an upper-case column).
	// Default false: columns keep their source names.
	LowerCaseColumns bool
	// TableProperties are set on tables ingest creates (format-version is
	// always FormatVersion).
	TableProperties map[string]string
	// FormatVersion is the Iceberg format version of the tables ingest
	// creates: 2 (default) or 3. On a v3 table a column added with a
	// DEFAULT carries it as initial-default (schemamap.Apply).
	FormatVersion int
	// BackfillDefaults rewrites a table's rows with an added column's
	// default in the commit that adds the column, where the table cannot
	// carry the default (schemamap.Change.Backfill). Default false: those
	// rows read NULL.
	BackfillDefaults bool
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Metrics; nil means none.
	Metrics *Metrics
	// DeadLetter, when set (errors-tolerance=dlq), takes the records that
	// cannot be decoded or mapped: each is sent to the dead-letter topic,
	// and the table's offsets pass it (see worker.reject). nil
	// (errors-tolerance=none): such a record stops ingest. The caller
	// loads and closes it.
	DeadLetter *deadletter.Writer
	// ClientOpts are extra franz-go options (e.g. SASL, TLS, a logger).
	ClientOpts []kgo.Opt
}

// Validate checks the settings.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("no Kafka brokers"))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("no consumer group"))
	}
	if (len(c.Topics) == 0) == (c.TopicRegex == "") {
		errs = append(errs, errors.New("set exactly one of topics and topic regex"))
	}
	if c.TopicRegex != "" {
		if _, err := regexp.Compile(c.TopicRegex); err != nil {
			errs = append(errs, fmt.Errorf("topic regex: %w", err))
		}
	}
	if c.Limits.MaxRows < 0 || c.Limits.MaxBytes < 0 || c.Limits.MaxAge < 0 || c.MaxBufferedBytes < 0 || c.QueueRecords < 0 || c.FetchPartitionBytes < 0 {
		errs = append(errs, errors.New("negative limit"))
	}
	if err := c.Commit.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.MaxBufferedBytes == 0 {
		c.MaxBufferedBytes = 512 << 20
	}
	if c.FetchPartitionBytes == 0 {
		c.FetchPartitionBytes = 4 << 20
	}
	if c.QueueRecords == 0 {
		c.QueueRecords = 4096
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 45 * time.Second
	}
	if c.FormatVersion == 0 {
		c.FormatVersion = 2
	}
	if c.Limits.MaxAge == 0 {
		c.Limits.MaxAge = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Pipeline is a running ingest.
type Pipeline struct {
	createMu sync.Mutex // serialises namespace creation
	nameMu   sync.Mutex // held from resolving a new table's name to its creation (names.go)
	cfg      Config
	cat      catalog.Catalog
	dec      *decode.Decoder
	log      *slog.Logger
	cl       *kgo.Client

	buffered atomic.Int64 // bytes buffered by all tables
	ready    atomic.Bool

	ownMu sync.Mutex
	owned map[string]map[int32]bool // partitions assigned to this member, by topic

	mu      sync.Mutex
	tables  map[string]*worker // by topic
	closing bool
	wg      sync.WaitGroup
	errOnce sync.Once
	err     error
	failed  chan struct{} // closed when a table fails

	ren *renamer
	// colRenames are the column renames noted from schema-change records
	// for the table workers to apply (colrename.go).
	colRenames columnRenames

	// followers are the schema topics this process follows (follower.go),
	// started under folCtx, the workers' context.
	folMu     sync.Mutex
	followers map[string]bool
	folCtx    context.Context

	// heldBy is, for a topic with dots in its names, the table that held
	// its offsets at assignment (heldIdent); guarded by mu.
	heldBy map[string]table.Identifier

	// commitLocks are, by table identifier, held by each commit of the
	// table and by in-process maintenance of it (HoldTable).
	lockMu      sync.Mutex
	commitLocks map[string]chan struct{}
}

// commitLock is the table's commit lock: a channel of capacity one, held
// while it holds a value.
func (p *Pipeline) commitLock(ident table.Identifier) chan struct{} {
	p.lockMu.Lock()
	defer p.lockMu.Unlock()
	if p.commitLocks == nil {
		p.commitLocks = map[string]chan struct{}{}
	}
	k := strings.Join(ident, "\x00")
	l := p.commitLocks[k]
	if l == nil {
		l = make(chan struct{}, 1)
		p.commitLocks[k] = l
	}
	return l
}

// lockCommits waits until no commit or maintenance of the table is in
// progress and holds its commit lock; it returns ctx's error when ctx
// ends first.
func (p *Pipeline) lockCommits(ctx context.Context, ident table.Identifier) (release func(), err error) {
	l := p.commitLock(ident)
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// HoldTable pauses the commits of table ident (made by this process) until
// release is called: the table's batches keep buffering, bounded by
// max-buffered-bytes. It waits for a commit in progress to end. In-process
// maintenance holds each table it maintains, so that its compaction is
// not starved by commits every flush interval.
func (p *Pipeline) HoldTable(ctx context.Context, ident table.Identifier) (release func(), err error) {
	return p.lockCommits(ctx, ident)
}

// New returns a pipeline reading with a new Kafka client. Close it.
func New(cfg Config, cat catalog.Catalog, dec *decode.Decoder) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := topicNameMap(cfg.Namer.Map)
	if err != nil {
		return nil, err
	}
	cfg.Namer.Map = m
	p := &Pipeline{cfg: cfg, cat: cat, dec: dec, log: cfg.Logger, tables: map[string]*worker{}, failed: make(chan struct{}), ren: newRenamer()}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(cfg.Group),
		kgo.SessionTimeout(cfg.SessionTimeout),
		kgo.HeartbeatInterval(min(3*time.Second, cfg.SessionTimeout/3)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxPartitionBytes(cfg.FetchPartitionBytes),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		// Every partition is positioned (adjustOffsets: the table's
		// offset, the group's, or the log's start); an offset that leaves
		// the log while it is consumed (retention outpacing ingest) is an
		// error, not a silent jump to the log's start (fetchError).
		kgo.ConsumeResetOffset(kgo.NoResetOffset().AtStart()),
		kgo.OnPartitionsAssigned(p.assigned),
		kgo.OnPartitionsRevoked(p.revoked),
		kgo.OnPartitionsLost(p.lost),
		kgo.AdjustFetchOffsetsFn(p.adjustOffsets),
		// Transaction markers are delivered (and skipped by the workers) so
		// that a worker knows when it has read its topic up to an offset,
		// which a rename waits for.
		kgo.KeepControlRecords(),
	}
	if cfg.TopicRegex != "" {
		// New tables appear as new topics: look for them every 10 s
		// rather than at the client's default metadata age of 5 min.
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics("^(?:"+cfg.TopicRegex+")$"), kgo.MetadataMaxAge(10*time.Second))
	} else {
		opts = append(opts, kgo.ConsumeTopics(cfg.Topics...))
	}
	cl, err := kgo.NewClient(append(opts, cfg.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("creating the Kafka client: %w", err)
	}
	p.cl = cl
	return p, nil
}

// topicNameMap is m with its source names spelled as in topics.
func topicNameMap(m schemamap.NameMap) (schemamap.NameMap, error) {
	if len(m) == 0 {
		return m, nil
	}
	out := make(schemamap.NameMap, len(m))
	from := map[schemamap.SourceTable]schemamap.SourceTable{}
	for src, id := range m {
		k := schemamap.SourceTable{DB: topicUnsafe.ReplaceAllString(src.DB, "_"), Table: topicUnsafe.ReplaceAllString(src.Table, "_")}
		if prev, dup := from[k]; dup {
			return nil, fmt.Errorf("table-name-map: %s.%s and %s.%s have one topic name (%s.%s): map only one of them", prev.DB, prev.Table, src.DB, src.Table, k.DB, k.Table)
		}
		from[k], out[k] = src, id
	}
	return out, nil
}

// Ready reports whether the pipeline has joined its group and is polling.
func (p *Pipeline) Ready() bool { return p.ready.Load() }

// Ping checks that the brokers answer.
func (p *Pipeline) Ping(ctx context.Context) error { return p.cl.Ping(ctx) }

// Run polls until ctx is done or a table fails, then commits what the
// tables hold (within ShutdownTimeout) and closes the Kafka client. It
// returns nil after a clean stop on ctx.
func (p *Pipeline) Run(ctx context.Context) error {
	defer p.cl.Close()
	// Workers run under their own context: not cancelled with ctx, so
	// that the final commits can run, but cancelled when ShutdownTimeout
	// passes, so that a commit stuck on an unreachable catalog cannot
	// hold the stop.
	wctx, wcancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer wcancel(nil)
	// The followers stop with intake: a rename is repeated after a
	// restart, and the workers' final commits do not wait for one.
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	p.folMu.Lock()
	p.folCtx = fctx
	p.folMu.Unlock()
	pollErr := p.poll(ctx, wctx)
	fcancel()
	p.ready.Store(false)
	failedBefore := p.firstErr() != nil

	// Phase two: stop intake is done; commit or abandon what is buffered.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.ShutdownTimeout)
	defer cancel()
	stop := context.AfterFunc(dctx, func() { wcancel(errShutdownDeadline) })
	defer stop()
	p.mu.Lock()
	p.closing = true
	workers := make([]*worker, 0, len(p.tables))
	for _, w := range p.tables {
		workers = append(workers, w)
	}
	p.mu.Unlock()
	for _, w := range workers {
		if err := w.request(dctx, ctlFlush); err != nil && pollErr == nil && p.firstErr() == nil {
			p.log.Warn("final commit failed; the table resumes from its last commit", "table", w.ident, "error", err)
		}
		close(w.in)
	}
	p.wg.Wait()
	if pollErr != nil {
		return pollErr
	}
	if err := p.firstErr(); err != nil && !failedBefore && errors.Is(context.Cause(wctx), errShutdownDeadline) {
		// The deadline cut a final commit short: nothing of it was
		// acknowledged, the next start re-reads it from the table's
		// offsets.
		p.log.Warn("shutdown timeout passed: abandoned the open batches; they are re-read on the next start", "timeout", p.cfg.ShutdownTimeout, "error", err)
		return nil
	}
	return p.firstErr()
}

// errShutdownDeadline cancels the workers when ShutdownTimeout passes.
var errShutdownDeadline = errors.New("pipeline: shutdown timeout passed")

func (p *Pipeline) firstErr() error {
	select {
	case <-p.failed:
		return p.err
	default:
		return nil
	}
}

func (p *Pipeline) fail(err error) {
	p.errOnce.Do(func() {
		p.err = err
		close(p.failed)
	})
}

// poll reads until ctx ends; the table goroutines it starts run under
// wctx.
func (p *Pipeline) poll(ctx, wctx context.Context) error {
	// A failed table ends polling at once: without this, a poll waiting
	// for records that will not come would hide the failure forever.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.failed:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		fetches := p.cl.PollRecords(ctx, 10_000)
		if err := p.firstErr(); err != nil {
			p.cl.AllowRebalance()
			return nil
		}
		if ctx.Err() != nil {
			p.cl.AllowRebalance()
			return nil
		}
		var fatal error
		fetches.EachError(func(topic string, part int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			if kgo.IsRetryableBrokerErr(err) || errors.Is(err, kgo.ErrClientClosed) {
				p.log.Warn("fetch error, retrying", "topic", topic, "partition", part, "error", err)
				return
			}
			// A broker closing a new connection at its first read: franz-go
			// does not retry it, as on a first connection it is mostly a
			// refused SASL or TLS setting, but those were proven at start
			// (Ping); here it is a broker restarting or a network cut. The
			// client keeps fetching; a broker that goes on refusing shows
			// as lag (and these warnings), not as a crash loop.
			var firstEOF *kgo.ErrFirstReadEOF
			if errors.As(err, &firstEOF) {
				p.log.Warn("fetch error: the broker closed the connection at once, retrying", "topic", topic, "partition", part, "error", err)
				return
			}
			if errors.Is(err, kerr.OffsetOutOfRange) && fatal == nil {
				fatal = p.outOfRange(ctx, topic, part, err)
				return
			}
			p.log.Error("fetch error", "topic", topic, "partition", part, "error", err)
			if fatal == nil && topic != "" {
				fatal = fmt.Errorf("fetching %s/%d: %w", topic, part, err)
			}
		})
		if fatal != nil {
			p.cl.AllowRebalance()
			return fatal
		}
		p.ready.Store(true)
		var routeErr error
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if routeErr != nil {
				return
			}
			if p.cfg.Metrics != nil {
				p.cfg.Metrics.setStable(fp.Topic, fp.Partition, fp.LastStableOffset)
			}
			if len(fp.Records) == 0 {
				return
			}
			w, err := p.worker(wctx, fp.Topic)
			if err != nil {
				routeErr = err
				return
			}
			at := time.Now()
			for _, r := range fp.Records {
				if !w.send(ctx, msg{rec: r, at: at}) {
					return
				}
			}
		})
		p.cl.AllowRebalance()
		if routeErr != nil {
			return routeErr
		}
	}
}

// worker returns the table goroutine of topic, starting it on first use;
// it runs under ctx.
func (p *Pipeline) worker(ctx context.Context, topic string) (*worker, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.tables[topic]; ok {
		return w, nil
	}
	// A topic that cannot name a table (<prefix>.transaction, say) still
	// gets a worker: it skips Debezium's records that are not changes and
	// fails on the first real change with identErr.
	// A topic with dots in its names gets its table at its first change
	// (worker.resolve).
	ident, identErr := p.ident(topic)
	w := &worker{p: p, topic: topic, ident: ident, identErr: identErr, in: make(chan msg, p.cfg.QueueRecords), born: time.Now()}
	if errors.Is(identErr, errAmbiguousTopic) {
		w.identErr, w.ambiguous = nil, true
		w.log = p.log.With("topic", topic)
	} else {
		if identErr == nil {
			parts := strings.Split(topic, ".")
			w.names = topicNames{parts[0], parts[1], parts[2]}
		}
		w.log = p.log.With("table", strings.Join(ident, "."), "topic", topic)
	}
	p.tables[topic] = w
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := w.run(ctx); err != nil {
			p.fail(err)
			// Keep draining so the poll loop and callbacks never block.
			for m := range w.in {
				if m.done != nil {
					m.done <- err
				}
			}
		}
	}()
	return w, nil
}

// errAmbiguousTopic marks a topic <prefix>.<db>.<table> with more than
// three dot-separated parts: a dot may be in the prefix, the database or
// the table name (MariaDB allows `my.table`), so the topic alone does not
// name the table. Its records' source blocks do (worker.resolve).
var errAmbiguousTopic = errors.New("pipeline: topic has more than three dot-separated parts")

// ident names the table of topic <prefix>.<db>.<table>. A topic with
// more than three parts gets errAmbiguousTopic.
func (p *Pipeline) ident(topic string) (table.Identifier, error) {
	parts := strings.Split(topic, ".")
	switch {
	case len(parts) < 3:
		return nil, fmt.Errorf("topic %q is not <prefix>.<db>.<table>", topic)
	case len(parts) > 3:
		return nil, fmt.Errorf("%w: %s", errAmbiguousTopic, topic)
	}
	return p.identOf(parts[0], parts[1], parts[2]), nil
}

// identOf is the name the table db.tbl of the source with topic prefix
// prefix gets when no other source table holds it: the name a worker
// starts with, until its first change resolves it against the catalog
// (worker.locate).
func (p *Pipeline) identOf(prefix, db, tbl string) table.Identifier {
	return p.namerFor(prefix).Ident(db, tbl)
}

// topicNames is a split of a topic into prefix, database and table.
type topicNames struct{ prefix, db, table string }

// namesFor is the split of topic whose change records name db.tbl in their
// source block: the topic must end in .<db>.<tbl> after a prefix. The
// names are returned as the topic spells them (characters Kafka does not
// allow replaced by _, as tableTopic does), as a topic of three parts
// gives them.
func namesFor(topic, db, tbl string) (topicNames, bool) {
	if db == "" || tbl == "" {
		return topicNames{}, false
	}
	db, tbl = topicUnsafe.ReplaceAllString(db, "_"), topicUnsafe.ReplaceAllString(tbl, "_")
	prefix, ok := strings.CutSuffix(topic, "."+db+"."+tbl)
	if !ok || prefix == "" {
		return topicNames{}, false
	}
	return topicNames{prefix, db, tbl}, true
}

// splits are every way topic can be <prefix>.<db>.<table> with each part
// non-empty.
func splits(topic string) []topicNames {
	parts := strings.Split(topic, ".")
	var out []topicNames
	for i := 1; i+2 <= len(parts); i++ {
		for j := i + 1; j < len(parts); j++ {
			out = append(out, topicNames{strings.Join(parts[:i], "."), strings.Join(parts[i:j], "."), strings.Join(parts[j:], ".")})
		}
	}
	return out
}

// heldIdent finds, for an ambiguous topic, the table that holds its
// offsets among the tables every split of the topic would name: offsets
// are kept by topic, so only the topic's own table holds them. It returns
// nil when none does (a new table, or one whose offsets are lost, which
// its worker's first commit reports). The table found is kept for the
// worker to check its records against (worker.resolve).
func (p *Pipeline) heldIdent(ctx context.Context, topic string) (table.Identifier, batch.Offsets, error) {
	var found table.Identifier
	var held batch.Offsets
	for _, sp := range splits(topic) {
		res, tbl, err := p.resolveTable(ctx, sp, topic)
		switch {
		case errors.Is(err, schemamap.ErrNameTaken):
			continue // not this split's table: another source's holds the name
		case err != nil:
			return nil, nil, fmt.Errorf("finding the table of %s.%s for the offsets of %s: %w", sp.db, sp.table, topic, err)
		case tbl == nil:
			continue
		}
		ident := res.Ident
		offs, err := commit.Offsets(tbl)
		if err != nil || len(offs[topic]) == 0 {
			continue
		}
		if found != nil {
			// The group would retry the join forever: stop ingest.
			err := fmt.Errorf("topic %s: tables %v and %v both hold its offsets, and the topic's name cannot tell which is its table: drop the one that is not", topic, found, ident)
			p.fail(err)
			return nil, nil, err
		}
		found, held = ident, offs
	}
	if found != nil {
		p.mu.Lock()
		if p.heldBy == nil {
			p.heldBy = map[string]table.Identifier{}
		}
		p.heldBy[topic] = found
		p.mu.Unlock()
	}
	return found, held, nil
}

func (p *Pipeline) assigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	p.own(assigned, true)
	if p.cfg.DeadLetter != nil {
		p.cfg.DeadLetter.Assigned(assigned)
	}
	for topic, parts := range assigned {
		p.log.Info("partitions assigned", "topic", topic, "partitions", parts)
	}
}

// own records that parts are (or, with add false, are no longer) assigned
// to this member.
func (p *Pipeline) own(parts map[string][]int32, add bool) {
	p.ownMu.Lock()
	defer p.ownMu.Unlock()
	if p.owned == nil {
		p.owned = map[string]map[int32]bool{}
	}
	for topic, ps := range parts {
		m := p.owned[topic]
		if m == nil {
			m = map[int32]bool{}
			p.owned[topic] = m
		}
		for _, part := range ps {
			if add {
				m[part] = true
			} else {
				delete(m, part)
			}
		}
	}
}

// ownedOnly returns the entries of next whose partitions of topic are
// assigned to this member: a table's offsets cover every partition,
// including those other members own, whose group offsets are theirs to
// commit.
func (p *Pipeline) ownedOnly(topic string, next map[int32]int64) map[int32]int64 {
	p.ownMu.Lock()
	defer p.ownMu.Unlock()
	out := make(map[int32]int64, len(next))
	for part, n := range next {
		if p.owned[topic][part] {
			out[part] = n
		}
	}
	return out
}

// adjustOffsets sets the fetch offsets of newly assigned partitions to the
// offsets their tables hold: Iceberg, not the group, decides.
func (p *Pipeline) adjustOffsets(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	var check []positioned
	scan := &offsetScan{p: p} // one catalog scan for every topic assigned here
	for topic, parts := range offsets {
		ident, err := p.ident(topic)
		var held batch.Offsets
		ambiguous := errors.Is(err, errAmbiguousTopic)
		if ambiguous {
			if ident, held, err = p.heldIdent(ctx, topic); err != nil {
				return nil, err
			}
		} else if err != nil {
			// Not a table's topic: no table holds its offsets, so the
			// group's (or the start, with none) are kept. Its records are
			// skipped, and the group offsets committed past them
			// (worker.commitSkipped), if they are not changes; a change
			// stops ingest before its offset is committed. A schema
			// topic's records are its followers' (follower.go).
			continue
		}
		var tbl *table.Table
		if !ambiguous { // heldIdent read the offsets
			parts := strings.Split(topic, ".")
			var res schemamap.Resolved
			res, tbl, err = p.resolveTable(ctx, topicNames{parts[0], parts[1], parts[2]}, topic)
			if errors.Is(err, schemamap.ErrNameTaken) {
				// The group would retry the join forever: stop ingest.
				p.fail(fmt.Errorf("naming the table of %s: %w", topic, err))
				return nil, err
			}
			if err != nil {
				return nil, fmt.Errorf("finding the table of %s for its offsets: %w", topic, err)
			}
			ident = res.Ident
		}
		exists := ambiguous && ident != nil
		switch {
		case ambiguous:
		case tbl == nil:
		default:
			exists = true
			if held, err = commit.Offsets(tbl); err != nil {
				// The group would retry the join forever: stop ingest
				// instead, naming the table and the way out.
				p.fail(fmt.Errorf("recovering the offsets of %s: %w", topic, err))
				return nil, err
			}
		}
		// A table that exists but holds none of this topic's offsets took
		// the name in a rename that swapped names: the topic's offsets
		// moved with the table renamed away, wherever it is now.
		var carried map[int32]int64
		if exists && len(held[topic]) == 0 {
			if carried, err = scan.carried(ctx, topic, ident); err != nil {
				return nil, err
			}
		}
		var props iceberg.Properties
		if tbl != nil {
			props = tbl.Properties()
		}
		for part, group := range parts {
			next, ok := held[topic][part]
			from := "the table's"
			pos := positioned{topic: topic, part: part, next: next, table: ident, props: props, ids: tbl != nil}
			if !ok {
				next, ok = carried[part]
				from = "a renamed table's"
				pos.next, pos.props, pos.ids = next, nil, false
			}
			switch {
			case ok:
				parts[part] = kgo.NewOffset().At(next).WithEpoch(-1)
				p.log.Info("resuming from "+from+" offset", "topic", topic, "partition", part, "offset", next)
				p.ren.setStart(topic, part, next)
				check = append(check, pos)
			case !exists && group.EpochOffset().Offset >= 0:
				check = append(check, positioned{topic: topic, part: part, next: group.EpochOffset().Offset})
				// The topic's table was renamed away (renameJob): the
				// rename committed the topic's offsets to the group first.
				// Only a missing table resumes from the group: one that
				// exists holds its offsets, and the group's are advisory.
				p.log.Info("the topic's table is gone (renamed), resuming from the group's offset", "topic", topic, "partition", part, "offset", group.EpochOffset().Offset)
				p.ren.setStart(topic, part, group.EpochOffset().Offset)
			default:
				parts[part] = kgo.NewOffset().AtStart()
				p.log.Info("table holds no offset, starting at the beginning", "topic", topic, "partition", part)
			}
		}
	}
	// A stored offset the log no longer (or not yet) holds stops ingest:
	// Kafka's reset to the log's start would skip what retention removed,
	// or take a recreated topic's records as applied.
	if err := p.checkLog(ctx, check); err != nil {
		if errors.Is(err, ErrOutsideLog) {
			// The group would retry the join forever: stop ingest.
			p.fail(err)
		}
		return nil, err
	}
	return offsets, nil
}

// carriedOffsets finds the offsets of topic in a table other than own,
// in any namespace: after a rename that gave own's name to another table,
// the table renamed away carries them. It is needed only for that case (a
// table holding no offsets for its own topic), but that is also every
// plain rename's new topic, so the scan must not cost a catalog's worth
// of sequential loads: see offsetScan.
func (p *Pipeline) carriedOffsets(ctx context.Context, topic string, own table.Identifier) (map[int32]int64, error) {
	return (&offsetScan{p: p}).carried(ctx, topic, own)
}

// offsetScanLoads bounds the tables an offsetScan loads at once.
const offsetScanLoads = 16

// offsetScan is one pass over every table of the catalog, made on first
// use and shared by the topics of one assignment: their names, sources and
// offsets. The loads run offsetScanLoads at a time. Before, each topic
// loaded every table one by one, inside the group's assignment callback:
// with the catalog make test fills (every test's tables) a member took 2.5
// minutes to start reading the topics a rename had just made, and
// TestRenames timed out with the renamed tables' changes unapplied.
type offsetScan struct {
	p      *Pipeline
	done   bool
	tables []scannedTable
}

type scannedTable struct {
	ident   table.Identifier
	source  string
	offsets batch.Offsets
}

func (s *offsetScan) load(ctx context.Context, topic string) error {
	if s.done {
		return nil
	}
	nss, err := s.p.cat.ListNamespaces(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing namespaces for the offsets of %s: %w", topic, err)
	}
	var idents []table.Identifier
	for _, ns := range nss {
		for ident, err := range s.p.cat.ListTables(ctx, ns) {
			if errors.Is(err, catalog.ErrNoSuchNamespace) {
				break // dropped since it was listed: it holds nothing
			}
			if err != nil {
				return fmt.Errorf("listing tables of %v for the offsets of %s: %w", ns, topic, err)
			}
			idents = append(idents, ident)
		}
	}
	found := make([]*scannedTable, len(idents))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(offsetScanLoads)
	for i, ident := range idents {
		g.Go(func() error {
			tbl, err := s.p.cat.LoadTable(gctx, ident)
			if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("loading table %v for the offsets of %s: %w", ident, topic, err)
			}
			held, err := commit.Offsets(tbl)
			if err != nil {
				return nil // another table's trouble is its own topic's to report
			}
			found[i] = &scannedTable{ident: ident, source: tbl.Properties()[schemamap.SourceProperty], offsets: held}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, t := range found {
		if t != nil {
			s.tables = append(s.tables, *t)
		}
	}
	s.done = true
	return nil
}

// carried returns the offsets of topic that a table other than own holds,
// among the tables this deployment named (see carriedOffsets).
func (s *offsetScan) carried(ctx context.Context, topic string, own table.Identifier) (map[int32]int64, error) {
	if err := s.load(ctx, topic); err != nil {
		return nil, err
	}
	prefix, _, _ := strings.Cut(topic, ".")
	namer := s.p.namerFor(prefix)
	for _, t := range s.tables {
		if slices.Equal(t.ident, own) {
			continue
		}
		// Only a table this deployment named can carry its offsets:
		// another ingest (fan-out, its own namespaces) consuming the
		// same topic holds offsets of its own, and resuming from them
		// would skip what this one has not applied.
		if !namer.Placed(t.ident, t.source) {
			continue
		}
		if offs := t.offsets[topic]; len(offs) > 0 {
			return offs, nil
		}
	}
	return nil, nil
}

// revoked abandons what the revoked tables buffered: the next owner
// re-reads it from the offsets in the table, so a revoke never waits on the
// catalog. Partitions this member keeps are rewound to their first
// abandoned record (worker.drop). The wait for the tables to take the
// request is bounded by ShutdownTimeout.
func (p *Pipeline) revoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	p.own(revoked, false)
	if p.cfg.Metrics != nil {
		p.cfg.Metrics.forget(revoked)
	}
	p.handOff(ctx, revoked, ctlDrop)
}

// lost abandons what the lost tables buffered, as revoked does.
func (p *Pipeline) lost(ctx context.Context, _ *kgo.Client, lost map[string][]int32) {
	p.own(lost, false)
	if p.cfg.Metrics != nil {
		p.cfg.Metrics.forget(lost)
	}
	p.handOff(ctx, lost, ctlDrop)
}

func (p *Pipeline) handOff(ctx context.Context, parts map[string][]int32, kind ctlKind) {
	p.mu.Lock()
	var ws []*worker
	if !p.closing {
		for topic := range parts {
			if w, ok := p.tables[topic]; ok {
				ws = append(ws, w)
			}
		}
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ShutdownTimeout)
	defer cancel()
	for _, w := range ws {
		if err := w.request(ctx, kind); err != nil {
			w.log.Warn("handing off the table's batch failed; the next owner re-reads it", "error", err)
		}
	}
}
