package replay

import (
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/envflag"
)

func TestParseFromOffsets(t *testing.T) {
	got, err := parseFromOffsets("0=12, 1=0,p.db.t:2=7")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]int64{"": {0: 12, 1: 0}, "p.db.t": {2: 7}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for _, bad := range []string{"0", "x=1", "0=-1", "-1=3", "0=1,,1=2"} {
		if _, err := parseFromOffsets(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	if got, err := parseFromOffsets(" "); err != nil || got != nil {
		t.Errorf("empty: %v %v", got, err)
	}
}

// TestPendingTopics: a replay reads only the topics main holds offsets of
// past the replay's start; the old topic of a table renamed before the
// start, which the start holds as far as main, is not read again (issue
// 29 item 6).
func TestPendingTopics(t *testing.T) {
	start := batch.Offsets{"p.db.old": {0: 40}, "p.db.new": {0: 3, 1: 9}}
	main := batch.Offsets{"p.db.old": {0: 40}, "p.db.new": {0: 3, 1: 12}, "p.db.later": {0: 1}}
	if got, want := pendingTopics(start, main), []string{"p.db.later", "p.db.new"}; !cmp.Equal(got, want) {
		t.Errorf("pendingTopics = %v, want %v", got, want)
	}
	if got := pendingTopics(main, main); len(got) != 0 {
		t.Errorf("caught up: pendingTopics = %v, want none", got)
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// parseConfig is the configuration ingest replay makes of args (after the
// command's name) and getenv, as main parses them.
func parseConfig(args []string, getenv func(string) string) (Config, error) {
	fs := flag.NewFlagSet("ingest replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ef := envflag.New(fs, "INGEST_", getenv)
	var cfg Config
	cfg.Ingest.Bind(ef)
	cfg.Bind(fs)
	if err := ef.Parse(args); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// TestConfigValidate: the replay's own rules, over ingest's settings with
// the topics left to the tables.
func TestConfigValidate(t *testing.T) {
	base := []string{"-catalog-uri=http://c"}
	for _, c := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"-tables=s\\.t"}, ""},
		{[]string{"-tables=s\\.t", "-from-time=2026-12-01T10:00:00Z", "-publish"}, ""},
		{[]string{"-tables=s\\.t", "-topics=a.b.c"}, ""},
		// The running ingest's dead-letter settings: replay takes no
		// topic for consumed, so the dead-letter topic is no clash.
		{[]string{"-tables=s\\.t", "-errors-tolerance=dlq", "-dlq-topic=d.dlq"}, ""},
		{nil, "tables is required"},
		{[]string{"-tables=("}, "tables: "},
		{[]string{"-tables=s\\.t", "-from-time=yesterday"}, `from-time "yesterday": want RFC 3339`},
		{[]string{"-tables=s\\.t", "-from-offsets=0"}, "from-offsets: "},
		{[]string{"-tables=s\\.t", "-from-snapshot=1", "-from-offsets=0=1"}, "set at most one of from-snapshot, from-time and from-offsets"},
		{[]string{"-tables=s\\.t", "-branch=main"}, `branch "main": name a branch other than main`},
		{[]string{"-tables=s\\.t", "-flush-rows=0"}, "flush-rows must be at least 1"},
	} {
		cfg, err := parseConfig(append(append([]string{}, base...), c.args...), env(nil))
		if c.wantErr == "" {
			if err != nil || cfg.Ingest.Topics != "" || cfg.Ingest.TopicRegex != matchesNoTopic || cfg.Ingest.Consumes("d.dlq") {
				t.Errorf("%v: err %v, topics %q, regex %q; want valid with the topics left to the tables", c.args, err, cfg.Ingest.Topics, cfg.Ingest.TopicRegex)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.wantErr)
		}
	}
}

// TestRunNoTable runs ingest replay in-process on an empty embedded
// catalog and a kfake cluster: no table matches --tables, and Run says so.
func TestRunNoTable(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	cfg, err := parseConfig([]string{"-state-dir=" + t.TempDir(), "-tables=shop\\..*", "-kafka-brokers=" + strings.Join(fake.ListenAddrs(), ",")}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = Run(t.Context(), cfg, slog.New(slog.DiscardHandler), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no table of the catalog matches --tables") {
		t.Fatalf("err %v, want no table matching", err)
	}
}
