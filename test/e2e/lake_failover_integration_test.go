//go:build integration

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/testenv"
)

// TestLakeFailover: capture streams a MariaDB primary into Kafka and ingest
// writes the lake; the primary's GTID replica (another binlog basename,
// other-bin, whose positions number lower) is promoted and capture is
// pointed at it (new address, resumed by GTID); then RESET MASTER on it
// (GTID state kept, binlog positions start over) and capture resumes
// again. Each phase truncates a table, truncates and reloads a table after
// a 3,600-row bulk load, changes a keyless table and moves a primary key.
// At the end every lake table equals the server. Before binlog histories
// (epochs) in the source order, every change after the failover to the
// truncated tables sorted below the stored truncate watermark and was
// dropped.
func TestLakeFailover(t *testing.T) {
	primary := testenv.PrivateMariaDB(t, testenv.PrivateMariaDBConfig{ServerID: 1})
	replica := testenv.PrivateMariaDB(t, testenv.PrivateMariaDBConfig{ServerID: 2, LogBin: "other-bin"})
	host, port, _ := strings.Cut(primary.Addr, ":")
	sql := func(m testenv.MariaDB, db string, stmts ...string) {
		t.Helper()
		conn := m.AdminDB(t, db)
		for _, s := range stmts {
			if _, err := conn.ExecContext(t.Context(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	sql(replica, "", fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=%s, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos",
		host, port, primary.AdminUser, primary.AdminPassword), "START SLAVE")

	dbName := testenv.Unique(t, "failover")
	sql(primary, "", "CREATE DATABASE `"+dbName+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
	sql(primary, dbName,
		"CREATE TABLE tr (id INT PRIMARY KEY, v VARCHAR(20))",
		"CREATE TABLE reload (id INT PRIMARY KEY, v VARCHAR(20))",
		"CREATE TABLE kl (a INT, b VARCHAR(20))",
		"CREATE TABLE pk (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO tr VALUES (1, 'before')", "INSERT INTO pk VALUES (1, 'one')")

	c := newCaptureEnvOn(t, primary, dbName)
	bin := binary(t, "capture")
	cp := start(t, bin, c.env, "capture-0.log")
	waitLog(t, cp, "Connected to server", 60*time.Second)
	r := startIngest(t, c, nil)
	r.cp = cp

	phase := func(m testenv.MariaDB, n int) {
		t.Helper()
		b := n * 10000
		sql(m, dbName,
			fmt.Sprintf("INSERT INTO tr VALUES (%d, 'a'), (%d, 'b'), (%d, 'c')", b+1, b+2, b+3),
			fmt.Sprintf("UPDATE tr SET v = 'a2' WHERE id = %d", b+1),
			"TRUNCATE TABLE tr",
			fmt.Sprintf("INSERT INTO tr VALUES (%d, 'after'), (%d, 'after')", b+4, b+5),
			fmt.Sprintf("UPDATE tr SET v = 'after2' WHERE id = %d", b+4),
			// The ETL idiom: a bulk load in two statements, a truncate
			// and a reload.
			fmt.Sprintf("INSERT INTO reload SELECT seq + %d, 'bulk' FROM seq_1_to_1800", b),
			fmt.Sprintf("INSERT INTO reload SELECT seq + %d, 'bulk' FROM seq_1801_to_3600", b),
			"TRUNCATE TABLE reload",
			fmt.Sprintf("INSERT INTO reload VALUES (%d, 'r1'), (%d, 'r2')", b+1, b+2),
			fmt.Sprintf("INSERT INTO reload VALUES (%d, 'r3'), (%d, 'r4')", b+3, b+4),
			fmt.Sprintf("INSERT INTO kl VALUES (%d, 'x'), (%d, 'y'), (%d, 'z')", n, n, n),
			fmt.Sprintf("UPDATE kl SET b = 'y2' WHERE a = %d AND b = 'y'", n),
			fmt.Sprintf("DELETE FROM kl WHERE a = %d AND b = 'z'", n),
			fmt.Sprintf("INSERT INTO pk VALUES (%d, 'p')", b+1),
			fmt.Sprintf("UPDATE pk SET id = %d WHERE id = %d", b+2, b+1),
			fmt.Sprintf("UPDATE pk SET v = 'phase%d' WHERE id = 1", n),
		)
	}
	// The replica has applied everything of the primary.
	synced := func() {
		t.Helper()
		var pos string
		if err := primary.AdminDB(t, "").QueryRowContext(t.Context(), "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
			t.Fatal(err)
		}
		var res int
		if err := replica.AdminDB(t, "").QueryRowContext(t.Context(), "SELECT MASTER_GTID_WAIT(?, 60)", pos).Scan(&res); err != nil || res != 0 {
			t.Fatalf("the replica did not reach %s: %d %v", pos, res, err)
		}
	}
	restart := func(m testenv.MariaDB, log string) {
		t.Helper()
		env := make([]string, 0, len(c.env))
		for _, e := range c.env {
			if strings.HasPrefix(e, "CAPTURE_MYSQL_ADDR=") {
				e = "CAPTURE_MYSQL_ADDR=" + m.Addr
			}
			env = append(env, e)
		}
		c.env, c.db = env, m
		r.cp = start(t, bin, c.env, log)
		waitLog(t, r.cp, "Connected to server", 60*time.Second)
	}

	phase(primary, 1)
	c.caughtUp(t, 2*time.Minute)
	synced()

	// Failover: capture stops, the replica is promoted, capture resumes
	// on it by GTID. A second passes first, so that the new history's
	// changes are of a later second than the old one's.
	r.cp.stop(t, 30*time.Second)
	time.Sleep(1100 * time.Millisecond)
	sql(replica, "", "STOP SLAVE", "RESET SLAVE ALL")
	restart(replica, "capture-1.log")
	phase(replica, 2)
	c.caughtUp(t, 2*time.Minute)

	// RESET MASTER on the serving server, keeping its GTID state (the
	// way a GTID-resuming reader can go on): binlog positions start over
	// on the same basename.
	r.cp.stop(t, 30*time.Second)
	var state string
	if err := replica.AdminDB(t, "").QueryRowContext(t.Context(), "SELECT @@gtid_binlog_state").Scan(&state); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	sql(replica, "", "RESET MASTER", fmt.Sprintf("SET GLOBAL gtid_binlog_state = '%s'", state))
	restart(replica, "capture-2.log")
	phase(replica, 3)

	res := r.compare(t)
	fmt.Printf("LAKE failover tables=%d rows=%d mismatches=%d\n", res.tables, res.rows, len(res.mismatches))
	if len(res.mismatches) > 0 {
		shown := res.mismatches
		if len(shown) > 30 {
			shown = shown[:30]
		}
		t.Errorf("the lake differs from the server in %d places; first:\n%s\ningest log:\n%s", len(res.mismatches), strings.Join(shown, "\n"), res.ingestLog)
	}
}
