package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/capture/internal/config"
	"github.com/binlake/binlake/capture/internal/envflag"
	"github.com/binlake/binlake/capture/internal/signal"
)

// snapshotActions maps `capture snapshot --action` to Debezium signal types.
var snapshotActions = map[string]string{
	"execute": signal.TypeExecuteSnapshot,
	"stop":    signal.TypeStopSnapshot,
	"pause":   signal.TypePauseSnapshot,
	"resume":  signal.TypeResumeSnapshot,
}

// runSnapshotCommand is `capture snapshot`: it writes a signal to the
// signal topic, for the running capture with the same settings to act on,
// and exits. It takes capture's flags and environment (Kafka, topic prefix,
// signal settings), so it can run with the same environment as capture.
func runSnapshotCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("capture snapshot", flag.ContinueOnError)
	fs.SetOutput(stdout)
	ef := envflag.New(fs, "CAPTURE_", getenv)
	var cfg config.Config
	cfg.Bind(ef)
	var tables, action string
	// The command's own settings: CAPTURE_SNAPSHOT_TABLES, CAPTURE_SNAPSHOT_ACTION.
	cmdFlags := envflag.New(fs, "CAPTURE_SNAPSHOT_", getenv)
	cmdFlags.String(&tables, "tables", "", "comma-separated tables to snapshot, db.table (Debezium data-collections: regexes matching whole names)")
	cmdFlags.String(&action, "action", "execute", "execute (execute-snapshot), stop (stop-snapshot of --tables, or of everything when empty), pause or resume")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: capture snapshot --tables db.t1,db.t2 [flags]\n\n"+
			"Asks the running capture (same topic prefix and signal settings) for an incremental snapshot of tables,\n"+
			"by writing a Debezium execute-snapshot signal to its signal topic, and exits.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("capture snapshot: unexpected arguments %q (tables go in --tables)", fs.Args())
	}
	if err := errors.Join(ef.Err(), cmdFlags.Err()); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	kafka, _ := cfg.SignalChannels()
	if !kafka {
		return errors.New("capture snapshot: no signal topic is configured; enable the kafka signal channel as for the running capture: " +
			"CAPTURE_SIGNAL_ENABLED_CHANNELS=kafka (and CAPTURE_SIGNAL_KAFKA_TOPIC, default <prefix>-signal)")
	}
	typ, ok := snapshotActions[action]
	if !ok {
		return fmt.Errorf("capture snapshot: --action %q: want execute, stop, pause or resume", action)
	}
	var list []string
	for _, t := range strings.Split(tables, ",") {
		if t = strings.TrimSpace(t); t != "" {
			list = append(list, t)
		}
	}
	if typ == signal.TypeExecuteSnapshot && len(list) == 0 {
		return errors.New("capture snapshot: --tables is required (comma-separated db.table names)")
	}
	id := uuid.NewString()
	value, err := signal.Value(id, typ, list)
	if err != nil {
		return err
	}
	// The signal must be one the running capture accepts.
	if _, err := signal.Parse(cfg.TopicPrefix, []byte(cfg.TopicPrefix), value); err != nil {
		return fmt.Errorf("capture snapshot: %w", err)
	}

	// The Kafka security settings (TLS, SASL) are capture's.
	opts, err := cfg.Kafka.ClientOpts(ctx, "binlake-capture")
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts,
		kgo.SeedBrokers(strings.Split(cfg.KafkaBrokers, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)...)
	if err != nil {
		return fmt.Errorf("creating kafka client: %w", err)
	}
	defer cl.Close()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(sctx, 1, int16(cfg.TopicReplication), signal.TopicConfigs(), cfg.SignalKafkaTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		err, _ = cfg.Kafka.Explain(err)
		return fmt.Errorf("creating signal topic %s: %w", cfg.SignalKafkaTopic, err)
	}
	off, err := signal.Send(sctx, cl, cfg.SignalKafkaTopic, cfg.TopicPrefix, value)
	if err != nil {
		err, _ = cfg.Kafka.Explain(err)
		return err
	}
	fmt.Fprintf(stdout, "signal %s (id %s) written to %s at offset %d for the capture with topic prefix %s",
		typ, id, cfg.SignalKafkaTopic, off, cfg.TopicPrefix)
	if len(list) > 0 {
		fmt.Fprintf(stdout, "; tables %s", strings.Join(list, ","))
	}
	fmt.Fprintln(stdout)
	return nil
}
