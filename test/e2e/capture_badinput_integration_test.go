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

// TestCaptureUnloggedDDL: an ALTER run with sql_log_bin=0 never reaches the
// binlog, so capture's recorded definition of the table is stale when the
// next rows arrive (a column's type changed, a column added). The rows
// events' table maps (binlog_row_metadata=FULL, which capture requires)
// carry the structure the rows were written with: capture must decode them
// with it, never with the stale definition, and say so naming the table.
func TestCaptureUnloggedDDL(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_LOG_LEVEL=info")
	exec1(t, c, "CREATE TABLE u (id INT PRIMARY KEY, v INT NOT NULL)", "INSERT INTO u VALUES (1, 10)")
	p := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, p, "Connected to server", 30*time.Second)
	c.caughtUp(t, time.Minute)

	db := c.db.AdminDB(t, c.dbName)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"SET SESSION sql_log_bin = 0", "ALTER TABLE u MODIFY v VARCHAR(20) NOT NULL, ADD COLUMN w INT NULL", "SET SESSION sql_log_bin = 1"} {
		if _, err := conn.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	_ = conn.Close()
	exec1(t, c, "INSERT INTO u VALUES (2, 'two', 5)", "UPDATE u SET v = '1x' WHERE id = 1")
	c.caughtUp(t, time.Minute)
	if p.exited() {
		t.Fatalf("capture exited: %v\n%s", p.err, p.output())
	}
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("u"), 3, time.Minute)
	var got []string
	for _, r := range recs {
		b, _ := r.Value["before"].(map[string]any)
		a, _ := r.Value["after"].(map[string]any)
		got = append(got, fmt.Sprintf("%s before=%v after=%v", r.Op(), kafkatest.JSON(b), kafkatest.JSON(a)))
	}
	want := []string{
		`r before=null after={"id":1,"v":10}`,
		`c before=null after={"id":2,"v":"two","w":5}`,
		`u before={"id":1,"v":"10","w":null} after={"id":1,"v":"1x","w":null}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records of u:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	log := p.fullLog(t)
	var warned string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "no DDL in the binlog") && strings.Contains(l, "table="+c.dbName+".u ") && strings.Contains(l, "binlog_pos=") {
			warned = l
		}
	}
	if warned == "" {
		t.Errorf("capture did not warn, naming u and the binlog position, that u changed with no DDL in the binlog:\n%s", p.output())
	}
	t.Logf("warned: %s", warned)
	p.stop(t, 30*time.Second)
}

// TestCaptureUnsupportedType: MariaDB 10.11's UUID, INET4 and INET6
// columns have no converter (schemas/TYPES.md): capture must stop at the
// table's first change with an error naming the table, the column and its
// type, rather than publish the column's bytes as something else.
func TestCaptureUnsupportedType(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_LOG_LEVEL=info")
	exec1(t, c, "CREATE TABLE ok (id INT PRIMARY KEY)")
	p := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, p, "Connected to server", 30*time.Second)
	c.caughtUp(t, time.Minute)
	exec1(t, c, "CREATE TABLE uu (id INT PRIMARY KEY, g UUID NOT NULL)", "INSERT INTO uu VALUES (1, '123e4567-e89b-12d3-a456-426655440000')")
	// Stopped, and stopped again at the same event after a restart.
	for i := range 2 {
		if i == 1 {
			p = start(t, binary(t, "capture"), c.env, "capture-again.log")
		}
		select {
		case <-p.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("capture did not stop at the UUID column:\n%s", p.output())
		}
		out := strings.TrimSpace(p.output())
		t.Logf("capture stopped with: %v: %s", p.err, out[strings.LastIndex(out, "\n")+1:])
		for _, want := range []string{c.dbName + ".uu", "at binlog mysql-bin.", "column g", "uuid", "table-exclude-list", "re-snapshot"} {
			if !strings.Contains(out, want) {
				t.Errorf("the error does not name %q:\n%s", want, out)
			}
		}
	}
	for topic, parts := range kafkatest.EndOffsets(t, testenv.KafkaBrokers(t), func(topic string) bool { return topic == c.topic("uu") }) {
		for part, end := range parts {
			if end > 0 {
				t.Errorf("%s/%d holds %d records: capture published rows of the table it cannot convert", topic, part, end)
			}
		}
	}
}
