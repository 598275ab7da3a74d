//go:build integration

package bench

import (
	"bufio"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/testenv"
)

const (
	inserts = 1_000_000
	updates = 200_000
	deletes = 100_000
	chunk   = 10_000
)

// TestBenchCapture streams 1,000,000 inserts, 200,000 updates and 100,000
// deletes of a table with a realistic mix of types through capture and, in
// the same run, through the Debezium MariaDB connector (Apicurio Avro
// converter) into the same Kafka, each reading the same binlog backlog
// alone, and prints
//
//	CAPTURE events=<n> seconds=<s> events_per_s=<r> debezium_events_per_s=<d> ratio=<r/d> rss_mib=<m>
//
// Debezium is timed from the first record it writes to its last (the JVM's
// and Connect's start-up are not counted against it); capture from its
// process start to its last commit.
func TestBenchCapture(t *testing.T) {
	if os.Getenv("BINLAKE_BENCH") != "1" {
		t.Skip("set BINLAKE_BENCH=1 (make bench-capture)")
	}
	m := testenv.MariaDBEnv(t)
	brokers := testenv.KafkaBrokers(t)
	ctx := t.Context()
	db := m.CreateDatabase(t, "bench")
	admin := m.AdminDB(t, "")
	conn := m.AdminDB(t, db)
	mustExec(t, conn, ordersDDL)

	// Debezium must know the table before the backlog: start it, let it
	// store its offsets, stop it (offsets kept), and restart it later.
	dbzPrefix := "dbz_" + db
	name := "bench-" + db
	propsFile, script := debeziumWorker(t, m, name, debezium.Config{Database: db, TopicPrefix: dbzPrefix, ServerID: 7700 + uint32(time.Now().Unix()%1000)})
	script("run", name, propsFile)
	script("wait", name, "180")
	mustExec(t, conn, "INSERT INTO orders (id, customer_id, status, amount, currency, created_at, flags) VALUES (0, 0, 'new', 0, 'EUR', NOW(), 0)")
	mustExec(t, conn, "DELETE FROM orders WHERE id = 0")
	waitEnd(t, brokers, dbzPrefix+"."+db+".orders", 3, time.Minute) // c, d, tombstone
	// Let Connect flush its offsets: two of its offset.flush.interval.ms
	// (1 s, deploy/local/debezium.sh). A fixed wait on purpose: the
	// standalone worker keeps them in a file of Java-serialized offsets
	// (not a topic) and acknowledges no flush, and the stored offset of
	// the last record need not name its transaction's GTID, so there is no
	// state to poll for.
	time.Sleep(2 * time.Second)
	script("stop", name)

	var gtidBefore string
	if err := admin.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&gtidBefore); err != nil {
		t.Fatal(err)
	}

	// The backlog.
	start := time.Now()
	writeOrders(t, conn, "orders", inserts, updates, deletes, chunk)
	var gtidAfter string
	if err := admin.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&gtidAfter); err != nil {
		t.Fatal(err)
	}
	t.Logf("backlog written in %s (gtid %s → %s)", time.Since(start).Round(time.Millisecond), gtidBefore, gtidAfter)
	const events = inserts + updates + deletes
	const records = events + deletes // tombstones

	// capture alone over the backlog.
	capPrefix := "cap_" + db
	capture := startCapture(t, captureEnv(t, m, capPrefix, db, "CAPTURE_START_POSITION=gtid:"+gtidBefore, "CAPTURE_SNAPSHOT_MODE=never"))
	_, capCommitted, capLast := measure(t, brokers, capPrefix+"."+db+".orders", records, true, 10*time.Minute)
	// capture commits in large transactions, so the first visible record
	// comes late: time it from its process start (start-up included), not
	// from its first record as for Debezium.
	capSeconds := capLast.Sub(capture.started).Seconds()
	rss := peakRSS(t, capture.cmd.Process.Pid)
	capture.stop()

	// Debezium alone over the same backlog.
	script("run", name, propsFile)
	dbzSeconds, dbzCount, _ := measure(t, brokers, dbzPrefix+"."+db+".orders", records+3, false, 20*time.Minute)
	script("stop", name)

	capRate := float64(events) / capSeconds
	dbzRate := float64(events) / dbzSeconds
	t.Logf("capture: %d offsets committed in %.2fs; debezium: %d records in %.2fs", capCommitted, capSeconds, dbzCount, dbzSeconds)
	fmt.Printf("CAPTURE events=%d seconds=%.2f events_per_s=%.0f debezium_events_per_s=%.0f ratio=%.2f rss_mib=%.0f\n",
		events, capSeconds, capRate, dbzRate, capRate/dbzRate, rss)
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), q); err != nil {
		t.Fatalf("%.200s: %v", q, err)
	}
}

// endOffset is the sum over partitions of the high watermark, or of the
// last stable offset for a transactional topic.
func endOffset(t *testing.T, adm *kadm.Client, topic string, committed bool) int64 {
	t.Helper()
	var l kadm.ListedOffsets
	var err error
	if committed {
		l, err = adm.ListCommittedOffsets(t.Context(), topic)
	} else {
		l, err = adm.ListEndOffsets(t.Context(), topic)
	}
	if err != nil {
		return -1
	}
	var sum int64
	l.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			sum += o.Offset
		}
	})
	return sum
}

func waitEnd(t *testing.T, brokers []string, topic string, want int64, timeout time.Duration) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	testenv.CheckFor(t, timeout, 100*time.Millisecond, func() error {
		if end := endOffset(t, adm, topic, false); end < want {
			return fmt.Errorf("%s ends at offset %d, want %d", topic, end, want)
		}
		return nil
	})
}

// measure polls a topic's end offset every 50 ms and returns the seconds
// from the first new record to the last, and the final end offset. A
// transactional topic's end offset counts commit markers too, so it is done
// when it has at least want and has not moved for 2 s; a plain topic when
// it has want.
func measure(t *testing.T, brokers []string, topic string, want int64, transactional bool, timeout time.Duration) (float64, int64, time.Time) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	base := max(endOffset(t, adm, topic, transactional), 0)
	var first, last time.Time
	var end int64 = base
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		now := time.Now()
		o := endOffset(t, adm, topic, transactional)
		if o > end {
			if first.IsZero() {
				first = now
			}
			end, last = o, now
		}
		if transactional && end >= want && now.Sub(last) >= 2*time.Second {
			return last.Sub(first).Seconds(), end, last
		}
		if !transactional && end >= want {
			return last.Sub(first).Seconds(), end, last
		}
		time.Sleep(50 * time.Millisecond) // polling interval: the loop re-reads the end offset
	}
	t.Fatalf("%s reached offset %d of %d in %s", topic, end, want, timeout)
	return 0, 0, time.Time{}
}

// peakRSS is a process's peak resident set (VmHWM) in MiB.
func peakRSS(t *testing.T, pid int) float64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return -1
}
