//go:build integration

package e2e

import (
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/test/testenv"
)

// gate is a local address that refuses connections until opened, then
// forwards each to target: a service that is down when a binary starts
// and comes up later.
type gate struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func newGate(t *testing.T, target string) *gate {
	g := &gate{addr: freePort(t), target: target}
	t.Cleanup(g.close)
	return g
}

// openAfter starts forwarding after d.
func (g *gate) openAfter(t *testing.T, d time.Duration) {
	time.AfterFunc(d, func() {
		ln, err := net.Listen("tcp", g.addr)
		if err != nil {
			t.Errorf("opening the gate to %s at %s: %v", g.target, g.addr, err)
			return
		}
		g.mu.Lock()
		g.ln = ln
		g.mu.Unlock()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go g.forward(c)
		}
	})
}

func (g *gate) forward(c net.Conn) {
	up, err := net.Dial("tcp", g.target)
	if err != nil {
		_ = c.Close()
		return
	}
	g.mu.Lock()
	g.conns = append(g.conns, c, up)
	g.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil {
		_ = g.ln.Close()
	}
	for _, c := range g.conns {
		_ = c.Close()
	}
}

// hostPort is the host:port of an http URL.
func hostPort(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestStartupWaitsForServices starts capture while MariaDB, the schema
// registry and Kafka are all unreachable, and ingest while the catalog and
// Kafka are, each service coming up some seconds later, and checks that
// both binaries wait for them (logging each retry) instead of exiting, and
// then deliver every change. Before startup-timeout, either exited at its
// first failed connection and relied on an orchestrator to restart it.
func TestStartupWaitsForServices(t *testing.T) {
	c := newCaptureEnv(t)
	exec1(t, c, typesDDL,
		`INSERT INTO t VALUES (1, 1, 'one', 1.50, '2024-02-29 23:59:59.123456', '2024-01-01 10:00:00.123', '2024-02-29', NULL, NULL)`)

	brokers := testenv.KafkaBrokers(t)
	registry := testenv.RegistryURL(t)
	mysqlGate := newGate(t, c.db.Addr)
	registryGate := newGate(t, hostPort(t, registry))
	captureKafka := newGate(t, brokers[0])
	cp := start(t, binary(t, "capture"), append(c.env,
		"CAPTURE_MYSQL_ADDR="+mysqlGate.addr,
		"CAPTURE_SCHEMA_REGISTRY_URL="+strings.Replace(registry, hostPort(t, registry), registryGate.addr, 1),
		"CAPTURE_KAFKA_BROKERS="+captureKafka.addr), "capture.log")
	mysqlGate.openAfter(t, 2*time.Second)
	registryGate.openAfter(t, 4*time.Second)
	captureKafka.openAfter(t, 6*time.Second)
	waitLog(t, cp, "Connected to server", 90*time.Second)

	r := newIngestRun(t, c)
	ice := testenv.IcebergEnv(t)
	catalogGate := newGate(t, hostPort(t, ice.URI))
	ingestKafka := newGate(t, brokers[0])
	r.env = append(r.env,
		"INGEST_CATALOG_URI="+strings.Replace(ice.URI, hostPort(t, ice.URI), catalogGate.addr, 1),
		"INGEST_KAFKA_BROKERS="+ingestKafka.addr)
	ip := r.start(t)
	catalogGate.openAfter(t, 2*time.Second)
	ingestKafka.openAfter(t, 5*time.Second)
	exec1(t, c, "UPDATE t SET name = 'after start' WHERE id = 1",
		`INSERT INTO t VALUES (2, 2, 'two', 2.50, '2024-03-01 00:00:00', '2024-01-02 10:00:00.000', '2024-03-01', '{}', 'n')`)
	r.waitEqual(t, 120*time.Second, ip)

	for _, w := range []struct {
		p    *proc
		name string
	}{{cp, "the source"}, {cp, "the schema registry"}, {cp, "Kafka"}, {ip, "the Iceberg catalog"}, {ip, "Kafka"}} {
		if !strings.Contains(w.p.fullLog(t), `msg="`+w.name+` is not reachable yet; retrying"`) {
			t.Errorf("no start-up retry of %s logged; the log ends:\n%s", w.name, w.p.output())
		}
	}
	ip.stop(t, 60*time.Second)
	cp.stop(t, 60*time.Second)
}

// TestStartupRefusalIsFinal checks that a service refusing the binary's
// credentials ends start-up at once with the setting to fix, however long
// startup-timeout is: waiting cannot clear a refusal.
func TestStartupRefusalIsFinal(t *testing.T) {
	c := newCaptureEnv(t)
	cp := start(t, binary(t, "capture"), append(c.env, "CAPTURE_MYSQL_PASSWORD=not-the-password", "CAPTURE_STARTUP_TIMEOUT=10m"), "capture.log")
	began := time.Now()
	testenv.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		if !cp.exited() {
			return errors.New("capture is still running")
		}
		return nil
	})
	out := cp.fullLog(t)
	if !strings.Contains(out, "Access denied") || !strings.Contains(out, "CAPTURE_MYSQL_PASSWORD") {
		t.Errorf("capture did not end naming the refusal and the setting:\n%s", cp.output())
	}
	if strings.Contains(out, "retrying") {
		t.Errorf("capture retried a refusal (exited after %s):\n%s", time.Since(began).Round(time.Second), cp.output())
	}
}
