//go:build integration

package e2e

import (
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

type captureEnv struct {
	db     testenv.MariaDB
	dbName string
	prefix string
	env    []string
}

func newCaptureEnv(t *testing.T, extra ...string) *captureEnv {
	t.Helper()
	db := testenv.MariaDBEnv(t)
	dbName := db.CreateDatabase(t, "e2e")
	prefix := testenv.Unique(t, "p")
	env := []string{
		"CAPTURE_MYSQL_ADDR=" + db.Addr,
		"CAPTURE_MYSQL_USER=" + db.CaptureUser,
		"CAPTURE_MYSQL_PASSWORD=" + db.CapturePassword,
		"CAPTURE_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","),
		"CAPTURE_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t),
		"CAPTURE_TOPIC_PREFIX=" + prefix,
		"CAPTURE_DATABASE_INCLUDE_LIST=" + dbName,
		"CAPTURE_METRICS_ADDR=127.0.0.1:0",
		"CAPTURE_LOG_LEVEL=debug",
	}
	return &captureEnv{db: db, dbName: dbName, prefix: prefix, env: append(env, extra...)}
}

func (c *captureEnv) topic(table string) string { return c.prefix + "." + c.dbName + "." + table }

// waitLog waits until a process's log contains substr, failing the test if
// the process exits first.
func waitLog(t *testing.T, p *proc, substr string, timeout time.Duration) {
	t.Helper()
	testenv.CheckFor(t, timeout, 100*time.Millisecond, func() error {
		if p.exited() {
			t.Fatalf("capture exited: %v\n%s", p.err, p.output())
		}
		if !strings.Contains(p.fullLog(t), substr) {
			return fmt.Errorf("no log line %q yet; the log ends:\n%s", substr, p.output())
		}
		return nil
	})
}

// caughtUp inserts a row into a marker table of c's database and waits
// until capture has published it. capture commits the binlog in order, so
// every change made before the call is then on its topics: a state to wait
// for instead of a quiet period or a sleep. The marker table is created by
// the first call, after any snapshot; include lists must let it through.
func (c *captureEnv) caughtUp(t *testing.T, timeout time.Duration) {
	t.Helper()
	exec1(t, c, "CREATE TABLE IF NOT EXISTS zz_caught_up (id INT AUTO_INCREMENT PRIMARY KEY)", "INSERT INTO zz_caught_up VALUES ()")
	var n int
	if err := c.db.AdminDB(t, c.dbName).QueryRowContext(t.Context(), "SELECT COUNT(*) FROM zz_caught_up").Scan(&n); err != nil {
		t.Fatal(err)
	}
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("zz_caught_up"), n, timeout)
}

func exec1(t *testing.T, c *captureEnv, stmts ...string) {
	t.Helper()
	db := c.db.AdminDB(t, c.dbName)
	for _, s := range stmts {
		if _, err := db.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestCaptureChangeKinds runs capture as a process and checks every kind
// of change arrives as Debezium emits it: c, u, d followed by a tombstone,
// a primary-key update as d + tombstone + c with the key headers, t for
// TRUNCATE, and an ALTER TABLE picked up by the next change's schema.
func TestCaptureChangeKinds(t *testing.T) {
	c := newCaptureEnv(t)
	exec1(t, c, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, amount DECIMAL(10,2), note TEXT)")
	p := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, p, "Connected to server", 30*time.Second)

	exec1(t, c,
		"INSERT INTO t VALUES (1, 'one', 1.50, NULL), (2, 'two', -2.25, 'ü😀')",
		"UPDATE t SET name = 'TWO' WHERE id = 2",
		"UPDATE t SET id = 3 WHERE id = 1",
		"DELETE FROM t WHERE id = 2",
		"TRUNCATE TABLE t",
		"ALTER TABLE t ADD COLUMN extra INT NOT NULL DEFAULT 7",
		"INSERT INTO t (id, name) VALUES (9, 'nine')",
	)
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	c.caughtUp(t, time.Minute) // the read ends at the end offsets: a record written twice included
	recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("t"), 10, 60*time.Second)
	p.stop(t, 30*time.Second)

	type want struct {
		op      string
		key     any // id, or nil for a null key
		tomb    bool
		check   func(r kafkatest.Record) error
		headers map[string]string
	}
	after := func(field string, v any) func(r kafkatest.Record) error {
		return func(r kafkatest.Record) error {
			a, _ := r.Value["after"].(map[string]any)
			if fmt.Sprint(a[field]) != fmt.Sprint(v) {
				return fmt.Errorf("after.%s = %v, want %v", field, a[field], v)
			}
			return nil
		}
	}
	wants := []want{
		{op: "c", key: 1, check: func(r kafkatest.Record) error {
			a := r.Value["after"].(map[string]any)
			if amt, ok := a["amount"].(*big.Rat); !ok || amt.Cmp(big.NewRat(3, 2)) != 0 {
				return fmt.Errorf("amount = %v, want 1.50", a["amount"])
			}
			if a["note"] != nil {
				return fmt.Errorf("note = %v, want null", a["note"])
			}
			return after("name", "one")(r)
		}},
		{op: "c", key: 2, check: func(r kafkatest.Record) error {
			if amt, _ := r.Value["after"].(map[string]any)["amount"].(*big.Rat); amt == nil || amt.Cmp(big.NewRat(-9, 4)) != 0 {
				return fmt.Errorf("amount = %v, want -2.25", amt)
			}
			return after("note", "ü😀")(r)
		}},
		{op: "u", key: 2, check: func(r kafkatest.Record) error {
			if b := r.Value["before"].(map[string]any); b["name"] != "two" {
				return fmt.Errorf("before.name = %v", b["name"])
			}
			return after("name", "TWO")(r)
		}},
		{op: "d", key: 1, headers: map[string]string{"__debezium.newkey": `{"id":3}`, "__debezium.context.connectorName": "mariadb"}},
		{tomb: true, key: 1, headers: map[string]string{"__debezium.newkey": `{"id":3}`}},
		{op: "c", key: 3, headers: map[string]string{"__debezium.oldkey": `{"id":1}`}, check: after("name", "one")},
		{op: "d", key: 2},
		{tomb: true, key: 2},
		{op: "t", key: nil},
		{op: "c", key: 9, check: after("extra", 7)},
	}
	if len(recs) != len(wants) {
		for _, r := range recs {
			t.Logf("%s key=%v value=%s", r.Op(), r.Key, kafkatest.JSON(r.Value))
		}
		t.Fatalf("got %d records, want %d", len(recs), len(wants))
	}
	for i, w := range wants {
		r := recs[i]
		if w.tomb != (r.Value == nil) || (!w.tomb && r.Op() != w.op) {
			t.Fatalf("record %d: op %q tombstone=%v, want op %q tombstone=%v", i, r.Op(), r.Value == nil, w.op, w.tomb)
		}
		if w.key == nil {
			if r.Key != nil {
				t.Errorf("record %d: key %v, want null", i, r.Key)
			}
		} else if fmt.Sprint(r.Key["id"]) != fmt.Sprint(w.key) {
			t.Errorf("record %d: key %v, want id=%v", i, r.Key, w.key)
		}
		for k, v := range w.headers {
			if r.Headers[k] != v {
				t.Errorf("record %d: header %s = %q, want %q", i, k, r.Headers[k], v)
			}
		}
		if w.check != nil {
			if err := w.check(r); err != nil {
				t.Errorf("record %d (%s): %v", i, r.Op(), err)
			}
		}
		if r.Value != nil {
			src := r.Value["source"].(map[string]any)
			if src["connector"] != "mariadb" || src["name"] != c.prefix || src["db"] != c.dbName || src["table"] != "t" {
				t.Errorf("record %d: source %v", i, kafkatest.JSON(src))
			}
			if g, _ := src["gtid"].(string); !strings.HasPrefix(g, "0-1-") {
				t.Errorf("record %d: source.gtid %q", i, src["gtid"])
			}
			if src["snapshot"] != "false" {
				t.Errorf("record %d: source.snapshot %v, want false", i, src["snapshot"])
			}
		}
	}
	// The value schema is the Debezium envelope, registered under TopicNameStrategy.
	schema, err := dec.Schema(t.Context(), recs[0].ValueID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"name":"Envelope","namespace":"` + c.topic("t") + `"`, `"name":"Source","namespace":"io.debezium.connector.mariadb"`, `"connect.name":"` + c.topic("t") + `.Envelope"`} {
		if !strings.Contains(schema, s) {
			t.Errorf("value schema lacks %s:\n%s", s, schema)
		}
	}
}
