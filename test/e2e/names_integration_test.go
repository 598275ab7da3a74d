//go:build integration

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/testenv"
)

// prefixTopics returns the end offset (uncommitted records and
// transaction markers included) of every topic whose name contains
// prefix.
func prefixTopics(t *testing.T, prefix string) map[string]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, name := range topics.Names() {
		if strings.Contains(name, prefix) {
			names = append(names, name)
		}
	}
	out := map[string]int64{}
	if len(names) == 0 {
		return out
	}
	ends, err := adm.ListEndOffsets(t.Context(), names...)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("%s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Topic] += o.Offset
	})
	return out
}

// storedPositions counts the records of the offsets topic keyed by id.
func storedPositions(t *testing.T, id string) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...),
		kgo.ConsumeTopics("__binlake-capture-offsets"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), "__binlake-capture-offsets")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	n := 0
	testenv.Eventually(t, 60*time.Second, 10*time.Millisecond, func() bool {
		fs := cl.PollRecords(t.Context(), 10000)
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) == id {
				n++
			}
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
		for p, end := range want {
			if end == 0 {
				delete(want, p)
			}
		}
		return len(want) == 0
	}, "reading the offsets topic to its end")
	return n
}

// TestCaptureNamesNoneStopsAtStart checks that with the default
// field-name-adjustment-mode none, a captured table with a column Avro
// cannot carry stops capture at start-up with an error naming the table,
// the column and the setting, and that capture wrote nothing to Kafka: no
// record on any of its topics and no stored position.
func TestCaptureNamesNoneStopsAtStart(t *testing.T) {
	c := newCaptureEnv(t)
	exec1(t, c, "CREATE TABLE fine (id INT PRIMARY KEY)", "INSERT INTO fine VALUES (1)",
		"CREATE TABLE `order items` (id INT PRIMARY KEY, `created at` DATETIME)", "INSERT INTO `order items` VALUES (1, NOW())")
	p := start(t, binary(t, "capture"), c.env, "capture.log")
	testenv.Eventually(t, 60*time.Second, 100*time.Millisecond, p.exited, "capture to stop on the column name")
	if p.err == nil {
		t.Fatalf("capture exited 0:\n%s", p.output())
	}
	out := p.output()
	for _, want := range []string{c.dbName + ".order items", `"created at"`, "field-name-adjustment-mode", "CAPTURE_FIELD_NAME_ADJUSTMENT_MODE", "avro"} {
		if !strings.Contains(out, want) {
			t.Errorf("the error does not mention %q:\n%s", want, out)
		}
	}
	for topic, end := range prefixTopics(t, c.prefix) {
		if end != 0 {
			t.Errorf("capture wrote %d records or markers to %s before stopping", end, topic)
		}
	}
	if n := storedPositions(t, c.prefix); n != 0 {
		t.Errorf("capture stored its position %d times before stopping", n)
	}
}

// TestCaptureNamesNoneStopsAtDDL checks that with mode none a DDL adding
// a column Avro cannot carry stops capture with the named error before
// anything of that DDL is written: the end offsets of capture's topics do
// not move (no schema-change event, not even an aborted one).
func TestCaptureNamesNoneStopsAtDDL(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_SNAPSHOT_MODE=no_data")
	p := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, p, "Connected to server", 30*time.Second)
	exec1(t, c, "CREATE TABLE prices (id INT PRIMARY KEY, amount INT)", "INSERT INTO prices VALUES (1, 1)")
	c.caughtUp(t, time.Minute)
	before := prefixTopics(t, c.prefix)
	if before[c.prefix] == 0 {
		t.Fatalf("no schema-change events on %s before the DDL: %v", c.prefix, before)
	}

	exec1(t, c, "ALTER TABLE prices ADD COLUMN `Amount€` INT", "INSERT INTO prices VALUES (2, 2, 2)")
	testenv.Eventually(t, 60*time.Second, 100*time.Millisecond, p.exited, "capture to stop on the column name")
	out := p.output()
	for _, want := range []string{c.dbName + ".prices", `"Amount€"`, "field-name-adjustment-mode", "CAPTURE_FIELD_NAME_ADJUSTMENT_MODE"} {
		if !strings.Contains(out, want) {
			t.Errorf("the error does not mention %q:\n%s", want, out)
		}
	}
	after := prefixTopics(t, c.prefix)
	for topic, end := range after {
		if end != before[topic] {
			t.Errorf("%s: end offset %d after the DDL, %d before: capture wrote to it", topic, end, before[topic])
		}
	}
}
