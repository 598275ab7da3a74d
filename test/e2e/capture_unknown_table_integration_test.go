//go:build integration

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestCaptureDroppedStagingTable is the ETL idiom read while capture lags:
// capture is stopped, a staging table is created, truncated, filled, altered
// and dropped, then capture starts again. The TRUNCATE names a table that
// no longer exists and that capture never knew: capture must log it with
// the table named, skip it and go on (it used to stop at that event, and
// at the same event after every restart), and a second restart too.
func TestCaptureDroppedStagingTable(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_LOG_LEVEL=info")
	exec1(t, c, "CREATE TABLE kv (id INT PRIMARY KEY, v INT NOT NULL)", "INSERT INTO kv VALUES (1, 1)")
	bin := binary(t, "capture")
	p := start(t, bin, c.env, "capture-0.log")
	waitLog(t, p, "Connected to server", 30*time.Second)
	c.caughtUp(t, time.Minute)
	p.stop(t, 30*time.Second)

	exec1(t, c,
		"CREATE TABLE IF NOT EXISTS stg (id INT PRIMARY KEY, x VARCHAR(10))",
		"TRUNCATE TABLE stg",
		"INSERT INTO stg VALUES (1, 'a'), (2, 'b')",
		"ALTER TABLE stg ADD COLUMN y INT",
		"TRUNCATE stg",
		"INSERT INTO kv SELECT id + 10, 2 FROM stg",
		"DROP TABLE stg",
		"INSERT INTO kv VALUES (2, 2)",
	)
	for i := 1; i <= 2; i++ {
		p = start(t, bin, c.env, "capture-"+string(rune('0'+i))+".log")
		if i == 1 {
			waitLog(t, p, "truncate of a table that no longer exists", time.Minute)
		} else {
			waitLog(t, p, "Connected to server", time.Minute)
		}
		// Every change after the staging table's is published: capture went on.
		c.caughtUp(t, time.Minute)
		if p.exited() {
			t.Fatalf("capture exited: %v\n%s", p.err, p.output())
		}
		if i == 1 {
			var skipped []string
			for _, l := range strings.Split(p.fullLog(t), "\n") {
				if strings.Contains(l, "truncate of a table that no longer exists") {
					skipped = append(skipped, l)
				}
			}
			if len(skipped) != 2 || !strings.Contains(skipped[0], "table="+c.dbName+".stg") {
				t.Errorf("want the two truncates of %s.stg logged as skipped, with the table named; got:\n%s", c.dbName, strings.Join(skipped, "\n"))
			}
		}
		p.stop(t, 30*time.Second)
	}
}
