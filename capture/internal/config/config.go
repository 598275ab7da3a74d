// Package config is capture's configuration: every setting of the capture
// command (which capture status and capture snapshot take too), its flag
// and environment variable, and Validate, which checks the settings
// against each other and fills the derived defaults.
package config

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"time"

	"github.com/binlake/binlake/capture/internal/envflag"
	"github.com/binlake/binlake/capture/internal/filter"
	"github.com/binlake/binlake/capture/internal/kafkasec"
	"github.com/binlake/binlake/capture/internal/mysqltls"
	"github.com/binlake/binlake/capture/internal/mysqltype"
	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/registrysec"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/capture/internal/source"
	"github.com/binlake/binlake/schemas/debezium"
)

// Config is capture's whole configuration. Each field's flag, environment
// variable and default are in Bind; README's configuration table lists them.
type Config struct {
	// Source.
	MySQLAddr     string
	MySQLUser     string
	MySQLPassword string // secret: CAPTURE_MYSQL_PASSWORD or CAPTURE_MYSQL_PASSWORD_FILE
	// MySQLTLS is TLS to the source (Debezium database.ssl.*), for the SQL
	// and the binlog connections alike; default mode preferred.
	MySQLTLS      mysqltls.Config
	ServerID      int    // database.server.id; 0 derives one from ID
	Flavor        string // auto | mysql | mariadb (the source block's connector)
	StartPosition string // where to start when no position is stored
	// SnapshotMode is Debezium's snapshot.mode; SnapshotChunkRows the rows per snapshot SELECT;
	// SnapshotReadAhead the chunks read and converted ahead of the one being emitted.
	SnapshotMode      string
	SnapshotChunkRows int
	SnapshotReadAhead int
	// SignalEnabledChannels and SignalKafkaTopic are Debezium's
	// signal.enabled.channels (kafka only) and signal.kafka.topic.
	SignalEnabledChannels string
	SignalKafkaTopic      string

	// Naming.
	TopicPrefix string // topic.prefix
	ID          string // capture id: transactional id and position key; default TopicPrefix

	// Kafka and the registry.
	KafkaBrokers string
	Kafka        kafkasec.KafkaSecurity       // TLS and SASL (MSK)
	Registry     registrysec.RegistrySecurity // schema registry credentials and CA
	RegistryURL  string
	// Glue is AWS Glue Schema Registry, in place of RegistryURL when its
	// region is set.
	Glue               publish.GlueConfig
	OffsetsTopic       string
	HistoryTopic       string
	TopicPartitions    int
	TopicReplication   int
	TopicCleanupPolicy string
	MaxRecordBytes     int
	MaxBufferedBytes   int
	TransactionTimeout time.Duration
	CommitInterval     time.Duration
	MaxTxnRecords      int
	TombstonesOnDelete bool
	SkippedOperations  string
	HeartbeatInterval  time.Duration
	// Debezium's schema-change, transaction metadata and heartbeat topics.
	IncludeSchemaChanges  bool
	ProvideTxMetadata     bool
	HeartbeatTopicPeriod  time.Duration // heartbeat.interval.ms
	HeartbeatTopicsPrefix string        // topics.heartbeat.prefix
	EventBuffer           int
	Filters               filter.Lists
	// MessageKeyColumns is Debezium's message.key.columns
	// (<db>.<table>:<col>,<col>;… with regexes); KeyColumns its parsed form.
	MessageKeyColumns  string
	KeyColumns         *schemahist.KeyColumns
	Types              mysqltype.Options
	TimePrecisionMode  string
	DecimalHandling    string
	BigintUnsignedMode string
	BinaryHandlingMode string
	// FieldNameAdjustment and SchemaNameAdjustment are Debezium's
	// field.name.adjustment.mode and schema.name.adjustment.mode (none,
	// avro or avro_unicode). Defaults: avro for fields (Debezium 3.5
	// declares none but uses avro whenever the converter is Confluent's
	// or Apicurio's AvroConverter, and capture always writes Avro) and
	// none for schema names. Naming is their parsed form, filled by
	// Validate.
	FieldNameAdjustment  string
	SchemaNameAdjustment string
	Naming               schemahist.Naming
	MetricsAddr          string
	// Pprof serves net/http/pprof under /debug/pprof/ on MetricsAddr
	// (default false: profiling is opt-in, on the admin listener only).
	Pprof bool
	// PprofAddr serves the profiles on a listener of their own instead.
	PprofAddr           string
	LogFormat, LogLevel string
	ShutdownTimeout     time.Duration
	StartupTimeout      time.Duration
}

// Bind binds every setting to f, with its CAPTURE_* variable and default.
func (c *Config) Bind(f *envflag.Set) {
	f.String(&c.MySQLAddr, "mysql-addr", "127.0.0.1:3306", "source MySQL/MariaDB server, host:port")
	f.String(&c.MySQLUser, "mysql-user", "binlake_capture", "replication user (grants: REPLICATION SLAVE, REPLICATION CLIENT, SELECT)")
	f.Secret(&c.MySQLPassword, "mysql-password", "the replication user's password")
	f.String((*string)(&c.MySQLTLS.Mode), "mysql-tls", string(mysqltls.Preferred), "TLS to the source, for the SQL and binlog connections (Debezium database.ssl.mode): disabled, preferred (TLS when the server offers it, certificate not checked), required (TLS, certificate not checked), verify_ca (certificate signed by mysql-tls-ca-file) or verify_identity (and naming the server); verify-ca and verify-full are accepted too")
	f.String(&c.MySQLTLS.CAFile, "mysql-tls-ca-file", "", "PEM file of the CAs that sign the source's certificate, for verify_ca and verify_identity (default: the system roots)")
	f.String(&c.MySQLTLS.CertFile, "mysql-tls-cert-file", "", "PEM client certificate, for a user created with REQUIRE X509 (with mysql-tls-key-file)")
	f.String(&c.MySQLTLS.KeyFile, "mysql-tls-key-file", "", "PEM private key of mysql-tls-cert-file")
	f.String(&c.MySQLTLS.ServerName, "mysql-tls-server-name", "", "name verify_identity expects in the source's certificate (default: the host of mysql-addr)")
	f.Bool(&c.MySQLTLS.AllowInsecureAuth, "mysql-allow-insecure-auth", false, "let the password go in clear (mysql_clear_password) or encrypted with an RSA key the server sends (sha256_password, caching_sha2_password full authentication) over a connection whose certificate is not verified; refused by default, allowed with verify_ca and verify_identity")
	f.Int(&c.ServerID, "server-id", 0, "replica server id, unique among the source's replicas (Debezium database.server.id); 0 derives one from the capture id")
	f.String(&c.Flavor, "flavor", "auto", "source flavor for the binlog protocol and the source block: auto, mysql or mariadb")
	f.String(&c.StartPosition, "start-position", "current", "where to start when no position is stored: current (the end of the binlog), earliest, gtid:<set> or file:<name>:<pos>")
	f.String(&c.SnapshotMode, "snapshot-mode", "initial", "Debezium snapshot.mode: initial (snapshot when no position is stored, then stream), initial_only, no_data (no rows, stream from current), never (no rows, stream from start-position) or when_needed (also when the stored position left the binlog)")
	f.Int(&c.SnapshotChunkRows, "snapshot-chunk-rows", 10000, "rows per snapshot SELECT (primary-key ordered chunk); the snapshot can resume after each chunk")
	f.Int(&c.SnapshotReadAhead, "snapshot-read-ahead", 2, "snapshot chunks read and converted (in parallel) ahead of the one being emitted; with snapshot-chunk-rows it bounds the snapshot's memory")
	f.String(&c.SignalEnabledChannels, "signal-enabled-channels", "", "Debezium signal.enabled.channels: kafka reads ad-hoc snapshot signals from signal-kafka-topic (the only channel supported); empty: none")
	f.String(&c.SignalKafkaTopic, "signal-kafka-topic", "", "Debezium signal.kafka.topic: topic of signals such as execute-snapshot, read from partition 0 with the kafka channel (default <prefix>-signal)")
	f.String(&c.TopicPrefix, "topic-prefix", "", "Debezium topic.prefix: change topics are <prefix>.<db>.<table> (required)")
	f.String(&c.ID, "id", "", "capture id: its Kafka transactional id is binlake-capture-<id> and its position is stored under it (default: the topic prefix)")
	f.String(&c.KafkaBrokers, "kafka-brokers", "127.0.0.1:9092", "comma-separated Kafka seed brokers")
	c.Kafka.Bind(f)
	f.String(&c.RegistryURL, "schema-registry-url", "http://127.0.0.1:8081", "Confluent-compatible schema registry URL (Apicurio: .../apis/ccompat/v7)")
	c.Registry.Bind(f)
	c.Glue.Bind(f)
	f.String(&c.OffsetsTopic, "offsets-topic", "__binlake-capture-offsets", "compacted topic holding capture positions")
	f.String(&c.HistoryTopic, "schema-history-topic", "", "topic holding table definitions as they change (default __binlake-schema-history.<prefix>)")
	f.Int(&c.TopicPartitions, "topic-creation-default-partitions", 1, "partitions of change topics capture creates")
	f.Int(&c.TopicReplication, "topic-creation-default-replication-factor", -1, "replication factor of topics capture creates (-1: the broker's default)")
	f.String(&c.TopicCleanupPolicy, "topic-creation-default-cleanup-policy", "delete", "cleanup.policy of change topics capture creates (delete or compact)")
	f.Int(&c.MaxRecordBytes, "max-record-bytes", 16<<20, "largest change event capture produces; larger rows stop capture with an error naming the table and key")
	f.Int(&c.MaxBufferedBytes, "max-buffered-bytes", 64<<20, "memory for records not yet acknowledged by Kafka; reading the binlog waits when it is full")
	f.Duration(&c.TransactionTimeout, "transaction-timeout", 10*time.Minute, "Kafka transaction timeout; must cover the largest source transaction (broker cap: transaction.max.timeout.ms)")
	f.Duration(&c.CommitInterval, "commit-interval", 200*time.Millisecond, "longest a Kafka transaction stays open while the binlog is busy; it also commits whenever the binlog goes idle")
	f.Int(&c.MaxTxnRecords, "max-transaction-records", 200000, "records after which the Kafka transaction commits at the next source transaction boundary")
	f.Bool(&c.TombstonesOnDelete, "tombstones-on-delete", true, "follow each delete with a tombstone (Debezium tombstones.on.delete)")
	f.String(&c.SkippedOperations, "skipped-operations", "none", "comma-separated ops not emitted: t (truncate), or none. Debezium's default is t; binlake emits truncates unless told")
	f.Int(&c.EventBuffer, "binlog-event-buffer", 64, "binlog events decoded ahead of publishing; with max-buffered-bytes it bounds memory")
	f.Duration(&c.HeartbeatInterval, "heartbeat-interval", 30*time.Second, "binlog heartbeat period the server is asked for when idle")
	f.Bool(&c.IncludeSchemaChanges, "include-schema-changes", true, "write schema-change events (DDL and the table structure after it) on topic <prefix> (Debezium include.schema.changes)")
	f.Bool(&c.ProvideTxMetadata, "provide-transaction-metadata", false, "write BEGIN/END records on <prefix>.transaction and fill the envelope's transaction block (Debezium provide.transaction.metadata)")
	f.Duration(&c.HeartbeatTopicPeriod, "heartbeat-topic-interval", 0, "period of heartbeat records on <topics-heartbeat-prefix>.<prefix>, each committed with the position (Debezium heartbeat.interval.ms); 0: none")
	f.String(&c.HeartbeatTopicsPrefix, "topics-heartbeat-prefix", "__debezium-heartbeat", "prefix of the heartbeat topic (Debezium topics.heartbeat.prefix)")
	f.String(&c.Filters.DatabaseInclude, "database-include-list", "", "regexes of databases to capture (Debezium database.include.list)")
	f.String(&c.Filters.DatabaseExclude, "database-exclude-list", "", "regexes of databases not to capture")
	f.String(&c.Filters.TableInclude, "table-include-list", "", "regexes of db.table to capture")
	f.String(&c.Filters.TableExclude, "table-exclude-list", "", "regexes of db.table not to capture")
	f.String(&c.Filters.ColumnInclude, "column-include-list", "", "regexes of db.table.column to capture (primary key columns always are)")
	f.String(&c.Filters.ColumnExclude, "column-exclude-list", "", "regexes of db.table.column not to capture")
	f.String(&c.MessageKeyColumns, "message-key-columns", "", "columns keying the events of the tables named, in place of the primary key: <db regex>.<table regex>:<column>,<column>;... (Debezium message.key.columns)")
	f.String(&c.TimePrecisionMode, "time-precision-mode", "adaptive_time_microseconds", "Debezium time.precision.mode: adaptive_time_microseconds or connect")
	f.String(&c.DecimalHandling, "decimal-handling-mode", "precise", "Debezium decimal.handling.mode: precise, string or double")
	f.String(&c.BigintUnsignedMode, "bigint-unsigned-handling-mode", "long", "Debezium bigint.unsigned.handling.mode: long or precise")
	f.String(&c.BinaryHandlingMode, "binary-handling-mode", "bytes", "Debezium binary.handling.mode: bytes, base64, base64-url-safe or hex")
	f.String(&c.FieldNameAdjustment, "field-name-adjustment-mode", "avro", "Debezium field.name.adjustment.mode for column fields of keys and rows: avro (characters outside [A-Za-z0-9_] become _; what Debezium does with an Avro converter even when set to none), avro_unicode (they and _ become _uXXXX) or none (names as they are; a name Avro cannot carry stops capture before anything is written)")
	f.String(&c.SchemaNameAdjustment, "schema-name-adjustment-mode", "none", "Debezium schema.name.adjustment.mode for the Key, Value and Envelope record names (<topic>.Value): none, avro or avro_unicode")
	f.String(&c.MetricsAddr, "metrics-addr", "127.0.0.1:9464", "address of /metrics, /healthz and /readyz (off: none)")
	f.Bool(&c.Pprof, "pprof", false, "also serve Go's profiles (net/http/pprof) under /debug/pprof/ on metrics-addr (prefer pprof-addr)")
	f.String(&c.PprofAddr, "pprof-addr", "", "address of a server of Go's profiles (/debug/pprof/) apart from metrics-addr, e.g. 127.0.0.1:6060 reached through kubectl port-forward (empty: none)")
	f.String(&c.LogFormat, "log-format", "text", "log format: text or json")
	f.String(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.Duration(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a stop may take to commit or abort the open transaction")
	f.Duration(&c.StartupTimeout, "startup-timeout", 5*time.Minute, "how long start-up waits for an unreachable source, schema registry or Kafka, retrying with back-off, before exiting (0: exit at the first failure); refused credentials and certificates exit at once")
}

// Validate checks the settings against each other and fills derived defaults.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.TopicPrefix == "" {
		bad("topic-prefix is required (CAPTURE_TOPIC_PREFIX)")
	}
	if c.ID == "" {
		c.ID = c.TopicPrefix
	}
	if c.HistoryTopic == "" && c.TopicPrefix != "" {
		c.HistoryTopic = "__binlake-schema-history." + c.TopicPrefix
	}
	if strings.TrimSpace(c.KafkaBrokers) == "" {
		bad("kafka-brokers is empty")
	}
	if c.StartupTimeout < 0 {
		bad("startup-timeout %s: want 0 or more", c.StartupTimeout)
	}
	if err := c.Registry.Validate(c.RegistryURL); err != nil {
		errs = append(errs, err)
	}
	if err := c.Glue.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Kafka.Validate(strings.Split(c.KafkaBrokers, ",")); err != nil {
		errs = append(errs, err)
	}
	if err := c.MySQLTLS.Validate(); err != nil {
		errs = append(errs, err)
	}
	if !strings.Contains(c.MySQLAddr, ":") {
		bad("mysql-addr %q is not host:port", c.MySQLAddr)
	}
	if err := snapshot.Mode(c.SnapshotMode).Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateSignals(); err != nil {
		errs = append(errs, err)
	}
	if c.HeartbeatTopicPeriod < 0 {
		bad("heartbeat-topic-interval must not be negative")
	}
	if c.HeartbeatTopicsPrefix == "" {
		bad("topics-heartbeat-prefix is empty")
	}
	if c.SnapshotChunkRows < 1 {
		bad("snapshot-chunk-rows must be at least 1")
	}
	if c.SnapshotReadAhead < 1 {
		bad("snapshot-read-ahead must be at least 1")
	}
	switch c.Flavor {
	case "auto", "mysql", "mariadb":
	default:
		bad("flavor %q: want auto, mysql or mariadb", c.Flavor)
	}
	if c.ServerID < 0 || c.ServerID > 1<<32-1 {
		bad("server-id %d out of range", c.ServerID)
	}
	if c.ServerID == 0 {
		h := fnv.New32a()
		h.Write([]byte(c.ID))
		c.ServerID = int(h.Sum32()%900_000_000) + 100_000
	}
	if c.TopicPartitions < 1 {
		bad("topic-creation-default-partitions must be at least 1")
	}
	if c.TopicReplication == 0 || c.TopicReplication < -1 {
		bad("topic-creation-default-replication-factor must be -1 or at least 1")
	}
	if c.TopicCleanupPolicy != "delete" && c.TopicCleanupPolicy != "compact" && c.TopicCleanupPolicy != "compact,delete" {
		bad("topic-creation-default-cleanup-policy %q: want delete, compact or compact,delete", c.TopicCleanupPolicy)
	}
	if c.MaxRecordBytes < 1024 {
		bad("max-record-bytes must be at least 1024")
	}
	if c.MaxBufferedBytes < 2*c.MaxRecordBytes {
		bad("max-buffered-bytes must be at least twice max-record-bytes")
	}
	if c.CommitInterval <= 0 || c.TransactionTimeout < time.Second {
		bad("commit-interval must be positive and transaction-timeout at least 1s")
	}
	if c.EventBuffer < 1 {
		bad("binlog-event-buffer must be at least 1")
	}
	if c.MaxTxnRecords < 1 {
		bad("max-transaction-records must be at least 1")
	}
	for _, op := range strings.Split(c.SkippedOperations, ",") {
		switch strings.TrimSpace(op) {
		case "none", "", "t":
		case "c", "u", "d":
			bad("skipped-operations %q: skipping c, u or d would lose changes; only t is supported", op)
		default:
			bad("skipped-operations %q: want t or none", op)
		}
	}
	if _, err := filter.New(c.Filters); err != nil {
		errs = append(errs, err)
	}
	if k, err := schemahist.ParseKeyColumns(c.MessageKeyColumns); err != nil {
		errs = append(errs, err)
	} else {
		c.KeyColumns = k
	}
	c.Types = mysqltype.Options{
		TimePrecision:  mysqltype.TimePrecisionMode(c.TimePrecisionMode),
		Decimal:        mysqltype.DecimalMode(c.DecimalHandling),
		BigintUnsigned: mysqltype.BigintUnsignedMode(c.BigintUnsignedMode),
		Binary:         mysqltype.BinaryMode(c.BinaryHandlingMode),
	}
	if err := c.Types.Validate(); err != nil {
		errs = append(errs, err)
	}
	var err error
	if c.Naming.Field, err = debezium.ParseNameAdjustment(c.FieldNameAdjustment); err != nil {
		bad("field-name-adjustment-mode: %v", err)
	}
	if c.Naming.Schema, err = debezium.ParseNameAdjustment(c.SchemaNameAdjustment); err != nil {
		bad("schema-name-adjustment-mode: %v", err)
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

// SkipTruncate reports whether truncates are not emitted.
func (c *Config) SkipTruncate() bool {
	for _, op := range strings.Split(c.SkippedOperations, ",") {
		if strings.TrimSpace(op) == "t" {
			return true
		}
	}
	return false
}

// Redacted is the configuration as logged: no secrets.
func (c *Config) Redacted() []any {
	return []any{
		"mysql_addr", c.MySQLAddr, "mysql_user", c.MySQLUser, "mysql_password_set", c.MySQLPassword != "",
		"mysql_tls", c.MySQLTLS.Mode, "mysql_allow_insecure_auth", c.MySQLTLS.AllowInsecureAuth,
		"topic_prefix", c.TopicPrefix, "id", c.ID, "kafka_brokers", c.KafkaBrokers,
		"kafka_tls", c.Kafka.TLS, "kafka_sasl_mechanism", c.Kafka.SASLMechanism, "kafka_sasl_username", c.Kafka.SASLUsername,
		"schema_registry_url", RedactURL(c.RegistryURL), "schema_registry_username", c.Registry.Username, "schema_registry_password_set", c.Registry.Password != "", "schema_registry_token_set", c.Registry.Token != "", "schema_registry_ca_file", c.Registry.CAFile,
		"glue_registry_region", c.Glue.Region, "glue_registry_endpoint", c.Glue.Endpoint, "glue_registry_name", c.Glue.RegistryName,
		"glue_schema_auto_registration", c.Glue.AutoRegistration, "glue_compatibility", c.Glue.Compatibility, "glue_compression", c.Glue.Compression,
		"offsets_topic", c.OffsetsTopic, "schema_history_topic", c.HistoryTopic,
		"server_id", c.ServerID, "flavor", c.Flavor, "snapshot_mode", c.SnapshotMode, "signal_kafka_topic", c.SignalKafkaTopic, "snapshot_chunk_rows", c.SnapshotChunkRows, "snapshot_read_ahead", c.SnapshotReadAhead, "commit_interval", c.CommitInterval,
		"field_name_adjustment_mode", c.Naming.Field, "schema_name_adjustment_mode", c.Naming.Schema,
		"startup_timeout", c.StartupTimeout,
	}
}

// RedactURL hides user info in a URL.
func RedactURL(u string) string {
	if at := strings.LastIndex(u, "@"); at >= 0 {
		if scheme := strings.Index(u, "://"); scheme >= 0 && scheme < at {
			return u[:scheme+3] + "REDACTED@" + u[at+1:]
		}
	}
	return u
}

// Source is where the source server is and how to log in to it.
func (c *Config) Source() source.Config {
	return source.Config{Addr: c.MySQLAddr, User: c.MySQLUser, Password: c.MySQLPassword, TLS: c.MySQLTLS}
}
