// Package snapshot is the `capture snapshot` command: it asks a running
// capture for an ad-hoc (incremental) snapshot, or stops, pauses or resumes
// one, by writing a Debezium signal to the capture's signal topic, and
// returns. It takes capture's settings (Kafka, topic prefix, signal
// settings), so that it can run with the same environment as capture.
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/capture/internal/config"
	"github.com/binlake/binlake/capture/internal/signal"
)

// Actions maps `capture snapshot --action` to Debezium signal types.
var Actions = map[string]string{
	"execute": signal.TypeExecuteSnapshot,
	"stop":    signal.TypeStopSnapshot,
	"pause":   signal.TypePauseSnapshot,
	"resume":  signal.TypeResumeSnapshot,
}

// Config is one signal to send.
type Config struct {
	// Capture is the running capture's configuration, validated
	// (config.Config.Validate): its Kafka settings, topic prefix and
	// signal topic.
	Capture config.Config
	// Tables are the tables to snapshot, db.table (Debezium
	// data-collections: regexes matching whole names); blanks are
	// dropped. Required by execute; stop with none stops everything.
	Tables []string
	// Action is execute, stop, pause or resume.
	Action string
}

// Validate checks that the capture reads signals from Kafka and that the
// action and its tables make a signal, and drops blank tables.
func (c *Config) Validate() error {
	kafka, _ := c.Capture.SignalChannels()
	if !kafka {
		return errors.New("capture snapshot: no signal topic is configured; enable the kafka signal channel as for the running capture: " +
			"CAPTURE_SIGNAL_ENABLED_CHANNELS=kafka (and CAPTURE_SIGNAL_KAFKA_TOPIC, default <prefix>-signal)")
	}
	typ, ok := Actions[c.Action]
	if !ok {
		return fmt.Errorf("capture snapshot: --action %q: want execute, stop, pause or resume", c.Action)
	}
	var list []string
	for _, t := range c.Tables {
		if t = strings.TrimSpace(t); t != "" {
			list = append(list, t)
		}
	}
	c.Tables = list
	if typ == signal.TypeExecuteSnapshot && len(list) == 0 {
		return errors.New("capture snapshot: --tables is required (comma-separated db.table names)")
	}
	return nil
}

// Result is the signal written.
type Result struct {
	Type, ID, Topic, TopicPrefix string
	Offset                       int64
	Tables                       []string
}

// String is the line capture snapshot prints.
func (r Result) String() string {
	s := fmt.Sprintf("signal %s (id %s) written to %s at offset %d for the capture with topic prefix %s",
		r.Type, r.ID, r.Topic, r.Offset, r.TopicPrefix)
	if len(r.Tables) > 0 {
		s += "; tables " + strings.Join(r.Tables, ",")
	}
	return s
}

// Send validates cfg and writes its signal to the signal topic, creating
// the topic when it does not exist yet.
func Send(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	c := &cfg.Capture
	typ := Actions[cfg.Action]
	id := uuid.NewString()
	value, err := signal.Value(id, typ, cfg.Tables)
	if err != nil {
		return Result{}, err
	}
	// The signal must be one the running capture accepts.
	if _, err := signal.Parse(c.TopicPrefix, []byte(c.TopicPrefix), value); err != nil {
		return Result{}, fmt.Errorf("capture snapshot: %w", err)
	}

	// The Kafka security settings (TLS, SASL) are capture's.
	opts, err := c.Kafka.ClientOpts(ctx, "binlake-capture")
	if err != nil {
		return Result{}, err
	}
	cl, err := kgo.NewClient(append(opts,
		kgo.SeedBrokers(strings.Split(c.KafkaBrokers, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)...)
	if err != nil {
		return Result{}, fmt.Errorf("creating kafka client: %w", err)
	}
	defer cl.Close()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(sctx, 1, int16(c.TopicReplication), signal.TopicConfigs(), c.SignalKafkaTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		err, _ = c.Kafka.Explain(err)
		return Result{}, fmt.Errorf("creating signal topic %s: %w", c.SignalKafkaTopic, err)
	}
	off, err := signal.Send(sctx, cl, c.SignalKafkaTopic, c.TopicPrefix, value)
	if err != nil {
		err, _ = c.Kafka.Explain(err)
		return Result{}, err
	}
	return Result{Type: typ, ID: id, Topic: c.SignalKafkaTopic, TopicPrefix: c.TopicPrefix, Offset: off, Tables: cfg.Tables}, nil
}
