package pipeline

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/binlake/binlake/ingest/internal/decode"
)

// Renames (RENAME TABLE a TO b, ALTER TABLE a RENAME TO b) are followed
// from the schema-change topic <prefix>, as Debezium and capture write it:
// neither re-snapshots a renamed table, so the rows of a exist in Kafka
// only on topic <prefix>.<db>.a. The lake table of a is renamed in the
// catalog to b's name and keeps its stored offsets, so nothing is applied
// twice and nothing is lost:
//
//   - The worker of the schema topic handles a rename record's pairs one
//     after another (a swap RENAME TABLE a TO b, c TO a needs that order).
//     For each pair it hands a renameJob to the old topic's worker with
//     the old topic's last stable offsets read then (the cut): every change
//     made before the rename is below it, since capture commits its Kafka
//     transactions in binlog order and Debezium produces in binlog order.
//   - The old topic's worker applies its records up to the cut, holding
//     back those whose source position is after the rename (a table that
//     took the old name), commits them to the old table, commits the next
//     offsets of the old topic to the consumer group (synchronously: a
//     restart resumes the old topic there, since no table under the old
//     name holds its offsets any more), and renames the table.
//   - A table worker buffers a change only once the schema topic has been
//     handled up to the change's source position (awaitSchema): a rename
//     before the change is then done, or is the job in hand of this
//     worker, so no change after a rename is ever committed to the old
//     table, and b's first change finds the renamed table.
//
// Each step can be repeated after a crash: the rename is done only while
// the old table exists and the new one does not.

// renameJob is one rename handed to the old topic's worker.
type renameJob struct {
	to      topicNames // the new name's prefix, database and table
	toTopic string
	from    tableName        // the old name, by the DDL
	pos     decode.SourcePos // the rename's binlog position
	cut     map[int32]int64  // the old topic's last stable offsets at the rename
	start   map[int32]int64  // the old topic's log start offsets
	held    map[int32]int64  // first offset per partition of a record held back
	later   []msg            // the records held back, in order
	done    chan error
}

// renamer is the pipeline's rename bookkeeping. Its mutex is a leaf: no
// other lock is taken while it is held.
type renamer struct {
	mu      sync.Mutex
	changed chan struct{}               // closed and replaced on every change
	pending map[string]int              // unfinished renames by new topic
	done    map[string]map[int32]int64  // schema topic → next offset handled per partition
	busy    map[string]decode.SourcePos // schema topic → position of the record in hand
	starts  map[string]map[int32]int64  // fetch start offsets chosen at assignment

	lsoMu    sync.Mutex // serialises reads of lsoCache; never held with mu
	lsoCache map[string]lsoRead
}

// lsoRead is a schema topic's last stable offsets, its log start offsets
// read after them, and when they were read.
type lsoRead struct {
	offsets  map[int32]int64
	logStart map[int32]int64
	at       time.Time
}

func newRenamer() *renamer {
	return &renamer{changed: make(chan struct{}), pending: map[string]int{}, done: map[string]map[int32]int64{},
		busy: map[string]decode.SourcePos{}, starts: map[string]map[int32]int64{}, lsoCache: map[string]lsoRead{}}
}

// wait returns a channel closed at the next change.
func (r *renamer) wait() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func (r *renamer) broadcastLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *renamer) setStart(topic string, part int32, off int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.starts[topic] == nil {
		r.starts[topic] = map[int32]int64{}
	}
	r.starts[topic][part] = off
	r.broadcastLocked()
}

func (r *renamer) start(topic string, part int32) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	off, ok := r.starts[topic][part]
	return off, ok
}

// handled notes that a schema topic's records below next are handled.
func (r *renamer) handled(topic string, part int32, next int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done[topic] == nil {
		r.done[topic] = map[int32]int64{}
	}
	r.done[topic][part] = next
	r.broadcastLocked()
}

func (r *renamer) begin(schemaTopic string, pos decode.SourcePos, toTopics []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy[schemaTopic] = pos
	for _, t := range toTopics {
		r.pending[t]++
	}
	r.broadcastLocked()
}

func (r *renamer) finish(toTopic string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending[toTopic]--; r.pending[toTopic] <= 0 {
		delete(r.pending, toTopic)
	}
	r.broadcastLocked()
}

func (r *renamer) end(schemaTopic string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.busy, schemaTopic)
	r.broadcastLocked()
}

// past reports whether the schema topic's worker is handling a record
// after q (so every record before q is handled).
func (r *renamer) past(schemaTopic string, q decode.SourcePos) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	pos, ok := r.busy[schemaTopic]
	return ok && q.Known() && pos.Compare(q) > 0
}

// lso returns the schema topic's last stable offsets (and log start
// offsets) as read at or after at, reading them when the cached ones are
// older.
func (r *renamer) lso(ctx context.Context, adm *kadm.Client, schemaTopic string, at time.Time) (lsoRead, error) {
	r.lsoMu.Lock()
	defer r.lsoMu.Unlock()
	if c, ok := r.lsoCache[schemaTopic]; ok && !c.at.Before(at) {
		return c, nil
	}
	now := time.Now()
	offs, err := offsetsOf(ctx, adm.ListCommittedOffsets, schemaTopic)
	if err != nil {
		return lsoRead{}, err
	}
	starts, err := offsetsOf(ctx, adm.ListStartOffsets, schemaTopic)
	if err != nil {
		return lsoRead{}, err
	}
	c := lsoRead{offs, starts, now}
	r.lsoCache[schemaTopic] = c
	return c, nil
}

// settled reports whether table topic toTopic may create its table for a
// change at q: no rename into it is pending, and the schema topic has been
// handled past q (busy with a later statement) or up to lso. A partition
// that holds no record (its log starts at its last stable offset: never
// written, or all deleted) is handled without any record reaching the
// worker; a partition's fetch start counts only when it is an offset, not
// the group's "from the start" sentinel.
func (r *renamer) settled(schemaTopic, toTopic string, q decode.SourcePos, lso lsoRead) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if toTopic != "" && r.pending[toTopic] > 0 {
		return false
	}
	if pos, ok := r.busy[schemaTopic]; ok && q.Known() && pos.Compare(q) > 0 {
		return true
	}
	for part, end := range lso.offsets {
		if ls, ok := lso.logStart[part]; ok && ls >= end {
			continue
		}
		next, ok := r.done[schemaTopic][part]
		if s, sok := r.starts[schemaTopic][part]; sok && s >= 0 && (!ok || s > next) {
			next, ok = s, true
		}
		if !ok || next < end {
			return false
		}
	}
	return true
}

// consumes reports whether the pipeline subscribes to topic.
func (p *Pipeline) consumes(topic string) bool {
	if p.cfg.TopicRegex != "" {
		re, err := regexp.Compile("^(?:" + p.cfg.TopicRegex + ")$")
		return err == nil && re.MatchString(topic)
	}
	return slices.Contains(p.cfg.Topics, topic)
}

var topicUnsafe = regexp.MustCompile(`[^a-zA-Z0-9._-]`)

// tableTopic is Debezium's topic name of a table: <prefix>.<db>.<table>
// with characters Kafka does not allow replaced by _.
func tableTopic(prefix string, t tableName) string {
	return prefix + "." + topicUnsafe.ReplaceAllString(t.DB, "_") + "." + topicUnsafe.ReplaceAllString(t.Table, "_")
}

// renamesOf returns the renames of a schema-change record: from its DDL,
// or from table change ids written as "old,new". A statement that renames
// several tables is written as one record per new name (an ALTER of it), so
// only the pairs whose new name the record's table changes carry count.
func renamesOf(sc *decode.SchemaChange) []renamePair {
	if pairs := parseRenames(sc.DDL, sc.Database); len(pairs) > 0 {
		ids := map[tableName]bool{}
		for _, tc := range sc.Tables {
			if n, ok := quotedName(tc.ID); ok {
				ids[n] = true
			}
		}
		if len(ids) == 0 {
			return pairs
		}
		var out []renamePair
		for _, pr := range pairs {
			if ids[pr.To] {
				out = append(out, pr)
			}
		}
		return out
	}
	var out []renamePair
	for _, tc := range sc.Tables {
		old, nw, ok := strings.Cut(tc.ID, `","`)
		if !ok || tc.Type != "ALTER" || strings.Count(tc.ID, `"."`) != 2 {
			continue
		}
		from, ok1 := quotedName(old + `"`)
		to, ok2 := quotedName(`"` + nw)
		if ok1 && ok2 {
			out = append(out, renamePair{from, to, true})
		}
	}
	return out
}

// quotedName parses "db"."table".
func quotedName(s string) (tableName, bool) {
	db, tb, ok := strings.Cut(s, `"."`)
	if !ok || !strings.HasPrefix(db, `"`) || !strings.HasSuffix(tb, `"`) {
		return tableName{}, false
	}
	return tableName{db[1:], tb[:len(tb)-1]}, true
}

// offsetsOf lists the offsets of topic's partitions; a topic that does not
// exist has none.
func offsetsOf(ctx context.Context, list func(context.Context, ...string) (kadm.ListedOffsets, error), topic string) (map[int32]int64, error) {
	lo, err := list(ctx, topic)
	if err != nil {
		var se *kadm.ShardErrors
		if !errors.As(err, &se) {
			return nil, fmt.Errorf("listing offsets of %s: %w", topic, err)
		}
	}
	out := map[int32]int64{}
	for part, o := range lo[topic] {
		if o.Err != nil {
			continue // an unknown topic: nothing was written to it
		}
		out[part] = o.Offset
	}
	return out, nil
}

// followRenames handles a schema-change record on w's topic (the schema
// topic <prefix>): each rename it makes is carried out by the old topic's
// worker before the record counts as handled.
func (w *worker) followRenames(ctx context.Context, rec *kgo.Record, sc *decode.SchemaChange) error {
	w.p.noteColumnRenames(rec.Topic, sc)
	pairs := renamesOf(sc)
	if len(pairs) == 0 {
		return nil
	}
	p := w.p
	prefix := rec.Topic
	var toTopics []string
	for _, pr := range pairs {
		toTopics = append(toTopics, tableTopic(prefix, pr.To))
	}
	p.ren.begin(prefix, sc.Source, toTopics)
	defer p.ren.end(prefix)
	adm := kadm.NewClient(p.cl)
	for i, pr := range pairs {
		fromTopic, toTopic := tableTopic(prefix, pr.From), toTopics[i]
		if !pr.FromQualified && pr.From.DB != "" {
			if alt, ok := w.sessionTopic(ctx, adm, prefix, pr); ok {
				fromTopic = alt
			}
		}
		err := w.renameOne(ctx, adm, fromTopic, toTopic, pr, sc.Source)
		p.ren.finish(toTopic)
		if err != nil {
			return fmt.Errorf("following the rename of %s to %s at %s/%d/%d: %w", fromTopic, toTopic, rec.Topic, rec.Partition, rec.Offset, err)
		}
	}
	return nil
}

func (w *worker) renameOne(ctx context.Context, adm *kadm.Client, fromTopic, toTopic string, pr renamePair, pos decode.SourcePos) error {
	p := w.p
	// The DDL names the tables, so a topic with dots in its names needs
	// no record to name them.
	toNames, ok := namesFor(toTopic, pr.To.DB, pr.To.Table)
	if !ok {
		return fmt.Errorf("topic %q is not <prefix>.<db>.<table>", toTopic)
	}
	var err error
	job := &renameJob{to: toNames, toTopic: toTopic, from: pr.From, pos: pos, cut: map[int32]int64{}, start: map[int32]int64{}, held: map[int32]int64{}, done: make(chan error, 1)}
	if p.consumes(fromTopic) {
		if job.cut, err = offsetsOf(ctx, adm.ListCommittedOffsets, fromTopic); err != nil {
			return err
		}
		if job.start, err = offsetsOf(ctx, adm.ListStartOffsets, fromTopic); err != nil {
			return err
		}
	}
	w.log.Info("following a table rename", "from_topic", fromTopic, "to_topic", toTopic, "binlog_file", pos.File, "binlog_pos", pos.Pos, "cut", job.cut)
	fw, err := p.worker(ctx, fromTopic)
	if err != nil {
		return err
	}
	if err := w.waitFor(ctx, func() (bool, error) {
		select {
		case fw.in <- msg{ctl: ctlRename, job: job}:
			return true, nil
		default:
			return false, nil
		}
	}); err != nil {
		return err
	}
	var jobErr error
	if err := w.waitFor(ctx, func() (bool, error) {
		select {
		case jobErr = <-job.done:
			return true, nil
		case <-p.failed:
			return false, p.firstErr()
		default:
			return false, nil
		}
	}); err != nil {
		return err
	}
	return jobErr
}

// errStopped ends a worker whose queue was closed while it waited.
var errStopped = errors.New("pipeline: worker stopped")

// waitFor waits until ready reports true, handing flush and drop requests
// meanwhile and holding back records and renames, which the worker handles
// after the wait, in order.
func (w *worker) waitFor(ctx context.Context, ready func() (bool, error)) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		changed := w.p.ren.wait()
		ok, err := ready()
		if err != nil || ok {
			return err
		}
		select {
		case m, ok := <-w.in:
			if !ok {
				return errStopped
			}
			switch m.ctl {
			case ctlFlush:
				err := w.flush(m.ctx, "handoff")
				w.commitSkipped(m.ctx)
				m.done <- err
				if err != nil {
					return err
				}
			case ctlDrop:
				// As in handle: a drop whose callback gave up waiting is
				// stale, the partitions may be this member's again, and
				// what is held and buffered is kept. Dropping the held
				// records then lost those of partitions the batch had no
				// record of (no rewind covers them).
				if err := w.settle(); err != nil {
					m.done <- err
					return err
				}
				if m.ctx.Err() == nil {
					w.drop()
					w.held = nil
				}
				m.done <- nil
			default:
				w.held = append(w.held, m)
			}
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// schemaWaitWarning is how long awaitSchema waits before it says so.
const schemaWaitWarning = 30 * time.Second

// awaitSchema waits, before w buffers a change at q, until every
// schema-change record before q is handled: the schema topic's worker is
// past q, or has handled the topic up to its last stable offset read after
// the change was polled. A rename of w's own table that arrives meanwhile
// is taken on at once (the schema worker waits for it).
func (w *worker) awaitSchema(ctx context.Context, q decode.SourcePos) error {
	p := w.p
	if w.schemaOf == nil {
		w.schemaOf = new(string)
		if st := w.names.prefix; st != "" && p.consumes(st) {
			*w.schemaOf = st
		}
	}
	schemaTopic := *w.schemaOf
	if schemaTopic == "" {
		return nil // renames are not followed
	}
	at := w.recAt
	var lso lsoRead
	waited, since, warned := false, time.Now(), false
	return w.waitFor(ctx, func() (bool, error) {
		if w.job != nil {
			// The schema worker is at this topic's rename: a change
			// before it has every schema record before it handled, one
			// after it is held back by the job.
			return true, nil
		}
		for i, m := range w.held {
			if m.ctl == ctlRename {
				w.job = m.job
				w.held = slices.Delete(w.held, i, i+1)
				return true, nil
			}
		}
		if p.ren.past(schemaTopic, q) {
			return true, nil
		}
		if lso.offsets == nil {
			var err error
			if lso, err = p.ren.lso(ctx, kadm.NewClient(p.cl), schemaTopic, at); err != nil {
				return false, err
			}
		}
		if p.ren.settled(schemaTopic, "", q, lso) {
			return true, nil
		}
		if !waited {
			waited = true
			w.log.Debug("waiting for the schema topic", "schema_topic", schemaTopic)
		}
		if !warned && time.Since(since) > schemaWaitWarning {
			// The schema topic's worker runs in the process that owns
			// its partition: a member of the group that does not cannot
			// learn how far it got.
			warned = true
			w.log.Warn("still waiting for the schema-change topic to be handled up to this change: if another ingest process "+
				"of this group was assigned it, renames cannot be followed across processes; run one ingest process per source "+
				"whose renames are followed, or leave the schema-change topic out of topics / topic-regex",
				"schema_topic", schemaTopic, "waited", time.Since(since).Round(time.Second))
		}
		return false, nil
	})
}

// checkRename finishes w's rename job once w has handled every record of
// its topic below the cut.
func (w *worker) checkRename(ctx context.Context) error {
	job := w.job
	if job == nil {
		return nil
	}
	for part, cut := range job.cut {
		next := w.seen[part]
		if s, ok := w.p.ren.start(w.topic, part); ok && s > next {
			next = s
		}
		if s := job.start[part]; s > next {
			next = s
		}
		if next < cut {
			return nil
		}
	}
	return w.finishRename(ctx)
}

func (w *worker) finishRename(ctx context.Context) error {
	job := w.job
	p := w.p
	if err := w.flush(ctx, "rename"); err != nil {
		return err
	}
	// The old topic's next offsets go to the consumer group: the table that
	// held them leaves this name, so a restart resumes there (see
	// adjustOffsets). Records held back are after the rename: not past.
	next := map[int32]kgo.EpochOffset{}
	for part := range job.cut {
		n := w.seen[part]
		if s, ok := p.ren.start(w.topic, part); ok && s > n {
			n = s
		}
		if s := job.start[part]; s > n {
			n = s
		}
		if h, ok := job.held[part]; ok {
			n = h
		}
		if n > 0 {
			next[part] = kgo.EpochOffset{Epoch: -1, Offset: n}
		}
	}
	if len(next) > 0 {
		var cerr error
		p.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{w.topic: next}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			cerr = err
			if err == nil {
				cerr = commitRespErr(resp)
			}
		})
		if cerr != nil {
			return fmt.Errorf("committing the offsets of %s before renaming its table: %w", w.topic, cerr)
		}
	}
	if err := w.renameTable(ctx, job.to, job.toTopic); err != nil {
		return err
	}
	// The old name starts over: a table that takes it (RENAME TABLE c TO a,
	// CREATE TABLE a) is another table.
	w.committer, w.schema, w.key, w.buf = nil, nil, nil, nil
	w.job = nil
	w.held = append(job.later, w.held...)
	job.done <- nil
	return nil
}

// renameTable renames w's table to the table name of source table
// toNames (topic toTopic) when w's table exists and that one does not;
// either way, after a retry of an ambiguous answer too, the outcome is
// checked against the catalog. The renamed table's SourceProperty then
// names its new source, so that its new name is found as that source's.
func (w *worker) renameTable(ctx context.Context, toNames topicNames, toTopic string) error {
	p := w.p
	from := w.ident
	if from == nil {
		return fmt.Errorf("topic %s: the table to rename to %s.%s is not known: the topic has dots in its names and neither its records nor the rename name it", w.topic, toNames.db, toNames.table)
	}
	if w.committer == nil {
		// w's name is resolved at its first change; a table renamed before
		// any is resolved here.
		if _, err := w.locate(ctx); err != nil {
			return err
		}
		from = w.ident
	}
	to, err := p.renameTarget(ctx, toNames, toTopic, from, w.names)
	if err != nil {
		return err
	}
	if slices.Equal(from, to) {
		if ok, err := p.cat.CheckTableExists(ctx, from); err != nil || !ok {
			return nil
		}
		w.log.Info("the table keeps its name: it is the new name's too")
		return p.setSource(ctx, to, toNames)
	}
	renamed := false
	exists := func(id table.Identifier) (bool, error) {
		ok, err := p.cat.CheckTableExists(ctx, id)
		if errors.Is(err, catalog.ErrNoSuchNamespace) || errors.Is(err, catalog.ErrNoSuchTable) {
			return false, nil
		}
		return ok, err
	}
	err = retryCatalog(ctx, func() error {
		fromOK, err := exists(from)
		if err != nil {
			return err
		}
		toOK, err := exists(to)
		if err != nil {
			return err
		}
		switch {
		case !fromOK && toOK:
			w.log.Info("table already renamed", "to", strings.Join(to, "."))
			renamed = true
			return nil
		case !fromOK:
			w.log.Info("no table to rename: the old table holds no change", "to", strings.Join(to, "."))
			return nil
		case toOK:
			w.log.Warn("not renaming the table: a table under the new name exists", "to", strings.Join(to, "."))
			return nil
		}
		if err := w.ensureNamespace(ctx, table.Identifier{to[0]}); err != nil {
			return err
		}
		if _, err := p.cat.RenameTable(ctx, from, to); err != nil {
			return fmt.Errorf("renaming table %v to %v: %w", from, to, err)
		}
		w.log.Info("renamed table", "to", strings.Join(to, "."))
		renamed = true
		return nil
	})
	if err != nil || !renamed {
		return err
	}
	return p.setSource(ctx, to, toNames)
}

func (w *worker) ensureNamespace(ctx context.Context, ns table.Identifier) error {
	w.p.createMu.Lock()
	defer w.p.createMu.Unlock()
	err := w.p.cat.CreateNamespace(ctx, ns, nil)
	if err == nil || errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil
	}
	if ok, cerr := w.p.cat.CheckNamespaceExists(ctx, ns); cerr == nil && ok {
		return nil
	}
	return fmt.Errorf("creating namespace %v: %w", ns, err)
}

// commitRespErr returns the first partition error of an offset commit.
func commitRespErr(resp *kmsg.OffsetCommitResponse) error {
	if resp == nil {
		return nil
	}
	for _, t := range resp.Topics {
		for _, pt := range t.Partitions {
			if err := kerr.ErrorForCode(pt.ErrorCode); err != nil {
				return fmt.Errorf("partition %d: %w", pt.Partition, err)
			}
		}
	}
	return nil
}

// sessionTopic finds the old topic of a rename whose old name has no
// database: the event carries only the new table's database, while the
// server resolved the old name in the session's. When no topic of the old
// name exists in the new table's database but exactly one exists in
// another database of the prefix, that one is the old table's.
func (w *worker) sessionTopic(ctx context.Context, adm *kadm.Client, prefix string, pr renamePair) (string, bool) {
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return "", false
	}
	if topics.Has(tableTopic(prefix, pr.From)) {
		return "", false
	}
	suffix := "." + topicUnsafe.ReplaceAllString(pr.From.Table, "_")
	var found []string
	for name := range topics {
		if strings.HasPrefix(name, prefix+".") && strings.HasSuffix(name, suffix) && strings.Count(name[len(prefix)+1:], ".") == 1 {
			found = append(found, name)
		}
	}
	if len(found) != 1 {
		return "", false
	}
	w.log.Info("the renamed table's old name has no database; its topic is the only one of that name", "from_topic", found[0])
	return found[0], true
}
