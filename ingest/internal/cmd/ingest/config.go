package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/cmd/maintain"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/envflag"
	"github.com/binlake/binlake/ingest/internal/gluereg"
	"github.com/binlake/binlake/ingest/internal/kafkasec"
	"github.com/binlake/binlake/ingest/internal/keyindex"
	"github.com/binlake/binlake/ingest/internal/lake"
	"github.com/binlake/binlake/ingest/internal/pipeline"
	"github.com/binlake/binlake/ingest/internal/registrysec"
	"github.com/binlake/binlake/ingest/internal/renamecheck"
	"github.com/binlake/binlake/ingest/internal/schemamap"
)

// Config is ingest's whole configuration. Each field's flag, environment
// variable and default are in Bind.
type Config struct {
	// Kafka.
	KafkaBrokers string                       // comma-separated seed brokers
	Kafka        kafkasec.KafkaSecurity       // TLS and SASL (MSK)
	Registry     registrysec.RegistrySecurity // schema registry credentials and CA
	GroupID      string
	// GroupSessionTimeout is how long the group waits for a member that
	// stopped heartbeating (a killed process) before giving its partitions
	// to the others.
	GroupSessionTimeout time.Duration
	Topics              string // comma-separated topic names
	TopicRegex          string // or: a regex matching whole topic names

	// Schema registry (Confluent API) for Avro records.
	RegistryURL string
	// AWS Glue Schema Registry for Glue-framed Avro records (beside the
	// Confluent one).
	Glue gluereg.Config

	// Iceberg.
	lake.CatalogConfig
	NamespaceWithPrefix bool
	MergeSources        bool     // let sources of different topic prefixes write one table
	TableNameMap        []string // db.table=namespace.table entries, see schemamap.ParseNameMap
	LowerCaseColumns    string   // auto, true or false (see lowerCaseColumns)
	PartitionSpec       string   // see pipeline.ParsePartitionSpecs
	KeylessTables       string   // append or reject
	TableFormatVersion  int      // format version of new tables: 2 or 3
	BackfillDefaults    bool     // rewrite older rows with an added column's default
	DeleteMode          string   // auto, position, dv or equality (see commit.DeleteMode)
	IndexCacheBytes     int      // memory bound of the key index
	RewriteDeadFraction string   // auto (off), or 0 (off) to 1: see rewriteConfig
	RewriteDeleteFiles  string   // auto (off), or a count (0: off)
	RewriteManifests    string   // auto (off), or a count of data manifests (0: off)
	RewriteMaxBytes     int      // data-file bytes one rewrite reads

	// Batching.
	FlushRows           int
	FlushBytes          int
	FlushInterval       time.Duration
	MaxBufferedBytes    int
	QueueRecords        int
	FetchPartitionBytes int
	CommitAttempts      int

	// Bad records: none (stop) or dlq (to DLQTopic, and go on).
	ErrorsTolerance string
	DLQTopic        string

	// Maintenance in the process (off when MaintainInterval is 0).
	MaintainInterval time.Duration
	Maintain         maintain.Settings

	// Operations.
	MetricsAddr         string
	Pprof               bool
	PprofAddr           string // the profiles on a listener of their own
	LogFormat, LogLevel string
	ShutdownTimeout     time.Duration
	StartupTimeout      time.Duration
}

// Bind adds the settings to f: each with its flag, environment variable
// and default.
func (c *Config) Bind(f *envflag.Set) {
	f.String(&c.KafkaBrokers, "kafka-brokers", "127.0.0.1:9092", "comma-separated Kafka seed brokers")
	c.Kafka.Bind(f)
	f.String(&c.GroupID, "group-id", "binlake-ingest", "Kafka consumer group; its offsets are advisory (the tables hold the real ones)")
	f.Duration(&c.GroupSessionTimeout, "group-session-timeout", 45*time.Second, "how long the group waits for a member that stopped heartbeating (a killed process) before giving its partitions to the others; the broker bounds it with group.min.session.timeout.ms (6s) and group.max.session.timeout.ms (30m)")
	f.String(&c.Topics, "topics", "", "comma-separated change topics <prefix>.<db>.<table> to consume (or use -topic-regex)")
	f.String(&c.TopicRegex, "topic-regex", "", "regex matching whole change topic names to consume, e.g. 'dbserver1\\.inventory\\..*'")
	f.String(&c.RegistryURL, "schema-registry-url", "http://127.0.0.1:8081", "Confluent-compatible schema registry URL (Apicurio: .../apis/ccompat/v7); JSON records need none")
	c.Registry.Bind(f)
	c.Glue.Bind(f)
	c.CatalogConfig.Bind(f)
	f.Bool(&c.NamespaceWithPrefix, "namespace-with-prefix", false, "name namespaces <prefix>_<db> instead of <db>, for several sources in one catalog")
	f.Bool(&c.MergeSources, "merge-sources", false, "let sources of different topic prefixes whose tables have one name write one table (shards merged on purpose; see README, Two sources, one name); without it such a table stops ingest")
	f.Strings(&c.TableNameMap, "table-name-map", "explicit lake table names, '<db>.<table>=<namespace>.<table>' (a source name holding a dot in backquotes), over the natural names ingest gives (see README, Table names)")
	f.String(&c.LowerCaseColumns, "lower-case-columns", "auto", "name table columns in lower case (a renamed column's doc keeps its source name; two source columns of one lower-case name stop ingest, naming both): true, false, or auto (true on S3 Tables and Glue, whose readers need it: sigv4-service s3tables or glue, a catalog-uri on s3tables. or glue. amazonaws.com, or an S3 Tables bucket ARN warehouse)")
	f.String(&c.PartitionSpec, "partition-spec", "", "partition spec of new tables, ';'-separated: '<db>.<table>=bucket(N[, <key column>])', '*=bucket(N)' (first key column) or '...=none'; only primary-key columns (default: unpartitioned)")
	f.String(&c.KeylessTables, "keyless-tables", "append", "tables without a primary key: append (an append-only table of change events, one row per row image) or reject (stop ingest)")
	f.Int(&c.TableFormatVersion, "table-format-version", 2, "Iceberg format version of the tables ingest creates: 2, or 3 (a column added with a DEFAULT then carries it as initial-default, read by the rows written before; see schemas/TYPES.md)")
	f.Bool(&c.BackfillDefaults, "backfill-defaults", false, "when a column is added with a DEFAULT the table cannot carry as initial-default (format v2 tables, and v3 date/time/decimal columns), rewrite the table's rows with the default in the commit that adds the column")
	f.String(&c.DeleteMode, "delete-mode", string(commit.DeleteAuto), "how an update or delete removes a key's old row: position (Parquet position-delete files found through a local key index under state-dir; format v2 tables), dv (deletion vectors in Puffin files found the same way; format v3 tables), auto (position on v2 tables, dv on v3, by each table's own version) or equality (equality-delete files, no index; pyiceberg, Snowflake and Databricks cannot read them); per-table overrides follow, ';'-separated: 'auto; <db>.<table>=equality'")
	f.String(&c.RewriteDeadFraction, "rewrite-dead-fraction", "auto", "in position and dv modes, once a commit leaves at least this fraction of the table's rows deleted, rewrite the live rows of its most deleted data files (files with every row deleted are dropped unread) until the table is at half of it, in a commit of their own that also removes their delete files; bounds the read cost of upserts without a compaction job (a read decodes at most 1/(1-f) rows per live row), at a cost in ingest's rate (see README, Read cost): 0 to 1, 0 off, or auto: 0.3, except on S3 Tables, whose own compaction rewrites the files, where auto is off")
	f.String(&c.RewriteDeleteFiles, "rewrite-delete-files", "auto", "in position mode, also rewrite a data file that more than this many position-delete files apply to (as rewrite-dead-fraction): a count, 0 off, or auto (16; off on S3 Tables, as rewrite-dead-fraction)")
	f.String(&c.RewriteManifests, "rewrite-manifests", "auto", "in position and dv modes, merge a table's data manifests once it has more than this many (in the rewrite's commit, or one of its own after a commit that deleted rows), so that a reader does not plan by reading one per commit: a count, 0 off, or auto (16; off on S3 Tables, as rewrite-dead-fraction)")
	f.Int(&c.RewriteMaxBytes, "rewrite-max-bytes", commit.DefaultRewriteMaxBytes, "the most data-file bytes one rewrite (rewrite-dead-fraction, rewrite-delete-files) reads, the worst files first (at least one file; at most max-buffered-bytes)")
	f.Int(&c.IndexCacheBytes, "index-cache-bytes", keyindex.DefaultCacheBytes, "memory bound of the key index (block cache and memtables), at least 4 MiB")
	f.Int(&c.FlushRows, "flush-rows", 100_000, "commit a table when it buffers this many change events")
	f.Int(&c.FlushBytes, "flush-bytes", 64<<20, "commit a table when its buffered events reach this many bytes")
	f.Duration(&c.FlushInterval, "flush-interval", 30*time.Second, "commit a table when its oldest buffered event is this old")
	f.Int(&c.MaxBufferedBytes, "max-buffered-bytes", 512<<20, "bytes buffered by all tables together; a table commits early when they are exceeded")
	f.Int(&c.QueueRecords, "queue-records", 4096, "records queued per table between polling and decoding; polling waits when a queue is full")
	f.Int(&c.FetchPartitionBytes, "fetch-partition-bytes", 4<<20, "the most one fetch takes of one partition (Kafka's max.partition.fetch.bytes); fetches of all partitions together stay within 50 MiB per broker")
	f.Int(&c.CommitAttempts, "commit-attempts", 10, "attempts of one commit (conflicts, ambiguous outcomes) before it starts over from the offsets the table holds")
	f.String(&c.ErrorsTolerance, "errors-tolerance", "none", "a record that cannot be decoded or mapped (see README, Bad records): none (stop ingest, naming the record) or dlq (send it unchanged to dlq-topic with headers naming its source and the error, and go on), as Kafka Connect's errors.tolerance")
	f.String(&c.DLQTopic, "dlq-topic", "", "dead-letter topic of errors-tolerance=dlq (created with one partition when missing); required with dlq; not a topic ingest consumes")
	f.Duration(&c.MaintainInterval, "maintain-interval", 0, "run table maintenance (as ingest maintain, with its -maintain-* settings) in this process every interval, e.g. 6h (0: off; not on S3 Tables, which maintains its tables itself)")
	c.Maintain.Bind(f)
	f.String(&c.MetricsAddr, "metrics-addr", "127.0.0.1:9465", "address of /metrics, /healthz and /readyz (off: none)")
	f.Bool(&c.Pprof, "pprof", false, "also serve Go's profiles (/debug/pprof/) on metrics-addr, for profiling a running ingest; keep that address private (prefer pprof-addr)")
	f.String(&c.PprofAddr, "pprof-addr", "", "address of a server of Go's profiles (/debug/pprof/) apart from metrics-addr, e.g. 127.0.0.1:6060 reached through kubectl port-forward (empty: none)")
	f.String(&c.LogFormat, "log-format", "text", "log format: text or json")
	f.String(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.Duration(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a stop may take to commit the open batches")
	f.Duration(&c.StartupTimeout, "startup-timeout", 5*time.Minute, "how long start-up waits for an unreachable Kafka or catalog, retrying with back-off, before exiting (0: exit at the first failure); refused credentials and certificates exit at once")
}

// Validate checks the settings against each other.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := c.CatalogConfig.Validate(); err != nil {
		errs = append(errs, err)
	}
	if strings.TrimSpace(c.KafkaBrokers) == "" {
		bad("kafka-brokers is empty")
	}
	if err := c.Registry.Validate(c.RegistryURL); err != nil {
		errs = append(errs, err)
	}
	if err := c.Glue.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Kafka.Validate(c.Brokers()); err != nil {
		errs = append(errs, err)
	}
	if c.GroupID == "" {
		bad("group-id is empty")
	}
	if c.GroupSessionTimeout < time.Second || c.GroupSessionTimeout > 30*time.Minute {
		bad("group-session-timeout %s: want 1s to 30m (and within the broker's group.min/max.session.timeout.ms)", c.GroupSessionTimeout)
	}
	if (c.TopicList() == nil) == (c.TopicRegex == "") {
		bad("set exactly one of topics and topic-regex")
	}
	if c.TopicRegex != "" {
		if _, err := regexp.Compile(c.TopicRegex); err != nil {
			bad("topic-regex: %v", err)
		}
	}
	if _, err := schemamap.ParseNameMap(c.TableNameMap); err != nil {
		bad("table-name-map: %v", err)
	}
	switch c.LowerCaseColumns {
	case "auto", "true", "false":
	default:
		bad("lower-case-columns %q: want auto, true or false", c.LowerCaseColumns)
	}
	if _, err := pipeline.ParsePartitionSpecs(c.PartitionSpec); err != nil {
		bad("partition-spec: %v", err)
	}
	if c.KeylessTables != "append" && c.KeylessTables != "reject" {
		bad("keyless-tables %q: want append or reject", c.KeylessTables)
	}
	if c.TableFormatVersion != 2 && c.TableFormatVersion != 3 {
		bad("table-format-version %d: want 2 or 3", c.TableFormatVersion)
	}
	if modes, err := pipeline.ParseDeleteModes(c.DeleteMode); err != nil {
		errs = append(errs, err)
	} else {
		// The mode of every table must fit the tables ingest creates; a
		// table's own entry is checked against the table when it is
		// opened.
		switch mode := modes.For("", ""); {
		case mode == commit.DeletePosition && c.TableFormatVersion != 2:
			bad("delete-mode=position writes position-delete files, which format v%d tables do not take: set table-format-version=2, or use delete-mode=dv", c.TableFormatVersion)
		case mode == commit.DeleteDV && c.TableFormatVersion < 3:
			bad("delete-mode=dv writes deletion vectors, which need format v3 tables: set table-format-version=3, or use delete-mode=position")
		}
		if _, err := c.rewriteConfig(); err != nil {
			errs = append(errs, err)
		}
		if modes.Positional() {
			if c.IndexCacheBytes < 4<<20 {
				bad("index-cache-bytes must be at least 4 MiB (%d)", 4<<20)
			}
		}
	}
	if c.FlushRows < 1 || c.FlushBytes < 1024 || c.FlushInterval < 100*time.Millisecond {
		bad("flush-rows must be at least 1, flush-bytes at least 1024 and flush-interval at least 100ms")
	}
	if c.MaxBufferedBytes < c.FlushBytes {
		bad("max-buffered-bytes must be at least flush-bytes")
	}
	if c.FetchPartitionBytes < 1 || c.FetchPartitionBytes > math.MaxInt32 {
		bad("fetch-partition-bytes must be from 1 to 2147483647")
	}
	if c.QueueRecords < 1 || c.CommitAttempts < 1 {
		bad("queue-records and commit-attempts must be at least 1")
	}
	switch c.ErrorsTolerance {
	case "none":
		if c.DLQTopic != "" {
			bad("dlq-topic %q is set but errors-tolerance is none: set errors-tolerance=dlq (INGEST_ERRORS_TOLERANCE) to use it, or unset dlq-topic", c.DLQTopic)
		}
	case "dlq":
		if c.DLQTopic == "" {
			bad("errors-tolerance=dlq needs dlq-topic (INGEST_DLQ_TOPIC): the topic that takes the records that cannot be decoded or mapped")
		} else if c.Consumes(c.DLQTopic) {
			bad("dlq-topic %q is one of the topics ingest consumes (topics / topic-regex): give the dead-letter topic a name they do not match", c.DLQTopic)
		}
	default:
		bad("errors-tolerance %q: want none or dlq", c.ErrorsTolerance)
	}
	switch {
	case c.MaintainInterval < 0:
		bad("maintain-interval must not be negative")
	case c.MaintainInterval > 0 && c.MaintainInterval < time.Minute:
		bad("maintain-interval %s: want 0 (off) or at least 1m", c.MaintainInterval)
	case c.MaintainInterval > 0:
		for _, err := range c.Maintain.Check() {
			errs = append(errs, fmt.Errorf("maintain-interval is set: %w", err))
		}
	}
	if c.ShutdownTimeout <= 0 {
		bad("shutdown-timeout must be positive")
	}
	if c.StartupTimeout < 0 {
		bad("startup-timeout %s: want 0 or more", c.StartupTimeout)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("log-format %q: want text or json", c.LogFormat)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		bad("log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	return errors.Join(errs...)
}

// lowerCaseColumns reports whether table columns are named in lower case:
// as set, or with auto when the catalog is S3 Tables or Glue, whose
// analytics readers (Athena, through Lake Formation and the Glue Data
// Catalog) do not see a table with an upper-case letter in its definition.
func (c *Config) lowerCaseColumns() bool {
	switch c.LowerCaseColumns {
	case "true":
		return true
	case "false":
		return false
	}
	return c.AWSAnalyticsCatalog()
}

// autoRewrite is what auto means for rewrite-dead-fraction,
// rewrite-delete-files and rewrite-manifests off S3 Tables: on, at 0.3,
// 16 and 16. A 0.3 dead fraction bounds a read to 1/(1-0.3) = 1.43 rows
// decoded per live row; what it costs in ingest's rate is measured by
// bench-scan (test/bench/BENCHMARKS.md; ingest/README.md, Read cost).
var autoRewrite = commit.RewriteConfig{DeadFraction: 0.3, DeleteFiles: 16, Manifests: 16}

// rewriteConfig is the in-ingest rewrite of the positional delete modes
// (see commit.RewriteConfig): each setting as set, or with auto as
// autoRewrite has it, except on S3 Tables, where auto is always off: its
// managed compaction rewrites the tables itself, and two writers
// rewriting the same files would conflict. A value set turns the rewrite
// on everywhere, S3 Tables included.
func (c *Config) rewriteConfig() (commit.RewriteConfig, error) {
	return c.rewriteConfigAuto(autoRewrite)
}

// rewriteConfigAuto is rewriteConfig with auto meaning auto's thresholds
// (MaxBytes unused) off S3 Tables.
func (c *Config) rewriteConfigAuto(auto commit.RewriteConfig) (commit.RewriteConfig, error) {
	out := commit.RewriteConfig{MaxBytes: int64(min(c.RewriteMaxBytes, c.MaxBufferedBytes))}
	if c.RewriteMaxBytes < 1 {
		return out, fmt.Errorf("rewrite-max-bytes must be at least 1 (%d)", c.RewriteMaxBytes)
	}
	if c.S3Tables() {
		auto = commit.RewriteConfig{}
	}
	isAuto := func(v string) bool { return v == "auto" || v == "" }
	if v := strings.TrimSpace(c.RewriteDeadFraction); isAuto(v) {
		out.DeadFraction = auto.DeadFraction
	} else {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 || math.IsNaN(f) {
			return out, fmt.Errorf("rewrite-dead-fraction %q: want auto, or a fraction from 0 (off) to 1", c.RewriteDeadFraction)
		}
		out.DeadFraction = f
	}
	count := func(name, v string, auto int) (int, error) {
		if isAuto(strings.TrimSpace(v)) {
			return auto, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s %q: want auto, or a count (0: off)", name, v)
		}
		return n, nil
	}
	var err error
	if out.DeleteFiles, err = count("rewrite-delete-files", c.RewriteDeleteFiles, auto.DeleteFiles); err != nil {
		return out, err
	}
	if out.Manifests, err = count("rewrite-manifests", c.RewriteManifests, auto.Manifests); err != nil {
		return out, err
	}
	return out, nil
}

// TopicList is the topics setting as a list.
func (c *Config) TopicList() []string {
	var out []string
	for _, t := range strings.Split(c.Topics, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Consumed is the topics ingest consumes: those set, or those whose whole
// names the topic regex matches.
func (c *Config) Consumed() renamecheck.Consumed {
	return renamecheck.Consumed{Topics: c.TopicList(), Regex: c.TopicRegex}
}

// Consumes reports whether topic is one of the topics set or matches the
// topic regex.
func (c *Config) Consumes(topic string) bool { return c.Consumed().Has(topic) }

// Brokers is the kafka-brokers setting as a list.
func (c *Config) Brokers() []string {
	var out []string
	for _, b := range strings.Split(c.KafkaBrokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// Redacted is the configuration as logged: no secrets.
func (c *Config) Redacted() []any {
	return []any{
		"kafka_brokers", c.KafkaBrokers, "kafka_tls", c.Kafka.TLS, "kafka_sasl_mechanism", c.Kafka.SASLMechanism,
		"kafka_sasl_username", c.Kafka.SASLUsername, "group_id", c.GroupID, "group_session_timeout", c.GroupSessionTimeout, "topics", c.Topics, "topic_regex", c.TopicRegex,
		"schema_registry_url", lake.RedactURL(c.RegistryURL), "schema_registry_username", c.Registry.Username, "schema_registry_password_set", c.Registry.Password != "", "schema_registry_token_set", c.Registry.Token != "", "schema_registry_ca_file", c.Registry.CAFile,
		"glue_registry_region", c.Glue.Region, "glue_registry_endpoint", c.Glue.Endpoint,
		"catalog_uri", lake.RedactURL(c.CatalogURI), "warehouse", c.Warehouse,
		"catalog_credential_set", c.CatalogCredential != "", "catalog_token_set", c.CatalogToken != "",
		"sigv4", c.SigV4, "sigv4_service", c.SigV4Service, "s3_endpoint", c.S3Endpoint, "s3_region", c.S3Region, "s3_keys_set", c.S3AccessKeyID != "",
		"table_name_map", strings.Join(c.TableNameMap, ";"), "lower_case_columns", c.lowerCaseColumns(), "partition_spec", c.PartitionSpec, "keyless_tables", c.KeylessTables,
		"table_format_version", c.TableFormatVersion, "backfill_defaults", c.BackfillDefaults,
		"delete_mode", c.DeleteMode, "state_dir", c.StateDir, "index_cache_bytes", c.IndexCacheBytes,
		"rewrite_dead_fraction", c.RewriteDeadFraction, "rewrite_delete_files", c.RewriteDeleteFiles, "rewrite_manifests", c.RewriteManifests, "rewrite_max_bytes", c.RewriteMaxBytes,
		"flush_rows", c.FlushRows, "flush_bytes", c.FlushBytes, "flush_interval", c.FlushInterval,
		"max_buffered_bytes", c.MaxBufferedBytes, "shutdown_timeout", c.ShutdownTimeout, "startup_timeout", c.StartupTimeout,
		"maintain_interval", c.MaintainInterval, "errors_tolerance", c.ErrorsTolerance, "dlq_topic", c.DLQTopic,
	}
}

// KafkaClient is a plain client of the brokers (with ingest's security
// settings) for the subcommands that read topics without consuming them,
// and the options it was made with.
func (c *Config) KafkaClient(ctx context.Context, clientID string) (*kgo.Client, []kgo.Opt, error) {
	opts, err := c.Kafka.ClientOpts(ctx, clientID)
	if err != nil {
		return nil, nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(c.Brokers()...))...)
	if err != nil {
		return nil, nil, fmt.Errorf("kafka %s: %w", c.KafkaBrokers, err)
	}
	return cl, opts, nil
}
