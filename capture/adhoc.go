package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/resume"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/capture/internal/signal"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/capture/internal/stream"
)

// Ad-hoc snapshots: the signal channel and the tables the include lists
// newly capture (capture/README.md, "Snapshots").

// signalChannels parses signal-enabled-channels (Debezium's
// signal.enabled.channels): binlake reads signals from Kafka only.
func (c *Config) signalChannels() (kafka bool, err error) {
	for _, ch := range strings.Split(c.SignalEnabledChannels, ",") {
		switch ch = strings.TrimSpace(ch); ch {
		case "":
		case "kafka":
			kafka = true
		case "source", "jmx", "file", "in-process":
			return false, fmt.Errorf("signal-enabled-channels: the %s channel is not supported; binlake reads signals from Kafka only (kafka)", ch)
		default:
			return false, fmt.Errorf("signal-enabled-channels %q: want kafka (or nothing)", ch)
		}
	}
	return kafka, nil
}

// validateSignals checks the signal settings and fills the topic's default
// (Debezium's <topic.prefix>-signal).
func (c *Config) validateSignals() error {
	kafka, err := c.signalChannels()
	if err != nil {
		return err
	}
	if !kafka {
		if c.SignalKafkaTopic != "" {
			return fmt.Errorf("signal-kafka-topic is set but signal-enabled-channels does not include kafka; set CAPTURE_SIGNAL_ENABLED_CHANNELS=kafka")
		}
		return nil
	}
	if c.SignalKafkaTopic == "" && c.TopicPrefix != "" {
		c.SignalKafkaTopic = c.TopicPrefix + "-signal"
	}
	return nil
}

// tableLists are the filter lists stored with the position.
func (c *Config) tableLists() *stream.TableLists {
	return &stream.TableLists{
		DatabaseInclude: c.Filters.DatabaseInclude, DatabaseExclude: c.Filters.DatabaseExclude,
		TableInclude: c.Filters.TableInclude, TableExclude: c.Filters.TableExclude,
	}
}

// incrementalSetup prepares ad-hoc snapshots for stream1: the tables to
// snapshot because the lists were widened (resume.NewTables), and the
// signal reader when the kafka channel is enabled (nil otherwise),
// connecting with kafkaOpts (TLS, SASL) as the publisher does. It sets
// state's signal offset and lists when they are not stored yet, and then
// reports store: the state must be stored before streaming starts, so that
// a signal sent from now on is read after a restart.
func incrementalSetup(ctx context.Context, cfg Config, state *stream.State, stored bool, src resume.Source,
	history map[string]schemahist.Definition, pub *publish.Publisher, kafkaOpts []kgo.Opt, logger *slog.Logger,
) (ic stream.IncrementalConfig, rd *signal.Reader, store bool, err error) {
	ic = stream.IncrementalConfig{
		ChunkRows: cfg.SnapshotChunkRows,
		ReadAhead: cfg.SnapshotReadAhead,
		Tables:    func(ctx context.Context) ([]snapshot.TableID, error) { return src.Tables(ctx) },
		Lists:     cfg.tableLists(),
	}
	defer func() { ic.Resume = state.IncrementalState }()
	if store, err = resume.NewTables(ctx, snapshot.Mode(cfg.SnapshotMode), state, stored, ic.Lists, history, src, logger); err != nil {
		return ic, nil, false, err
	}
	kafka, err := cfg.signalChannels()
	if err != nil || !kafka {
		return ic, nil, store, err
	}
	if err := pub.EnsureTopic(ctx, cfg.SignalKafkaTopic, signal.TopicConfigs(), 1); err != nil {
		return ic, nil, false, err
	}
	from := int64(-1)
	if state.SignalOffset != nil {
		from = *state.SignalOffset + 1
	}
	rd, at, err := signal.NewReader(ctx, strings.Split(cfg.KafkaBrokers, ","), cfg.SignalKafkaTopic, from, kafkaOpts...)
	if err != nil {
		err, _ = cfg.Kafka.explain(err)
		return ic, nil, false, err
	}
	if state.SignalOffset == nil {
		last := at - 1
		state.SignalOffset, store = &last, true
	}
	logger.Info("reading signals", "topic", cfg.SignalKafkaTopic, "offset", at)
	return ic, rd, store, nil
}
