// Package renamecheck tells whether ingest follows the table renames of
// each source: whether the schema-change topic <prefix> of a source's table
// topics <prefix>.<db>.<table> exists and is consumed. ingest checks it at
// start (a warning, and the gauge ingest_renames_followed) and ingest status
// reports it.
package renamecheck

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"

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

// State says whether the renames of one source are followed.
type State string

const (
	// Followed: the schema-change topic exists and is consumed.
	Followed State = "followed"
	// NotFollowed: the schema-change topic exists and is not
	// consumed.
	NotFollowed State = "not_followed"
	// NoTopic: the cluster has no schema-change topic of the
	// prefix.
	NoTopic State = "no_topic"
	// Unknown: the topic exists, but whether ingest consumes it
	// cannot be told (ingest status run without ingest's topics or
	// topic-regex).
	Unknown State = "unknown"
)

// Source is one source prefix and whether its renames are followed.
type Source struct {
	Prefix string `json:"prefix"`
	Topic  string `json:"schema_topic"`
	State  State  `json:"state"`
}

// Describe is the state as one line of text (ingest status).
func (s Source) Describe() string {
	switch s.State {
	case Followed:
		return fmt.Sprintf("renames: followed (schema-change topic %s consumed)", s.Topic)
	case NotFollowed:
		return fmt.Sprintf("renames: NOT followed: schema-change topic %s exists but is not in topics/topic-regex", s.Topic)
	case NoTopic:
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

// Sources says, for every source prefix of tableTopics, whether its
// renames are followed: exists reports whether a topic is on the cluster,
// consumed whether ingest consumes it (nil: unknown). Of the candidate
// prefixes of a topic (prefixCandidates) those naming an existing topic
// count; when none does, the first one is reported as having no topic.
// Sorted by prefix.
func Sources(tableTopics []string, exists func(string) bool, consumed func(string) bool) []Source {
	found := map[string]Source{}
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
			s := Source{Prefix: p, Topic: p, State: Unknown}
			if consumed != nil {
				s.State = NotFollowed
				if consumed(p) {
					s.State = Followed
				}
			}
			found[p] = s
		}
		if p := cands[0]; !hit {
			if _, ok := found[p]; !ok {
				found[p] = Source{Prefix: p, Topic: p, State: NoTopic}
			}
		}
	}
	out := make([]Source, 0, len(found))
	for _, p := range slices.Sorted(maps.Keys(found)) {
		out = append(out, found[p])
	}
	return out
}

// NewFollowedGauge registers ingest_renames_followed{prefix} on reg: 1 when the
// schema-change topic of a source prefix is consumed, 0 when it is not
// (left out of topics/topic-regex, or not on the cluster).
func NewFollowedGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ingest_renames_followed",
		Help: "1 when ingest consumes the schema-change topic <prefix> of a source whose table topics it consumes (table renames are followed), else 0; set at start.",
	}, []string{"prefix"})
	reg.MustRegister(g)
	return g
}

// Check is the start-up check: it lists the cluster's topics (those
// ingest may describe), and for every source prefix of the table topics cfg
// consumes logs one warning when the prefix's schema-change topic exists
// but cfg does not consume it, naming the topic, what is lost and the
// setting to change, and one info line for each prefix whose renames are
// followed. gauge (may be nil) gets each prefix's state. A regex is checked
// against the topics that exist now only.
func Check(ctx context.Context, cl *kgo.Client, cfg Consumed, logger *slog.Logger, gauge *prometheus.GaugeVec) error {
	listed, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing the topics: %w", err)
	}
	var consumed []string
	for _, t := range listed.Names() {
		if cfg.Has(t) {
			consumed = append(consumed, t)
		}
	}
	for _, t := range cfg.Topics {
		if !listed.Has(t) {
			consumed = append(consumed, t) // not created yet: its prefix still counts
		}
	}
	for _, s := range Sources(consumed, listed.Has, cfg.Has) {
		if gauge != nil {
			v := 0.0
			if s.State == Followed {
				v = 1
			}
			gauge.WithLabelValues(s.Prefix).Set(v)
		}
		switch s.State {
		case Followed:
			logger.Info("table renames are followed: the schema-change topic is consumed", "topic", s.Topic, "prefix", s.Prefix)
		case NotFollowed:
			logger.Warn(renameWarning(s.Topic, cfg.Regex != ""), "topic", s.Topic, "prefix", s.Prefix)
		case NoTopic, Unknown:
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

// Consumed is the topics ingest consumes: those named, and those whose
// whole names Regex matches ("": none).
type Consumed struct {
	Topics []string
	Regex  string
}

// Has reports whether topic is one of Topics or matches Regex.
func (c Consumed) Has(topic string) bool {
	for _, t := range c.Topics {
		if t == topic {
			return true
		}
	}
	if c.Regex == "" {
		return false
	}
	re, err := regexp.Compile("^(?:" + c.Regex + ")$")
	return err == nil && re.MatchString(topic)
}
