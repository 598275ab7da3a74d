package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
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

// TestKafkaSecurityPasswordHasNoFlag checks the SASL password is a secret.
func TestKafkaSecurityPasswordHasNoFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"capture", "--help"}, env(nil), &out, &out); err == nil {
		t.Fatal("--help returned no error")
	}
	if strings.Contains(out.String(), "-kafka-sasl-password") {
		t.Error("the Kafka SASL password has a flag")
	}
	if !strings.Contains(out.String(), "-kafka-sasl-mechanism") || !strings.Contains(out.String(), "CAPTURE_KAFKA_TLS_CA_FILE") {
		t.Errorf("help lacks the Kafka security flags:\n%s", out.String())
	}
}
