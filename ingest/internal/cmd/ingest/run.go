// Package ingest is ingest itself, the command `ingest` without a subcommand:
// it consumes Debezium change events from Kafka and upserts them, exactly
// once, into Iceberg tables (package pipeline), with the metrics, health
// and readiness endpoints, start-up retries and the in-process schedules
// (key-index pruning, table maintenance). Config is ingest's settings,
// which ingest status and ingest replay take too.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/cmd/maintain"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/deadletter"
	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/gluereg"
	"github.com/binlake/binlake/ingest/internal/keyindex"
	"github.com/binlake/binlake/ingest/internal/lake"
	"github.com/binlake/binlake/ingest/internal/pipeline"
	"github.com/binlake/binlake/ingest/internal/pprofsrv"
	"github.com/binlake/binlake/ingest/internal/renamecheck"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/ingest/internal/startup"
	"github.com/binlake/binlake/ingest/internal/statedir"
)

// Run is ingest itself: it serves the metrics and health endpoints, opens
// the catalog and Kafka (waiting for them up to startup-timeout), and runs
// the pipeline (and the schedules of index pruning and maintenance) until
// ctx is done, which is a clean stop (nil), or the pipeline fails. cfg must
// be valid (Validate).
func Run(ctx context.Context, cfg Config, logger *slog.Logger) error {
	// pipe is the pipeline once it exists; ingest_ready reads it.
	var pipe atomic.Pointer[pipeline.Pipeline]
	reg := prometheus.NewRegistry()
	ready := func() bool { p := pipe.Load(); return p != nil && p.Ready() }
	metrics := registerMetrics(reg, ready)
	renamesGauge := renamecheck.NewFollowedGauge(reg)

	// The ops server answers from the start: /healthz while start-up
	// waits for a service, /readyz once the pipeline consumes.
	if cfg.MetricsAddr != "" && cfg.MetricsAddr != "off" {
		srv, err := serveOps(cfg.MetricsAddr, reg, ready, cfg.Pprof, logger)
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	if cfg.PprofAddr != "" {
		srv, err := pprofsrv.Serve(cfg.PprofAddr)
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}

	var cat catalog.Catalog
	err := startup.Retry(ctx, logger, "the Iceberg catalog", cfg.StartupTimeout, lake.Refusal, func(ctx context.Context) (err error) {
		cat, err = lake.Open(ctx, cfg.CatalogConfig, logger)
		return err
	})
	if err != nil {
		return err
	}
	defer lake.Close(cat, logger)
	indexBase, err := cfg.IndexBase()
	if err != nil {
		return err
	}
	pcfg, dec, release, err := PipelineConfig(ctx, cfg, indexBase, logger)
	if err != nil {
		return err
	}
	defer release()
	commitCfg := pcfg.Commit
	pcfg.Metrics = metrics
	if cfg.ErrorsTolerance == "dlq" {
		dl, err := deadletter.New(deadletter.Config{Topic: cfg.DLQTopic, Group: cfg.GroupID, Logger: logger},
			append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers()...)}, pcfg.ClientOpts...)...)
		if err != nil {
			return fmt.Errorf("kafka %s: %w", cfg.KafkaBrokers, err)
		}
		defer dl.Close()
		err = startup.Retry(ctx, logger, "Kafka", cfg.StartupTimeout, cfg.Kafka.Refusal, func(ctx context.Context) error {
			lctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			return dl.Load(lctx)
		})
		if err != nil {
			if err, refused := cfg.Kafka.Explain(err); refused {
				return fmt.Errorf("kafka %s: %w", cfg.KafkaBrokers, err)
			}
			return fmt.Errorf("kafka %s: %w (check dlq-topic and the ACLs on it)", cfg.KafkaBrokers, err)
		}
		pcfg.DeadLetter = dl
	}
	p, err := pipeline.New(pcfg, cat, dec)
	if err != nil {
		return fmt.Errorf("kafka %s: %w", cfg.KafkaBrokers, err)
	}
	pipe.Store(p)
	err = startup.Retry(ctx, logger, "Kafka", cfg.StartupTimeout, cfg.Kafka.Refusal, func(ctx context.Context) error {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return p.Ping(pctx)
	})
	if err != nil {
		if err, refused := cfg.Kafka.Explain(err); refused {
			return fmt.Errorf("kafka %s: %w", cfg.KafkaBrokers, err)
		}
		return fmt.Errorf("kafka %s: %w (check kafka-brokers)", cfg.KafkaBrokers, err)
	}
	warnUnfollowedRenames(ctx, &cfg, logger, renamesGauge)

	g, gctx := errgroup.WithContext(ctx)
	if idx := commitCfg.Index; idx != nil {
		g.Go(func() error { pruneIndexes(gctx, cat, idx, logger); return nil })
	}
	if cfg.MaintainInterval > 0 {
		logger.Info("table maintenance scheduled", append([]any{"maintain_interval", cfg.MaintainInterval}, cfg.Maintain.Redacted()...)...)
		g.Go(func() error {
			return maintain.Every(gctx, cat, cfg.Maintain, cfg.MaintainInterval, p.HoldTable, logger)
		})
	}
	g.Go(func() error {
		err := p.Run(gctx)
		if err == nil && ctx.Err() == nil {
			return errors.New("pipeline stopped")
		}
		return err
	})
	err = g.Wait()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// PipelineConfig builds the pipeline's configuration from ingest's
// settings (ingest and ingest replay share it): the decoder with its
// schema registry, the Kafka client options, and in a positional delete
// mode the key index in indexBase (see lake.CatalogConfig.IndexBase; "": a
// temporary directory), which release closes (and removes when it is a
// temporary one).
func PipelineConfig(ctx context.Context, cfg Config, indexBase string, logger *slog.Logger) (pcfg pipeline.Config, dec *decode.Decoder, release func(), err error) {
	release = func() {}
	var registry decode.Registry
	if cfg.RegistryURL != "" {
		opts, err := cfg.Registry.ClientOpts()
		if err != nil {
			return pcfg, nil, release, err
		}
		cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(cfg.RegistryURL)}, opts...)...)
		if err != nil {
			return pcfg, nil, release, fmt.Errorf("schema registry %s: %w", lake.RedactURL(cfg.RegistryURL), err)
		}
		registry = cl
	}
	var decOpts []decode.Option
	if cfg.Glue.Enabled() {
		cl, err := gluereg.New(ctx, cfg.Glue)
		if err != nil {
			return pcfg, nil, release, err
		}
		decOpts = append(decOpts, decode.WithGlue(cl))
	}
	kafkaOpts, err := cfg.Kafka.ClientOpts(ctx, "binlake-ingest")
	if err != nil {
		return pcfg, nil, release, err
	}
	partitions, err := pipeline.ParsePartitionSpecs(cfg.PartitionSpec)
	if err != nil {
		return pcfg, nil, release, err
	}
	nameMap, err := schemamap.ParseNameMap(cfg.TableNameMap)
	if err != nil {
		return pcfg, nil, release, fmt.Errorf("table-name-map: %w", err)
	}
	commitCfg := commit.Config{MaxAttempts: cfg.CommitAttempts, Logger: logger}
	deleteModes, err := pipeline.ParseDeleteModes(cfg.DeleteMode)
	if err != nil {
		return pcfg, nil, release, err
	}
	if deleteModes.Positional() {
		legacy := ""
		if indexBase != "" {
			legacy = cfg.LegacyIndexDir()
		}
		idx, releaseIdx, err := statedir.OpenIndex(indexBase, legacy, int64(cfg.IndexCacheBytes), logger)
		if err != nil {
			return pcfg, nil, release, err
		}
		release = releaseIdx
		commitCfg.Index = idx
		if commitCfg.Rewrite, err = cfg.rewriteConfig(); err != nil {
			return pcfg, nil, release, err
		}
	}
	return pipeline.Config{
		Partitions:          partitions,
		KeylessAppend:       cfg.KeylessTables == "append",
		LowerCaseColumns:    cfg.lowerCaseColumns(),
		FormatVersion:       cfg.TableFormatVersion,
		BackfillDefaults:    cfg.BackfillDefaults,
		Brokers:             cfg.Brokers(),
		Group:               cfg.GroupID,
		SessionTimeout:      cfg.GroupSessionTimeout,
		Topics:              cfg.TopicList(),
		TopicRegex:          cfg.TopicRegex,
		Namer:               schemamap.Namer{NamespaceWithPrefix: cfg.NamespaceWithPrefix, MergeSources: cfg.MergeSources, Map: nameMap},
		Limits:              batch.Limits{MaxRows: cfg.FlushRows, MaxBytes: int64(cfg.FlushBytes), MaxAge: cfg.FlushInterval},
		MaxBufferedBytes:    int64(cfg.MaxBufferedBytes),
		QueueRecords:        cfg.QueueRecords,
		FetchPartitionBytes: int32(cfg.FetchPartitionBytes),
		Commit:              commitCfg,
		DeleteModes:         deleteModes,
		ShutdownTimeout:     cfg.ShutdownTimeout,
		Logger:              logger,
		ClientOpts:          kafkaOpts,
	}, decode.New(registry, decOpts...), release, nil
}

// pruneInterval is how often ingest removes the key indexes of tables that
// are gone (at start, then at this interval).
const pruneInterval = time.Hour

// pruneIndexes removes, at start and then every pruneInterval until ctx
// ends, the key indexes of tables dropped from the catalog (or dropped and
// created again), so that a kept state-dir does not grow with every table
// ever ingested. Failures are logged: the index is a cache.
func pruneIndexes(ctx context.Context, cat catalog.Catalog, idx *keyindex.Store, logger *slog.Logger) {
	current := tableUUIDs(cat)
	t := time.NewTicker(pruneInterval)
	defer t.Stop()
	for {
		if n, err := idx.Prune(ctx, current); err != nil && ctx.Err() == nil {
			logger.Warn("removing the key indexes of dropped tables", "error", err.Error())
		} else if n > 0 {
			logger.Info("removed the key indexes of dropped tables", "tables", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tableUUIDs answers keyindex.Store.Prune from the catalog: the UUID of the
// table of a name, or found false when the catalog has no such table.
func tableUUIDs(cat catalog.Catalog) func(ctx context.Context, name []string) (string, bool, error) {
	return func(ctx context.Context, name []string) (string, bool, error) {
		tbl, err := cat.LoadTable(ctx, name)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		return tbl.Metadata().TableUUID().String(), true, nil
	}
}

// registerMetrics registers every metric ingest exports on reg: the Go and
// process collectors, the pipeline's metrics, and ingest_ready (1 while
// ready reports true, as /readyz answers 200).
func registerMetrics(reg prometheus.Registerer, ready func() bool) *pipeline.Metrics {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ingest_ready", Help: "1 while ingest has joined its consumer group and polls (/readyz answers 200), else 0.",
		}, func() float64 {
			if ready() {
				return 1
			}
			return 0
		}))
	return pipeline.NewMetrics(reg)
}

func serveOps(addr string, reg *prometheus.Registry, ready func() bool, profiles bool, logger *slog.Logger) (*http.Server, error) {
	mux := http.NewServeMux()
	if profiles {
		// Registered on this mux only, never on http.DefaultServeMux.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "not consuming", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on metrics-addr %s: %w", addr, err)
	}
	logger.Info("serving metrics", "addr", ln.Addr().String())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends with Shutdown, owned by ingest's errgroup
	return srv, nil
}

// warnUnfollowedRenames runs renamecheck.Check once Kafka answers, with a client
// of its own; the check is advice, so a failure is logged and ingest
// starts anyway.
func warnUnfollowedRenames(ctx context.Context, cfg *Config, logger *slog.Logger, gauge *prometheus.GaugeVec) {
	cl, _, err := cfg.KafkaClient(ctx, "binlake-ingest")
	if err == nil {
		defer cl.Close()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err = renamecheck.Check(cctx, cl, cfg.Consumed(), logger, gauge)
	}
	if err != nil && ctx.Err() == nil {
		logger.Warn("could not check whether table renames are followed (the schema-change topics)", "error", err.Error())
	}
}
