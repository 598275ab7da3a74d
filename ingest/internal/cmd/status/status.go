// Package status is the command `ingest status`: how far each Iceberg table
// ingest writes has got (the Kafka offsets it holds against the topics'
// ends, the age of its oldest waiting change, the source time and GTID it
// holds, its files), the GTID up to which all tables are complete, and
// whether each source's table renames are followed. It reads the tables
// and the topics, never the running ingest.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/cmd/ingest"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/lake"
	"github.com/binlake/binlake/ingest/internal/renamecheck"
)

// ErrStale reports that ingest status found a table behind --max-lag or
// --max-lag-records: the exit code (3) tells cron and alerting.
var ErrStale = errors.New("stale")

// Row is one topic partition a table consumes, as ingest status
// prints it.
type Row struct {
	Table     string `json:"table"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Consumed is the next offset the table will apply; End the last
	// stable offset (what a read_committed consumer can reach).
	Consumed int64 `json:"consumed"`
	End      int64 `json:"end"`
	// Lag is End - Consumed when a change is waiting (transaction markers
	// alone are no lag), LagSeconds how long the oldest waiting change has
	// waited (its Kafka timestamp).
	Lag        int64   `json:"lag"`
	LagSeconds float64 `json:"lag_seconds"`
}

// Table is one table's line.
type Table struct {
	Table       string     `json:"table"`
	SourceTime  *time.Time `json:"source_time,omitempty"` // newest source change applied
	SourceGTID  string     `json:"source_gtid,omitempty"` // last GTID applied
	LastCommit  *time.Time `json:"last_commit,omitempty"`
	DataFiles   int64      `json:"data_files"`
	DeleteFiles int64      `json:"delete_files"`
	Bytes       int64      `json:"bytes"`
	// DeadLetters counts the records of the table's topics sent to the
	// dead-letter topic (errors-tolerance=dlq) that the table has passed.
	DeadLetters int64   `json:"dead_letters"`
	Lag         int64   `json:"lag"`
	LagSeconds  float64 `json:"lag_seconds"`
	Partitions  []Row   `json:"partitions"`
}

// Report is what ingest status prints with --format=json.
type Report struct {
	Tables []Table `json:"tables"`
	// Cut is the GTID up to which every table is complete, when it can be
	// told (CutReason says why not otherwise).
	Cut       string   `json:"cut,omitempty"`
	CutReason string   `json:"cut_reason,omitempty"`
	Stale     []string `json:"stale,omitempty"`
	// Renames says, for each source prefix of the tables reported,
	// whether ingest follows its table renames (see ingest/README.md,
	// "Renames"): whether its schema-change topic exists and is in
	// ingest's topics or topic-regex, as given to ingest status.
	Renames []renamecheck.Source `json:"renames,omitempty"`
}

// Config is the configuration of `ingest status`: ingest's settings (the
// catalog and Kafka, and its topics or topic-regex to tell whether the
// renames of each source are followed) and its own.
type Config struct {
	Ingest ingest.Config
	// Format is the output: table or json. Default table.
	Format string
	// Tables is a regex of the <namespace>.<table> names to report ("":
	// every table holding ingest's offsets).
	Tables string
	// MaxLag and MaxLagRecords make a table stale (Run returns ErrStale)
	// when a waiting change of it is older, or it is more offsets behind
	// (0: never).
	MaxLag        time.Duration
	MaxLagRecords int64
}

// Bind adds the settings of ingest status's own to fs (flags only; those
// of Ingest are bound by ingest.Config.Bind).
func (c *Config) Bind(fs *flag.FlagSet) {
	fs.StringVar(&c.Format, "format", "table", "output: table or json")
	fs.StringVar(&c.Tables, "tables", "", "regex of <namespace>.<table> to report (default: every table holding ingest's offsets)")
	fs.DurationVar(&c.MaxLag, "max-lag", 0, "exit 3 when a waiting change of some table is older than this (0: never)")
	fs.Int64Var(&c.MaxLagRecords, "max-lag-records", 0, "exit 3 when some table is more than this many offsets behind (0: never)")
}

// Validate checks the settings status uses: the catalog, Kafka's
// security, the format and the regexes.
func (c *Config) Validate() error {
	var bad []error
	if err := c.Ingest.CatalogConfig.Validate(); err != nil {
		bad = append(bad, err)
	}
	if err := c.Ingest.Kafka.Validate(c.Ingest.Brokers()); err != nil {
		bad = append(bad, err)
	}
	if c.Format != "table" && c.Format != "json" {
		bad = append(bad, fmt.Errorf("format %q: want table or json", c.Format))
	}
	if c.Ingest.TopicRegex != "" {
		if _, err := regexp.Compile(c.Ingest.TopicRegex); err != nil {
			bad = append(bad, fmt.Errorf("topic-regex: %w", err))
		}
	}
	if _, err := c.filter(); err != nil {
		bad = append(bad, fmt.Errorf("tables: %w", err))
	}
	return errors.Join(bad...)
}

// filter is the Tables regex of whole names (nil: every table).
func (c *Config) filter() (*regexp.Regexp, error) {
	if c.Tables == "" {
		return nil, nil
	}
	return regexp.Compile("^(?:" + c.Tables + ")$")
}

// Run is `ingest status`: how far each table ingest writes has got, read
// from the tables and the topics alone (the running ingest is not asked),
// written to out in cfg.Format (cfg validated). A table behind MaxLag or
// MaxLagRecords is in the report's Stale, and the error is then ErrStale.
func Run(ctx context.Context, cfg Config, out io.Writer) (Report, error) {
	filter, err := cfg.filter()
	if err != nil {
		return Report{}, fmt.Errorf("tables: %w", err)
	}
	// out is the report: the catalog's start line goes nowhere.
	quiet := slog.New(slog.DiscardHandler)
	cat, err := lake.Open(ctx, cfg.Ingest.CatalogConfig, quiet)
	if err != nil {
		return Report{}, err
	}
	defer lake.Close(cat, quiet)
	cl, opts, err := cfg.Ingest.KafkaClient(ctx, "binlake-ingest-status")
	if err != nil {
		return Report{}, err
	}
	defer cl.Close()
	var consumes func(string) bool // unknown without ingest's topics
	if cfg.Ingest.TopicRegex != "" || len(cfg.Ingest.TopicList()) > 0 {
		consumes = cfg.Ingest.Consumes
	}
	rep, err := status(ctx, cat, cl, opts, cfg.Ingest.Brokers(), filter, consumes, time.Now())
	if err != nil {
		// A broker refusing the security settings: name the setting.
		err, _ = cfg.Ingest.Kafka.Explain(err)
		return rep, err
	}
	for _, t := range rep.Tables {
		if (cfg.MaxLag > 0 && t.LagSeconds > cfg.MaxLag.Seconds()) || (cfg.MaxLagRecords > 0 && t.Lag > cfg.MaxLagRecords) {
			rep.Stale = append(rep.Stale, t.Table)
		}
	}
	if cfg.Format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return rep, err
		}
	} else {
		printStatus(out, rep)
	}
	if len(rep.Stale) > 0 {
		return rep, fmt.Errorf("%w: %s behind max-lag %s / max-lag-records %d", ErrStale, strings.Join(rep.Stale, ", "), cfg.MaxLag, cfg.MaxLagRecords)
	}
	return rep, nil
}

// status gathers the report: every table of the catalog that holds
// ingest's offsets (and matches filter), against the topics' ends, and
// whether the renames of their sources are followed: consumes reports
// whether ingest consumes a topic (nil: not known).
func status(ctx context.Context, cat catalog.Catalog, cl *kgo.Client, opts []kgo.Opt, brokers []string, filter *regexp.Regexp, consumes func(string) bool, now time.Time) (Report, error) {
	nss, err := cat.ListNamespaces(ctx, nil)
	if err != nil {
		return Report{}, fmt.Errorf("listing the catalog's namespaces: %w", err)
	}
	var rep Report
	progress := map[string]commit.Progress{}
	topics := map[string]bool{}
	for _, ns := range nss {
		for ident, err := range cat.ListTables(ctx, ns) {
			if errors.Is(err, catalog.ErrNoSuchNamespace) {
				break // dropped since it was listed
			}
			if err != nil {
				return Report{}, fmt.Errorf("listing the tables of namespace %s: %w", strings.Join(ns, "."), err)
			}
			name := strings.Join(ident, ".")
			if filter != nil && !filter.MatchString(name) {
				continue
			}
			tbl, err := cat.LoadTable(ctx, ident)
			if errors.Is(err, catalog.ErrNoSuchTable) {
				continue // dropped since it was listed
			}
			if err != nil {
				return Report{}, fmt.Errorf("loading table %s: %w", name, err)
			}
			p, err := commit.ReadProgress(tbl)
			if err != nil {
				return Report{}, err
			}
			if len(p.Offsets) == 0 {
				continue // not a table ingest writes
			}
			progress[name] = p
			for topic := range p.Offsets {
				topics[topic] = true
			}
		}
	}
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, slices.Sorted(maps.Keys(topics))...)
	if err != nil {
		return Report{}, fmt.Errorf("listing the topics' end offsets: %w", err)
	}
	type tp struct {
		topic string
		part  int32
	}
	pending := map[tp]int64{} // partitions with offsets to read past consumed
	for _, p := range progress {
		for topic, parts := range p.Offsets {
			for part, next := range parts {
				if e, ok := ends.Lookup(topic, part); ok && e.Err == nil && e.Offset > next {
					pending[tp{topic, part}] = next
				}
			}
		}
	}
	// The oldest waiting change of each pending partition: the first data
	// record at or after the consumed offset (markers are no change).
	oldest := map[tp]time.Time{}
	if len(pending) > 0 {
		assign := map[string]map[int32]kgo.Offset{}
		for k, off := range pending {
			if assign[k.topic] == nil {
				assign[k.topic] = map[int32]kgo.Offset{}
			}
			assign[k.topic][k.part] = kgo.NewOffset().At(off)
		}
		rd, err := kgo.NewClient(append(slices.Clone(opts), kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(assign),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())...)
		if err != nil {
			return Report{}, err
		}
		defer rd.Close()
		open := len(pending)
		deadline := time.Now().Add(15 * time.Second)
		done := map[tp]bool{}
		for open > 0 && time.Now().Before(deadline) {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			fs := rd.PollFetches(pctx)
			cancel()
			if ctx.Err() != nil {
				return Report{}, ctx.Err()
			}
			fs.EachRecord(func(r *kgo.Record) {
				k := tp{r.Topic, r.Partition}
				if done[k] {
					return
				}
				e, _ := ends.Lookup(r.Topic, r.Partition)
				switch {
				case !r.Attrs.IsControl():
					oldest[k] = r.Timestamp
				case r.Offset+1 < e.Offset:
					return // a marker; read on
				}
				done[k] = true
				open--
			})
		}
		if open > 0 {
			return Report{}, fmt.Errorf("reading the waiting records of %d partitions took longer than 15 s", open)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(progress)) {
		p := progress[name]
		t := Table{Table: name, SourceGTID: p.SourceGTID, DataFiles: p.DataFiles, DeleteFiles: p.DeleteFiles, Bytes: p.Bytes, DeadLetters: p.DeadLetters}
		if p.SourceTsMs > 0 {
			st := time.UnixMilli(p.SourceTsMs).UTC()
			t.SourceTime = &st
		}
		if !p.LastCommit.IsZero() {
			lc := p.LastCommit.UTC()
			t.LastCommit = &lc
		}
		for _, topic := range slices.Sorted(maps.Keys(p.Offsets)) {
			parts := p.Offsets[topic]
			for _, part := range slices.Sorted(maps.Keys(parts)) {
				row := Row{Table: name, Topic: topic, Partition: part, Consumed: parts[part]}
				if e, ok := ends.Lookup(topic, part); ok && e.Err == nil {
					row.End = e.Offset
				}
				if ts, ok := oldest[tp{topic, part}]; ok {
					row.Lag = row.End - row.Consumed
					row.LagSeconds = max(0, now.Sub(ts).Seconds())
				}
				t.Lag += row.Lag
				t.LagSeconds = max(t.LagSeconds, row.LagSeconds)
				t.Partitions = append(t.Partitions, row)
			}
		}
		rep.Tables = append(rep.Tables, t)
	}
	rep.Cut, rep.CutReason = cut(rep.Tables)
	if len(topics) > 0 {
		listed, err := kadm.NewClient(cl).ListTopics(ctx)
		if err != nil {
			return Report{}, fmt.Errorf("listing the topics: %w", err)
		}
		rep.Renames = renamecheck.Sources(slices.Sorted(maps.Keys(topics)), listed.Has, consumes)
	}
	return rep, nil
}

// cut is the GTID up to which every table is complete. A table that waits
// for no change is complete up to the newest GTID any table holds; one that
// waits is complete up to the last GTID it applied, when its changes come
// in one order (one partition: with more, a partition can be ahead of
// another). GTIDs compare within one source stream: MariaDB's
// <domain>-<server>-<seq> in one domain, MySQL's <uuid>:<n> of one server.
func cut(tables []Table) (string, string) {
	type pos struct {
		stream string
		seq    int64
	}
	parse := func(g string) (pos, bool) {
		if i := strings.LastIndexByte(g, ':'); i > 0 { // MySQL uuid:n
			n, err := strconv.ParseInt(g[i+1:], 10, 64)
			return pos{g[:i], n}, err == nil
		}
		f := strings.Split(g, "-") // MariaDB domain-server-seq
		if len(f) != 3 {
			return pos{}, false
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		return pos{f[0], n}, err == nil
	}
	var newest, lowest *pos
	var newestText, lowestText string
	stream := ""
	for _, t := range tables {
		if t.SourceGTID == "" {
			if t.Lag > 0 {
				return "", fmt.Sprintf("table %s waits for changes and holds no GTID", t.Table)
			}
			continue
		}
		p, ok := parse(t.SourceGTID)
		if !ok {
			return "", fmt.Sprintf("table %s holds GTID %q, which is not one GTID", t.Table, t.SourceGTID)
		}
		if stream != "" && p.stream != stream {
			return "", fmt.Sprintf("the tables' GTIDs come from more than one source stream (%s and %s)", stream, p.stream)
		}
		stream = p.stream
		if newest == nil || p.seq > newest.seq {
			newest, newestText = &p, t.SourceGTID
		}
		if t.Lag > 0 {
			if len(t.Partitions) > 1 {
				return "", fmt.Sprintf("table %s waits for changes on %d partitions, which need not be at one point of the source", t.Table, len(t.Partitions))
			}
			if lowest == nil || p.seq < lowest.seq {
				lowest, lowestText = &p, t.SourceGTID
			}
		}
	}
	switch {
	case lowest != nil:
		return lowestText, ""
	case newest != nil:
		return newestText, ""
	}
	return "", "no table holds a GTID"
}

func printStatus(w io.Writer, rep Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tTOPIC\tPART\tCONSUMED\tEND\tLAG\tLAG_S\tSOURCE_TIME\tSOURCE_GTID\tLAST_COMMIT\tDATA_FILES\tDELETE_FILES\tBYTES\tDEAD_LETTERS")
	stamp := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Format(time.RFC3339)
	}
	for _, t := range rep.Tables {
		for i, r := range t.Partitions {
			if i == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%.1f\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", t.Table, r.Topic, r.Partition, r.Consumed, r.End, r.Lag, r.LagSeconds,
					stamp(t.SourceTime), orDash(t.SourceGTID), stamp(t.LastCommit), t.DataFiles, t.DeleteFiles, t.Bytes, t.DeadLetters)
			} else {
				fmt.Fprintf(tw, "\t%s\t%d\t%d\t%d\t%d\t%.1f\t\t\t\t\t\t\t\n", r.Topic, r.Partition, r.Consumed, r.End, r.Lag, r.LagSeconds)
			}
		}
	}
	_ = tw.Flush()
	if rep.Cut != "" {
		fmt.Fprintf(w, "\nall tables complete up to GTID %s\n", rep.Cut)
	} else {
		fmt.Fprintf(w, "\nno consistent cut: %s\n", rep.CutReason)
	}
	for _, r := range rep.Renames {
		fmt.Fprintf(w, "source %s: %s\n", r.Prefix, r.Describe())
	}
	if len(rep.Stale) > 0 {
		fmt.Fprintf(w, "stale: %s\n", strings.Join(rep.Stale, ", "))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
