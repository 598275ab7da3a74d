package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlake/binlake/schemas/debezium"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestHelpListsEveryFlagWithItsEnvVar(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"capture", "--help"}, env(nil), &out, &out)
	if !errors.Is(err, errHelp) {
		t.Fatalf("run --help returned %v, want errHelp", err)
	}
	for _, want := range []string{"Usage: capture", "-kafka-brokers", "CAPTURE_KAFKA_BROKERS", "-check-config"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "-mysql-password") {
		t.Error("the password has a flag; secrets must come only from the environment or a file")
	}
}

func TestCheckConfig(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"capture", "--check-config"}, env(nil), &out, &out)
	if err == nil || !strings.Contains(err.Error(), "CAPTURE_TOPIC_PREFIX") {
		t.Fatalf("missing topic prefix: got %v, want an error naming CAPTURE_TOPIC_PREFIX", err)
	}
	out.Reset()
	err = run(t.Context(), []string{"capture", "--check-config"}, env(map[string]string{"CAPTURE_TOPIC_PREFIX": "db1"}), &out, &out)
	if err != nil || !strings.Contains(out.String(), "configuration ok") {
		t.Fatalf("valid config: err=%v out=%q", err, out.String())
	}
	err = run(t.Context(), []string{"capture", "--check-config", "--topic-prefix=x", "--kafka-brokers="}, env(nil), &out, &out)
	if err == nil {
		t.Fatal("empty kafka-brokers accepted")
	}
}

func TestFlagBeatsEnvBeatsDefault(t *testing.T) {
	fsCfg := func(args []string, e map[string]string) Config {
		t.Helper()
		var cfg Config
		var out bytes.Buffer
		ef := newTestFlags(&out, e)
		cfg.bind(ef)
		if err := ef.fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if got := fsCfg(nil, nil).KafkaBrokers; got != "127.0.0.1:9092" {
		t.Errorf("default brokers %q", got)
	}
	if got := fsCfg(nil, map[string]string{"CAPTURE_KAFKA_BROKERS": "k:1"}).KafkaBrokers; got != "k:1" {
		t.Errorf("env brokers %q", got)
	}
	if got := fsCfg([]string{"--kafka-brokers=f:2"}, map[string]string{"CAPTURE_KAFKA_BROKERS": "k:1"}).KafkaBrokers; got != "f:2" {
		t.Errorf("flag brokers %q", got)
	}
}

func TestSecretFromFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	var out bytes.Buffer
	ef := newTestFlags(&out, map[string]string{"CAPTURE_MYSQL_PASSWORD_FILE": file})
	cfg.bind(ef)
	if cfg.MySQLPassword != "s3cret" {
		t.Fatalf("password from file = %q", cfg.MySQLPassword)
	}
	ef = newTestFlags(&out, map[string]string{"CAPTURE_MYSQL_PASSWORD_FILE": file + ".missing"})
	cfg.bind(ef)
	if len(ef.errs) == 0 {
		t.Fatal("missing password file accepted")
	}
}

// TestNameAdjustmentModes checks the two name-adjustment settings: Debezium's
// values (case-insensitive), the defaults Debezium 3.5 applies with an Avro
// converter (avro for fields, none for schema names), and a clear error
// otherwise.
func TestNameAdjustmentModes(t *testing.T) {
	check := func(args []string, e map[string]string) (Config, error) {
		t.Helper()
		var cfg Config
		var out bytes.Buffer
		ef := newTestFlags(&out, e)
		cfg.bind(ef)
		if err := ef.fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg.TopicPrefix = "p"
		return cfg, cfg.Validate()
	}
	cfg, err := check(nil, nil)
	if err != nil || cfg.Naming.Field != debezium.AdjustAvro || cfg.Naming.Schema != debezium.AdjustNone {
		t.Fatalf("defaults: %+v, %v; want avro for fields (Debezium with an Avro converter) and none for schema names", cfg.Naming, err)
	}
	cfg, err = check([]string{"--schema-name-adjustment-mode=AVRO"},
		map[string]string{"CAPTURE_FIELD_NAME_ADJUSTMENT_MODE": "avro_unicode"})
	if err != nil || cfg.Naming.Field != debezium.AdjustAvroUnicode || cfg.Naming.Schema != debezium.AdjustAvro {
		t.Fatalf("flag and env: %+v, %v", cfg.Naming, err)
	}
	_, err = check([]string{"--field-name-adjustment-mode=unicode"}, nil)
	if err == nil || !strings.Contains(err.Error(), "field-name-adjustment-mode") || !strings.Contains(err.Error(), "avro_unicode") {
		t.Fatalf("bad mode: %v, want an error naming the setting and its values", err)
	}
}

// TestMessageKeyColumnsSetting checks that --message-key-columns
// (CAPTURE_MESSAGE_KEY_COLUMNS) is parsed by --check-config, and that a
// malformed value stops capture naming the entry and the setting.
func TestMessageKeyColumnsSetting(t *testing.T) {
	var out bytes.Buffer
	e := env(map[string]string{"CAPTURE_TOPIC_PREFIX": "db1", "CAPTURE_MESSAGE_KEY_COLUMNS": "shop.orders:region,code;.*[.]items:sku"})
	if err := run(t.Context(), []string{"capture", "--check-config"}, e, &out, &out); err != nil {
		t.Fatalf("valid message key columns: %v", err)
	}
	for _, bad := range []string{"shop.orders", "shop.orders:a:b", "shop.orders:(a"} {
		err := run(t.Context(), []string{"capture", "--check-config", "--topic-prefix=x", "--message-key-columns=" + bad}, env(nil), &out, &out)
		if err == nil || !strings.Contains(err.Error(), "CAPTURE_MESSAGE_KEY_COLUMNS") {
			t.Errorf("%q: got %v, want an error naming CAPTURE_MESSAGE_KEY_COLUMNS", bad, err)
		}
	}
}
