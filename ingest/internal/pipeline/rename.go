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
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/binlake/binlake/ingest/internal/decode"
)

// Renames (RENAME TABLE a TO b, ALTER TABLE a RENAME TO b) are followed
// from the schema-change topic <prefix>, as Debezium and capture write it:
// neither re-snapshots a renamed table, so the rows of a exist in Kafka
// only on topic <prefix>.<db>.a. The lake table of a is renamed in the
// catalog to b's name and keeps its stored offsets, so nothing is applied
// twice and nothing is lost. Each ingest process reads the schema topic
// itself (follower.go, which says how a rename is carried out across the
// processes of a group); here are the table workers' side and the
// bookkeeping they share with their process's follower:
//
//   - A table worker buffers a change only once its follower has handled
//     the schema topic up to the change's source position (awaitSchema): a
//     rename before the change is then done, or is the job in hand of this
//     worker, so no change after a rename is ever committed to the old
//     table, and b's first change finds the renamed table.
//   - The old topic's worker, given the rename (renameJob), applies its
//     partitions' records up to the cut, holding back those whose source
//     position is after the rename (a table that took the old name),
//     commits them to the old table, and once the follower has renamed
//     the table starts over with the records held back.
//
// Each step can be repeated after a crash: the rename is done only while
// the old table had its name before the rename and the new one does not
// exist (NameSinceProperty).

// renameJob is one rename handed to the old topic's worker.
type renameJob struct {
	from  tableName        // the old name, by the DDL
	pos   decode.SourcePos // the rename's binlog position
	cut   map[int32]int64  // the old topic's last stable offsets at the rename
	start map[int32]int64  // the old topic's log start offsets
	held  map[int32]int64  // first offset per partition of a record held back
	later []msg            // the records held back, in order

	// done marks a rename another process carried out before this
	// process's follower reached it (handDone): renamed is closed from
	// the start. The old table holds every change before the rename, so
	// what the worker buffered for it is dropped and the changes after
	// it start over on the table now under the name. at is when the
	// follower found it done.
	done bool
	at   time.Time

	// renamed is closed when the follower is done with the rename; err
	// (set before) says why it failed, nil when the table was renamed or
	// had nothing to rename.
	renamed chan struct{}
	err     error
}

// errRenameStopped ends a rename job whose follower stopped with the
// process before the rename was done.
var errRenameStopped = errors.New("pipeline: the rename was stopped with the process; it is followed again after the restart")

// stopped reports whether the job ended because the process is stopping.
func (j *renameJob) stopped() bool {
	select {
	case <-j.renamed:
		return errors.Is(j.err, errRenameStopped)
	default:
		return false
	}
}

// renamer is the pipeline's rename bookkeeping. Its mutex is a leaf: no
// other lock is taken while it is held.
type renamer struct {
	mu      sync.Mutex
	changed chan struct{}               // closed and replaced on every change
	done    map[string]map[int32]int64  // schema topic → next offset handled per partition
	busy    map[string]decode.SourcePos // schema topic → position of the record in hand
	starts  map[string]map[int32]int64  // fetch start offsets chosen at assignment
	active  map[string]*renameJob       // old topic → the rename its follower is at
	gone    map[string]*renameJob       // old topic → the last rename found done (handDone)

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
	return &renamer{changed: make(chan struct{}), done: map[string]map[int32]int64{},
		busy: map[string]decode.SourcePos{}, starts: map[string]map[int32]int64{}, active: map[string]*renameJob{}, gone: map[string]*renameJob{}, lsoCache: map[string]lsoRead{}}
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

// begin notes that the schema topic's follower is at a record at pos.
func (r *renamer) begin(schemaTopic string, pos decode.SourcePos) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy[schemaTopic] = pos
	r.broadcastLocked()
}

// setActive makes job the rename of topic's table that workers take on.
func (r *renamer) setActive(topic string, job *renameJob) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active[topic] = job
	r.broadcastLocked()
}

func (r *renamer) clearActive(topic string, job *renameJob) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active[topic] == job {
		delete(r.active, topic)
	}
	r.broadcastLocked()
}

func (r *renamer) activeFor(topic string) *renameJob {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active[topic]
}

// setDone records job, a rename of topic's table found done, for the
// topic's worker to take on (adoptJob); it replaces the last one.
func (r *renamer) setDone(topic string, job *renameJob) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone[topic] = job
	r.broadcastLocked()
}

func (r *renamer) doneFor(topic string) *renameJob {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gone[topic]
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

// settled reports whether a table worker may buffer a change at q: the
// schema topic has been handled past q (busy with a later statement) or
// up to lso. A partition
// that holds no record (its log starts at its last stable offset: never
// written, or all deleted) is handled without any record reaching the
// worker; a partition's fetch start counts only when it is an offset, not
// the group's "from the start" sentinel.
func (r *renamer) settled(schemaTopic string, q decode.SourcePos, lso lsoRead) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
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
		for i := range pairs {
			pairs[i].Idx = i
		}
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
			out = append(out, renamePair{From: from, To: to, FromQualified: true, ToQualified: true, Idx: len(out)})
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

// errStopped ends a worker whose queue was closed while it waited.
var errStopped = errors.New("pipeline: worker stopped")

// waitFor waits until ready reports true, handing flush and drop requests
// meanwhile and holding back records and renames, which the worker handles
// after the wait, in order.
func (w *worker) waitFor(ctx context.Context, ready func() (bool, error)) error {
	// Most calls (awaitSchema, once per change) need no wait: no ticker
	// for them.
	if ok, err := ready(); err != nil || ok {
		return err
	}
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
				// what is held and buffered is kept. A drop that is not
				// lets go of what it held of the partitions revoked or
				// rewound; dropping every held record lost those of kept
				// partitions the batch had no record of (no rewind covers
				// them).
				if err := w.settle(); err != nil {
					m.done <- err
					return err
				}
				if m.ctx.Err() == nil {
					w.forgetDropped(w.drop())
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

// schemaWaitWarning is how long awaitSchema waits before it warns: a
// rename before the change holds it until the old table is drained, which
// takes the old table's owners a commit each (seconds; more while the
// group rebalances), so only a much longer wait says something is wrong.
// A wait over schemaWaitNote is logged at info when it ends.
const (
	schemaWaitWarning = 2 * time.Minute
	schemaWaitNote    = 10 * time.Second
)

// awaitSchema waits, before w buffers a change at q, until this process's
// follower of the schema topic has handled every schema-change record
// before q: it is past q, or has handled the topic up to its last stable
// offset read after the change was polled. A rename of w's own table that
// the follower is at is taken on at once (the follower waits for it).
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
	p.follow(schemaTopic)
	at := w.recAt
	var lso lsoRead
	waited, since, warned := false, time.Now(), false
	defer func() {
		if d := time.Since(since); d > schemaWaitNote {
			w.log.Info("waited for the schema-change topic", "schema_topic", schemaTopic, "waited", d.Round(100*time.Millisecond))
		}
	}()
	return w.waitFor(ctx, func() (bool, error) {
		if w.adoptJob() {
			// The follower is at this topic's rename: a change before it
			// has every schema record before it handled, one after it is
			// held back by the job.
			return true, nil
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
		if p.ren.settled(schemaTopic, q, lso) {
			return true, nil
		}
		if !waited {
			waited = true
			w.log.Debug("waiting for the schema topic", "schema_topic", schemaTopic)
		}
		if !warned && time.Since(since) > schemaWaitWarning {
			warned = true
			w.log.Warn("still waiting for the schema-change topic to be handled up to this change: this process's reader of it "+
				"is at a rename whose old table is not yet drained, or behind",
				"schema_topic", schemaTopic, "waited", time.Since(since).Round(time.Second))
		}
		return false, nil
	})
}

// adoptJob takes on the rename of w's topic this process's follower is at,
// if w has none in hand; it reports whether w has one.
func (w *worker) adoptJob() bool {
	if w.job != nil {
		return true
	}
	for i, m := range w.held {
		if m.ctl == ctlRename {
			w.held = slices.Delete(w.held, i, i+1)
			w.takeJob(m.job)
			return w.job != nil
		}
	}
	if j := w.p.ren.activeFor(w.topic); j != nil {
		w.takeJob(j)
	}
	if j := w.p.ren.doneFor(w.topic); w.job == nil && j != nil && j.at.After(w.born) {
		w.takeJob(j)
	}
	return w.job != nil
}

func (w *worker) takeJob(j *renameJob) {
	if j == nil || j == w.lastJob {
		return
	}
	select {
	case <-j.renamed:
		if !j.done {
			return // over before this worker saw it
		}
	default:
	}
	w.job, w.lastJob = j, j
	if w.ambiguous && w.ident == nil {
		// No change record named the table yet; the rename does.
		if names, ok := namesFor(w.topic, j.from.DB, j.from.Table); ok {
			if err := w.setNames(names); err != nil {
				w.log.Warn("naming the table from the rename", "error", err)
			}
		}
	}
}

// jobRenamed is closed when the rename in hand is done; nil (never ready)
// when none is in hand.
func (w *worker) jobRenamed() <-chan struct{} {
	if w.job == nil || w.job.stopped() {
		return nil
	}
	return w.job.renamed
}

// checkRename moves w's rename job on: once w has handled every record of
// its partitions below the cut, what it buffered is committed to the old
// table; once the follower has renamed the table, w starts over.
func (w *worker) checkRename(ctx context.Context) error {
	job := w.job
	if job == nil {
		return nil
	}
	if job.stopped() {
		// The process is stopping; the rename is followed again after the
		// restart. The job stays in hand, so the records after the rename
		// stay held (never buffered for the old table, never committed):
		// what is buffered is from before it, and the final commit takes
		// it to the old table as the rename itself would have.
		return nil
	}
	select {
	case <-job.renamed:
		return w.finishRename(ctx)
	default:
	}
	for part, cut := range job.cut {
		if !w.p.owns(w.topic, part) {
			continue // its owner, in this process or another, applies it
		}
		if _, ok := job.held[part]; ok {
			continue
		}
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
	if (w.buf != nil && w.buf.Pending() > 0) || w.flight != nil {
		return w.flush(ctx, "rename")
	}
	return nil
}

// finishRename starts w over after the follower renamed its table: the
// old name is another table's now (RENAME TABLE c TO a, CREATE TABLE a).
func (w *worker) finishRename(ctx context.Context) error {
	job := w.job
	if err := w.settle(); err != nil {
		return err
	}
	if job.err != nil {
		return job.err
	}
	if w.buf != nil && w.buf.Pending() > 0 {
		// The old table holds every change before the rename (the
		// follower saw to it): what is left is what another owner
		// committed first.
		w.log.Info("dropping records the renamed table holds already", "events", w.buf.Len())
		w.p.buffered.Add(-w.buf.Bytes())
		w.buf.Reset()
		w.setBuffered()
	}
	w.committer, w.tableUUID, w.schema, w.key, w.buf = nil, "", nil, nil, nil
	w.job = nil
	w.held = append(job.later, w.held...)
	return nil
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
func sessionTopic(ctx context.Context, log *slog.Logger, adm *kadm.Client, prefix string, pr renamePair) (string, bool) {
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
	log.Info("the renamed table's old name has no database; its topic is the only one of that name", "from_topic", found[0])
	return found[0], true
}
