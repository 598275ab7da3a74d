package renamecheck

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRenameSources: each source prefix of the table topics once, with the
// state of its schema-change topic; dotted names try every prefix.
func TestRenameSources(t *testing.T) {
	cluster := []string{"shop", "shop.db.a", "shop.db.b", "plain.db.c", "dot.ted", "dot.ted.db.d"}
	exists := func(s string) bool { return slices.Contains(cluster, s) }
	for _, tc := range []struct {
		name     string
		topics   []string
		consumed []string // nil: unknown
		want     []Source
	}{
		{"left out", []string{"shop.db.a", "shop.db.b"}, []string{"shop.db.a", "shop.db.b"},
			[]Source{{"shop", "shop", NotFollowed}}},
		{"included", []string{"shop.db.a"}, []string{"shop", "shop.db.a"},
			[]Source{{"shop", "shop", Followed}}},
		{"no topic", []string{"plain.db.c"}, []string{"plain.db.c"},
			[]Source{{"plain", "plain", NoTopic}}},
		{"unknown", []string{"shop.db.a"}, nil,
			[]Source{{"shop", "shop", Unknown}}},
		{"dotted prefix", []string{"dot.ted.db.d"}, []string{"dot.ted.db.d"},
			[]Source{{"dot.ted", "dot.ted", NotFollowed}}},
		{"not a table topic", []string{"shop", "shop.transaction"}, []string{"shop"}, []Source{}},
		{"two sources sorted", []string{"shop.db.a", "plain.db.c"}, []string{"shop", "plain.db.c", "shop.db.a"},
			[]Source{{"plain", "plain", NoTopic}, {"shop", "shop", Followed}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var consumed func(string) bool
			if tc.consumed != nil {
				consumed = func(s string) bool { return slices.Contains(tc.consumed, s) }
			}
			got := Sources(tc.topics, exists, consumed)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Sources(%v) = %v, want %v", tc.topics, got, tc.want)
			}
		})
	}
}

// TestCheckRenames: against a kfake cluster holding the schema-change topic
// shop and shop's table topics, a configuration that leaves shop out logs
// one warning (for two table topics) naming the topic, the loss and the
// setting of the kind used; one that includes it logs none. The gauge
// follows.
func TestCheckRenames(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "shop", "shop.db.a", "shop.db.b", "plain.db.c"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	for _, tc := range []struct {
		name     string
		cfg      Consumed
		want     []string // in the one warning; none when empty
		followed float64
		notPlain bool
	}{
		{"regex leaves it out", Consumed{Regex: `shop\..*`},
			[]string{"schema-change topic shop exists but is not consumed", "only the rows written after the rename", "column renames are not followed",
				"--topic-regex (INGEST_TOPIC_REGEX)", `'shop(\..*)?'`}, 0, false},
		{"topics leave it out", Consumed{Topics: []string{"shop.db.a", "shop.db.b"}},
			[]string{"schema-change topic shop exists", "add shop to --topics (INGEST_TOPICS)"}, 0, false},
		{"regex includes it", Consumed{Regex: `shop(\..*)?`}, nil, 1, false},
		{"topics include it", Consumed{Topics: []string{"shop", "shop.db.a"}}, nil, 1, false},
		{"a source without a schema-change topic", Consumed{Regex: `plain\..*`}, nil, 0, true},
		{"a topic not created yet", Consumed{Topics: []string{"shop.db.new"}}, []string{"schema-change topic shop exists"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&out, nil))
			gauge := NewFollowedGauge(prometheus.NewRegistry())
			if err := Check(t.Context(), cl, tc.cfg, logger, gauge); err != nil {
				t.Fatal(err)
			}
			warns := logMessages(t, out.Bytes(), "WARN")
			switch {
			case tc.want == nil && len(warns) != 0:
				t.Fatalf("want no warning, got:\n%s", out.String())
			case tc.want != nil && len(warns) != 1:
				t.Fatalf("want one warning, got %d:\n%s", len(warns), out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(warns[0], w) {
					t.Errorf("the warning lacks %q:\n%s", w, warns[0])
				}
			}
			prefix := "shop"
			if tc.notPlain {
				prefix = "plain"
			}
			if got := testutil.ToFloat64(gauge.WithLabelValues(prefix)); got != tc.followed {
				t.Errorf("ingest_renames_followed{prefix=%q} = %v, want %v", prefix, got, tc.followed)
			}
		})
	}
}

// logMessages are the messages of level in the JSON log lines of out.
func logMessages(t *testing.T, out []byte, level string) []string {
	t.Helper()
	var msgs []string
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Level == level {
			msgs = append(msgs, rec.Msg)
		}
	}
	return msgs
}
