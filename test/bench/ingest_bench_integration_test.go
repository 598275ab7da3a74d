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

	"github.com/binlake/binlake/test/testenv"
)

// TestBenchIngest puts 1,000,000 Debezium change events (70 % inserts,
// 20 % updates, 10 % deletes of a 10-column table) on a topic, written by
// capture from a MariaDB workload, then runs ingest over the topic from
// the start and prints
//
//	INGEST rows=<n> seconds=<s> rows_per_s=<r> commits=<c> rss_mib=<m>
//
// with seconds from ingest's start to its last commit (read from its
// metrics: every event counted and nothing left buffered).
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

	metricsAddr := "127.0.0.1:19466"
	ingest := exec.Command(build(t, "ingest"))
	logPath := filepath.Join(dir, "ingest.log")
	logf, _ := os.Create(logPath)
	ingest.Stdout, ingest.Stderr = logf, logf
	ingest.Env = append(os.Environ(),
		"INGEST_KAFKA_BROKERS="+strings.Join(brokers, ","), "INGEST_GROUP_ID="+db, "INGEST_TOPICS="+topic,
		"INGEST_SCHEMA_REGISTRY_URL="+testenv.RegistryURL(t), "INGEST_CATALOG_URI="+ice.URI,
		"INGEST_S3_ENDPOINT="+ice.S3Endpoint, "INGEST_S3_REGION="+ice.Region, "INGEST_METRICS_ADDR="+metricsAddr,
		"INGEST_FLUSH_INTERVAL=5s")
	start := time.Now()
	if err := ingest.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ingest.Process.Kill(); _ = ingest.Wait(); logf.Close() })
	const events = ins + upd + del
	var rows, buffered, commits float64
	deadline := time.Now().Add(20 * time.Minute)
	for {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("ingest counted %.0f of %d events (buffered %.0f) in time; log:\n%s", rows, events, buffered, tail(b))
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
	seconds := time.Since(start).Seconds()
	rss := peakRSS(t, ingest.Process.Pid)
	fmt.Printf("INGEST rows=%d seconds=%.2f rows_per_s=%.0f commits=%.0f rss_mib=%.0f\n", events, seconds, events/seconds, commits, rss)
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
