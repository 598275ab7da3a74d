// Package run is the capture command itself: it checks the source, the
// schema registry and Kafka, decides where to resume (or snapshot), and
// streams the binlog to Kafka until its context ends, serving /metrics,
// /healthz and /readyz meanwhile.
package run

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/sr"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/config"
	"github.com/binlake/binlake/capture/internal/filter"
	"github.com/binlake/binlake/capture/internal/pprofsrv"
	"github.com/binlake/binlake/capture/internal/progress"
	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/resume"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/capture/internal/signal"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/capture/internal/source"
	"github.com/binlake/binlake/capture/internal/startup"
	"github.com/binlake/binlake/capture/internal/stream"
	"github.com/binlake/binlake/schemas/debezium"
)

// version is reported in the source block's version field.
const version = "binlake-0.1.0"

// Config is what capture runs with.
type Config struct {
	// Capture is the configuration, validated (config.Config.Validate).
	Capture config.Config
	// Logger receives capture's log; nil discards it.
	Logger *slog.Logger
	// Terminal, when set, draws the snapshot's progress bars below the
	// log lines (the logger writes through it).
	Terminal *progress.Terminal
}

// Run streams until ctx ends (then it returns nil) or an error stops it.
// With snapshot-mode initial_only it returns nil once the snapshot is
// complete.
func Run(ctx context.Context, c Config) error {
	logger := c.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg := c.Capture
	logger.Info("starting capture", cfg.Redacted()...)
	err := capture(ctx, cfg, logger, c.Terminal)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		logger.Info("stopped")
		return nil
	}
	return err
}

func capture(ctx context.Context, cfg config.Config, logger *slog.Logger, term *progress.Terminal) error {
	var ready atomic.Bool
	reg := prometheus.NewRegistry()
	metrics := RegisterMetrics(reg, ready.Load)

	// stream1 returns nil when it is done (snapshot-mode initial_only):
	// that ends the ops server too.
	ctx, done := context.WithCancel(ctx)
	defer done()
	g, gctx := errgroup.WithContext(ctx)
	if cfg.MetricsAddr != "" && cfg.MetricsAddr != "off" {
		srv, err := serveOps(cfg.MetricsAddr, reg, &ready, cfg.Pprof)
		if err != nil {
			return err
		}
		g.Go(func() error {
			<-gctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(sctx)
		})
	}
	if cfg.PprofAddr != "" {
		srv, err := pprofsrv.Serve(cfg.PprofAddr)
		if err != nil {
			return err
		}
		g.Go(func() error {
			<-gctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(sctx)
		})
	}
	if term != nil {
		g.Go(func() error { return term.Run(gctx, progress.FromGatherer(reg), 500*time.Millisecond) })
	}
	g.Go(func() error {
		defer ready.Store(false)
		defer done()
		return stream1(gctx, cfg, logger, metrics, &ready)
	})
	return g.Wait()
}

// RegisterMetrics registers every metric capture exports on reg: the Go
// and process collectors, the stream's metrics, and capture_ready (1 while
// ready reports true, as /readyz answers 200).
func RegisterMetrics(reg prometheus.Registerer, ready func() bool) *stream.Metrics {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "capture_ready", Help: "1 while capture streams the binlog (/readyz answers 200), else 0.",
		}, func() float64 {
			if ready() {
				return 1
			}
			return 0
		}))
	return stream.NewMetrics(reg)
}

// serveOps serves /metrics, /healthz and /readyz on addr, and with pprof
// Go's profiles under /debug/pprof/. Importing net/http/pprof also
// registers them on http.DefaultServeMux, which capture never serves: they
// are reachable only here, and only when asked for.
func serveOps(addr string, reg *prometheus.Registry, ready *atomic.Bool, pprof bool) (*http.Server, error) {
	mux := http.NewServeMux()
	if pprof {
		mux.HandleFunc("/debug/pprof/", httppprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", httppprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", httppprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "not streaming", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on metrics-addr %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends with Shutdown, owned by capture's errgroup
	return srv, nil
}

// sqlDefinitions loads table definitions from information_schema.
type sqlDefinitions struct{ db *sql.DB }

func (d sqlDefinitions) Load(ctx context.Context, db, table string) (schemahist.Definition, error) {
	return schemahist.Load(ctx, d.db, db, table)
}

func (d sqlDefinitions) ShowCreateTable(ctx context.Context, db, table string) (string, error) {
	return schemahist.ShowCreateTable(ctx, d.db, db, table)
}

func (d sqlDefinitions) DatabaseCharset(ctx context.Context, db string) (string, string, error) {
	return schemahist.DatabaseCharset(ctx, d.db, db)
}

func (d sqlDefinitions) Collations(ctx context.Context) (schemahist.Collations, error) {
	return schemahist.LoadCollations(ctx, d.db)
}

var (
	_ stream.DDLSource       = sqlDefinitions{}
	_ stream.CollationSource = sqlDefinitions{}
)

// decide is resume.Decide retried as the first connection to the source
// is: the source was reached before Kafka was and may have restarted
// meanwhile (its pooled connection then fails once with "invalid
// connection"), and the decision only reads.
func decide(ctx context.Context, logger *slog.Logger, timeout time.Duration, rc resume.Config, stored []byte, found bool, server binlog.Server, src resume.Source) (plan resume.Plan, err error) {
	err = startup.Retry(ctx, logger, "the source", timeout, sourceRefusal, func(ctx context.Context) (err error) {
		plan, err = resume.Decide(ctx, rc, stored, found, server, src, logger)
		return err
	})
	return plan, err
}

// sourceRefusal reports whether an error reaching the source is final:
// the server answered and refused (credentials, grants), where a server
// not answering, or shutting down or restarting, may be back soon.
func sourceRefusal(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1040, 1053, 1927: // too many connections, shutdown in progress, connection killed
			return false
		}
		return true
	}
	return !startup.Unreachable(err) && !errors.Is(err, mysql.ErrInvalidConn) && !errors.Is(err, driver.ErrBadConn)
}

// openRegistry returns the schema registry capture registers in, reached
// before capture goes on: AWS Glue Schema Registry when
// glue-registry-region is set (its registry looked up), else the
// Confluent-API one at schema-registry-url.
func openRegistry(ctx context.Context, logger *slog.Logger, cfg config.Config) (stream.Registry, error) {
	if cfg.Glue.Enabled() {
		logger.Info("registering schemas in AWS Glue Schema Registry", "region", cfg.Glue.Region, "registry", cfg.Glue.RegistryName, "compression", cfg.Glue.Compression)
		glue, err := publish.NewGlueRegistry(ctx, cfg.Glue)
		if err != nil {
			return nil, err
		}
		if err := startup.Retry(ctx, logger, "AWS Glue Schema Registry", cfg.StartupTimeout, glue.Final, glue.Ping); err != nil {
			return nil, err
		}
		return glue, nil
	}
	registryOpts, err := cfg.Registry.ClientOpts()
	if err != nil {
		return nil, err
	}
	registry, err := publish.NewRegistry(cfg.RegistryURL, registryOpts...)
	if err != nil {
		return nil, err
	}
	if err := startup.Retry(ctx, logger, "the schema registry", cfg.StartupTimeout, registryRefusal, registry.Ping); err != nil {
		return nil, fmt.Errorf("%w (check schema-registry-url %s)", err, config.RedactURL(cfg.RegistryURL))
	}
	return registry, nil
}

// registryRefusal reports whether an error reaching the schema registry
// is final: an answer other than a 5xx (a wrong path, credentials).
func registryRefusal(err error) bool {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode < 500
	}
	return !startup.Unreachable(err)
}

// resumeSource answers the resume policy's questions from the source.
type resumeSource struct {
	db   *sql.DB
	filt *filter.Filter
}

func (s resumeSource) BinlogHas(ctx context.Context, p binlog.Position) (bool, error) {
	return snapshot.BinlogHas(ctx, s.db, p)
}

func (s resumeSource) Tables(ctx context.Context) ([]snapshot.TableID, error) {
	return snapshot.ListTables(ctx, s.db, s.filt)
}

var _ resume.Source = resumeSource{}

func stream1(ctx context.Context, cfg config.Config, logger *slog.Logger, metrics *stream.Metrics, ready *atomic.Bool) error {
	src, err := source.New(cfg.Source())
	if err != nil {
		return err
	}
	if !src.TLSMode().Verified() {
		logger.Warn("the source's certificate is not verified: set mysql-tls=verify_identity (or verify_ca) and mysql-tls-ca-file", "mysql_tls", src.TLSMode())
	}
	db, err := src.OpenDB(map[string]string{"time_zone": "'+00:00'"}, false)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(4)

	// Start-up checks: one line per problem, naming the fix.
	var server binlog.Server
	err = startup.Retry(ctx, logger, "the source", cfg.StartupTimeout, sourceRefusal, func(ctx context.Context) (err error) {
		server, err = binlog.Inspect(ctx, db)
		return err
	})
	if err != nil {
		return fmt.Errorf("source %s: %w (check mysql-addr, mysql-user and CAPTURE_MYSQL_PASSWORD)", cfg.MySQLAddr, err)
	}
	if err := server.Check(); err != nil {
		return err
	}
	grants, err := resume.LoadGrants(ctx, db)
	if err != nil {
		return err
	}
	if err := resume.CheckGrants(grants); err != nil {
		return err
	}
	flavor := server.Flavor
	srcFlavor := debezium.Flavor(flavor)
	if cfg.Flavor != "auto" {
		srcFlavor = debezium.Flavor(cfg.Flavor)
	}
	filt, err := filter.New(cfg.Filters)
	if err != nil {
		return err
	}

	registry, err := openRegistry(ctx, logger, cfg)
	if err != nil {
		return err
	}

	kafkaOpts, err := cfg.Kafka.ClientOpts(ctx, "binlake-capture")
	if err != nil {
		return err
	}
	var pub *publish.Publisher
	err = startup.Retry(ctx, logger, "Kafka", cfg.StartupTimeout, cfg.Kafka.Refusal, func(ctx context.Context) (err error) {
		pub, err = publish.New(ctx, publish.Config{
			Brokers:            strings.Split(cfg.KafkaBrokers, ","),
			ID:                 cfg.ID,
			OffsetsTopic:       cfg.OffsetsTopic,
			TopicPartitions:    int32(cfg.TopicPartitions),
			TopicReplication:   int16(cfg.TopicReplication),
			TopicCleanupPolicy: cfg.TopicCleanupPolicy,
			MaxRecordBytes:     int32(cfg.MaxRecordBytes),
			TransactionTimeout: cfg.TransactionTimeout,
			MaxBufferedBytes:   cfg.MaxBufferedBytes,
			Opts:               kafkaOpts,
			Logger:             logger,
		})
		return err
	})
	if err != nil {
		err, _ = cfg.Kafka.Explain(err)
		return fmt.Errorf("kafka %s: %w", cfg.KafkaBrokers, err)
	}
	defer pub.Close()
	if err := pub.EnsureTopic(ctx, cfg.HistoryTopic, map[string]*string{"retention.ms": ptr("-1"), "retention.bytes": ptr("-1")}, 1); err != nil {
		return err
	}

	b, found, err := pub.LoadPosition(ctx, cfg.ID)
	if err != nil {
		return fmt.Errorf("reading the stored position: %w", err)
	}
	plan, err := decide(ctx, logger, cfg.StartupTimeout, resume.Config{
		ID: cfg.ID, OffsetsTopic: cfg.OffsetsTopic, Mode: snapshot.Mode(cfg.SnapshotMode),
		StartPosition: cfg.StartPosition, SchemaChanges: cfg.IncludeSchemaChanges,
	}, b, found, server, resumeSource{db, filt})
	if err != nil {
		return err
	}
	if plan.Done {
		logger.Info("snapshot-mode initial_only: the snapshot is complete, nothing to do")
		return nil
	}
	state, stored := plan.State, plan.Stored
	start := state.Position
	history, err := stream.LoadHistory(ctx, pub, cfg.HistoryTopic)
	if err != nil {
		return err
	}
	incCfg, signals, storeNow, err := incrementalSetup(ctx, cfg, &state, stored, resumeSource{db, filt}, history, pub, kafkaOpts, logger)
	if err != nil {
		return err
	}
	if signals != nil {
		defer signals.Close()
	}
	sdb, err := openSnapshotDB(src)
	if err != nil {
		return err
	}
	defer sdb.Close()
	var snapCfg *stream.SnapshotConfig
	if state.Snapshot != nil && !state.Snapshot.Done() {
		snapCfg = &stream.SnapshotConfig{
			DB: sdb, Progress: *state.Snapshot, ChunkRows: cfg.SnapshotChunkRows, ReadAhead: cfg.SnapshotReadAhead,
			StopWhenDone: snapshot.Mode(cfg.SnapshotMode) == snapshot.ModeInitialOnly,
		}
		logger.Info("snapshot: running", "tables", len(state.Snapshot.Tables), "table_index", state.Snapshot.Table,
			"rows_emitted", state.Snapshot.Rows, "resumed", stored)
	}
	logger.Info("resuming", "gtid", start.GTIDSet, "binlog_file", start.File, "binlog_pos", start.Pos,
		"flavor", flavor, "server_version", server.Version, "known_tables", len(history))

	st, err := stream.New(stream.Config{
		Prefix:          cfg.TopicPrefix,
		RunID:           uuid.NewString(),
		Flavor:          srcFlavor,
		Version:         version,
		Types:           cfg.Types,
		Naming:          cfg.Naming,
		Filter:          filt,
		KeyColumns:      cfg.KeyColumns,
		Tombstones:      cfg.TombstonesOnDelete,
		SkipTruncate:    cfg.SkipTruncate(),
		PositionKey:     cfg.ID,
		HistoryTopic:    cfg.HistoryTopic,
		CommitInterval:  cfg.CommitInterval,
		MaxTxnRecords:   cfg.MaxTxnRecords,
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logger:          logger,
		Metrics:         metrics,
		Snapshot:        snapCfg,

		SchemaChanges:     cfg.IncludeSchemaChanges,
		TxMetadata:        cfg.ProvideTxMetadata,
		HeartbeatInterval: cfg.HeartbeatTopicPeriod,
		HeartbeatPrefix:   cfg.HeartbeatTopicsPrefix,
	}, pub, registry, sqlDefinitions{db}, history)
	if err != nil {
		return err
	}
	// Every captured table must compile (names Avro can carry under the
	// adjustment modes) before anything is written.
	captured, err := schemahist.ListTables(ctx, db, filt.Table)
	if err != nil {
		return err
	}
	if err := st.Check(ctx, captured); err != nil {
		return err
	}
	if plan.StoreStart || storeNow {
		// Store the start at once: a capture stopped before its first
		// change must resume here, not at a later "current". A new
		// capture's schema snapshot goes into the same Kafka transaction.
		b, err := stream.MarshalState(state)
		if err != nil {
			return err
		}
		if err := pub.Begin(); err != nil {
			return err
		}
		if plan.SchemaSnapshot {
			charset, collation, err := schemahist.ServerCharset(ctx, db)
			if err != nil {
				return err
			}
			tables, err := schemahist.ListTables(ctx, db, filt.Table)
			if err != nil {
				return err
			}
			if err := st.WriteSchemaSnapshot(ctx, resume.SchemaSnapshot(state, charset, collation, tables)); err != nil {
				return err
			}
		}
		if err := pub.Commit(ctx, cfg.ID, b); err != nil {
			return fmt.Errorf("storing the start position: %w", err)
		}
	}
	incCfg.DB = sdb
	sigCh := make(chan signal.Record, 16)
	if signals != nil {
		incCfg.Signals = sigCh
	}
	st.EnableIncremental(incCfg)
	reader, err := binlog.Open(ctx, src.BinlogConfig(binlog.Config{
		Flavor: flavor, ServerID: uint32(cfg.ServerID), HeartbeatPeriod: cfg.HeartbeatInterval, EventBuffer: cfg.EventBuffer, Logger: logger,
	}), start)
	if err != nil {
		return err
	}
	defer reader.Close()
	ready.Store(true)
	if signals == nil {
		return st.Run(ctx, reader)
	}
	// The signal reader lives as long as the stream; if it fails, the
	// stream stops too.
	g, gctx := errgroup.WithContext(ctx)
	sctx, stopSignals := context.WithCancel(gctx)
	g.Go(func() error { return signals.Run(sctx, sigCh) })
	g.Go(func() error {
		defer stopSignals()
		return st.Run(gctx, reader)
	})
	return g.Wait()
}

func ptr(s string) *string { return &s }

// openSnapshotDB opens the pool the snapshot reads rows with: UTC session
// time zone (TIMESTAMP text is read as UTC, like the binlog), the text
// protocol for every query, so values reach the converter as bytes, and
// character_set_results=binary, so that string values arrive in the
// column's own character set, as in the binlog, and the one converter
// (mysqltype) decodes both paths alike.
func openSnapshotDB(src *source.Source) (*sql.DB, error) {
	db, err := src.OpenDB(map[string]string{"time_zone": "'+00:00'", "character_set_results": "binary"}, true)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(2)
	return db, nil
}
