//go:build integration

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// TestBenchSnapshot loads a table of BINLAKE_SNAPSHOT_BENCH_ROWS rows
// (default 5,000,000; the type mix of TestBenchCapture) and snapshots it
// with capture (snapshot-mode initial_only) and then, in the same run,
// with the Debezium MariaDB connector (snapshot.mode=initial, Apicurio
// Avro) into the same Kafka, one after the other, and prints
//
//	SNAPSHOT rows=<n> seconds=<s> rows_per_s=<r> debezium_rows_per_s=<d> ratio=<r/d> rss_mib=<m>
//
// capture is timed from its process start to its last committed record
// (start-up, table listing and schema registration included); Debezium
// from its first record to its last (the JVM's and Connect's start-up,
// its schema reads and its locks not counted against it). rss_mib is
// capture's peak resident set. Both topics are read back before the line
// is printed: each must hold exactly one op=r record per key and nothing
// else, so a partial run fails instead of reporting a rate. It then prints
//
//	SNAPSHOT_CPU rows=<n> cpu_s_per_m=<x>
//
// with x capture's user + system CPU seconds per million rows (the exited
// process's rusage, start-up included): the figure that decides the rate
// on a machine that also runs MariaDB and Kafka.
//
// For profiling, BINLAKE_SNAPSHOT_PEER=0 skips Debezium (and the SNAPSHOT
// line, which needs its rate), and BINLAKE_CAPTURE_PROFILE=<dir> writes
// capture's CPU profile to <dir>/capture-snapshot.pprof (go tool pprof
// -top). The profile covers the first BINLAKE_CAPTURE_PROFILE_SECONDS of
// capture's run (default 5), which must end before its snapshot does:
// capture exits when done (initial_only), which would cut the profile.
func TestBenchSnapshot(t *testing.T) {
	if os.Getenv("BINLAKE_BENCH") != "1" {
		t.Skip("set BINLAKE_BENCH=1 (make bench-snapshot)")
	}
	n := 5_000_000
	if v := os.Getenv("BINLAKE_SNAPSHOT_BENCH_ROWS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("BINLAKE_SNAPSHOT_BENCH_ROWS=%q: want a positive number", v)
		}
	}
	m := testenv.MariaDBEnv(t)
	brokers := testenv.KafkaBrokers(t)
	ctx := t.Context()
	db := m.CreateDatabase(t, "bsnap")
	conn := m.AdminDB(t, db)
	mustExec(t, conn, ordersDDL)

	// The load is kept out of the binlog (sql_log_bin=0 on one session):
	// both snapshots start at the current position, so it would only cost
	// time and disk.
	start := time.Now()
	loader, err := conn.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loader.ExecContext(ctx, "SET SESSION sql_log_bin = 0"); err != nil {
		t.Fatal(err)
	}
	const perStmt = 50_000
	for lo := 1; lo <= n; lo += perStmt {
		if _, err := loader.ExecContext(ctx, insertOrders("orders", lo, min(lo+perStmt-1, n))); err != nil {
			t.Fatal(err)
		}
	}
	loader.Close()
	mustExec(t, conn, "ANALYZE TABLE orders") // TABLE_ROWS, the estimate both show progress against
	t.Logf("loaded %d rows in %s", n, time.Since(start).Round(time.Millisecond))
	load := func(when string) {
		b, _ := os.ReadFile("/proc/loadavg")
		t.Logf("load average %s: %s", when, b)
	}
	load("before capture")

	capPrefix := "cap_" + db
	capTopic := capPrefix + "." + db + ".orders"
	dbzPrefix := "dbz_" + db
	dbzTopic := dbzPrefix + "." + db + ".orders"
	t.Cleanup(func() { deleteTopics(t, brokers, capTopic, dbzTopic) })

	env := captureEnv(t, m, capPrefix, db, "CAPTURE_SNAPSHOT_MODE=initial_only")
	var profiled chan error
	if dir := os.Getenv("BINLAKE_CAPTURE_PROFILE"); dir != "" {
		addr := freeAddr(t)
		env = append(env, "CAPTURE_METRICS_ADDR="+addr, "CAPTURE_PPROF=true") // the last of a variable wins
		profiled = make(chan error, 1)
		file, seconds := filepath.Join(dir, "capture-snapshot.pprof"), envInt(t, "BINLAKE_CAPTURE_PROFILE_SECONDS", 5)
		go func() { profiled <- fetchProfile(addr, file, seconds) }()
	}
	capture := startCapture(t, env)
	_, _, capLast := measure(t, brokers, capTopic, int64(n), true, 30*time.Minute)
	capSeconds := capLast.Sub(capture.started).Seconds()
	if profiled != nil {
		if err := <-profiled; err != nil {
			t.Fatalf("profiling capture (does BINLAKE_CAPTURE_PROFILE_SECONDS outlast the snapshot?): %v", err)
		}
	}
	select {
	case <-capture.exited:
		if capture.err != nil {
			t.Fatalf("capture: %v\n%s", capture.err, capture.logTail())
		}
	case <-time.After(time.Minute):
		t.Fatalf("capture (initial_only) did not exit after its snapshot\n%s", capture.logTail())
	}
	// The peak resident set of the exited child (getrusage ru_maxrss, KiB).
	rss := float64(capture.cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
	capCPU := cpuSeconds(capture.cmd.ProcessState)
	load("after capture")

	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	capCheck := checkSnapshotTopic(t, brokers, dec, capTopic, n, 10*time.Minute)
	t.Logf("capture topic: %s", capCheck)
	if !capCheck.complete(n) {
		t.Fatalf("capture's snapshot is not exactly one op=r per row: %s\n%s", capCheck, capture.logTail())
	}
	capRate := float64(n) / capSeconds
	printCPU := func() {
		fmt.Printf("SNAPSHOT_CPU rows=%d cpu_s_per_m=%.2f\n", n, capCPU/float64(n)*1e6)
	}
	if os.Getenv("BINLAKE_SNAPSHOT_PEER") == "0" {
		t.Logf("capture: %.2fs from process start, %.0f rows/s, peak RSS %.0f MiB; Debezium skipped (BINLAKE_SNAPSHOT_PEER=0)",
			capSeconds, capRate, rss)
		printCPU()
		return
	}

	// Debezium, alone, over the same table.
	name := "bsnap-" + db
	propsFile, script := debeziumWorker(t, m, name, debezium.Config{Database: db, TopicPrefix: dbzPrefix, SnapshotMode: "initial",
		ServerID: 7700 + uint32(time.Now().Unix()%1000)})
	load("before debezium")
	dbzStarted := time.Now()
	script("run", name, propsFile)
	dbzSeconds, _, dbzLast := measure(t, brokers, dbzTopic, int64(n), false, 60*time.Minute)
	load("after debezium")
	script("stop", name)
	dbzCheck := checkSnapshotTopic(t, brokers, dec, dbzTopic, n, 10*time.Minute)
	t.Logf("debezium topic: %s", dbzCheck)
	if !dbzCheck.complete(n) {
		t.Fatalf("Debezium's snapshot is not exactly one op=r per row: %s", dbzCheck)
	}

	dbzRate := float64(n) / dbzSeconds
	t.Logf("capture: %.2fs from process start; debezium: %.2fs first to last record, %.2fs from worker start",
		capSeconds, dbzSeconds, dbzLast.Sub(dbzStarted).Seconds())
	fmt.Printf("SNAPSHOT rows=%d seconds=%.2f rows_per_s=%.0f debezium_rows_per_s=%.0f ratio=%.2f rss_mib=%.0f\n",
		n, capSeconds, capRate, dbzRate, capRate/dbzRate, rss)
	printCPU()
}

// deleteTopics removes a benchmark's topics (millions of records) from the
// shared broker.
func deleteTopics(t *testing.T, brokers []string, topics ...string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).DeleteTopics(context.Background(), topics...); err != nil {
		t.Logf("deleting topics %v: %v", topics, err)
	}
}
