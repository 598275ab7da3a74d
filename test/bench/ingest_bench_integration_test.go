//go:build integration

package bench

import (
	"bufio"
	"fmt"
	"io"
	"net"
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
// TestBenchPeer prints the same lines before its peer's.
func TestBenchIngest(t *testing.T) {
	if os.Getenv("BINLAKE_BENCH") != "1" {
		t.Skip("set BINLAKE_BENCH=1 (make bench-ingest)")
	}
	ingestModes(t, newChangeTopics(t, changeWorkload{tables: 1, partitions: 1, events: 1_000_000}))
}

// changeWorkload is a backlog of change events written by capture.
type changeWorkload struct {
	tables, partitions, events int
	// profile, if set, is a file that receives capture's CPU profile of
	// its whole run (its /debug/pprof/profile over profileSeconds, which
	// must outlast the run; capture is stopped once it is written).
	profile        string
	profileSeconds int
}

// changeTopics is a written backlog: its database, one topic per table,
// and the capture that wrote it (exited).
type changeTopics struct {
	db      string
	topics  []string
	events  int // change events (tombstones not counted)
	capture *captureProc
}

// newChangeTopics creates a database with w.tables tables of ordersDDL
// (orders, or orders_0 ... when more than one), writes w.events change
// events into them (70 % inserts, 20 % updates, 10 % deletes, split evenly
// over the tables), and runs capture over that binlog into topics of
// w.partitions partitions until every topic holds its events, then stops
// it.
func newChangeTopics(t *testing.T, w changeWorkload) changeTopics {
	t.Helper()
	m := testenv.MariaDBEnv(t)
	brokers := testenv.KafkaBrokers(t)
	db := testenv.Unique(t, "bi")
	admin := m.AdminDB(t, "")
	if _, err := admin.ExecContext(t.Context(), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE IF EXISTS " + db) })
	conn := m.AdminDB(t, db)
	names := []string{"orders"}
	if w.tables > 1 {
		names = names[:0]
		for i := range w.tables {
			names = append(names, fmt.Sprintf("orders_%d", i))
		}
	}
	for _, n := range names {
		mustExec(t, conn, strings.Replace(ordersDDL, "TABLE orders", "TABLE "+n, 1))
	}
	var gtid string
	if err := admin.QueryRowContext(t.Context(), "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	per := w.events / len(names)
	ins, upd, del := per*7/10, per*2/10, per/10
	for _, n := range names {
		writeOrders(t, conn, n, ins, upd, del, min(10_000, ins))
	}

	prefix := "bi_" + db
	ct := changeTopics{db: db, events: len(names) * (ins + upd + del)}
	env := captureEnv(t, m, prefix, db, "CAPTURE_SNAPSHOT_MODE=never", "CAPTURE_START_POSITION=gtid:"+gtid,
		fmt.Sprintf("CAPTURE_TOPIC_CREATION_DEFAULT_PARTITIONS=%d", w.partitions))
	var profiled chan error
	if w.profile != "" {
		addr := freeAddr(t)
		env = append(env, "CAPTURE_METRICS_ADDR="+addr, "CAPTURE_PPROF=true") // the last of a variable wins
		profiled = make(chan error, 1)
		go func() { profiled <- fetchProfile(addr, w.profile, w.profileSeconds) }()
	}
	ct.capture = startCapture(t, env)
	// The last table written is the last one done: wait for it first.
	for i := len(names) - 1; i >= 0; i-- {
		topic := prefix + "." + db + "." + names[i]
		measure(t, brokers, topic, int64(ins+upd+2*del), true, 10*time.Minute)
		ct.topics = append(ct.topics, topic)
	}
	if profiled != nil {
		if err := <-profiled; err != nil {
			t.Fatalf("profiling capture: %v", err)
		}
	}
	ct.capture.stop()
	return ct
}

// fetchProfile waits for capture's ops listener at addr, then writes its
// CPU profile over the next seconds to file.
func fetchProfile(addr, file string, seconds int) error {
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) { // polling until it listens
		resp, err = http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds))
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /debug/pprof/profile: %s", resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ingestEnv is the environment of an ingest of src in delete mode mode.
func ingestEnv(t *testing.T, src changeTopics, group, mode, version string) []string {
	t.Helper()
	ice := testenv.IcebergEnv(t)
	return []string{
		"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","), "INGEST_GROUP_ID=" + group,
		"INGEST_TOPICS=" + strings.Join(src.topics, ","),
		"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t), "INGEST_CATALOG_URI=" + ice.URI,
		"INGEST_S3_ENDPOINT=" + ice.S3Endpoint, "INGEST_S3_REGION=" + ice.Region,
		"INGEST_FLUSH_INTERVAL=5s", "INGEST_DELETE_MODE=" + mode, "INGEST_TABLE_FORMAT_VERSION=" + version,
	}
}

// deleteModes are ingest's delete modes, each with the table format
// version it runs on.
var deleteModes = []struct{ name, version string }{{"equality", "2"}, {"position", "2"}, {"dv", "3"}}

// ingestModes runs ingest over src (one table) once in each delete mode,
// the table dropped between runs, prints an INGEST line per mode and
// returns the runs by mode.
func ingestModes(t *testing.T, src changeTopics) map[string]ingestRun {
	t.Helper()
	ice := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(t.Context(), "bench", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	bin, dir := build(t, "ingest"), t.TempDir()
	runs := map[string]ingestRun{}
	for _, mode := range deleteModes {
		r := runIngest(t, bin, dir, mode.name, ingestEnv(t, src, src.db+"_"+mode.name, mode.name, mode.version), float64(src.events))
		runs[mode.name] = r
		fmt.Printf("INGEST mode=%s rows=%d seconds=%.2f rows_per_s=%.0f ratio_to_equality=%.2f commits=%.0f rss_mib=%.0f index_mib=%.1f\n",
			mode.name, src.events, r.seconds, r.rate, r.rate/runs["equality"].rate, r.commits, r.rss, r.indexMiB)
		if err := cat.DropTable(t.Context(), table.Identifier{src.db, "orders"}); err != nil {
			t.Fatalf("dropping the %s run's table: %v", mode.name, err)
		}
	}
	return runs
}

// ingestRun is one bench run of the ingest binary.
type ingestRun struct {
	seconds, rate, commits, rss, indexMiB float64
	// firstToLast is the rate between its first commit and its last
	// (events committed after the first, over the time between them).
	firstToLast float64
	cpu         float64 // user + system CPU seconds of the whole process
	lagMax      float64 // largest ingest_consumer_lag seen (records)
}

// runIngest runs the ingest binary bin with env (plus a state-dir and
// metrics address of its own, under dir) until its metrics count events
// rows and nothing is buffered, then stops it, and returns the figures:
// seconds from its start to that point, its peak RSS, its CPU time and
// the size of its key index. A process that exits first fails the test
// with its log.
func runIngest(t *testing.T, bin, dir, name string, env []string, events float64) ingestRun {
	t.Helper()
	return startIngest(t, bin, dir, name, env).wait(t, func() float64 { return events })
}

// ingestProc is a running ingest.
type ingestProc struct {
	cmd                        *exec.Cmd
	name, logPath, state, addr string
	start                      time.Time
	exited                     chan struct{}
	stopped                    bool
}

// startIngest starts ingest as runIngest does; it is stopped at the end
// of the test if still running.
func startIngest(t *testing.T, bin, dir, name string, env []string) *ingestProc {
	t.Helper()
	p := &ingestProc{cmd: exec.Command(bin), name: name, addr: freeAddr(t), exited: make(chan struct{}),
		state: filepath.Join(dir, name+"-state"), logPath: filepath.Join(dir, name+"-ingest.log")}
	logf, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.Env = append(append(os.Environ(), env...), "INGEST_METRICS_ADDR="+p.addr, "INGEST_STATE_DIR="+p.state)
	profDir := os.Getenv("BINLAKE_BENCH_PROFILE")
	if profDir != "" {
		p.cmd.Env = append(p.cmd.Env, "INGEST_PPROF=true")
	}
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.exited) }()
	t.Cleanup(p.stop)
	if profDir != "" {
		p.profile(profDir, envInt(t, "BINLAKE_BENCH_PROFILE_SECONDS", 10))
	}
	return p
}

// profile collects a CPU profile of the running ingest (--pprof) over secs
// (BINLAKE_BENCH_PROFILE_SECONDS, default 10) from its start, into
// dir/<name>-ingest.pprof, in the background: for `go tool pprof`.
func (p *ingestProc) profile(dir string, secs int) {
	out := filepath.Join(dir, p.name+"-ingest.pprof")
	go func() {
		if err := fetchProfile(p.addr, out, secs); err != nil {
			fmt.Printf("PROFILE %s: %v\n", out, err)
			return
		}
		fmt.Printf("PROFILE %s\n", out)
	}()
}

// stop interrupts ingest and waits for it to exit (killing it after two
// minutes).
func (p *ingestProc) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(2 * time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// wait polls ingest's metrics until it has committed events() rows (a
// negative count: not known yet) and buffers none, then stops it and
// returns the run's figures (see runIngest).
func (p *ingestProc) wait(t *testing.T, events func() float64) ingestRun {
	t.Helper()
	var rows, buffered, commits, firstRows, lagMax float64
	var first time.Time
	deadline := time.Now().Add(60 * time.Minute)
	for {
		select {
		case <-p.exited:
			b, _ := os.ReadFile(p.logPath)
			t.Fatalf("%s: ingest exited after %.0f of %.0f events; log:\n%s", p.name, rows, events(), tail(b))
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(p.logPath)
			t.Fatalf("%s: ingest counted %.0f of %.0f events (buffered %.0f) in time; log:\n%s", p.name, rows, events(), buffered, tail(b))
		}
		time.Sleep(100 * time.Millisecond) // polling interval: the loop re-reads the metrics
		ms, err := scrape("http://" + p.addr + "/metrics")
		if err != nil {
			continue
		}
		rows, buffered, commits = ms["ingest_rows_total"], ms["ingest_buffered_rows"], ms[`ingest_commits_total{result="ok"}`]
		lagMax = max(lagMax, ms["ingest_consumer_lag"])
		if first.IsZero() && rows > 0 {
			first, firstRows = time.Now(), rows
		}
		if n := events(); n >= 0 && rows >= n && buffered == 0 {
			break
		}
	}
	last, n := time.Now(), events()
	r := ingestRun{seconds: last.Sub(p.start).Seconds(), commits: commits, rss: peakRSS(t, p.cmd.Process.Pid), lagMax: lagMax}
	r.rate = n / r.seconds
	if d := last.Sub(first).Seconds(); d > 0 {
		r.firstToLast = (n - firstRows) / d
	}
	p.stop()
	if dir := os.Getenv("BINLAKE_BENCH_PROFILE"); dir != "" {
		// The log beside the profile, for what ingest did in the run.
		if b, err := os.ReadFile(p.logPath); err == nil {
			_ = os.WriteFile(filepath.Join(dir, p.name+"-ingest.log"), b, 0o644)
		}
	}
	r.cpu = cpuSeconds(p.cmd.ProcessState)
	r.indexMiB = float64(dirBytes(t, p.state)) / (1 << 20)
	return r
}

// freeAddr is a loopback address with a port free now (another stack's
// benchmarks may run beside this one).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// cpuSeconds is the user and system CPU time of an exited process.
func cpuSeconds(ps *os.ProcessState) float64 {
	if ps == nil {
		return 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds()
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
