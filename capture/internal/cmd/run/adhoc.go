package run

import (
	"context"
	"log/slog"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/capture/internal/config"
	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/resume"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/capture/internal/signal"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/capture/internal/stream"
)

// Ad-hoc snapshots: the signal channel and the tables the include lists
// newly capture (capture/README.md, "Snapshots").

// tableLists are the filter lists stored with the position.
func tableLists(c *config.Config) *stream.TableLists {
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
func incrementalSetup(ctx context.Context, cfg config.Config, state *stream.State, stored bool, src resume.Source,
	history map[string]schemahist.Definition, pub *publish.Publisher, kafkaOpts []kgo.Opt, logger *slog.Logger,
) (ic stream.IncrementalConfig, rd *signal.Reader, store bool, err error) {
	ic = stream.IncrementalConfig{
		ChunkRows: cfg.SnapshotChunkRows,
		ReadAhead: cfg.SnapshotReadAhead,
		Tables:    func(ctx context.Context) ([]snapshot.TableID, error) { return src.Tables(ctx) },
		Lists:     tableLists(&cfg),
	}
	defer func() { ic.Resume = state.IncrementalState }()
	if store, err = resume.NewTables(ctx, snapshot.Mode(cfg.SnapshotMode), state, stored, ic.Lists, history, src, logger); err != nil {
		return ic, nil, false, err
	}
	kafka, err := cfg.SignalChannels()
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
		err, _ = cfg.Kafka.Explain(err)
		return ic, nil, false, err
	}
	if state.SignalOffset == nil {
		last := at - 1
		state.SignalOffset, store = &last, true
	}
	logger.Info("reading signals", "topic", cfg.SignalKafkaTopic, "offset", at)
	return ic, rd, store, nil
}
