package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/deadletter"
	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/keyindex"
	"github.com/binlake/binlake/ingest/internal/pipeline"
	"github.com/binlake/binlake/ingest/internal/schemamap"
)

// errHelp reports that --help was answered; main exits 0 on it.
var errHelp = flag.ErrHelp

// bindFlags is the flag set of ingest: every setting of Config (each with
// its environment variable) and --check-config. The configuration table of
// ingest/README.md is rendered from it (TestConfigurationTable).
func bindFlags(getenv func(string) string) (*envFlags, *Config, *bool) {
	ef := &envFlags{fs: flag.NewFlagSet("ingest", flag.ContinueOnError), prefix: "INGEST_", getenv: getenv}
	cfg := &Config{}
	cfg.bind(ef)
	checkOnly := ef.fs.Bool("check-config", false, "validate the configuration and exit")
	return ef, cfg, checkOnly
}

// run is the whole program: it parses the settings and wires the components
// together. main only provides the process environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 && args[1] == "status" {
		return runStatus(ctx, args[1:], getenv, stdout)
	}
	if len(args) > 1 && args[1] == "replay" {
		return runReplay(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 1 && args[1] == "maintain" {
		return runMaintain(ctx, args[1:], getenv, stdout, stderr)
	}
	ef, cfg, checkOnly := bindFlags(getenv)
	fs := ef.fs
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: ingest [flags]\n       ingest maintain [flags]  (table maintenance; see ingest maintain -help)\n       ingest status [flags]    (how far each table has got; see ingest status -help)\n       ingest replay [flags]    (rebuild tables from an earlier snapshot; see ingest replay -help)\n\n"+
			"ingest upserts Debezium change events from Kafka into Apache Iceberg tables, exactly once.\n"+
			"Every flag can also be set through the environment variable shown; secrets only through the environment:\n"+
			"INGEST_CATALOG_CREDENTIAL, INGEST_CATALOG_TOKEN (or <NAME>_FILE), and AWS_* for S3 and SigV4.\n\n")
		fs.PrintDefaults()
	}
	if err := ef.parse(args[1:]); err != nil {
		return err
	}
	if cfg.S3Region == "" {
		cfg.S3Region = getenv("AWS_REGION")
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	if *checkOnly {
		fmt.Fprintln(stdout, "configuration ok")
		return nil
	}
	logger := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	logger.Info("starting ingest", cfg.redacted()...)
	if err := ingest(ctx, *cfg, logger); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// errCatalogRefused is a catalog answering 401 or 403 while ingest
// connects: the credentials (or, with SigV4, the signing setup or the
// clock) are wrong, and retrying will not help.
var errCatalogRefused = errors.New("the Iceberg catalog refused ingest's credentials")

// openCatalog connects to the REST catalog: plain (local fixture, Polaris,
// Nessie…) or SigV4-signed (S3 Tables, warehouse = table bucket ARN); or,
// without catalog-uri, opens the embedded catalog in the state directory
// and logs that it does. closeCatalog releases it. With SigV4 the signing
// credentials come from the AWS default chain; the data files use the same
// chain unless INGEST_S3_ACCESS_KEY_ID is set.
func openCatalog(ctx context.Context, cfg CatalogConfig, logger *slog.Logger) (catalog.Catalog, error) {
	if cfg.embedded() {
		return openEmbedded(ctx, cfg, logger)
	}
	props := iceberg.Properties{}
	if cfg.S3Endpoint != "" {
		props[icebergio.S3EndpointURL] = cfg.S3Endpoint
	}
	if cfg.S3Region != "" {
		props[icebergio.S3Region] = cfg.S3Region
	}
	if cfg.S3AccessKeyID != "" {
		props[icebergio.S3AccessKeyID] = cfg.S3AccessKeyID
		props[icebergio.S3SecretAccessKey] = cfg.S3SecretAccessKey
	}
	opts := []rest.Option{rest.WithAdditionalProps(props)}
	if cfg.Warehouse != "" {
		opts = append(opts, rest.WithWarehouseLocation(cfg.Warehouse))
	}
	var awsCfg aws.Config
	if cfg.SigV4 {
		var err error
		awsCfg, err = awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.S3Region))
		if err != nil {
			return nil, fmt.Errorf("loading the AWS configuration for SigV4: %w (check AWS_PROFILE and the shared config files)", err)
		}
		opts = append(opts, rest.WithAwsConfig(awsCfg), rest.WithSigV4RegionSvc(cfg.S3Region, cfg.SigV4Service))
	}
	if cfg.CatalogCredential != "" {
		opts = append(opts, rest.WithCredential(cfg.CatalogCredential))
	}
	if cfg.CatalogToken != "" {
		opts = append(opts, rest.WithOAuthToken(cfg.CatalogToken))
	}
	cat, err := rest.NewCatalog(ctx, cfg.CatalogName, cfg.CatalogURI, opts...)
	if err != nil {
		uri := redactURL(cfg.CatalogURI)
		if errors.Is(err, rest.ErrForbidden) || errors.Is(err, rest.ErrUnauthorized) {
			if cfg.SigV4 {
				return nil, fmt.Errorf("%w: connecting to %s: %w (%s)", errCatalogRefused, uri, err, sigV4Hint(ctx, awsCfg, cfg))
			}
			return nil, fmt.Errorf("%w: connecting to %s: %w (check INGEST_CATALOG_CREDENTIAL or INGEST_CATALOG_TOKEN)", errCatalogRefused, uri, err)
		}
		return nil, fmt.Errorf("connecting to the Iceberg catalog %s: %w (check catalog-uri, warehouse and the catalog credentials)", uri, err)
	}
	return cat, nil
}

// catalogRefusal reports whether an error opening the catalog is final:
// an answer refusing ingest (credentials, a 4xx) or a setting that cannot
// work, where a catalog not answering or answering 5xx may be one
// restarting.
func catalogRefusal(err error) bool {
	if errors.Is(err, errCatalogRefused) {
		return true
	}
	if errors.Is(err, rest.ErrServiceUnavailable) || errors.Is(err, rest.ErrServerError) {
		return false
	}
	if errors.Is(err, rest.ErrRESTError) {
		return true
	}
	return !unreachable(err)
}

// sigV4Hint names what to check when a SigV4-signed catalog refuses
// ingest: where the credentials came from (never the credentials
// themselves), the signing name and region, and the clock.
func sigV4Hint(ctx context.Context, awsCfg aws.Config, cfg CatalogConfig) string {
	source := "the AWS default credential chain"
	if awsCfg.Credentials != nil {
		if creds, err := awsCfg.Credentials.Retrieve(ctx); err == nil {
			source = credentialSource(creds.Source)
		}
	}
	return fmt.Sprintf("the request was signed with credentials from %s for sigv4-service %s in s3-region %s; "+
		"check those credentials and that this host's clock is within 5 minutes of AWS's", source, cfg.SigV4Service, cfg.S3Region)
}

// credentialSource names, for an operator, the setting behind an
// aws.Credentials Source.
func credentialSource(source string) string {
	switch {
	case strings.HasPrefix(source, "EnvConfigCredentials"):
		return "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)"
	case strings.HasPrefix(source, "SharedConfigCredentials"):
		return "the shared credentials file (" + strings.TrimSpace(strings.TrimPrefix(source, "SharedConfigCredentials:")) + "; profile AWS_PROFILE, default \"default\")"
	case source == "":
		return "the AWS default credential chain"
	default:
		return "the AWS default credential chain (" + source + ": AWS_PROFILE, web identity, container or instance role)"
	}
}

func ingest(ctx context.Context, cfg Config, logger *slog.Logger) error {
	// pipe is the pipeline once it exists; ingest_ready reads it.
	var pipe atomic.Pointer[pipeline.Pipeline]
	reg := prometheus.NewRegistry()
	ready := func() bool { p := pipe.Load(); return p != nil && p.Ready() }
	metrics := registerMetrics(reg, ready)
	renamesGauge := newRenamesFollowedGauge(reg)

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
		srv, err := servePprof(cfg.PprofAddr)
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
	err := startupRetry(ctx, logger, "the Iceberg catalog", cfg.StartupTimeout, catalogRefusal, func(ctx context.Context) (err error) {
		cat, err = openCatalog(ctx, cfg.CatalogConfig, logger)
		return err
	})
	if err != nil {
		return err
	}
	defer closeCatalog(cat, logger)
	indexBase, err := cfg.indexBase()
	if err != nil {
		return err
	}
	pcfg, dec, release, err := pipelineConfig(ctx, cfg, indexBase, logger)
	if err != nil {
		return err
	}
	defer release()
	commitCfg := pcfg.Commit
	pcfg.Metrics = metrics
	if cfg.ErrorsTolerance == "dlq" {
		dl, err := deadletter.New(deadletter.Config{Topic: cfg.DLQTopic, Group: cfg.GroupID, Logger: logger},
			append([]kgo.Opt{kgo.SeedBrokers(cfg.brokers()...)}, pcfg.ClientOpts...)...)
		if err != nil {
			return fmt.Errorf("kafka %s: %w", cfg.KafkaBrokers, err)
		}
		defer dl.Close()
		err = startupRetry(ctx, logger, "Kafka", cfg.StartupTimeout, cfg.Kafka.refusal, func(ctx context.Context) error {
			lctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			return dl.Load(lctx)
		})
		if err != nil {
			if err, refused := cfg.Kafka.explain(err); refused {
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
	err = startupRetry(ctx, logger, "Kafka", cfg.StartupTimeout, cfg.Kafka.refusal, func(ctx context.Context) error {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return p.Ping(pctx)
	})
	if err != nil {
		if err, refused := cfg.Kafka.explain(err); refused {
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
		logger.Info("table maintenance scheduled", append([]any{"maintain_interval", cfg.MaintainInterval}, cfg.Maintain.redacted()...)...)
		g.Go(func() error { return maintainEvery(gctx, cat, cfg.Maintain, cfg.MaintainInterval, p.HoldTable, logger) })
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

// pipelineConfig builds the pipeline's configuration from ingest's
// settings (ingest and ingest replay share it): the decoder with its
// schema registry, the Kafka client options, and in a positional delete
// mode the key index in indexBase (see CatalogConfig.indexBase; "": a
// temporary directory), which release closes (and removes when it is a
// temporary one).
func pipelineConfig(ctx context.Context, cfg Config, indexBase string, logger *slog.Logger) (pcfg pipeline.Config, dec *decode.Decoder, release func(), err error) {
	release = func() {}
	var registry decode.Registry
	if cfg.RegistryURL != "" {
		opts, err := cfg.Registry.clientOpts()
		if err != nil {
			return pcfg, nil, release, err
		}
		cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(cfg.RegistryURL)}, opts...)...)
		if err != nil {
			return pcfg, nil, release, fmt.Errorf("schema registry %s: %w", redactURL(cfg.RegistryURL), err)
		}
		registry = cl
	}
	kafkaOpts, err := cfg.Kafka.clientOpts(ctx, "binlake-ingest")
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
			legacy = cfg.legacyIndexDir()
		}
		idx, releaseIdx, err := openIndex(indexBase, legacy, int64(cfg.IndexCacheBytes), logger)
		if err != nil {
			return pcfg, nil, release, err
		}
		release = releaseIdx
		commitCfg.Index = idx
	}
	return pipeline.Config{
		Partitions:          partitions,
		KeylessAppend:       cfg.KeylessTables == "append",
		LowerCaseColumns:    cfg.lowerCaseColumns(),
		FormatVersion:       cfg.TableFormatVersion,
		BackfillDefaults:    cfg.BackfillDefaults,
		Brokers:             cfg.brokers(),
		Group:               cfg.GroupID,
		SessionTimeout:      cfg.GroupSessionTimeout,
		Topics:              cfg.topics(),
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
	}, decode.New(registry), release, nil
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
