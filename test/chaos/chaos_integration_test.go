//go:build integration

package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/faults"
	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// The settings that bound how long a frozen broker must stay frozen to
// outlast them.
const (
	captureTxnTimeout   = 10 * time.Second
	ingestSessionTimout = 8 * time.Second
	brokerFreeze        = 15 * time.Second
)

// lakeTables are the lake tables at the end, with their source tables and
// keys (audit has none: a change log).
var lakeTables = []struct{ lake, source, key string }{
	{"orders", "orders", "id"},
	{"order_lines", "Order Lines", "order_id,line"},
	{"audit", "audit", ""},
	{"ren_b", "ren_b", "id"},
	{"late", "late", "id"},
}

type harness struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	start   time.Time
	stackSh string
	dir     string

	db      testenv.MariaDB
	dbName  string
	prefix  string
	w       *writer
	tox     *faults.Toxiproxy
	cf      *faults.CommitFaults
	proxies []string // toxiproxy proxy names: <binary>-<service>
	capture *member
	ingests []*member
	members []*member
	cat     *rest.Catalog
	// namespaces are the lakes, one per ingest process.
	namespaces []string

	log []string // the fault log
}

func (h *harness) logf(f string, a ...any) {
	line := fmt.Sprintf("%7.1fs ", time.Since(h.start).Seconds()) + fmt.Sprintf(f, a...)
	h.log = append(h.log, line)
	h.t.Log(line)
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// TestChaos is `make chaos`: CHAOS_FAULTS faults (default 100; 15 with
// -short, as in `make test`) from CHAOS_SEED (default: the clock; printed)
// during one workload, then every guarantee checked. It prints
// CHAOS seed=… faults=… kinds=… tables=… changes=… lost=… duplicated=…
// mismatched=… seconds=…, and on a failure the fault log.
func TestChaos(t *testing.T) {
	// It restarts the stack's services under the other packages' tests,
	// so `go test ./...` skips it: make chaos, and make test's
	// chaos-short after the other integration tests, set BINLAKE_CHAOS=1.
	if os.Getenv("BINLAKE_CHAOS") != "1" {
		t.Skip("the chaos test runs alone, with make chaos or make chaos-short (BINLAKE_CHAOS=1)")
	}
	faults := 100
	if testing.Short() {
		faults = 15
	}
	faults = envInt(t, "CHAOS_FAULTS", faults)
	seed := uint64(time.Now().UnixNano() % 1_000_000_000)
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: want a number", s)
		}
		seed = n
	}
	fmt.Printf("CHAOS seed=%d faults=%d: starting (repeat with CHAOS_SEED=%d CHAOS_FAULTS=%d)\n", seed, faults, seed, faults)
	// Process logs stay on a failure (the lake's tables too), for the fault log to point at.
	dir, err := os.MkdirTemp("", "binlake-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 1)), start: time.Now(), dir: dir}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			fmt.Printf("CHAOS seed=%d FAILED; fault log:\n%s\nprocess logs: %s\n", seed, strings.Join(h.log, "\n"), h.dir)
		}
	})
	h.setUp()
	// The writer starts once capture has read its start position: a
	// change made before it is in the snapshot's reads only, or in none
	// (inserted and deleted before the read), which the topic check
	// cannot tell from a loss.
	h.waitCaptureLog(2*time.Minute, "msg=resuming", "capture has read its start position")
	ctx, stopWriter := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); h.w.run(ctx, t) }()
	defer func() { stopWriter(); wg.Wait() }()
	// The supervisor outlives the writer: a process that exits during the
	// last fault or the verification is restarted, as Kubernetes would,
	// and the exit is reported below.
	supCtx, cancelSupervisor := context.WithCancel(t.Context())
	supDone := make(chan struct{})
	go func() { defer close(supDone); h.supervise(supCtx) }()
	stopSupervisor := sync.OnceFunc(func() { cancelSupervisor(); <-supDone })
	defer stopSupervisor()

	h.waitFlowing()
	kinds := h.nemesis(faults)
	h.healAll()

	stopWriter()
	wg.Wait()
	h.w.gate.Lock() // nothing writes from here on
	lost, dup, bad, changes := h.verify()
	stopSupervisor()
	for _, m := range h.members {
		for _, c := range m.crashes() {
			t.Errorf("crash: %s", c)
			bad++
		}
	}
	var exits int
	for _, m := range h.members {
		exits += len(m.exits)
		for _, e := range m.exits {
			h.logf("exited on its own: %s", e)
		}
		m.stop()
	}
	kindNames := slices.Sorted(func(yield func(string) bool) {
		for k := range kinds {
			if !yield(k) {
				return
			}
		}
	})
	var kindList []string
	total := 0
	for _, k := range kindNames {
		kindList = append(kindList, fmt.Sprintf("%s:%d", k, kinds[k]))
		total += kinds[k]
	}
	fmt.Printf("CHAOS seed=%d faults=%d kinds=%d tables=%d changes=%d lost=%d duplicated=%d mismatched=%d seconds=%.0f\n",
		seed, total, len(kinds), len(lakeTables), changes, lost, dup, bad, time.Since(h.start).Seconds())
	fmt.Printf("CHAOS faults by kind: %s; processes restarted after exiting on their own: %d\n", strings.Join(kindList, " "), exits)
	if lost+dup+bad > 0 {
		t.Errorf("lost=%d duplicated=%d mismatched=%d", lost, dup, bad)
	}
	if total < faults {
		t.Errorf("injected %d faults, want %d", total, faults)
	}
}

func (h *harness) setUp() {
	t := h.t
	h.stackSh = filepath.Join(repoRoot(t), "deploy", "local", "stack.sh")
	h.db = testenv.MariaDBEnv(t)
	h.dbName = h.db.CreateDatabase(t, "chaos")
	h.prefix = testenv.Unique(t, "c")
	admin := h.db.AdminDB(t, h.dbName)
	for _, s := range chaosDDL {
		if _, err := admin.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	h.w = newWriter(admin, h.seed)
	h.w.seed(t.Context(), t, 200)
	h.w.mu.Lock()
	h.w.seeded = len(h.w.log)
	h.w.mu.Unlock()

	ice := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(t.Context(), "chaos", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	h.cat = cat
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		ctx := context.WithoutCancel(t.Context())
		for _, ns := range h.namespaces {
			for _, lt := range append(lakeTables, struct{ lake, source, key string }{"zz_caught_up", "", ""}, struct{ lake, source, key string }{"ren_a", "", ""}) {
				_ = cat.DropTable(ctx, table.Identifier{ns, lt.lake})
			}
			_ = cat.DropNamespace(ctx, table.Identifier{ns})
		}
	})

	// toxiproxy, and a proxy between each binary and each service.
	api := freeAddr(t)
	host, port, _ := net.SplitHostPort(api)
	tp := exec.Command(testenv.Tool(t, "toxiproxy-server"), "-host", host, "-port", port)
	tpLog, err := os.Create(filepath.Join(h.dir, "toxiproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	tp.Stdout, tp.Stderr = tpLog, tpLog
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Process.Kill(); _ = tp.Wait(); tpLog.Close() })
	h.tox = faults.NewToxiproxy("http://" + api)
	testenv.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		resp, err := http.Get(h.tox.API + "/version")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})

	h.cf, err = faults.NewCommitFaults(ice.URI, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h.cf, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	reg, err := url.Parse(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	s3, err := url.Parse(ice.S3Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := func(name, upstream string, listen ...string) string {
		l := freeAddr(t)
		if len(listen) > 0 {
			l = listen[0]
		}
		if err := h.tox.Proxy(t.Context(), name, l, upstream); err != nil {
			t.Fatal(err)
		}
		h.proxies = append(h.proxies, name)
		return l
	}
	kafkaProxy := func(name, env string) string {
		f := strings.Fields(os.Getenv(env))
		if len(f) != 2 {
			t.Fatalf("%s=%q: want '<broker listener> <proxy address>' (deploy/local/stack.sh env)", env, os.Getenv(env))
		}
		return proxy(name, f[0], f[1])
	}
	capMaria := proxy("capture-mariadb", h.db.Addr)
	capKafka := kafkaProxy("capture-kafka", "BINLAKE_KAFKA_CAPTURE_PROXY")
	capReg := proxy("capture-registry", reg.Host)
	ingKafka := kafkaProxy("ingest-kafka", "BINLAKE_KAFKA_INGEST_PROXY")
	ingReg := proxy("ingest-registry", reg.Host)
	ingCat := proxy("ingest-catalog", ln.Addr().String())
	ingS3 := proxy("ingest-s3", s3.Host)

	bin := filepath.Join(h.dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	build(t, bin)
	h.capture = &member{name: "capture", bin: filepath.Join(bin, "capture"), dir: h.dir, env: []string{
		"CAPTURE_MYSQL_ADDR=" + capMaria,
		"CAPTURE_MYSQL_USER=" + h.db.CaptureUser,
		"CAPTURE_MYSQL_PASSWORD=" + h.db.CapturePassword,
		"CAPTURE_KAFKA_BROKERS=" + capKafka,
		"CAPTURE_SCHEMA_REGISTRY_URL=http://" + capReg + reg.Path,
		"CAPTURE_TOPIC_PREFIX=" + h.prefix,
		"CAPTURE_DATABASE_INCLUDE_LIST=" + h.dbName,
		"CAPTURE_SNAPSHOT_MODE=when_needed",
		"CAPTURE_TOPIC_CREATION_DEFAULT_PARTITIONS=3",
		"CAPTURE_TRANSACTION_TIMEOUT=" + captureTxnTimeout.String(),
		"CAPTURE_COMMIT_INTERVAL=100ms",
		"CAPTURE_SHUTDOWN_TIMEOUT=10s",
		"CAPTURE_METRICS_ADDR=127.0.0.1:0",
		"CAPTURE_LOG_LEVEL=info",
	}}
	// Two ingest processes, each the one member of its group (following
	// renames needs one process per source: see the schema-topic warning
	// in ingest/internal/pipeline/rename.go), writing the same topics into
	// two lakes: position deletes on format v2 under namespace <db>,
	// deletion vectors on format v3 under <prefix>_<db>.
	modes := [][]string{
		{"INGEST_DELETE_MODE=position", "INGEST_TABLE_FORMAT_VERSION=2", "INGEST_NAMESPACE_WITH_PREFIX=false"},
		{"INGEST_DELETE_MODE=dv", "INGEST_TABLE_FORMAT_VERSION=3", "INGEST_NAMESPACE_WITH_PREFIX=true"},
	}
	h.namespaces = []string{h.dbName, h.prefix + "_" + h.dbName}
	for i := range 2 {
		h.ingests = append(h.ingests, &member{name: fmt.Sprintf("ingest%d", i+1), bin: filepath.Join(bin, "ingest"), dir: h.dir, env: append([]string{
			"INGEST_KAFKA_BROKERS=" + ingKafka,
			"INGEST_GROUP_ID=" + testenv.Unique(t, fmt.Sprintf("g%d", i+1)),
			// The change topics and the schema-change topic <prefix>, from
			// which ingest follows renames.
			"INGEST_TOPIC_REGEX=" + regexp.QuoteMeta(h.prefix) + "(" + regexp.QuoteMeta("."+h.dbName+".") + ".*)?",
			"INGEST_SCHEMA_REGISTRY_URL=http://" + ingReg + reg.Path,
			"INGEST_CATALOG_URI=http://" + ingCat,
			"INGEST_S3_ENDPOINT=http://" + ingS3,
			"INGEST_S3_REGION=" + ice.Region,
			"INGEST_FLUSH_INTERVAL=1s",
			"INGEST_GROUP_SESSION_TIMEOUT=" + ingestSessionTimout.String(),
			"INGEST_SHUTDOWN_TIMEOUT=10s",
			"INGEST_STATE_DIR=" + filepath.Join(h.dir, fmt.Sprintf("ingest%d-state", i+1)),
			"INGEST_METRICS_ADDR=127.0.0.1:0",
			"INGEST_LOG_LEVEL=info",
		}, modes[i]...)})
	}
	h.members = append([]*member{h.capture}, h.ingests...)
	for _, m := range h.members {
		m.mu.Lock()
		m.startLocked(t)
		m.mu.Unlock()
	}
	t.Cleanup(func() {
		for _, m := range h.members {
			m.stop()
		}
	})
	h.logf("seed %d; database %s, topics %s.%s.*, processes %s", h.seed, h.dbName, h.prefix, h.dbName, h.dir)
}

// supervise restarts exited processes, as Kubernetes would.
func (h *harness) supervise(ctx context.Context) {
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			for _, m := range h.members {
				m.tend(h.t)
			}
		}
	}
}

// waitFlowing waits until the seeded rows are in the lake: capture
// snapshotted and ingest committed, before any fault.
func (h *harness) waitFlowing() {
	testenv.CheckFor(h.t, 3*time.Minute, time.Second, func() error {
		for _, ns := range h.namespaces {
			tbl, err := h.cat.LoadTable(h.t.Context(), table.Identifier{ns, "orders"})
			if err != nil || tbl.CurrentSnapshot() == nil {
				return fmt.Errorf("no %s.orders table with a snapshot in the lake yet (%v)", ns, err)
			}
		}
		return nil
	})
	h.waitCaptureLog(3*time.Minute, `msg="snapshot: done"`, "capture's initial snapshot is done")
	h.w.mu.Lock()
	h.w.snapEnd = len(h.w.log)
	h.w.mu.Unlock()
	h.w.keyless.Store(true)
	h.logf("the pipeline is flowing")
}

// A fault injects one failure and heals it before returning; it returns
// a description, or an error when it could not be injected (not counted).
type fault struct {
	kind   string
	weight int
	do     func(h *harness) (string, error)
}

var faultKinds = []fault{
	{"capture-kill9", 8, func(h *harness) (string, error) { return "", h.capture.signal(syscall.SIGKILL, 10*time.Second) }},
	{"capture-sigterm", 5, func(h *harness) (string, error) { return "", h.capture.signal(syscall.SIGTERM, 40*time.Second) }},
	{"ingest-kill9", 10, func(h *harness) (string, error) {
		m := h.ingests[h.rng.IntN(len(h.ingests))]
		return m.name, m.signal(syscall.SIGKILL, 10*time.Second)
	}},
	{"ingest-sigterm", 6, func(h *harness) (string, error) {
		m := h.ingests[h.rng.IntN(len(h.ingests))]
		return m.name, m.signal(syscall.SIGTERM, 40*time.Second)
	}},
	{"kafka-restart", 4, func(h *harness) (string, error) { return "", h.restart("kafka", h.pause(1, 3)) }},
	{"kafka-freeze", 2, func(h *harness) (string, error) {
		if err := h.stack("pause", "kafka"); err != nil {
			return "", err
		}
		time.Sleep(brokerFreeze)
		return fmt.Sprintf("SIGSTOP for %s (capture transaction timeout %s, ingest session timeout %s)", brokerFreeze, captureTxnTimeout, ingestSessionTimout),
			h.stack("resume", "kafka")
	}},
	{"minio-restart", 4, func(h *harness) (string, error) { return "", h.restart("minio", h.pause(1, 4)) }},
	{"catalog-restart", 4, func(h *harness) (string, error) { return "", h.restart("iceberg", h.pause(0, 2)) }},
	{"commit-409", 6, func(h *harness) (string, error) { return h.commitFault(faults.Conflict) }},
	{"commit-500", 5, func(h *harness) (string, error) { return h.commitFault(faults.ServerError) }},
	{"commit-503", 5, func(h *harness) (string, error) { return h.commitFault(faults.Unavailable) }},
	{"commit-timeout", 4, func(h *harness) (string, error) { return h.commitFault(faults.Timeout) }},
	{"commit-lost-answer", 6, func(h *harness) (string, error) { return h.commitFault(faults.Lost) }},
	{"mariadb-restart", 3, func(h *harness) (string, error) {
		h.w.gate.Lock() // no source transaction is in flight across the restart
		defer h.w.gate.Unlock()
		return "", h.restart("mariadb", h.pause(0, 2))
	}},
	{"binlog-purge", 2, (*harness).purge},
	{"net-latency", 8, func(h *harness) (string, error) {
		p, ms := h.proxies[h.rng.IntN(len(h.proxies))], 200+h.rng.IntN(1500)
		return h.toxic(p, "latency", map[string]any{"latency": ms, "jitter": ms / 4}, fmt.Sprintf("%s +%dms", p, ms))
	}},
	{"net-bandwidth", 6, func(h *harness) (string, error) {
		p, kb := h.proxies[h.rng.IntN(len(h.proxies))], 16+h.rng.IntN(240)
		return h.toxic(p, "bandwidth", map[string]any{"rate": kb}, fmt.Sprintf("%s %d KB/s", p, kb))
	}},
	{"net-cut", 8, func(h *harness) (string, error) {
		p, d := h.proxies[h.rng.IntN(len(h.proxies))], h.pause(1, 8)
		if err := h.tox.Enable(h.t.Context(), p, false); err != nil {
			return "", err
		}
		time.Sleep(d)
		return fmt.Sprintf("%s cut for %s", p, d), h.tox.Enable(h.t.Context(), p, true)
	}},
	{"registry-restart", 2, (*harness).registryRestart},
}

// pause is a random duration in [lo, hi) seconds.
func (h *harness) pause(lo, hi int) time.Duration {
	return time.Duration(lo*1000+h.rng.IntN((hi-lo)*1000)) * time.Millisecond
}

// nemesis injects n faults: first one of every kind in a random order
// (all of them when n allows), then kinds drawn by weight; it makes the
// writer's schema changes as it goes.
func (h *harness) nemesis(n int) map[string]int {
	order := h.rng.Perm(len(faultKinds))
	weights := 0
	for _, f := range faultKinds {
		weights += f.weight
	}
	kinds := map[string]int{}
	step := 0
	for done := 0; done < n; {
		var f fault
		if done < len(order) {
			f = faultKinds[order[done]]
		} else {
			r := h.rng.IntN(weights)
			for _, k := range faultKinds {
				if r -= k.weight; r < 0 {
					f = k
					break
				}
			}
		}
		time.Sleep(h.pause(0, 3)) // a random moment
		began := time.Now()
		what, err := f.do(h)
		if err != nil {
			h.logf("fault %s not injected: %v", f.kind, err)
			if h.t.Context().Err() != nil {
				h.t.Fatal("the test's time ran out")
			}
			continue
		}
		done++
		kinds[f.kind]++
		h.logf("fault %d/%d %s %s (%.1fs)", done, n, f.kind, what, time.Since(began).Seconds())
		for step < len(midRun) && float64(done)/float64(n) >= midRun[step].at {
			h.w.steps <- midRun[step].what
			h.logf("writer: %s", midRun[step].what)
			step++
		}
	}
	for ; step < len(midRun); step++ {
		h.w.steps <- midRun[step].what
	}
	return kinds
}

// stack runs deploy/local/stack.sh.
func (h *harness) stack(args ...string) error {
	ctx, cancel := context.WithTimeout(h.t.Context(), 4*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, h.stackSh, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("stack.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// restart stops a stack component, waits d and starts it again. A start
// that fails is retried: the component must come back for the run to
// mean anything.
func (h *harness) restart(component string, d time.Duration) error {
	if err := h.stack("stop", component); err != nil {
		return err
	}
	time.Sleep(d)
	var err error
	for range 3 {
		if err = h.stack("up", component); err == nil {
			return nil
		}
		h.logf("restarting %s: %v (retrying)", component, err)
	}
	h.t.Fatalf("%s did not come back: %v", component, err)
	return err
}

func (h *harness) toxic(proxy, typ string, attrs map[string]any, what string) (string, error) {
	name := typ + "-chaos"
	if err := h.tox.Toxic(h.t.Context(), proxy, name, typ, "downstream", attrs); err != nil {
		return "", err
	}
	d := h.pause(2, 8)
	time.Sleep(d)
	return fmt.Sprintf("%s for %s", what, d), h.tox.RemoveToxic(h.t.Context(), proxy, name)
}

// commitFault fails the next one to three table commits with f; a fault
// that no commit reached within 15 s is not counted.
func (h *harness) commitFault(f faults.CommitFault) (string, error) {
	want := 1 + h.rng.IntN(3)
	before, _ := h.cf.Injected()
	h.cf.Arm(f, want)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if now, _ := h.cf.Injected(); now[f]-before[f] >= want {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.cf.Disarm()
	now, commits := h.cf.Injected()
	got := now[f] - before[f]
	if got == 0 {
		return "", errors.New("no commit arrived while armed")
	}
	return fmt.Sprintf("%d commit(s) failed (%d commits through the proxy so far)", got, commits), nil
}

// purge makes capture's stored position leave the binlog: with capture
// caught up and stopped, the source rotates and purges its binlog up to
// the newest file; the restarted capture (snapshot mode when_needed) must
// snapshot again. The writer waits meanwhile, so every change is either
// on the topics before the purge or after the new snapshot.
func (h *harness) purge() (string, error) {
	h.w.gate.Lock()
	defer h.w.gate.Unlock()
	h.caughtUp(3 * time.Minute)
	h.capture.hold(true)
	defer h.capture.hold(false)
	if err := h.capture.signal(syscall.SIGTERM, 40*time.Second); err != nil {
		return "", err
	}
	admin := h.db.AdminDB(h.t, h.dbName)
	ctx := h.t.Context()
	if _, err := admin.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		return "", err
	}
	var file, pos string
	var rest []any
	rows, err := admin.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		return "", err
	}
	cols, _ := rows.Columns()
	for rows.Next() {
		dest := []any{&file, &pos}
		for range len(cols) - 2 {
			var s any
			rest = append(rest, &s)
			dest = append(dest, &s)
		}
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return "", err
		}
	}
	rows.Close()
	if _, err := admin.ExecContext(ctx, "PURGE BINARY LOGS TO '"+file+"'"); err != nil {
		return "", err
	}
	h.capture.mu.Lock()
	h.capture.startLocked(h.t)
	h.capture.mu.Unlock()
	h.capture.hold(false)
	h.caughtUp(3 * time.Minute) // re-snapshotted and streaming again
	return "binlog purged to " + file + "; capture snapshotted again", nil
}

// registryRestart restarts the schema registry, which keeps its schemas in
// memory: the test exports them first and imports them (ids kept) before
// the binaries can reach the registry again — they are cut off from it
// meanwhile, so nothing registers into an empty registry.
func (h *harness) registryRestart() (string, error) {
	ctx := h.t.Context()
	base := strings.TrimSuffix(testenv.RegistryURL(h.t), "/apis/ccompat/v7")
	// The binaries are cut off before the export, not after: a schema
	// registered between the two was lost with the restart, and its id
	// handed to the next schema registered after the import, so records
	// written under it decoded with another schema (a chaos-short run:
	// ren_b's first record read as zz_caught_up's). A registry that keeps
	// its storage (any real one) never reuses an id.
	for _, p := range []string{"capture-registry", "ingest-registry"} {
		if err := h.tox.Enable(ctx, p, false); err != nil {
			return "", err
		}
	}
	get, err := http.Get(base + "/apis/registry/v3/admin/export")
	if err != nil {
		return "", err
	}
	defer get.Body.Close()
	zip, err := io.ReadAll(get.Body)
	if err != nil {
		return "", err
	}
	if err := h.restart("registry", h.pause(0, 2)); err != nil {
		return "", err
	}
	resp, err := http.Post(base+"/apis/registry/v3/admin/import", "application/zip", strings.NewReader(string(zip)))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		h.t.Fatalf("importing the registry's schemas: %s: %s", resp.Status, body)
	}
	for _, p := range []string{"capture-registry", "ingest-registry"} {
		if err := h.tox.Enable(ctx, p, true); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("schemas exported and imported (%d bytes)", len(zip)), nil
}

// healAll undoes anything a failed fault may have left behind.
func (h *harness) healAll() {
	ctx := context.WithoutCancel(h.t.Context())
	h.cf.Disarm()
	for _, p := range h.proxies {
		_ = h.tox.Enable(ctx, p, true)
		for _, typ := range []string{"latency", "bandwidth"} {
			_ = h.tox.RemoveToxic(ctx, p, typ+"-chaos")
		}
	}
	_ = h.stack("resume", "kafka")
	if err := h.stack("up", "mariadb", "minio", "kafka", "registry", "iceberg"); err != nil {
		h.t.Fatal(err)
	}
	h.logf("healed: every proxy open, every component up")
}

// caughtUp writes a marker row and waits until capture published it: every
// change committed before is then on the topics.
func (h *harness) caughtUp(timeout time.Duration) {
	t := h.t
	admin := h.db.AdminDB(t, h.dbName)
	if _, err := admin.ExecContext(t.Context(), "CREATE TABLE IF NOT EXISTS zz_caught_up (id INT AUTO_INCREMENT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ExecContext(t.Context(), "INSERT INTO zz_caught_up VALUES ()"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := admin.QueryRowContext(t.Context(), "SELECT MAX(id) FROM zz_caught_up").Scan(&n); err != nil {
		t.Fatal(err)
	}
	topic := h.prefix + "." + h.dbName + ".zz_caught_up"
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	testenv.CheckFor(t, timeout, time.Second, func() error {
		var seen int64
		kafkatest.Consume(t, testenv.KafkaBrokers(t), topic, 0, time.Minute, func(r *kgo.Record) {
			if r.Value == nil {
				return
			}
			rec, err := dec.DecodeRecord(t.Context(), r)
			if err != nil {
				t.Fatal(err)
			}
			if after, ok := rec.Value["after"].(map[string]any); ok {
				if id, ok := after["id"].(int32); ok {
					seen = max(seen, int64(id))
				}
			}
		})
		if seen < int64(n) {
			return fmt.Errorf("capture has published marker row %d, want %d", seen, n)
		}
		return nil
	})
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// waitCaptureLog waits for the first capture process's log to hold text
// (what reads as done when it does).
func (h *harness) waitCaptureLog(d time.Duration, text, done string) {
	h.t.Helper()
	testenv.CheckFor(h.t, d, 200*time.Millisecond, func() error {
		b, err := os.ReadFile(h.capture.logPath(1))
		if err != nil || !strings.Contains(string(b), text) {
			return fmt.Errorf("waiting until %s: %q not in %s yet (%v)", done, text, h.capture.logPath(1), err)
		}
		return nil
	})
}
