//go:build integration

package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/testenv"
)

// TestBenchPeer runs ingest and its peer, the Apache Iceberg Kafka Connect
// sink 1.12.0 (deploy/local/iceberg-sink.sh, test/bench/ikc/), over the
// same topic of BINLAKE_PEER_EVENTS change events (default 1,000,000; the
// workload of TestBenchIngest) into the same catalog and MinIO, one after
// the other: ingest once in each delete mode (printing TestBenchIngest's
// INGEST lines), then the sink, and prints
//
//	PEER name=iceberg-kafka-connect rows=<n> seconds=<s> rows_per_s=<r> commits=<c> rss_mib=<m> first_to_last_rows_per_s=<f>
//	RATIO name=iceberg-kafka-connect mode=<m> ratio=<ingest/peer> first_to_last=<ingest/peer>
//
// Both are timed from process start (the JVM's for the sink) to the commit
// that makes every event visible; first_to_last compares the rates between
// each one's first commit and its last. The sink is append-only (every
// event one row, deletes too), so it does less work per event than ingest,
// which keeps a mirror of the source by upserts. Its commit interval is
// ingest's flush interval (5 s) and its tasks.max the topic's partitions.
func TestBenchPeer(t *testing.T) {
	if os.Getenv("BINLAKE_BENCH") != "1" {
		t.Skip("set BINLAKE_BENCH=1 (make bench-peer)")
	}
	src := newChangeTopics(t, changeWorkload{tables: 1, partitions: 1, events: envInt(t, "BINLAKE_PEER_EVENTS", 1_000_000)})
	runs := ingestModes(t, src)
	p := runPeer(t, src, 1)
	fmt.Printf("PEER name=iceberg-kafka-connect rows=%d seconds=%.2f rows_per_s=%.0f commits=%d rss_mib=%.0f first_to_last_rows_per_s=%.0f\n",
		p.rows, p.seconds, float64(p.rows)/p.seconds, p.commits, p.rss, p.firstToLast)
	for _, mode := range deleteModes {
		r := runs[mode.name]
		// One commit (a short run) has no rate between commits.
		ftl := "n/a"
		if r.firstToLast > 0 && p.firstToLast > 0 {
			ftl = fmt.Sprintf("%.2f", r.firstToLast/p.firstToLast)
		}
		fmt.Printf("RATIO name=iceberg-kafka-connect mode=%s ratio=%.2f first_to_last=%s\n",
			mode.name, r.rate/(float64(p.rows)/p.seconds), ftl)
	}
}

// peerRun is one run of the Iceberg Kafka Connect sink.
type peerRun struct {
	rows, commits int
	seconds       float64 // JVM start to the commit that made every row visible
	firstToLast   float64 // rows committed after the first commit over the time to the last
	rss           float64
}

// runPeer runs the Iceberg Kafka Connect sink over src's topics (tasks.max
// = partitions) until its table peer_<db>.orders holds every event, and
// returns the figures read from the table's snapshots.
func runPeer(t *testing.T, src changeTopics, partitions int) peerRun {
	t.Helper()
	ice := testenv.IcebergEnv(t)
	brokers := testenv.KafkaBrokers(t)
	name := "peer-" + src.db
	control := "control-" + name
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The stack's broker creates no topics on its own, and the sink does
	// not create its control topic.
	if _, err := kadm.NewClient(cl).CreateTopic(t.Context(), 1, 1, nil, control); err != nil {
		t.Fatalf("creating the control topic: %v", err)
	}
	registry := strings.TrimSuffix(testenv.RegistryURL(t), "/apis/ccompat/v7") + "/apis/registry/v3"
	props := peerProperties(t, map[string]string{
		"name":                                            name,
		"topics":                                          strings.Join(src.topics, ","),
		"tasks.max":                                       strconv.Itoa(partitions),
		"key.converter.apicurio.registry.url":             registry,
		"value.converter.apicurio.registry.url":           registry,
		"iceberg.catalog.uri":                             ice.URI,
		"iceberg.catalog.warehouse":                       ice.Warehouse,
		"iceberg.catalog.s3.endpoint":                     ice.S3Endpoint,
		"iceberg.catalog.s3.access-key-id":                ice.AccessKey,
		"iceberg.catalog.s3.secret-access-key":            ice.SecretKey,
		"iceberg.catalog.client.region":                   ice.Region,
		"iceberg.control.topic":                           control,
		"iceberg.control.commit.interval-ms":              "5000",
		"iceberg.kafka.bootstrap.servers":                 strings.Join(brokers, ","),
		"transforms.dbz.cdc.target.pattern":               "peer_{db}.{table}",
		"iceberg.tables.auto-create-props.format-version": "2",
	})
	dir := t.TempDir()
	propsFile := filepath.Join(dir, "connector.properties")
	if err := os.WriteFile(propsFile, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	// Assemble the plugin before the clock starts (a no-op once cached).
	script := filepath.Join(debezium.RepoRoot(), "deploy", "local", "iceberg-sink.sh")
	if out, err := exec.Command("bash", script, "install").CombinedOutput(); err != nil {
		t.Fatalf("iceberg-sink.sh install: %v\n%s", err, out)
	}
	logPath := filepath.Join(dir, "connect.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	// The script execs the JVM: the child's pid is the JVM's.
	jvm := exec.Command("bash", script, "run", filepath.Join(dir, "worker"), propsFile)
	jvm.Stdout, jvm.Stderr = logf, logf
	start := time.Now()
	if err := jvm.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = jvm.Wait(); close(exited) }()
	defer func() {
		_ = jvm.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = jvm.Process.Kill()
			<-exited
		}
	}()

	cat, err := rest.NewCatalog(t.Context(), "bench", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"peer_" + src.db, "orders"}
	t.Cleanup(func() { _ = cat.DropTable(t.Context(), ident) })
	var tbl *table.Table
	var rss float64
	testenv.CheckFor(t, 30*time.Minute, time.Second, func() error {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the sink exited; log:\n%s", tail(b))
		default:
		}
		rss = peakRSS(t, jvm.Process.Pid)
		var err error
		if tbl, err = cat.LoadTable(t.Context(), ident); err != nil {
			return fmt.Errorf("loading %v: %w", ident, err)
		}
		if n := totalRecords(tbl.CurrentSnapshot()); n < src.events {
			return fmt.Errorf("%v holds %d of %d rows", ident, n, src.events)
		}
		return nil
	})
	snaps := tbl.Metadata().Snapshots()
	first, last := snaps[0], snaps[len(snaps)-1]
	r := peerRun{rows: totalRecords(&last), commits: len(snaps), rss: rss,
		seconds: time.UnixMilli(last.TimestampMs).Sub(start).Seconds()}
	if d := float64(last.TimestampMs-first.TimestampMs) / 1000; d > 0 {
		r.firstToLast = float64(r.rows-totalRecords(&first)) / d
	}
	if r.rows > src.events {
		t.Logf("the sink committed %d rows for %d events: duplicates", r.rows, src.events)
	}
	return r
}

// totalRecords is a snapshot's summary total-records (0 for none).
func totalRecords(s *table.Snapshot) int {
	if s == nil || s.Summary == nil {
		return 0
	}
	n, _ := strconv.Atoi(s.Summary.Properties["total-records"])
	return n
}

// peerProperties is test/bench/ikc/iceberg-peer.properties with the
// values of set replacing its own (and added where it has none).
func peerProperties(t *testing.T, set map[string]string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(debezium.RepoRoot(), "test", "bench", "ikc", "iceberg-peer.properties"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	done := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, _, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			if v, ok := set[k]; ok {
				line, done[k] = k+"="+v, true
			}
		}
		b.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if !done[k] {
			b.WriteString(k + "=" + v + "\n")
		}
	}
	return b.String()
}
