//go:build integration

package bench

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/testenv"
)

// TestBenchIngest puts 1,000,000 Debezium change events (70 % inserts,
// 20 % updates, 10 % deletes of a 10-column table) on a topic, written by
// capture from a MariaDB workload, then runs ingest over the topic from
// the start, once in each delete mode (equality on format v2, position on
// v2, dv on v3; the table dropped between runs), and prints per mode
//
//	INGEST mode=<m> rows=<n> seconds=<s> rows_per_s=<r> ratio_to_equality=<x> commits=<c> rss_mib=<m> index_mib=<i>
//
// with seconds from ingest's start to its last commit (read from its
// metrics: every event counted and nothing left buffered) and index_mib
// the key index's size on disk at that point (0 in equality mode).
func TestBenchIngest(t *testing.T) {
	if os.Getenv("BINLAKE_BENCH") != "1" {
		t.Skip("set BINLAKE_BENCH=1 (make bench-ingest)")
	}
	const ins, upd, del, chunk = 700_000, 200_000, 100_000, 10_000
	m := testenv.MariaDBEnv(t)
	brokers := testenv.KafkaBrokers(t)
	ice := testenv.IcebergEnv(t)
	db := testenv.Unique(t, "bi")
	admin := m.AdminDB(t, "")
	if _, err := admin.ExecContext(t.Context(), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE IF EXISTS " + db) })
	conn := m.AdminDB(t, db)
	mustExec(t, conn, ordersDDL)
	var gtid string
	if err := admin.QueryRowContext(t.Context(), "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	writeOrders(t, conn, ins, upd, del, chunk)

	dir := t.TempDir()
	prefix := "bi_" + db
	topic := prefix + "." + db + ".orders"
	capture := exec.Command(build(t, "capture"))
	capture.Env = captureEnv(t, m, prefix, db, "CAPTURE_SNAPSHOT_MODE=never", "CAPTURE_START_POSITION=gtid:"+gtid)
	if err := capture.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = capture.Process.Kill(); _ = capture.Wait() })
	measure(t, brokers, topic, ins+upd+2*del, true, 10*time.Minute)
	_ = capture.Process.Signal(os.Interrupt)
	_ = capture.Wait()

	// The same topic into the same table in each delete mode, one after
	// the other (the table dropped between runs).
	cat, err := rest.NewCatalog(t.Context(), "bench", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	var equalityRate float64
	for _, mode := range []struct{ name, version string }{{"equality", "2"}, {"position", "2"}, {"dv", "3"}} {
		const events = ins + upd + del
		r := runIngest(t, build(t, "ingest"), dir, mode.name, []string{
			"INGEST_KAFKA_BROKERS=" + strings.Join(brokers, ","), "INGEST_GROUP_ID=" + db + "_" + mode.name, "INGEST_TOPICS=" + topic,
			"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t), "INGEST_CATALOG_URI=" + ice.URI,
			"INGEST_S3_ENDPOINT=" + ice.S3Endpoint, "INGEST_S3_REGION=" + ice.Region,
			"INGEST_FLUSH_INTERVAL=5s", "INGEST_DELETE_MODE=" + mode.name, "INGEST_TABLE_FORMAT_VERSION=" + mode.version,
		}, events)
		if mode.name == "equality" {
			equalityRate = r.rate
		}
		fmt.Printf("INGEST mode=%s rows=%d seconds=%.2f rows_per_s=%.0f ratio_to_equality=%.2f commits=%.0f rss_mib=%.0f index_mib=%.1f\n",
			mode.name, events, r.seconds, r.rate, r.rate/equalityRate, r.commits, r.rss, r.indexMiB)
		if err := cat.DropTable(t.Context(), table.Identifier{db, "orders"}); err != nil {
			t.Fatalf("dropping the %s run's table: %v", mode.name, err)
		}
	}
}

// ingestRun is one bench run of the ingest binary.
type ingestRun struct {
	seconds, rate, commits, rss, indexMiB float64
}

// runIngest runs the ingest binary bin with env (plus a state-dir and
// metrics address of its own, under dir) until its metrics count events
// rows and nothing is buffered, then stops it, and returns the figures:
// seconds from its start to that point, its peak RSS and the size of its
// key index. A process that exits first fails the test with its log.
func runIngest(t *testing.T, bin, dir, name string, env []string, events float64) ingestRun {
	t.Helper()
	metricsAddr := "127.0.0.1:19466"
	state := filepath.Join(dir, name+"-state")
	ingest := exec.Command(bin)
	logPath := filepath.Join(dir, name+"-ingest.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	ingest.Stdout, ingest.Stderr = logf, logf
	ingest.Env = append(append(os.Environ(), env...), "INGEST_METRICS_ADDR="+metricsAddr, "INGEST_STATE_DIR="+state)
	start := time.Now()
	if err := ingest.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = ingest.Wait(); close(exited) }()
	stop := func() {
		_ = ingest.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			_ = ingest.Process.Kill()
			<-exited
		}
	}
	defer stop()
	var rows, buffered, commits float64
	deadline := time.Now().Add(60 * time.Minute)
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s: ingest exited after %.0f of %.0f events; log:\n%s", name, rows, events, tail(b))
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s: ingest counted %.0f of %.0f events (buffered %.0f) in time; log:\n%s", name, rows, events, buffered, tail(b))
		}
		time.Sleep(100 * time.Millisecond) // polling interval: the loop re-reads the metrics
		ms, err := scrape("http://" + metricsAddr + "/metrics")
		if err != nil {
			continue
		}
		rows, buffered, commits = ms["ingest_rows_total"], ms["ingest_buffered_rows"], ms[`ingest_commits_total{result="ok"}`]
		if rows >= events && buffered == 0 {
			break
		}
	}
	r := ingestRun{seconds: time.Since(start).Seconds(), commits: commits, rss: peakRSS(t, ingest.Process.Pid)}
	r.rate = events / r.seconds
	stop()
	r.indexMiB = float64(dirBytes(t, state)) / (1 << 20)
	return r
}

// scrape sums each metric over its labels, except the commit result label,
// which it keeps for ok.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url) //nolint:noctx // a local test scrape
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		name := line[:i]
		base := name
		if j := strings.IndexByte(name, '{'); j >= 0 {
			base = name[:j]
			if base == "ingest_commits_total" && strings.Contains(name, `result="ok"`) {
				out[`ingest_commits_total{result="ok"}`] += v
			}
		}
		out[base] += v
	}
	return out, sc.Err()
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
