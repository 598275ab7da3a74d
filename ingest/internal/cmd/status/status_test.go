package status

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/binlake/binlake/ingest/internal/envflag"
	"github.com/binlake/binlake/ingest/internal/renamecheck"
)

// TestStatusCut checks the consistent cut across tables: the newest GTID
// when no table waits, the lowest GTID of those that wait otherwise, and
// no cut (with the reason) where none can be told.
func TestStatusCut(t *testing.T) {
	one := []Row{{}}
	two := []Row{{}, {Partition: 1}}
	for _, tc := range []struct {
		name      string
		tables    []Table
		want, why string
	}{
		{"all caught up: the newest", []Table{{Table: "a", SourceGTID: "0-1-10", Partitions: one}, {Table: "b", SourceGTID: "0-1-20", Partitions: one}}, "0-1-20", ""},
		{"one waits: its last GTID", []Table{{Table: "a", SourceGTID: "0-1-10", Lag: 3, Partitions: one}, {Table: "b", SourceGTID: "0-1-20", Partitions: one}}, "0-1-10", ""},
		{"two wait: the lower", []Table{{Table: "a", SourceGTID: "0-1-10", Lag: 3, Partitions: one}, {Table: "b", SourceGTID: "0-1-7", Lag: 1, Partitions: one}}, "0-1-7", ""},
		{"sequence numbers compare as numbers", []Table{{Table: "a", SourceGTID: "0-1-9", Partitions: one}, {Table: "b", SourceGTID: "0-1-10", Partitions: one}}, "0-1-10", ""},
		{"MySQL GTIDs", []Table{{Table: "a", SourceGTID: "3e11fa47-71ca-11e1-9e33-c80aa9429562:23", Lag: 1, Partitions: one}, {Table: "b", SourceGTID: "3e11fa47-71ca-11e1-9e33-c80aa9429562:40", Partitions: one}}, "3e11fa47-71ca-11e1-9e33-c80aa9429562:23", ""},
		{"a waiting table on two partitions", []Table{{Table: "a", SourceGTID: "0-1-10", Lag: 3, Partitions: two}}, "", "2 partitions"},
		{"two domains", []Table{{Table: "a", SourceGTID: "0-1-10", Partitions: one}, {Table: "b", SourceGTID: "1-1-3", Partitions: one}}, "", "more than one source stream"},
		{"a waiting table without a GTID", []Table{{Table: "a", Lag: 2, Partitions: one}}, "", "holds no GTID"},
		{"no GTIDs at all", []Table{{Table: "a", Partitions: one}}, "", "no table holds a GTID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := cut(tc.tables)
			if got != tc.want || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("cut = %q (%q), want %q (%q)", got, why, tc.want, tc.why)
			}
		})
	}
}

// TestStatusRenamesText: ingest status prints one line per source prefix
// saying whether its renames are followed, in each of the four states.
func TestStatusRenamesText(t *testing.T) {
	var out strings.Builder
	printStatus(&out, Report{Cut: "0-1-1", Renames: []renamecheck.Source{
		{Prefix: "a", Topic: "a", State: renamecheck.Followed}, {Prefix: "b", Topic: "b", State: renamecheck.NotFollowed}, {Prefix: "c", Topic: "c", State: renamecheck.NoTopic}, {Prefix: "d", Topic: "d", State: renamecheck.Unknown},
	}})
	for _, want := range []string{
		"source a: renames: followed (schema-change topic a consumed)\n",
		"source b: renames: NOT followed: schema-change topic b exists but is not in topics/topic-regex\n",
		"source c: renames: not followed: no schema-change topic c on the cluster\n",
		"source d: renames: unknown: schema-change topic d exists; give ingest status ingest's topics or topic-regex",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// runArgs runs ingest status in-process with the settings of args (after
// the command's name) and getenv, as main parses them, writing the report
// to out.
func runArgs(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	fs := flag.NewFlagSet("ingest status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ef := envflag.New(fs, "INGEST_", getenv)
	var cfg Config
	cfg.Ingest.Bind(ef)
	cfg.Bind(fs)
	if err := ef.Parse(args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	_, err := Run(ctx, cfg, out)
	return err
}

// TestConfigValidate: the settings status checks, and the ones of ingest
// it does not need (no topics) left alone.
func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"-catalog-uri=http://c"}, ""},
		{[]string{"-catalog-uri=http://c", "-format=yaml"}, `format "yaml": want table or json`},
		{[]string{"-catalog-uri=http://c", "-tables=("}, "tables: "},
		{[]string{"-catalog-uri=http://c", "-topic-regex=("}, "topic-regex: "},
		{nil, "set catalog-uri (INGEST_CATALOG_URI)"},
	} {
		err := runArgs(t.Context(), append(c.args, "-kafka-brokers=127.0.0.1:1"), env(nil), io.Discard)
		if c.wantErr == "" {
			// Valid: Run goes on to the catalog, which is not there.
			if err == nil || strings.Contains(err.Error(), "want table or json") {
				t.Errorf("%v: err %v, want the unreachable catalog", c.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.wantErr)
		}
	}
}

// TestRunEmbeddedCatalog runs ingest status in-process on an empty
// embedded catalog and a kfake cluster: an empty report, printed as JSON,
// and no error.
func TestRunEmbeddedCatalog(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	var out bytes.Buffer
	if err := runArgs(t.Context(), []string{"-state-dir=" + t.TempDir(), "-format=json", "-kafka-brokers=" + strings.Join(fake.ListenAddrs(), ",")}, env(nil), &out); err != nil {
		t.Fatalf("status: %v\n%s", err, out.String())
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Tables) != 0 || rep.CutReason != "no table holds a GTID" {
		t.Errorf("report %+v, %v; want no tables\n%s", rep, err, out.String())
	}
}
