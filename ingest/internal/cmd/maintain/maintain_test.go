package maintain

import (
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/ingest/internal/envflag"
)

// parseConfig is the configuration `ingest maintain` makes of args and
// the environment getenv reads, validated.
func parseConfig(args []string, getenv func(string) string) (Config, error) {
	fs := flag.NewFlagSet("ingest maintain", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ef := envflag.New(fs, "INGEST_", getenv)
	var cfg Config
	cfg.Bind(ef)
	if err := ef.Parse(args); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestConfigValidate: the settings as flags and variables bind them, and
// the rules Validate holds them to.
func TestConfigValidate(t *testing.T) {
	cfg, err := parseConfig([]string{"-catalog-uri=http://c:8181", "-maintain-tables=a.b.orders, shop.items", "-maintain-steps=expire-snapshots,compact"},
		env(map[string]string{"INGEST_ORPHAN_AGE": "72h"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OrphanAge != 72*time.Hour || cfg.RetainLast != 5 || cfg.Attempts != 10 {
		t.Errorf("settings %+v, want orphan-age 72h from the environment and the defaults", cfg.Settings)
	}
	tables, err := cfg.tables()
	if err != nil || len(tables) != 2 || strings.Join(tables[0], "|") != "a.b|orders" {
		t.Errorf("tables %v, %v: want the namespace as all before the last dot", tables, err)
	}
	for _, c := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"-catalog-uri=http://c", "-maintain-tables=s.t", "-maintain-namespaces=s"}, "set exactly one of maintain-tables and maintain-namespaces"},
		{[]string{"-catalog-uri=http://c", "-maintain-tables=s.t", "-maintain-steps=compact,vacuum"}, `unknown step "vacuum"`},
		{[]string{"-catalog-uri=http://c", "-maintain-tables=s.t", "-orphan-age=10m"}, "orphan-age 10m0s: want at least 1h0m0s"},
		{[]string{"-maintain-tables=s.t"}, "set catalog-uri (INGEST_CATALOG_URI) to an Iceberg REST catalog, or state-dir (INGEST_STATE_DIR)"},
		{[]string{"-catalog-uri=http://c", "-maintain-tables=s.t", "-log-level=loud"}, `log-level "loud"`},
	} {
		if _, err := parseConfig(c.args, env(nil)); err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.wantErr)
		}
	}
}

// TestRunEmbeddedCatalog runs the command in-process on an embedded
// catalog without tables: an empty namespace is maintained without error,
// and a table that does not exist fails the run, naming it.
func TestRunEmbeddedCatalog(t *testing.T) {
	dir := t.TempDir()
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	cfg, err := parseConfig([]string{"-state-dir=" + dir, "-maintain-tables=shop.missing"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = Run(t.Context(), cfg, logger)
	if err == nil || !strings.Contains(err.Error(), "1 of 1 tables failed") {
		t.Fatalf("err %v, want the missing table to fail the run\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "maintenance done") {
		t.Errorf("no summary line:\n%s", logs.String())
	}
}
