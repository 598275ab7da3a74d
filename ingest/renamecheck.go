package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Renames are followed only through the schema-change topic <prefix> of a
// source's table topics <prefix>.<db>.<table> (ingest/README.md,
// "Renames"). A configuration that consumes the table topics and leaves
// that topic out (the common topics.regex=<prefix>\..* of the Iceberg
// sink) loses the rows a renamed table had, without an error: ingest
// checks for it at start and ingest status reports it.

// renameState says whether the renames of one source are followed.
type renameState string

const (
	// renamesFollowed: the schema-change topic exists and is consumed.
	renamesFollowed renameState = "followed"
	// renamesNotFollowed: the schema-change topic exists and is not
	// consumed.
	renamesNotFollowed renameState = "not_followed"
	// renamesNoTopic: the cluster has no schema-change topic of the
	// prefix.
	renamesNoTopic renameState = "no_topic"
	// renamesUnknown: the topic exists, but whether ingest consumes it
	// cannot be told (ingest status run without ingest's topics or
	// topic-regex).
	renamesUnknown renameState = "unknown"
)

// renameSource is one source prefix and whether its renames are followed.
type renameSource struct {
	Prefix string      `json:"prefix"`
	Topic  string      `json:"schema_topic"`
	State  renameState `json:"state"`
}

// describe is the state as one line of text (ingest status).
func (s renameSource) describe() string {
	switch s.State {
	case renamesFollowed:
		return fmt.Sprintf("renames: followed (schema-change topic %s consumed)", s.Topic)
	case renamesNotFollowed:
		return fmt.Sprintf("renames: NOT followed: schema-change topic %s exists but is not in topics/topic-regex", s.Topic)
	case renamesNoTopic:
		return fmt.Sprintf("renames: not followed: no schema-change topic %s on the cluster", s.Topic)
	default:
		return fmt.Sprintf("renames: unknown: schema-change topic %s exists; give ingest status ingest's topics or topic-regex to tell whether it is consumed", s.Topic)
	}
}

// prefixCandidates are the prefixes P under which topic reads as
// P.<db>.<table>: its first name for a topic of three names, each of its
// first names up to the last two when names hold dots (which of them is the
// prefix cannot be told from the name alone). None for a topic of fewer
// than three names.
func prefixCandidates(topic string) []string {
	parts := strings.Split(topic, ".")
	var out []string
	for k := 1; k <= len(parts)-2; k++ {
		out = append(out, strings.Join(parts[:k], "."))
	}
	return out
}

// renameSources says, for every source prefix of tableTopics, whether its
// renames are followed: exists reports whether a topic is on the cluster,
// consumed whether ingest consumes it (nil: unknown). Of the candidate
// prefixes of a topic (prefixCandidates) those naming an existing topic
// count; when none does, the first one is reported as having no topic.
// Sorted by prefix.
func renameSources(tableTopics []string, exists func(string) bool, consumed func(string) bool) []renameSource {
	found := map[string]renameSource{}
	for _, topic := range tableTopics {
		cands := prefixCandidates(topic)
		if len(cands) == 0 {
			continue
		}
		hit := false
		for _, p := range cands {
			if !exists(p) {
				continue
			}
			hit = true
			s := renameSource{Prefix: p, Topic: p, State: renamesUnknown}
			if consumed != nil {
				s.State = renamesNotFollowed
				if consumed(p) {
					s.State = renamesFollowed
				}
			}
			found[p] = s
		}
		if p := cands[0]; !hit {
			if _, ok := found[p]; !ok {
				found[p] = renameSource{Prefix: p, Topic: p, State: renamesNoTopic}
			}
		}
	}
	out := make([]renameSource, 0, len(found))
	for _, p := range slices.Sorted(maps.Keys(found)) {
		out = append(out, found[p])
	}
	return out
}

// newRenamesFollowedGauge registers ingest_renames_followed{prefix} on reg: 1 when the
// schema-change topic of a source prefix is consumed, 0 when it is not
// (left out of topics/topic-regex, or not on the cluster).
func newRenamesFollowedGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ingest_renames_followed",
		Help: "1 when ingest consumes the schema-change topic <prefix> of a source whose table topics it consumes (table renames are followed), else 0; set at start.",
	}, []string{"prefix"})
	reg.MustRegister(g)
	return g
}

// checkRenames is the start-up check: it lists the cluster's topics (those
// ingest may describe), and for every source prefix of the table topics cfg
// consumes logs one warning when the prefix's schema-change topic exists
// but cfg does not consume it, naming the topic, what is lost and the
// setting to change, and one info line for each prefix whose renames are
// followed. gauge (may be nil) gets each prefix's state. A regex is checked
// against the topics that exist now only.
func checkRenames(ctx context.Context, cl *kgo.Client, cfg *Config, logger *slog.Logger, gauge *prometheus.GaugeVec) error {
	listed, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing the topics: %w", err)
	}
	var consumed []string
	for _, t := range listed.Names() {
		if cfg.consumes(t) {
			consumed = append(consumed, t)
		}
	}
	for _, t := range cfg.topics() {
		if !listed.Has(t) {
			consumed = append(consumed, t) // not created yet: its prefix still counts
		}
	}
	for _, s := range renameSources(consumed, listed.Has, cfg.consumes) {
		if gauge != nil {
			v := 0.0
			if s.State == renamesFollowed {
				v = 1
			}
			gauge.WithLabelValues(s.Prefix).Set(v)
		}
		switch s.State {
		case renamesFollowed:
			logger.Info("table renames are followed: the schema-change topic is consumed", "topic", s.Topic, "prefix", s.Prefix)
		case renamesNotFollowed:
			logger.Warn(renameWarning(s.Topic, cfg.TopicRegex != ""), "topic", s.Topic, "prefix", s.Prefix)
		case renamesNoTopic, renamesUnknown:
		}
	}
	return nil
}

// renameWarning is the start-up warning for a schema-change topic left out
// of the configuration.
func renameWarning(topic string, regex bool) string {
	setting := fmt.Sprintf("add %s to --topics (INGEST_TOPICS)", topic)
	if regex {
		quoted := strings.ReplaceAll(topic, ".", `\.`)
		setting = fmt.Sprintf(`widen --topic-regex (INGEST_TOPIC_REGEX) to match %s, e.g. '%s(\..*)?'`, topic, quoted)
	}
	return fmt.Sprintf("table renames are NOT followed: the schema-change topic %s exists but is not consumed; "+
		"after RENAME TABLE a TO b, b's lake table keeps only the rows written after the rename (a's rows stay in a's lake table), "+
		"and column renames are not followed either; to follow table renames, %s", topic, setting)
}

// warnUnfollowedRenames runs checkRenames once Kafka answers, with a client
// of its own; the check is advice, so a failure is logged and ingest
// starts anyway.
func warnUnfollowedRenames(ctx context.Context, cfg *Config, logger *slog.Logger, gauge *prometheus.GaugeVec) {
	cl, _, err := cfg.kafkaClient(ctx, "binlake-ingest")
	if err == nil {
		defer cl.Close()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err = checkRenames(cctx, cl, cfg, logger, gauge)
	}
	if err != nil && ctx.Err() == nil {
		logger.Warn("could not check whether table renames are followed (the schema-change topics)", "error", err.Error())
	}
}
