package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/schemamap"
)

// Every ingest process reads each schema-change topic it needs itself, with
// a client of its own outside the consumer group (a follower), so that no
// table worker ever waits on a partition another member of the group was
// assigned. The group's assignment of the schema topic, if the topic is
// subscribed, is read and ignored (worker.add).
//
// A rename is carried out by whichever process gets to it first, once the
// old table holds every change made before the rename, whoever applied
// them:
//
//   - Each follower, at a rename, reads the old topic's last stable
//     offsets (the cut: every change before the rename is below it) and
//     hands the rename to its own worker of the old topic, if it has one.
//     That worker applies its partitions' records up to the cut, holds
//     back those after the rename, commits, and waits for the rename.
//   - The follower then waits until the old table is drained: for every
//     partition of the old topic, no change before the rename lies between
//     the offset the table holds (or the group's, when the table is gone)
//     and the cut. Other processes' workers get there through their own
//     followers, which reach the same rename on their own.
//   - It commits the old topic's drained offsets to the group (a restart
//     resumes a topic whose table is gone there) and renames the table in
//     the catalog, recording the rename in the table (NameSinceProperty).
//     The catalog makes the rename happen once: the others find it done.
//   - It passes the rename only then: a worker of the new name buffers no
//     change after the rename before its own follower has passed it.
//
// No process waits for another except through the table: the Kafka group
// protocol stays the only coordinator.

// NameSinceProperty records what gave a lake table its name: the rename
// that did (its statement's binlog position, and its schema-change
// record's offset: capture and Debezium write one record per pair of a
// statement, all at its position), or its first change when it was
// created under that name. A rename read again (a restart, a process
// behind the others) is carried out only on a table that had the old name
// before the rename.
const NameSinceProperty = "binlake.name-since"

// nameMark orders the events that name tables: a rename pair (its DDL's
// binlog position, its record's offset in the schema topic and its place
// in the record) or a table's first change (offset -1).
type nameMark struct {
	pos decode.SourcePos
	off int64
	idx int
}

func (m nameMark) String() string {
	return m.pos.File + ":" + strconv.FormatInt(m.pos.Pos, 10) + ":" + strconv.FormatInt(m.off, 10) + ":" + strconv.Itoa(m.idx)
}

func parseNameMark(s string) (nameMark, bool) {
	rest, idx, ok1 := cutLast(s, ":")
	rest, off, ok2 := cutLast(rest, ":")
	file, pos, ok3 := cutLast(rest, ":")
	i, err1 := strconv.Atoi(idx)
	p, err2 := strconv.ParseInt(pos, 10, 64)
	o, err3 := strconv.ParseInt(off, 10, 64)
	if !ok1 || !ok2 || !ok3 || err1 != nil || err2 != nil || err3 != nil || file == "" {
		return nameMark{}, false
	}
	return nameMark{decode.SourcePos{File: file, Pos: p}, o, i}, true
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+len(sep):], true
}

func (m nameMark) compare(o nameMark) int {
	if c := m.pos.Compare(o.pos); c != 0 {
		return c
	}
	if m.off != o.off {
		if m.off < o.off {
			return -1
		}
		return 1
	}
	return m.idx - o.idx
}

// namedSince reports a table's name mark; ok is false for a table that has
// none (created before marks were recorded: it had its name all along).
func namedSince(props iceberg.Properties) (nameMark, bool) {
	return parseNameMark(props[NameSinceProperty])
}

// follower reads one schema-change topic for this process.
type follower struct {
	p     *Pipeline
	topic string
	log   *slog.Logger
	// live is, by partition, the group's offset when the follower started:
	// the records below it are history (see run).
	live map[int32]int64
}

// follow starts this process's follower of schema topic st, once.
func (p *Pipeline) follow(st string) {
	p.folMu.Lock()
	defer p.folMu.Unlock()
	if p.followers == nil {
		p.followers = map[string]bool{}
	}
	if p.followers[st] || p.folCtx == nil {
		return
	}
	p.followers[st] = true
	f := &follower{p: p, topic: st, log: p.log.With("schema_topic", st)}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := f.run(p.folCtx); err != nil && p.folCtx.Err() == nil {
			p.fail(fmt.Errorf("following schema-change topic %s: %w", st, err))
		}
	}()
}

// run reads the topic from the group's committed offset (the followers
// commit it past what every process has handled) or its start.
func (f *follower) run(ctx context.Context) error {
	p := f.p
	adm := kadm.NewClient(p.cl)
	var starts map[int32]int64
	for {
		offs, err := offsetsOf(ctx, adm.ListStartOffsets, f.topic)
		if err == nil && len(offs) > 0 {
			starts = offs
			break
		}
		if err != nil {
			f.log.Warn("listing the schema-change topic's offsets, retrying", "error", err)
		}
		// No topic yet: no schema change was written, nothing waits.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
	committed, err := adm.FetchOffsetsForTopics(ctx, p.cfg.Group, f.topic)
	if err != nil {
		return fmt.Errorf("reading the group's offsets of %s: %w", f.topic, err)
	}
	// The topic is read from its start: the records below the group's
	// offset (history) had their renames done, but a column rename among
	// them may not have reached its table yet (it is applied at the
	// table's next schema change), so their column renames are noted
	// again; their table renames are not repeated.
	from := map[int32]kgo.Offset{}
	f.live = map[int32]int64{}
	for part, s := range starts {
		f.live[part] = s
		if c, ok := committed.Lookup(f.topic, part); ok && c.Err == nil && c.At > s {
			f.live[part] = c.At
		}
		from[part] = kgo.NewOffset().At(s)
		p.ren.setStart(f.topic, part, s)
	}
	f.log.Info("following the schema-change topic outside the group's assignment", "from", starts, "live_from", f.live)
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(p.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{f.topic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		// A log start that retention moved meanwhile.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, p.cfg.ClientOpts...)...)
	if err != nil {
		return fmt.Errorf("creating the schema-change topic's client: %w", err)
	}
	defer cl.Close()
	// The last stable offsets at the start; each fetch brings newer ones.
	stable, err := offsetsOf(ctx, adm.ListCommittedOffsets, f.topic)
	if err != nil {
		return err
	}
	fetched := map[int32]int64{} // next offset fetched, by partition
	for part, o := range from {
		fetched[part] = o.EpochOffset().Offset
	}
	queues := map[int32][]schemaRecord{}
	pending := map[int32]int64{}
	lastCommit := time.Now()
	for {
		// Wakes every few seconds, so that the position is committed
		// when no record follows the last one handled.
		pctx, pcancel := context.WithTimeout(ctx, positionCommitInterval)
		fetches := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(topic string, part int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				f.log.Warn("fetch error on the schema-change topic, retrying", "partition", part, "error", err)
			}
		})
		var derr error
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.Topic != f.topic || derr != nil {
				return
			}
			if fp.LastStableOffset >= 0 {
				stable[fp.Partition] = fp.LastStableOffset
			}
			for _, r := range fp.Records {
				var sr schemaRecord
				err := f.retrying(ctx, "decoding a schema-change record", func() (err error) {
					sr, err = f.decode(ctx, r)
					return err
				})
				if err != nil {
					derr = err
					return
				}
				queues[r.Partition] = append(queues[r.Partition], sr)
				fetched[r.Partition] = r.Offset + 1
			}
		})
		if derr != nil {
			return derr
		}
		// A record whose handling failed stays first in its queue: it is
		// handled again after a pause (a catalog or broker outage).
		if err := f.retrying(ctx, "following the schema-change topic", func() error {
			return f.handleInOrder(ctx, queues, fetched, stable, pending)
		}); err != nil {
			return err
		}
		if len(pending) > 0 && time.Since(lastCommit) >= positionCommitInterval {
			if f.commitPosition(ctx, pending) {
				pending = map[int32]int64{}
			}
			lastCommit = time.Now()
		}
	}
}

// schemaRecord is a fetched record of the schema topic, decoded: sc is nil
// for a record that changes no schema (a transaction marker, say).
type schemaRecord struct {
	rec *kgo.Record
	sc  *decode.SchemaChange
}

// handleInOrder handles the fetched schema-change records in binlog order
// across the topic's partitions (capture and Debezium key them by
// database, so a cross-database rename and the changes of another
// database are in other partitions): the earliest first, and none while a
// partition may hold an earlier one not fetched yet. So a follower at a
// record has handled every record before it, in every partition (what
// renamer.past relies on).
func (f *follower) handleInOrder(ctx context.Context, queues map[int32][]schemaRecord, fetched, stable, pending map[int32]int64) error {
	p := f.p
	done := func(r *kgo.Record) {
		p.ren.handled(f.topic, r.Partition, r.Offset+1)
		if r.Offset >= f.live[r.Partition] { // the group's offset never goes back
			pending[r.Partition] = r.Offset + 1
		}
	}
	for {
		var best int32 = -1
		unknown := false
		for part := range stable {
			q := queues[part]
			// Records that change no schema are handled at once.
			for len(q) > 0 && q[0].sc == nil {
				done(q[0].rec)
				q = q[1:]
			}
			queues[part] = q
			if len(q) == 0 {
				if fetched[part] < stable[part] {
					unknown = true // not fetched yet
				}
				continue
			}
			if best < 0 {
				best = part
				continue
			}
			// Ties (a statement's records in two partitions) go by
			// partition, the same in every process.
			c := q[0].sc.Source.Compare(queues[best][0].sc.Source)
			if c < 0 || (c == 0 && part < best) {
				best = part
			}
		}
		if best < 0 || unknown {
			return nil
		}
		sr := queues[best][0]
		if err := f.handle(ctx, sr.rec, sr.sc); err != nil {
			return err
		}
		queues[best] = queues[best][1:]
		done(sr.rec)
	}
}

// positionCommitInterval is how often a follower commits its position.
const positionCommitInterval = 5 * time.Second

// commitPosition commits the follower's next offsets to the group: every
// rename before them is done, so a process starting there misses none.
func (f *follower) commitPosition(ctx context.Context, next map[int32]int64) bool {
	err := commitGroupSync(ctx, f.p.cl, f.topic, next)
	if err != nil {
		f.log.Debug("committing the schema-change topic's position failed; it is committed later", "error", err)
	}
	return err == nil
}

// commitGroupSync commits next offsets of topic to the consumer group.
func commitGroupSync(ctx context.Context, cl *kgo.Client, topic string, next map[int32]int64) error {
	eo := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for part, n := range next {
		eo[topic][part] = kgo.EpochOffset{Epoch: -1, Offset: n}
	}
	var cerr error
	cl.CommitOffsetsSync(ctx, eo, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cerr = err
		if err == nil {
			cerr = commitRespErr(resp)
		}
	})
	return cerr
}

// decode decodes a record of the schema topic; a record that changes no
// schema gets a nil sc.
func (f *follower) decode(ctx context.Context, r *kgo.Record) (schemaRecord, error) {
	if r.Attrs.IsControl() || r.Value == nil {
		return schemaRecord{rec: r}, nil
	}
	p := f.p
	ch, err := p.dec.Decode(ctx, r.Topic, r.Partition, r.Offset, r.Key, r.Value)
	if err != nil {
		if p.cfg.DeadLetter != nil && recordFault(err) {
			// The group's worker of the topic, if any, dead-letters it.
			f.log.Warn("skipping a schema-change record that cannot be decoded: a rename in it is not followed", "partition", r.Partition, "offset", r.Offset, "error", err)
			return schemaRecord{rec: r}, nil
		}
		return schemaRecord{}, fmt.Errorf("decoding the schema-change record at %s/%d/%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	return schemaRecord{rec: r, sc: ch.SchemaChange}, nil
}

func (f *follower) handle(ctx context.Context, r *kgo.Record, sc *decode.SchemaChange) error {
	if r.Offset < f.live[r.Partition] {
		f.p.noteColumns(f.topic, sc, false) // history (see run)
		return nil
	}
	f.p.noteColumnRenames(f.topic, sc)
	return f.followRenames(ctx, r, sc)
}

// followRenames carries out the renames of a schema-change record, one
// pair after another. A statement that renames several tables is written
// as one record per pair, in the statement's order (a swap needs it), all
// at the statement's binlog position: the record's offset tells them
// apart.
func (f *follower) followRenames(ctx context.Context, rec *kgo.Record, sc *decode.SchemaChange) error {
	pairs := renamesOf(sc)
	if len(pairs) == 0 {
		return nil
	}
	p := f.p
	prefix := f.topic
	p.ren.begin(prefix, sc.Source)
	defer p.ren.end(prefix)
	adm := kadm.NewClient(p.cl)
	for i, pr := range pairs {
		fromTopic, toTopic := tableTopic(prefix, pr.From), tableTopic(prefix, pr.To)
		// Only a rename into a named database can have its old name in
		// another (the session's, which the event does not carry): one
		// with both names unqualified is within the event's database, and
		// guessing there would take a same-named table of another
		// database (a table of an uncaptured database, renamed, whose DDL
		// Debezium reports with its full schema history).
		if !pr.FromQualified && pr.ToQualified && pr.From.DB != "" {
			if alt, ok := sessionTopic(ctx, f.log, adm, prefix, pr); ok {
				fromTopic = alt
			}
		}
		err := f.renameOne(ctx, adm, fromTopic, toTopic, pr, nameMark{sc.Source, rec.Offset, i})
		if err != nil {
			return fmt.Errorf("following the rename of %s to %s at %s/%d/%d: %w", fromTopic, toTopic, rec.Topic, rec.Partition, rec.Offset, err)
		}
	}
	// Every process that starts after this may start past it.
	if err := commitGroupSync(ctx, p.cl, rec.Topic, map[int32]int64{rec.Partition: rec.Offset + 1}); err != nil {
		f.log.Debug("committing the schema-change topic's position failed; it is committed later", "error", err)
	}
	return nil
}

func (f *follower) renameOne(ctx context.Context, adm *kadm.Client, fromTopic, toTopic string, pr renamePair, mark nameMark) error {
	p := f.p
	toNames, ok := namesFor(toTopic, pr.To.DB, pr.To.Table)
	if !ok {
		return fmt.Errorf("topic %q: %w", toTopic, errNotTableTopic)
	}
	fromNames, ok := namesFor(fromTopic, pr.From.DB, pr.From.Table)
	if parts := strings.Split(fromTopic, "."); !ok && len(parts) == 3 {
		// The old name's database is the session's (sessionTopic): the
		// topic names it.
		fromNames, ok = topicNames{parts[0], parts[1], parts[2]}, true
	}
	if !ok {
		return fmt.Errorf("topic %q: %w", fromTopic, errNotTableTopic)
	}
	log := f.log.With("from_topic", fromTopic, "to_topic", toTopic, "binlog_file", mark.pos.File, "binlog_pos", mark.pos.Pos)
	if why, err := p.renameDone(ctx, fromNames, fromTopic, toNames, toTopic, mark); err != nil || why != "" {
		if why != "" {
			log.Info("rename already done: "+why, "mark", mark.String())
			p.handDone(fromTopic, pr.From, mark)
		}
		return err
	}
	job := &renameJob{from: pr.From, pos: mark.pos, cut: map[int32]int64{}, start: map[int32]int64{},
		held: map[int32]int64{}, renamed: make(chan struct{})}
	var err error
	if p.consumes(fromTopic) {
		if job.cut, err = offsetsOf(ctx, adm.ListCommittedOffsets, fromTopic); err != nil {
			return err
		}
		if job.start, err = offsetsOf(ctx, adm.ListStartOffsets, fromTopic); err != nil {
			return err
		}
	}
	log.Info("following a table rename", "cut", job.cut)
	p.ren.setActive(fromTopic, job)
	defer func() {
		p.ren.clearActive(fromTopic, job)
		close(job.renamed)
	}()
	p.nudge(fromTopic, job)
	// The job stays open while an outage lasts: its error stops the
	// workers that hold records for it.
	err = f.retrying(ctx, "renaming the table", func() error {
		next, err := f.waitDrained(ctx, log, job, fromNames, fromTopic, mark)
		if err != nil {
			return err
		}
		if len(next) > 0 {
			// The table leaves the old name: a restart resumes the old
			// topic here (adjustOffsets), not at its start.
			if err := commitGroupSync(ctx, p.cl, fromTopic, next); err != nil {
				return fmt.Errorf("committing the offsets of %s before renaming its table: %w", fromTopic, err)
			}
		}
		return p.renameLake(ctx, log, fromNames, fromTopic, toNames, toTopic, mark)
	})
	if err != nil && ctx.Err() != nil {
		// Stopped with the process, not failed: the workers holding
		// records for the job must not fail the process's stop over it
		// (make test's TestScaleOutRenames saw an ingest exit 1 after
		// SIGTERM, "partitions … not read in 20 s").
		err = fmt.Errorf("%w (%w)", errRenameStopped, err)
	}
	job.err = err
	return err
}

// handDone hands a rename another process carried out to this process's
// worker of the old topic, if it has one: what it buffered of the old
// table is in the renamed table already (a rename waits until the old
// table is drained), and the name may be another table's now (a swap,
// RENAME TABLE s1 TO s2, s3 TO s1), which must never get it. Recorded
// before the follower passes the rename, it is taken on before the worker
// buffers any change after the rename (awaitSchema).
func (p *Pipeline) handDone(fromTopic string, from tableName, mark nameMark) {
	job := &renameJob{from: from, pos: mark.pos, held: map[int32]int64{}, renamed: make(chan struct{}), done: true, at: time.Now()}
	close(job.renamed)
	p.ren.setDone(fromTopic, job)
	p.nudge(fromTopic, job)
}

// errNotTableTopic is a rename whose topic does not name a table.
var errNotTableTopic = errors.New("the topic is not <prefix>.<db>.<table>")

// retrying runs fn until it succeeds, fails for good (a record's own
// fault, a topic that names no table) or ctx ends, pausing between
// attempts as commitLoop does: a catalog, registry or broker outage stops
// the follower, and the renames waiting for it, only while it lasts.
func (f *follower) retrying(ctx context.Context, what string, fn func() error) error {
	for round := 1; ; round++ {
		err := fn()
		if err == nil || ctx.Err() != nil || recordFault(err) || errors.Is(err, errNotTableTopic) {
			return err
		}
		pause := retryPause(round)
		f.log.Warn(what+" failed, retrying", "round", round, "in", pause, "error", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// renameDone reports whether the rename is done already: the new name's
// table got its name from it, or the old name's table got its own later
// (a later rename, or a table created after it). It says why, when it is.
func (p *Pipeline) renameDone(ctx context.Context, fromNames topicNames, fromTopic string, toNames topicNames, toTopic string, mark nameMark) (string, error) {
	_, from, err := p.resolveTable(ctx, fromNames, fromTopic)
	if err != nil && !errors.Is(err, schemamap.ErrOtherSource) {
		return "", fmt.Errorf("finding the table of %s: %w", fromTopic, err)
	}
	if from != nil {
		if m, ok := namedSince(from.Properties()); ok && m.compare(mark) > 0 {
			return "the old name's table got its name after the rename (" + m.String() + ")", nil
		}
	}
	_, to, err := p.resolveTable(ctx, toNames, toTopic)
	if err != nil && !errors.Is(err, schemamap.ErrOtherSource) {
		return "", fmt.Errorf("finding the table of %s: %w", toTopic, err)
	}
	if to != nil {
		if m, ok := namedSince(to.Properties()); ok && m == mark {
			return "the new name's table got its name from this rename", nil
		}
	}
	return "", nil
}

// drainPoll is how often a rename checks whether the old table is drained.
const drainPoll = 500 * time.Millisecond

// waitDrained waits until every change of the old topic before the rename
// is in the old table, and returns the old topic's next offsets then.
func (f *follower) waitDrained(ctx context.Context, log *slog.Logger, job *renameJob, fromNames topicNames, fromTopic string, mark nameMark) (map[int32]int64, error) {
	if len(job.cut) == 0 {
		return nil, nil
	}
	since, warned := time.Now(), false
	for {
		next, open, err := f.p.drained(ctx, job, fromNames, fromTopic, mark)
		if err != nil {
			return nil, err
		}
		if len(open) == 0 {
			return next, nil
		}
		if !warned && time.Since(since) > schemaWaitWarning {
			warned = true
			log.Warn("still waiting for the old table to hold every change before the rename: the partitions' owners apply them", "partitions", open, "waited", time.Since(since).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(drainPoll):
		}
	}
}

// drained returns the old topic's next offsets and the partitions that
// still hold a change before the rename above the offset applied.
func (p *Pipeline) drained(ctx context.Context, job *renameJob, fromNames topicNames, fromTopic string, mark nameMark) (map[int32]int64, []int32, error) {
	_, tbl, err := p.resolveTable(ctx, fromNames, fromTopic)
	if err != nil && !errors.Is(err, schemamap.ErrOtherSource) {
		return nil, nil, fmt.Errorf("finding the table of %s: %w", fromTopic, err)
	}
	var stored map[int32]int64
	if tbl != nil {
		if m, ok := namedSince(tbl.Properties()); !ok || m.compare(mark) < 0 {
			held, err := commit.Offsets(tbl)
			if err != nil {
				return nil, nil, fmt.Errorf("reading the offsets of %s: %w", fromTopic, err)
			}
			stored = held[fromTopic]
		}
	}
	var group map[int32]int64
	if len(stored) < len(job.cut) {
		adm := kadm.NewClient(p.cl)
		off, err := adm.FetchOffsetsForTopics(ctx, p.cfg.Group, fromTopic)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the group's offsets of %s: %w", fromTopic, err)
		}
		group = map[int32]int64{}
		off.Each(func(o kadm.OffsetResponse) {
			if o.Topic == fromTopic && o.Err == nil && o.At >= 0 {
				group[o.Partition] = o.At
			}
		})
	}
	next, peek := map[int32]int64{}, map[int32]int64{}
	for part, cut := range job.cut {
		n, ok := stored[part]
		if !ok {
			n = group[part]
		}
		n = max(n, job.start[part])
		next[part] = n
		if n < cut {
			peek[part] = n
		}
	}
	if len(peek) == 0 {
		return next, nil, nil
	}
	first, err := p.firstChanges(ctx, fromTopic, peek, job.cut)
	if err != nil {
		return nil, nil, err
	}
	var open []int32
	for part := range peek {
		c, ok := first[part]
		switch {
		case !ok:
			next[part] = job.cut[part] // no change below the cut
		case c.pos.Known() && c.pos.Compare(mark.pos) > 0:
			next[part] = c.offset // the first change after the rename
		default:
			open = append(open, part)
		}
	}
	slices.Sort(open)
	return next, open, nil
}

// firstChange is a partition's first change record at or after an offset.
type firstChange struct {
	offset int64
	pos    decode.SourcePos
}

// firstChanges reads, for each partition of topic from from[part] below
// cut[part], its first change record; a partition with none is absent.
func (p *Pipeline) firstChanges(ctx context.Context, topic string, from, cut map[int32]int64) (map[int32]firstChange, error) {
	at := map[int32]kgo.Offset{}
	for part, n := range from {
		at[part] = kgo.NewOffset().At(n)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(p.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: at}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	}, p.cfg.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("creating a client to read %s: %w", topic, err)
	}
	defer cl.Close()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	open := maps.Clone(from)
	out := map[int32]firstChange{}
	for len(open) > 0 {
		fetches := cl.PollFetches(ctx)
		if parent.Err() != nil {
			return nil, context.Cause(parent)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reading %s up to the rename's cut: partitions %v not read in 20 s", topic, slices.Sorted(maps.Keys(open)))
		}
		var derr error
		fetches.EachRecord(func(r *kgo.Record) {
			if _, ok := open[r.Partition]; !ok || derr != nil {
				return
			}
			if r.Offset >= cut[r.Partition] {
				delete(open, r.Partition)
				return
			}
			if !r.Attrs.IsControl() && r.Value != nil {
				ch, err := p.dec.Decode(ctx, r.Topic, r.Partition, r.Offset, r.Key, r.Value)
				switch {
				case err != nil:
					// The owner's worker stops or dead-letters it; the
					// rename waits for that as for any change.
					if !recordFault(err) {
						derr = err
						return
					}
					out[r.Partition] = firstChange{offset: r.Offset}
					delete(open, r.Partition)
					return
				case ch.NotChange == "" && !ch.Tombstone:
					out[r.Partition] = firstChange{r.Offset, ch.Source}
					delete(open, r.Partition)
					return
				}
			}
			if r.Offset+1 >= cut[r.Partition] {
				delete(open, r.Partition)
			}
		})
		if derr != nil {
			return nil, derr
		}
	}
	return out, nil
}

// renameLake renames the old name's table to the new name's, when the old
// one had its name before the rename and the new one does not exist;
// either way, after a retry of an ambiguous answer too, the outcome is
// checked against the catalog. The renamed table then names its new
// source and the rename that named it.
func (p *Pipeline) renameLake(ctx context.Context, log *slog.Logger, fromNames topicNames, fromTopic string, toNames topicNames, toTopic string, mark nameMark) error {
	res, tbl, err := p.resolveTable(ctx, fromNames, fromTopic)
	if err != nil {
		return fmt.Errorf("finding the table of %s: %w", fromTopic, err)
	}
	from := res.Ident
	if tbl != nil {
		if m, ok := namedSince(tbl.Properties()); ok && m.compare(mark) >= 0 {
			log.Info("not renaming the table: it got the old name after the rename", "table_mark", m.String(), "mark", mark.String())
			return nil
		}
	}
	to, err := p.renameTarget(ctx, toNames, toTopic, from, fromNames)
	if err != nil {
		return err
	}
	if slices.Equal(from, to) {
		log.Info("the table keeps its name: it is the new name's too")
		return p.setSource(ctx, to, toNames, mark)
	}
	exists := func(id table.Identifier) (*table.Table, error) {
		t, err := p.cat.LoadTable(ctx, id)
		if errors.Is(err, catalog.ErrNoSuchNamespace) || errors.Is(err, catalog.ErrNoSuchTable) {
			return nil, nil
		}
		return t, err
	}
	renamed, lookedAgain, retargeted := false, false, false
	err = retryCatalog(ctx, func() error {
		fromT, err := exists(from)
		if err != nil {
			return err
		}
		toT, err := exists(to)
		if err != nil {
			return err
		}
		switch {
		case fromT == nil && toT != nil:
			log.Info("table already renamed", "to", strings.Join(to, "."))
			renamed = true
			return nil
		case fromT == nil:
			// Another process may have renamed it a moment ago, under
			// the name its source still calls another source's until
			// that process records the new source (setSource): the
			// target resolved then was the hashed name. Name the target
			// again once; a renamed table is then found under it.
			if !retargeted {
				retargeted = true
				again, err := p.renameTarget(ctx, toNames, toTopic, from, fromNames)
				if err != nil {
					return err
				}
				if !slices.Equal(again, to) {
					log.Info("the target's name changed while renaming: looking again", "was", strings.Join(to, "."), "to", strings.Join(again, "."))
					to = again
					return errLookAgain
				}
			}
			log.Info("no table to rename: the old table holds no change", "to", strings.Join(to, "."))
			return nil
		case toT != nil:
			if m, ok := namedSince(toT.Properties()); ok && m == mark {
				renamed = true
				return nil
			}
			if !lookedAgain {
				// Another process may be between its rename and the
				// property that records it: look again.
				lookedAgain = true
				return errLookAgain
			}
			log.Warn("not renaming the table: a table under the new name exists", "to", strings.Join(to, "."))
			return nil
		}
		if m, ok := namedSince(fromT.Properties()); ok && m.compare(mark) >= 0 {
			log.Info("not renaming the table: it got the old name after the rename", "table_mark", m.String(), "mark", mark.String())
			return nil
		}
		if err := p.ensureNamespace(ctx, table.Identifier{to[0]}); err != nil {
			return err
		}
		if _, err := p.cat.RenameTable(ctx, from, to); err != nil {
			return fmt.Errorf("renaming table %v to %v: %w", from, to, err)
		}
		log.Info("renamed table", "from", strings.Join(from, "."), "to", strings.Join(to, "."))
		renamed = true
		return nil
	})
	if err != nil || !renamed {
		log.Info("rename ended", "renamed", renamed, "from", strings.Join(from, "."), "to", strings.Join(to, "."), "error", err)
		return err
	}
	return p.setSource(ctx, to, toNames, mark)
}

// errLookAgain asks retryCatalog to look at the catalog again.
var errLookAgain = errors.New("pipeline: looking at the catalog again")

func (p *Pipeline) ensureNamespace(ctx context.Context, ns table.Identifier) error {
	p.createMu.Lock()
	defer p.createMu.Unlock()
	err := p.cat.CreateNamespace(ctx, ns, nil)
	if err == nil || errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil
	}
	if ok, cerr := p.cat.CheckNamespaceExists(ctx, ns); cerr == nil && ok {
		return nil
	}
	return fmt.Errorf("creating namespace %v: %w", ns, err)
}

// nudge hands the rename to this process's worker of topic, if it has one
// and it takes it at once; a busy worker takes it at its next record or
// tick (worker.adoptJob).
func (p *Pipeline) nudge(topic string, job *renameJob) {
	// Under mu: Run closes the queues only after it set closing.
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.tables[topic]
	if w == nil || p.closing {
		return
	}
	select {
	case w.in <- msg{ctl: ctlRename, job: job}:
	default:
	}
}

// owns reports whether this member is assigned partition part of topic.
func (p *Pipeline) owns(topic string, part int32) bool {
	p.ownMu.Lock()
	defer p.ownMu.Unlock()
	return p.owned[topic][part]
}
