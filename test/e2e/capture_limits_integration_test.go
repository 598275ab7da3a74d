//go:build integration

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// TestCaptureRecordTooLarge checks that a row over the record size limit
// stops capture with an error naming the table, the key and the setting,
// that nothing after it is published, and that a restart with a larger
// limit delivers it and what follows: nothing is dropped.
func TestCaptureRecordTooLarge(t *testing.T) {
	// Streaming only: a snapshot would add op=r reads of the rows, which
	// is right but not what this test counts.
	c := newCaptureEnv(t, "CAPTURE_SNAPSHOT_MODE=no_data")
	exec1(t, c, "CREATE TABLE big (id INT PRIMARY KEY, payload LONGBLOB)")
	bin := binary(t, "capture")
	small := append(append([]string{}, c.env...), "CAPTURE_MAX_RECORD_BYTES=65536", "CAPTURE_MAX_BUFFERED_BYTES=1048576")
	p := start(t, bin, small, "capture-small.log")
	waitLog(t, p, "Connected to server", 30*time.Second)

	exec1(t, c,
		"INSERT INTO big VALUES (1, REPEAT('a', 1000))",
		"INSERT INTO big VALUES (2, REPEAT('b', 300000))",
		"INSERT INTO big VALUES (3, REPEAT('c', 1000))",
	)
	testenv.Eventually(t, 60*time.Second, 100*time.Millisecond, p.exited, "capture to stop on the oversized row")
	out := p.output()
	for _, want := range []string{"record too large", c.dbName + ".big", `{"id":2}`, "max-record-bytes", "CAPTURE_MAX_RECORD_BYTES"} {
		if !strings.Contains(out, want) {
			t.Errorf("the error does not mention %q:\n%s", want, out)
		}
	}
	if p.err == nil {
		t.Error("capture exited 0 on an oversized row")
	}

	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	// Row 1 may or may not have been committed before the failure, rows 2
	// and 3 must not have been.
	before := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("big"), 0, time.Minute)
	for _, r := range before {
		if id := r.Key["id"]; id != int32(1) {
			t.Fatalf("record with id %v published although the transaction failed", id)
		}
	}

	large := append(append([]string{}, c.env...), "CAPTURE_MAX_RECORD_BYTES=1048576")
	p2 := start(t, bin, large, "capture-large.log")
	c.caughtUp(t, time.Minute) // the read ends at the end offsets: a record written twice included
	recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("big"), 3, 60*time.Second)
	p2.stop(t, 30*time.Second)
	var ids []any
	for _, r := range recs {
		ids = append(ids, r.Key["id"])
		src, _ := r.Value["source"].(map[string]any)
		t.Logf("record id=%v op=%s snapshot=%v pos=%v offset=%d", r.Key["id"], r.Op(), src["snapshot"], src["pos"], r.Offset)
	}
	if len(recs) != 3 || recs[1].Value["after"].(map[string]any)["payload"] == nil || len(recs[1].Value["after"].(map[string]any)["payload"].([]byte)) != 300000 {
		t.Fatalf("after the restart: ids %v, want 1, 2 (300000 bytes), 3 exactly once", ids)
	}
}
