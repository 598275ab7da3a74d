// Package replay is the command `ingest replay`: it rebuilds tables in an
// Iceberg branch from an earlier snapshot (or time, or Kafka offsets),
// re-applying the topics from the offsets that snapshot recorded, exactly
// once, while the running ingest keeps main current; with Publish it then
// moves main to the branch in one commit per table. A replay that stops
// half way resumes from what the branch records.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/branch"
	"github.com/binlake/binlake/ingest/internal/cmd/ingest"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/lake"
	"github.com/binlake/binlake/ingest/internal/pipeline"
)

// replayKeyPrefix + branch is the table property that records a replay in
// progress into the branch (replayState as JSON): a replay killed half way
// resumes from it and from the branch's own offsets.
const replayKeyPrefix = "binlake.replay."

// errOffsetsGone reports a replay that needs records the topic no longer
// holds.
var errOffsetsGone = errors.New("the topic no longer holds the offsets the replay needs")

// replayState is what a table records of a replay into a branch.
type replayState struct {
	// Base is the snapshot the branch started at; Start the offsets it
	// held (where the replay started reading).
	Base  int64         `json:"base"`
	Start batch.Offsets `json:"start"`
	// Published is the snapshot main was moved to (0: not yet).
	Published int64     `json:"published,omitempty"`
	Began     time.Time `json:"began"`
}

// replayTable is one table being rebuilt.
type replayTable struct {
	ident table.Identifier
	name  string
	state replayState
	done  bool
	// applied and total are the records (Kafka offsets) applied in the
	// branch since the start and those to apply to reach main.
	applied, total int64
}

// Config is the configuration of `ingest replay`: ingest's settings
// (catalog, Kafka, registry, delete mode, flush limits; its topics and
// topic-regex are ignored: the topics are those the tables hold offsets
// of) and its own.
type Config struct {
	Ingest ingest.Config
	// Tables is a regex of the <namespace>.<table> names to rebuild
	// (required).
	Tables string
	// At most one of FromSnapshot, FromTime (RFC 3339) and FromOffsets
	// ([<topic>:]<partition>=<offset>,...) names where the rebuild starts.
	FromSnapshot int64
	FromTime     string
	FromOffsets  string
	// Branch is the Iceberg branch the tables are rebuilt in. Default
	// binlake-replay.
	Branch string
	// Publish moves main to the branch once it has caught up.
	Publish bool
	// ProgressInterval is how often progress is logged when the progress
	// writer is not a terminal. Default 10s.
	ProgressInterval time.Duration
}

// Bind adds the settings of ingest replay's own to fs (flags only; those
// of Ingest are bound by ingest.Config.Bind).
func (c *Config) Bind(fs *flag.FlagSet) {
	fs.StringVar(&c.Tables, "tables", "", "regex of <namespace>.<table> to rebuild (required)")
	fs.Int64Var(&c.FromSnapshot, "from-snapshot", 0, "rebuild from this snapshot: its rows, then the topic from the offsets it recorded")
	fs.StringVar(&c.FromTime, "from-time", "", "rebuild from the snapshot of main current at this time (RFC 3339, e.g. 2026-12-01T10:00:00Z)")
	fs.StringVar(&c.FromOffsets, "from-offsets", "", "re-apply the topic from these Kafka offsets on: [<topic>:]<partition>=<offset>,... (no topic: every topic of the table); "+
		"the rebuild starts from the newest snapshot of main that had applied nothing at or after them")
	fs.StringVar(&c.Branch, "branch", "binlake-replay", "the Iceberg branch the tables are rebuilt in (an existing replay branch resumes)")
	fs.BoolVar(&c.Publish, "publish", false, "once the branch has caught up with main, move main to it (atomically, per table) and remove the branch; "+
		"without it the branch is left for inspection, and a later run with --publish publishes it")
	fs.DurationVar(&c.ProgressInterval, "progress-interval", 10*time.Second, "how often progress is logged when stderr is not a terminal")
}

// Validate checks ingest's settings and the replay's own. It sets
// Ingest's topics aside (Topics "", TopicRegex matchesNoTopic): the
// topics come from the tables.
func (c *Config) Validate() error {
	_, _, err := c.parse()
	return err
}

// matchesNoTopic is a regex that matches no string: an empty class.
const matchesNoTopic = `[^\x00-\x{10FFFF}]`

// parse validates the settings, and returns the tables' filter and where
// the rebuild starts.
func (c *Config) parse() (*regexp.Regexp, startAt, error) {
	// The topics come from the tables; ingest's check wants one of the
	// two, and a regex that matches no topic, so that a dead-letter topic
	// (errors-tolerance=dlq, shared with the running ingest) is not taken
	// for a consumed one.
	c.Ingest.Topics, c.Ingest.TopicRegex = "", matchesNoTopic
	var bad []error
	if err := c.Ingest.Validate(); err != nil {
		bad = append(bad, err)
	}
	var filter *regexp.Regexp
	if c.Tables == "" {
		bad = append(bad, errors.New("tables is required: a regex of the <namespace>.<table> names to rebuild"))
	} else if re, err := regexp.Compile("^(?:" + c.Tables + ")$"); err != nil {
		bad = append(bad, fmt.Errorf("tables: %w", err))
	} else {
		filter = re
	}
	var asOf time.Time
	if c.FromTime != "" {
		t, err := time.Parse(time.RFC3339, c.FromTime)
		if err != nil {
			bad = append(bad, fmt.Errorf("from-time %q: want RFC 3339, e.g. 2026-12-01T10:00:00Z", c.FromTime))
		}
		asOf = t
	}
	from, err := parseFromOffsets(c.FromOffsets)
	if err != nil {
		bad = append(bad, fmt.Errorf("from-offsets: %w", err))
	}
	if n := btoi(c.FromSnapshot != 0) + btoi(c.FromTime != "") + btoi(c.FromOffsets != ""); n > 1 {
		bad = append(bad, errors.New("set at most one of from-snapshot, from-time and from-offsets"))
	}
	if c.Branch == "" || c.Branch == table.MainBranch {
		bad = append(bad, fmt.Errorf("branch %q: name a branch other than main", c.Branch))
	}
	return filter, startAt{snapshot: c.FromSnapshot, time: asOf, offsets: from}, errors.Join(bad...)
}

// Run is `ingest replay`: it rebuilds the tables of cfg (validated) in an
// Iceberg branch from an earlier snapshot and its offsets, while the
// running ingest keeps main current, and publishes the branch as main when
// cfg.Publish is set. Progress goes to progress as one updated line when it
// is a terminal, else to the log every ProgressInterval.
func Run(ctx context.Context, cfg Config, logger *slog.Logger, progress io.Writer) (err error) {
	// A broker refusing the security settings: name the setting, as run
	// and status do.
	defer func() { err, _ = cfg.Ingest.Kafka.Explain(err) }()
	filter, at, err := cfg.parse()
	if err != nil {
		return err
	}
	cat, err := lake.Open(ctx, cfg.Ingest.CatalogConfig, logger)
	if err != nil {
		return err
	}
	defer lake.Close(cat, logger)
	cl, _, err := cfg.Ingest.KafkaClient(ctx, "binlake-ingest-replay")
	if err != nil {
		return err
	}
	defer cl.Close()
	r := &replayer{cat: cat, adm: kadm.NewClient(cl), branch: cfg.Branch, log: logger}
	tables, err := r.prepare(ctx, filter, at)
	if err != nil {
		return err
	}
	var topics []string
	for _, t := range tables {
		if !t.done {
			main, err := r.mainOffsets(ctx, t)
			if err != nil {
				return err
			}
			topics = append(topics, pendingTopics(t.state.Start, main)...)
		}
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	if len(topics) > 0 {
		if err := r.run(ctx, cfg.Ingest, tables, topics, cfg.Publish, progressOut(progress), cfg.ProgressInterval); err != nil {
			return err
		}
	} else {
		// Every branch holds main's offsets already: nothing to read.
		for _, t := range tables {
			for !t.done {
				if err := r.step(ctx, t, cfg.Publish); err != nil {
					return err
				}
				if !t.done {
					if err := commit.Backoff(ctx, 1, time.Second, time.Second); err != nil {
						return err
					}
				}
			}
		}
	}
	if cfg.Publish {
		for _, t := range tables {
			if err := r.cleanUp(ctx, t); err != nil {
				return err
			}
		}
		logger.Info("replay published", "tables", len(tables), "branch", r.branch)
		return nil
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.name
	}
	logger.Info("replay caught up with main; the branch is left for inspection (read it as branch "+r.branch+
		"; run again with --publish to move main to it, or remove the branch)", "tables", strings.Join(names, ","), "branch", r.branch)
	return nil
}

// pendingTopics are the topics a replay from start has to read to catch
// up with main: those of which main holds an offset past start's. A topic
// start holds as far as main does has nothing to re-apply: the old topic
// of a table renamed before the replay's start, whose table no longer
// exists under that topic's name (reading it would re-create it).
func pendingTopics(start, main batch.Offsets) []string {
	var out []string
	for topic, parts := range main {
		for p, want := range parts {
			if start[topic][p] < want {
				out = append(out, topic)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// replayer holds what a replay shares across its tables.
type replayer struct {
	cat    catalog.Catalog
	adm    *kadm.Client
	branch string
	log    *slog.Logger
}

func (r *replayer) key() string { return replayKeyPrefix + r.branch }

// prepare finds the tables, makes their branches (or finds them made by a
// replay that stopped) and checks that the topics still hold what the
// replay needs.
func (r *replayer) prepare(ctx context.Context, filter *regexp.Regexp, at startAt) ([]*replayTable, error) {
	nss, err := r.cat.ListNamespaces(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing the catalog's namespaces: %w", err)
	}
	var out []*replayTable
	for _, ns := range nss {
		for ident, err := range r.cat.ListTables(ctx, ns) {
			if err != nil {
				return nil, fmt.Errorf("listing the tables of namespace %s: %w", strings.Join(ns, "."), err)
			}
			name := strings.Join(ident, ".")
			if !filter.MatchString(name) {
				continue
			}
			t, err := r.prepareTable(ctx, ident, at)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no table of the catalog matches --tables")
	}
	return out, nil
}

func (r *replayer) prepareTable(ctx context.Context, ident table.Identifier, at startAt) (*replayTable, error) {
	name := strings.Join(ident, ".")
	tbl, err := r.cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("loading table %s: %w", name, err)
	}
	t := &replayTable{ident: ident, name: name}
	if v, ok := tbl.Properties()[r.key()]; ok {
		if err := json.Unmarshal([]byte(v), &t.state); err != nil {
			return nil, fmt.Errorf("table %s: property %s: %w (remove it and the branch %s to start over)", name, r.key(), err, r.branch)
		}
		if !at.zero() {
			if base, err := baseSnapshot(tbl, at); err != nil || base != t.state.Base {
				return nil, fmt.Errorf("table %s: a replay into branch %s from snapshot %d is in progress: run without --from-snapshot/--from-time/--from-offsets to resume it, or use another --branch",
					name, r.branch, t.state.Base)
			}
		}
		if tbl.Metadata().SnapshotByName(r.branch) == nil && t.state.Published == 0 {
			return nil, fmt.Errorf("table %s records a replay into branch %s, but the branch is gone: remove the property %s to start over", name, r.branch, r.key())
		}
		t.done = t.state.Published != 0
		r.log.Info("resuming the replay", "table", name, "branch", r.branch, "base_snapshot", t.state.Base, "published", t.state.Published)
		if !t.done {
			if err := r.checkRetention(ctx, t, tbl); err != nil {
				return nil, err
			}
		}
		return t, nil
	}
	if tbl.Metadata().SnapshotByName(r.branch) != nil {
		return nil, fmt.Errorf("table %s already has a branch %s that ingest replay did not make: choose another --branch", name, r.branch)
	}
	main, err := commit.Offsets(tbl)
	if err != nil {
		return nil, err
	}
	if len(main) == 0 {
		return nil, fmt.Errorf("table %s holds no Kafka offsets: it is not a table ingest writes", name)
	}
	base, err := baseSnapshot(tbl, at)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	start, err := commit.ParseOffsets(branch.Bookkeeping(tbl.Metadata(), base))
	if err != nil {
		return nil, fmt.Errorf("table %s, snapshot %d: %w", name, base, err)
	}
	if len(start) == 0 {
		return nil, fmt.Errorf("table %s: neither snapshot %d nor an ancestor records Kafka offsets (written before ingest, or its history expired): replay from a later snapshot", name, base)
	}
	t.state = replayState{Base: base, Start: start, Began: time.Now().UTC()}
	if err := r.checkRetention(ctx, t, tbl); err != nil {
		return nil, err
	}
	v, err := json.Marshal(t.state)
	if err != nil {
		return nil, err
	}
	if err := branch.Create(ctx, r.cat, tbl, r.branch, base, iceberg.Properties{r.key(): string(v)}); err != nil {
		return nil, fmt.Errorf("table %s: creating branch %s at snapshot %d: %w", name, r.branch, base, err)
	}
	r.log.Info("replay branch created", "table", name, "branch", r.branch, "base_snapshot", base, "start_offsets", fmt.Sprint(start))
	return t, nil
}

// startAt is where a replay starts: a snapshot, the snapshot of main
// current at a time, or the newest snapshot of main that had applied
// nothing at or after some offsets.
type startAt struct {
	snapshot int64
	time     time.Time
	// offsets by topic ("": every topic) and partition.
	offsets map[string]map[int32]int64
}

func (a startAt) zero() bool { return a.snapshot == 0 && a.time.IsZero() && len(a.offsets) == 0 }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseFromOffsets parses --from-offsets: [<topic>:]<partition>=<offset>,...
func parseFromOffsets(s string) (map[string]map[int32]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]map[int32]int64{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		topic := ""
		if i := strings.LastIndex(item, ":"); i >= 0 {
			topic, item = item[:i], item[i+1:]
		}
		ps, offs, ok := strings.Cut(item, "=")
		p, err1 := strconv.ParseInt(ps, 10, 32)
		o, err2 := strconv.ParseInt(offs, 10, 64)
		if !ok || err1 != nil || err2 != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("%q: want [<topic>:]<partition>=<offset>", item)
		}
		if out[topic] == nil {
			out[topic] = map[int32]int64{}
		}
		out[topic][int32(p)] = o
	}
	return out, nil
}

// baseSnapshot resolves the snapshot a replay starts from.
func baseSnapshot(tbl *table.Table, at startAt) (int64, error) {
	switch {
	case at.snapshot != 0:
		if tbl.SnapshotByID(at.snapshot) == nil {
			return 0, fmt.Errorf("snapshot %d is not in the table (expired, or of another table)", at.snapshot)
		}
		return at.snapshot, nil
	case !at.time.IsZero() || len(at.offsets) > 0:
		for s := tbl.CurrentSnapshot(); s != nil; {
			ok, err := at.before(tbl.Metadata(), s)
			if err != nil {
				return 0, err
			}
			if ok {
				return s.SnapshotID, nil
			}
			if s.ParentSnapshotID == nil {
				break
			}
			s = tbl.SnapshotByID(*s.ParentSnapshotID)
		}
		if len(at.offsets) > 0 {
			return 0, errors.New("main has no snapshot that had applied nothing at or after --from-offsets (its oldest retained snapshot is past them)")
		}
		return 0, fmt.Errorf("main has no snapshot at or before %s (the oldest was committed after it, or expired)", at.time.Format(time.RFC3339))
	}
	return 0, errors.New("set --from-snapshot, --from-time or --from-offsets to start a replay")
}

// before reports whether snapshot s is where at starts: committed at or
// before at.time, or holding offsets at or below at.offsets on every
// partition named (a snapshot that holds none for a partition had applied
// nothing of it).
func (a startAt) before(meta table.Metadata, s *table.Snapshot) (bool, error) {
	if !a.time.IsZero() {
		return s.TimestampMs <= a.time.UnixMilli(), nil
	}
	held, err := commit.ParseOffsets(branch.Bookkeeping(meta, s.SnapshotID))
	if err != nil {
		return false, err
	}
	for topic, parts := range a.offsets {
		for p, o := range parts {
			if topic != "" {
				if held[topic][p] > o {
					return false, nil
				}
				continue
			}
			for _, hp := range held {
				if hp[p] > o {
					return false, nil
				}
			}
		}
	}
	return true, nil
}

// mainOffsets returns the offsets main holds now.
func (r *replayer) mainOffsets(ctx context.Context, t *replayTable) (batch.Offsets, error) {
	tbl, err := r.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return nil, fmt.Errorf("loading table %s: %w", t.name, err)
	}
	return commit.Offsets(tbl)
}

// checkRetention fails, naming the earliest offset left and the topic's
// settings, when a partition the replay reads no longer starts at or
// before the offset the replay resumes from.
func (r *replayer) checkRetention(ctx context.Context, t *replayTable, tbl *table.Table) error {
	from := t.state.Start
	if head := tbl.Metadata().SnapshotByName(r.branch); head != nil {
		o, err := commit.ParseOffsets(branch.Bookkeeping(tbl.Metadata(), head.SnapshotID))
		if err != nil {
			return err
		}
		from = o
	}
	main, err := commit.Offsets(tbl)
	if err != nil {
		return err
	}
	topics := slices.Sorted(maps.Keys(from))
	for topic := range main {
		if _, ok := from[topic]; !ok {
			topics = append(topics, topic)
		}
	}
	starts, err := r.adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("listing the start offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	var gone []string
	var gtopics []string
	for _, topic := range topics {
		parts, ok := starts[topic]
		if !ok || len(parts) == 0 {
			return fmt.Errorf("%w: table %s needs topic %s, which does not exist any more", errOffsetsGone, t.name, topic)
		}
		for p, o := range parts {
			if o.Err != nil {
				return fmt.Errorf("listing the start offset of %s partition %d: %w", topic, p, o.Err)
			}
			need := from[topic][p] // 0 for a partition the table has not read
			if o.Offset > need {
				gone = append(gone, fmt.Sprintf("%s partition %d from offset %d, but its earliest offset is %d", topic, p, need, o.Offset))
				gtopics = append(gtopics, topic)
			}
		}
	}
	if len(gone) == 0 {
		return nil
	}
	slices.Sort(gone)
	settings := pipeline.TopicSettings(ctx, r.adm, slices.Compact(gtopics))
	return fmt.Errorf("%w: the replay of table %s from snapshot %d needs %s; the records before it were deleted (%s). "+
		"Replay from a later snapshot (--from-snapshot, --from-time), or keep the history replays need: %s",
		errOffsetsGone, t.name, t.state.Base, strings.Join(gone, "; "), settings, pipeline.KeepHistory)
}

// run re-applies the topics into the branch until every table has caught
// up with main, publishing each as it does when publish is set.
func (r *replayer) run(ctx context.Context, cfg ingest.Config, tables []*replayTable, topics []string, publish bool, term io.Writer, every time.Duration) error {
	// The replay's key index is its own: the running ingest's is locked.
	// With the embedded catalog state-dir is that ingest's (it holds the
	// catalog), so the index is a temporary one.
	indexBase := ""
	if !cfg.Embedded() {
		var err error
		if indexBase, err = cfg.IndexBase(); err != nil {
			return err
		}
	}
	pcfg, dec, release, err := ingest.PipelineConfig(ctx, cfg, indexBase, r.log)
	if err != nil {
		return err
	}
	defer release()
	pcfg.Topics, pcfg.TopicRegex = topics, ""
	// The branch's offsets position every partition (a topic it holds
	// none of starts at the beginning), so the group is only for the
	// assignment: a new one each run, so that a run killed before does not
	// hold the partitions until its session times out.
	pcfg.Group = fmt.Sprintf("%s.replay.%s.%d", cfg.GroupID, r.branch, time.Now().UnixNano())
	p, err := pipeline.New(pcfg, &branch.Catalog{Catalog: r.cat, Branch: r.branch}, dec)
	if err != nil {
		return fmt.Errorf("kafka %s: %w", cfg.KafkaBrokers, err)
	}
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- p.Run(pctx) }()
	r.log.Info("replaying", "topics", strings.Join(topics, ","), "branch", r.branch, "publish", publish)

	began, lastLog := time.Now(), time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			if err == nil && ctx.Err() != nil {
				return fmt.Errorf("replay stopped (%w); run it again to resume from what the branch holds", context.Cause(ctx))
			}
			return fmt.Errorf("replaying into branch %s: %w (run it again to resume)", r.branch, err)
		case <-tick.C:
		}
		left := 0
		for _, t := range tables {
			if t.done {
				continue
			}
			if err := r.step(ctx, t, publish); err != nil {
				stop()
				<-errc
				return err
			}
			if !t.done {
				left++
			}
		}
		if term != nil || time.Since(lastLog) >= every || left == 0 {
			r.progress(term, tables, time.Since(began))
			lastLog = time.Now()
		}
		if left == 0 {
			stop()
			if err := <-errc; err != nil {
				r.log.Warn("the replay's pipeline stopped with an error after every table caught up", "error", err)
			}
			return nil
		}
	}
}

// step compares the branch of t with main, and publishes it once it has
// caught up when publish is set.
func (r *replayer) step(ctx context.Context, t *replayTable, publish bool) error {
	tbl, err := r.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return fmt.Errorf("loading table %s: %w", t.name, err)
	}
	head := tbl.Metadata().SnapshotByName(r.branch)
	if head == nil {
		return fmt.Errorf("table %s: branch %s was removed while the replay ran", t.name, r.branch)
	}
	got, err := commit.ParseOffsets(branch.Bookkeeping(tbl.Metadata(), head.SnapshotID))
	if err != nil {
		return err
	}
	main, err := commit.Offsets(tbl)
	if err != nil {
		return err
	}
	caught := true
	t.applied, t.total = 0, 0
	for topic, parts := range main {
		for p, want := range parts {
			have := got[topic][p]
			if have < want {
				caught = false
			}
			start := t.state.Start[topic][p]
			t.applied += max(0, min(have, want)-start)
			t.total += max(0, want-start)
		}
	}
	if !caught {
		return nil
	}
	if !publish {
		t.done = true
		r.log.Info("table caught up with main in the branch", "table", t.name, "branch", r.branch, "branch_snapshot", head.SnapshotID)
		return nil
	}
	st := t.state
	st.Published = head.SnapshotID
	v, err := json.Marshal(st)
	if err != nil {
		return err
	}
	id, err := branch.Publish(ctx, r.cat, tbl, r.branch, iceberg.Properties{r.key(): string(v)}, nil)
	if errors.Is(err, table.ErrCommitFailed) {
		r.log.Debug("main moved while publishing; catching up again", "table", t.name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("publishing branch %s of table %s: %w", r.branch, t.name, err)
	}
	t.state, t.done = st, true
	r.log.Info("table published: main is now the replayed branch", "table", t.name, "snapshot", id, "replaced_snapshot", tbl.CurrentSnapshot().SnapshotID)
	return nil
}

// cleanUp removes the branch and the replay's record of a published table.
func (r *replayer) cleanUp(ctx context.Context, t *replayTable) error {
	tbl, err := r.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return fmt.Errorf("loading table %s: %w", t.name, err)
	}
	if tbl.Metadata().SnapshotByName(r.branch) == nil {
		if _, ok := tbl.Properties()[r.key()]; !ok {
			return nil
		}
		_, _, err := r.cat.CommitTable(ctx, t.ident, nil, []table.Update{table.NewRemovePropertiesUpdate([]string{r.key()})})
		return err
	}
	if err := branch.Remove(ctx, r.cat, tbl, r.branch, []string{r.key()}); err != nil {
		return fmt.Errorf("table %s: removing branch %s: %w", t.name, r.branch, err)
	}
	return nil
}

// progressOut returns w when it is a terminal (progress is drawn in place),
// else nil (progress is logged).
func progressOut(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return w
		}
	}
	return nil
}

// progress draws a bar with records and ETA on a terminal, or logs them.
func (r *replayer) progress(term io.Writer, tables []*replayTable, elapsed time.Duration) {
	var applied, total int64
	for _, t := range tables {
		applied += t.applied
		total += t.total
	}
	eta := "?"
	if applied > 0 && total > applied {
		eta = (time.Duration(float64(elapsed) * float64(total-applied) / float64(applied))).Round(time.Second).String()
	} else if total > 0 && applied >= total {
		eta = "0s"
	}
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(applied) / float64(total)
	}
	if term == nil {
		r.log.Info("replay progress", "records_applied", applied, "records_to_main", total, "percent", fmt.Sprintf("%.1f", pct), "eta", eta)
		return
	}
	const width = 30
	n := int(pct / 100 * width)
	fmt.Fprintf(term, "\r[%s%s] %5.1f%%  %d/%d records  ETA %s   ", strings.Repeat("=", n), strings.Repeat(" ", width-n), pct, applied, total, eta)
	if pct >= 100 {
		fmt.Fprintln(term)
	}
}
