//go:build integration

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// TestInvalidDateStopsCapture checks that a day the month does not have
// (2021-02-31, stored by MariaDB under sql_mode ALLOW_INVALID_DATES), which
// no Debezium Date or Timestamp can carry, stops capture with an error
// naming the table, the column and the value, on the binlog path and on
// the snapshot path, and that nothing of that transaction is published:
// it is never moved to another day or turned into NULL. Debezium 3.5 stops
// on the same row ("Invalid date 'FEBRUARY 31'").
func TestInvalidDateStopsCapture(t *testing.T) {
	for _, tc := range []struct {
		name, mode, col, value string
	}{
		{"binlog date", "no_data", "d", "2021-02-31"},
		{"binlog datetime", "no_data", "dt", "2021-04-31 10:20:30.000001"},
		{"snapshot date", "initial", "d", "2021-02-29"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCaptureEnv(t, "CAPTURE_SNAPSHOT_MODE="+tc.mode)
			exec1(t, c, "CREATE TABLE inv (id INT PRIMARY KEY, d DATE NULL, dt DATETIME(6) NULL)",
				"INSERT INTO inv VALUES (1, '2021-02-28', '2021-04-30 00:00:00')")
			bad := "SET SESSION sql_mode = 'ALLOW_INVALID_DATES'; INSERT INTO inv (id, " + tc.col + ") VALUES (2, '" + tc.value + "')"
			if tc.mode == "initial" {
				exec1(t, c, bad) // before capture starts: read by the snapshot
			}
			p := start(t, binary(t, "capture"), c.env, "capture.log")
			if tc.mode != "initial" {
				waitLog(t, p, "Connected to server", 30*time.Second)
				exec1(t, c, bad)
			}
			testenv.Eventually(t, 60*time.Second, 100*time.Millisecond, p.exited, "capture to stop on the invalid date")
			out := p.fullLog(t)
			for _, want := range []string{c.dbName + ".inv", "converting column " + tc.col, tc.value, "ALLOW_INVALID_DATES"} {
				if !strings.Contains(out, want) {
					t.Errorf("the error does not mention %q:\n%s", want, p.output())
				}
			}
			if p.err == nil {
				t.Error("capture exited 0 on an invalid date")
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "ALLOW_INVALID_DATES") {
					t.Logf("capture stopped: %s", line)
					break
				}
			}
			dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("inv"), 0, time.Minute) {
				if r.Key["id"] != int32(1) {
					t.Errorf("record with id %v published: %v", r.Key["id"], r.Value["after"])
				}
			}
		})
	}
}
