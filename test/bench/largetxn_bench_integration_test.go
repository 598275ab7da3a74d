//go:build integration

package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/testenv"
)

// TestBenchLargeTransaction writes one source transaction of
// BINLAKE_BENCH_TXN_MB megabytes (default 2048) and streams it through
// capture, printing
//
//	LARGETXN mb=<n> rows=<r> seconds=<s> rss_mib=<m> max_buffered_mib=<b>
//
// where rss_mib is capture's peak resident memory: it must stay near the
// configured buffers, not grow with the transaction.
func TestBenchLargeTransaction(t *testing.T) {
	if os.Getenv("BINLAKE_BENCH") != "1" {
		t.Skip("set BINLAKE_BENCH=1 (make bench-large-txn)")
	}
	mb := 2048
	if v := os.Getenv("BINLAKE_BENCH_TXN_MB"); v != "" {
		mb, _ = strconv.Atoi(v)
	}
	m := testenv.MariaDBEnv(t)
	brokers := testenv.KafkaBrokers(t)
	db := m.CreateDatabase(t, "bigtxn")
	conn := m.AdminDB(t, db)
	mustExec(t, conn, "CREATE TABLE big (id BIGINT PRIMARY KEY, payload VARCHAR(8000) NOT NULL)")

	prefix := "cap_" + db
	const bufferedMiB = 64
	capture := startCapture(t, captureEnv(t, m, prefix, db, fmt.Sprintf("CAPTURE_MAX_BUFFERED_BYTES=%d", bufferedMiB<<20)))
	testenv.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		b, _ := os.ReadFile(capture.log)
		return strings.Contains(string(b), "Connected to server")
	}, "capture to connect")

	// One transaction: rows of 4000 bytes, inserted 2000 at a time.
	const rowBytes, perStmt = 4000, 2000
	rows := mb << 20 / rowBytes
	tx, err := conn.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for lo := 1; lo <= rows; lo += perStmt {
		hi := min(lo+perStmt-1, rows)
		if _, err := tx.ExecContext(t.Context(), fmt.Sprintf(
			"INSERT INTO big SELECT seq, RPAD(MD5(seq), %d, MD5(seq + 1)) FROM seq_%d_to_%d", rowBytes, lo, hi)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	committed := time.Now()
	t.Logf("wrote one transaction of %d rows (%d MiB) in %s", rows, mb, time.Since(start).Round(time.Millisecond))
	// The whole source transaction becomes visible in Kafka at once, in one
	// Kafka transaction: time it from the source commit.
	_, _, visible := measure(t, brokers, prefix+"."+db+".big", int64(rows), true, 30*time.Minute)
	seconds := visible.Sub(committed).Seconds()
	rss := peakRSS(t, capture.cmd.Process.Pid)
	fmt.Printf("LARGETXN mb=%d rows=%d seconds=%.2f rss_mib=%.0f max_buffered_mib=%d\n", mb, rows, seconds, rss, bufferedMiB)
}
