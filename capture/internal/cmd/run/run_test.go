package run

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestRunSourceUnreachable: with startup-timeout 0, a source that does not
// answer ends Run at once with an error naming the address and the
// settings to check.
func TestRunSourceUnreachable(t *testing.T) {
	addr := closedAddr(t)
	cfg := captureConfig(t, map[string]string{"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_MYSQL_ADDR": addr,
		"CAPTURE_METRICS_ADDR": "off", "CAPTURE_STARTUP_TIMEOUT": "0s"})
	var log bytes.Buffer
	err := Run(t.Context(), Config{Capture: cfg, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err == nil || !strings.Contains(err.Error(), "source "+addr) || !strings.Contains(err.Error(), "check mysql-addr") {
		t.Fatalf("Run: %v; want an error naming the source %s and mysql-addr", err, addr)
	}
	if !strings.Contains(log.String(), "starting capture") || !strings.Contains(log.String(), "mysql_addr="+addr) {
		t.Errorf("the start is not logged with the settings:\n%s", log.String())
	}
}

// TestRunStopped: Run ended by its context returns nil and logs that it
// stopped, as capture does on SIGTERM.
func TestRunStopped(t *testing.T) {
	cfg := captureConfig(t, map[string]string{"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_MYSQL_ADDR": closedAddr(t),
		"CAPTURE_METRICS_ADDR": "off"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var log bytes.Buffer
	if err := Run(ctx, Config{Capture: cfg, Logger: slog.New(slog.NewTextHandler(&log, nil))}); err != nil {
		t.Fatalf("Run after its context ended: %v, want nil", err)
	}
	if !strings.Contains(log.String(), "msg=stopped") {
		t.Errorf("the stop is not logged:\n%s", log.String())
	}
}
