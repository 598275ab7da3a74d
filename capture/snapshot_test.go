package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestSnapshotCommandFlagsDocumented(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"capture", "snapshot", "--help"}, env(nil), &out, &out); !errors.Is(err, errHelp) {
		t.Fatalf("capture snapshot --help: %v", err)
	}
	n := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		n++
		if name := strings.Fields(line)[0][1:]; !strings.Contains(string(readme), "`--"+name+"`") {
			t.Errorf("README does not document --%s", name)
		}
	}
	if n < 10 || !strings.Contains(out.String(), "-tables") {
		t.Fatalf("help lists %d flags:\n%s", n, out.String())
	}
}

func TestSnapshotCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--tables", "db.t1"}, map[string]string{"CAPTURE_TOPIC_PREFIX": "p"}, "no signal topic is configured"},
		{nil, map[string]string{"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_SIGNAL_ENABLED_CHANNELS": "kafka"}, "--tables is required"},
		{[]string{"--tables", "db.(t1"}, map[string]string{"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_SIGNAL_ENABLED_CHANNELS": "kafka"}, "db.(t1"},
		{[]string{"--action", "explode"}, map[string]string{"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_SIGNAL_ENABLED_CHANNELS": "kafka"}, "want execute, stop, pause or resume"},
		{[]string{"db.t1"}, map[string]string{"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_SIGNAL_ENABLED_CHANNELS": "kafka"}, "unexpected arguments"},
		{[]string{"--tables", "db.t1"}, map[string]string{"CAPTURE_SIGNAL_ENABLED_CHANNELS": "kafka"}, "CAPTURE_TOPIC_PREFIX"},
	} {
		var out bytes.Buffer
		err := run(t.Context(), append([]string{"capture", "snapshot"}, tc.args...), env(tc.env), &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("capture snapshot %v with %v: error %v, want one containing %q", tc.args, tc.env, err, tc.want)
		}
	}
}
