package main

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

	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/lake"
)

// errStale reports that ingest status found a table behind --max-lag or
// --max-lag-records: the exit code tells cron and alerting.
var errStale = errors.New("stale")

// statusRow is one topic partition a table consumes, as ingest status
// prints it.
type statusRow struct {
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

// statusTable is one table's line.
type statusTable struct {
	Table       string     `json:"table"`
	SourceTime  *time.Time `json:"source_time,omitempty"` // newest source change applied
	SourceGTID  string     `json:"source_gtid,omitempty"` // last GTID applied
	LastCommit  *time.Time `json:"last_commit,omitempty"`
	DataFiles   int64      `json:"data_files"`
	DeleteFiles int64      `json:"delete_files"`
	Bytes       int64      `json:"bytes"`
	// DeadLetters counts the records of the table's topics sent to the
	// dead-letter topic (errors-tolerance=dlq) that the table has passed.
	DeadLetters int64       `json:"dead_letters"`
	Lag         int64       `json:"lag"`
	LagSeconds  float64     `json:"lag_seconds"`
	Partitions  []statusRow `json:"partitions"`
}

// statusReport is what ingest status prints with --format=json.
type statusReport struct {
	Tables []statusTable `json:"tables"`
	// Cut is the GTID up to which every table is complete, when it can be
	// told (CutReason says why not otherwise).
	Cut       string   `json:"cut,omitempty"`
	CutReason string   `json:"cut_reason,omitempty"`
	Stale     []string `json:"stale,omitempty"`
	// Renames says, for each source prefix of the tables reported,
	// whether ingest follows its table renames (see ingest/README.md,
	// "Renames"): whether its schema-change topic exists and is in
	// ingest's topics or topic-regex, as given to ingest status.
	Renames []renameSource `json:"renames,omitempty"`
}

// runStatus is `ingest status`: how far each table ingest writes has got,
// read from the tables and the topics alone (the running ingest is not
// asked). It takes ingest's settings (the catalog, Kafka) and its own.
func runStatus(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	ef, cfg, _ := bindFlags(getenv)
	fs := ef.FlagSet()
	fs.Init("ingest status", flag.ContinueOnError)
	fs.SetOutput(stdout)
	format := fs.String("format", "table", "output: table or json")
	tablesRe := fs.String("tables", "", "regex of <namespace>.<table> to report (default: every table holding ingest's offsets)")
	maxLag := fs.Duration("max-lag", 0, "exit 3 when a waiting change of some table is older than this (0: never)")
	maxLagRecords := fs.Int64("max-lag-records", 0, "exit 3 when some table is more than this many offsets behind (0: never)")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: ingest status [flags]\n\n"+
			"Prints how far each Iceberg table ingest writes has got: the Kafka offsets it holds against the topics'\n"+
			"ends, how long its oldest waiting change has waited, the source time and GTID it holds, its files, and\n"+
			"the GTID up to which all tables are complete, and whether each source's table renames are followed (give it\n"+
			"ingest's topics or topic-regex for that). It reads the tables and the topics, not the running ingest.\n"+
			"It takes ingest's settings (catalog and Kafka, with their environment variables) and these:\n\n")
		fs.PrintDefaults()
	}
	if err := ef.Parse(args[1:]); err != nil {
		return err
	}
	if cfg.S3Region == "" {
		cfg.S3Region = getenv("AWS_REGION")
	}
	var bad []error
	if err := cfg.CatalogConfig.Validate(); err != nil {
		bad = append(bad, err)
	}
	if err := cfg.Kafka.Validate(cfg.brokers()); err != nil {
		bad = append(bad, err)
	}
	if *format != "table" && *format != "json" {
		bad = append(bad, fmt.Errorf("format %q: want table or json", *format))
	}
	var filter *regexp.Regexp
	if cfg.TopicRegex != "" {
		if _, err := regexp.Compile(cfg.TopicRegex); err != nil {
			bad = append(bad, fmt.Errorf("topic-regex: %w", err))
		}
	}
	if *tablesRe != "" {
		var err error
		if filter, err = regexp.Compile("^(?:" + *tablesRe + ")$"); err != nil {
			bad = append(bad, fmt.Errorf("tables: %w", err))
		}
	}
	if err := errors.Join(bad...); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	// stdout is the report: the catalog's start line goes nowhere.
	quiet := slog.New(slog.DiscardHandler)
	cat, err := lake.Open(ctx, cfg.CatalogConfig, quiet)
	if err != nil {
		return err
	}
	defer lake.Close(cat, quiet)
	cl, opts, err := cfg.kafkaClient(ctx, "binlake-ingest-status")
	if err != nil {
		return err
	}
	defer cl.Close()
	var consumes func(string) bool // unknown without ingest's topics
	if cfg.TopicRegex != "" || len(cfg.topics()) > 0 {
		consumes = cfg.consumes
	}
	rep, err := status(ctx, cat, cl, opts, cfg.brokers(), filter, consumes, time.Now())
	if err != nil {
		return err
	}
	for _, t := range rep.Tables {
		if (*maxLag > 0 && t.LagSeconds > maxLag.Seconds()) || (*maxLagRecords > 0 && t.Lag > *maxLagRecords) {
			rep.Stale = append(rep.Stale, t.Table)
		}
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printStatus(stdout, rep)
	}
	if len(rep.Stale) > 0 {
		return fmt.Errorf("%w: %s behind max-lag %s / max-lag-records %d", errStale, strings.Join(rep.Stale, ", "), *maxLag, *maxLagRecords)
	}
	return nil
}

// status gathers the report: every table of the catalog that holds
// ingest's offsets (and matches filter), against the topics' ends, and
// whether the renames of their sources are followed: consumes reports
// whether ingest consumes a topic (nil: not known).
func status(ctx context.Context, cat catalog.Catalog, cl *kgo.Client, opts []kgo.Opt, brokers []string, filter *regexp.Regexp, consumes func(string) bool, now time.Time) (statusReport, error) {
	nss, err := cat.ListNamespaces(ctx, nil)
	if err != nil {
		return statusReport{}, fmt.Errorf("listing the catalog's namespaces: %w", err)
	}
	var rep statusReport
	progress := map[string]commit.Progress{}
	topics := map[string]bool{}
	for _, ns := range nss {
		for ident, err := range cat.ListTables(ctx, ns) {
			if errors.Is(err, catalog.ErrNoSuchNamespace) {
				break // dropped since it was listed
			}
			if err != nil {
				return statusReport{}, fmt.Errorf("listing the tables of namespace %s: %w", strings.Join(ns, "."), err)
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
				return statusReport{}, fmt.Errorf("loading table %s: %w", name, err)
			}
			p, err := commit.ReadProgress(tbl)
			if err != nil {
				return statusReport{}, err
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
		return statusReport{}, fmt.Errorf("listing the topics' end offsets: %w", err)
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
			return statusReport{}, err
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
				return statusReport{}, ctx.Err()
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
			return statusReport{}, fmt.Errorf("reading the waiting records of %d partitions took longer than 15 s", open)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(progress)) {
		p := progress[name]
		t := statusTable{Table: name, SourceGTID: p.SourceGTID, DataFiles: p.DataFiles, DeleteFiles: p.DeleteFiles, Bytes: p.Bytes, DeadLetters: p.DeadLetters}
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
				row := statusRow{Table: name, Topic: topic, Partition: part, Consumed: parts[part]}
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
			return statusReport{}, fmt.Errorf("listing the topics: %w", err)
		}
		rep.Renames = renameSources(slices.Sorted(maps.Keys(topics)), listed.Has, consumes)
	}
	return rep, nil
}

// cut is the GTID up to which every table is complete. A table that waits
// for no change is complete up to the newest GTID any table holds; one that
// waits is complete up to the last GTID it applied, when its changes come
// in one order (one partition: with more, a partition can be ahead of
// another). GTIDs compare within one source stream: MariaDB's
// <domain>-<server>-<seq> in one domain, MySQL's <uuid>:<n> of one server.
func cut(tables []statusTable) (string, string) {
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

func printStatus(w io.Writer, rep statusReport) {
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
		fmt.Fprintf(w, "source %s: %s\n", r.Prefix, r.describe())
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

// kafkaClient is a plain client of the brokers (with ingest's security
// settings) for the subcommands that read topics without consuming them,
// and the options it was made with.
func (c *Config) kafkaClient(ctx context.Context, clientID string) (*kgo.Client, []kgo.Opt, error) {
	opts, err := c.Kafka.ClientOpts(ctx, clientID)
	if err != nil {
		return nil, nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(c.brokers()...))...)
	if err != nil {
		return nil, nil, fmt.Errorf("kafka %s: %w", c.KafkaBrokers, err)
	}
	return cl, opts, nil
}
