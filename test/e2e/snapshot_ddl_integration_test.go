//go:build integration

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// TestSnapshotAlterWhileReading adds a column to a table in the middle of
// its snapshot. MariaDB adds it without writing a row event, so the rows
// read before the ALTER and not yet emitted (the chunks read ahead, the
// row held back for the markers) must be read again: none may be lost and
// every row emitted after the ALTER has the new column.
func TestSnapshotAlterWhileReading(t *testing.T) {
	metrics := freePort(t)
	c := newCaptureEnv(t, "CAPTURE_LOG_LEVEL=info", "CAPTURE_SNAPSHOT_CHUNK_ROWS=500", "CAPTURE_COMMIT_INTERVAL=100ms",
		"CAPTURE_METRICS_ADDR="+metrics)
	const n = 300_000
	exec1(t, c, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR(32) NOT NULL)",
		fmt.Sprintf("INSERT INTO t SELECT seq, CONCAT('v', seq) FROM seq_1_to_%d", n))
	p := start(t, binary(t, "capture"), c.env, "capture.log")
	// ALTER once capture has emitted some rows (its own metrics), however
	// long it took to get there.
	testenv.CheckFor(t, time.Minute, 10*time.Millisecond, func() error {
		if n := emittedReads(metrics); !p.exited() && n < 1000 {
			return fmt.Errorf("capture emitted %d snapshot rows, want 1000 before the ALTER", n)
		}
		return nil
	})
	exec1(t, c, "ALTER TABLE t ADD COLUMN extra INT NOT NULL DEFAULT 7")
	if strings.Contains(p.fullLog(t), "snapshot: done") {
		// Not a skip: a run that cannot place the ALTER inside the
		// snapshot proves nothing and must not pass (make n larger).
		t.Fatalf("the snapshot of %d rows ended before the ALTER", n)
	}
	waitLog(t, p, "snapshot: done", 5*time.Minute)

	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("t"), n, 5*time.Minute)
	p.stop(t, 30*time.Second)
	seen := make([]int, n+1)
	withExtra, without := 0, 0
	for _, r := range recs {
		if r.Op() != "r" {
			t.Fatalf("offset %d: op %q; only snapshot reads expected", r.Offset, r.Op())
		}
		id := r.Key["id"].(int64)
		after := r.Value["after"].(map[string]any)
		if after["v"] != fmt.Sprintf("v%d", id) {
			t.Fatalf("key %d: v = %v", id, after["v"])
		}
		if x, ok := after["extra"]; ok {
			if x != int32(7) {
				t.Fatalf("key %d: extra = %v, want 7", id, x)
			}
			withExtra++
		} else {
			without++
		}
		seen[id]++
	}
	missing := 0
	for id := 1; id <= n; id++ {
		switch {
		case seen[id] == 0:
			missing++
			if missing <= 10 {
				t.Errorf("key %d: never emitted", id)
			}
		case seen[id] > 1:
			t.Errorf("key %d: emitted %d times", id, seen[id])
		}
	}
	t.Logf("%d records: %d before the ALTER, %d with the new column", len(recs), without, withExtra)
	if missing > 0 {
		t.Fatalf("%d of %d rows lost", missing, n)
	}
	if withExtra == 0 || without == 0 {
		t.Errorf("the ALTER did not land inside the snapshot (%d rows before it, %d after)", without, withExtra)
	}
}
