//go:build integration

package bench

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/testenv"
)

// build compiles one of binlake's binaries into the test's directory.
func build(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/binlake/binlake/"+name).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return bin
}

// captureEnv is the environment of a capture of database db under prefix.
func captureEnv(t *testing.T, m testenv.MariaDB, prefix, db string, extra ...string) []string {
	t.Helper()
	return append(append(os.Environ(),
		"CAPTURE_MYSQL_ADDR="+m.Addr, "CAPTURE_MYSQL_USER="+m.CaptureUser, "CAPTURE_MYSQL_PASSWORD="+m.CapturePassword,
		"CAPTURE_KAFKA_BROKERS="+strings.Join(testenv.KafkaBrokers(t), ","), "CAPTURE_SCHEMA_REGISTRY_URL="+testenv.RegistryURL(t),
		"CAPTURE_TOPIC_PREFIX="+prefix, "CAPTURE_DATABASE_INCLUDE_LIST="+db, "CAPTURE_METRICS_ADDR=off"), extra...)
}

// ordersDDL is the benchmarks' table: a realistic mix of types.
const ordersDDL = `CREATE TABLE orders (id BIGINT NOT NULL PRIMARY KEY, customer_id INT NOT NULL,
	status ENUM('new','paid','shipped','cancelled') NOT NULL, amount DECIMAL(12,2) NOT NULL, currency CHAR(3) NOT NULL,
	note VARCHAR(200), created_at DATETIME(6) NOT NULL, updated_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	flags TINYINT UNSIGNED NOT NULL, attrs JSON)`

// writeOrders inserts ids 1..ins into table (of ordersDDL), then updates
// ids 1..upd and deletes the last del ids, chunk rows per statement (one
// transaction each), with varied values so that compression does not
// flatter anyone.
func writeOrders(t *testing.T, conn *sql.DB, table string, ins, upd, del, chunk int) {
	t.Helper()
	for lo := 1; lo <= ins; lo += chunk {
		mustExec(t, conn, insertOrders(table, lo, min(lo+chunk-1, ins)))
	}
	for lo := 1; lo <= upd; lo += chunk {
		mustExec(t, conn, fmt.Sprintf("UPDATE %s SET status = 'paid', amount = amount + 1, note = CONCAT(note, '+') WHERE id BETWEEN %d AND %d", table, lo, min(lo+chunk-1, upd)))
	}
	for lo := ins - del + 1; lo <= ins; lo += chunk {
		mustExec(t, conn, fmt.Sprintf("DELETE FROM %s WHERE id BETWEEN %d AND %d", table, lo, min(lo+chunk-1, ins)))
	}
}

// insertOrders is the statement inserting ids lo..hi into table (of
// ordersDDL), with varied values of every type of ordersDDL.
func insertOrders(table string, lo, hi int) string {
	return fmt.Sprintf(`INSERT INTO %s (id, customer_id, status, amount, currency, note, created_at, updated_at, flags, attrs)
			SELECT seq, seq %% 10007, ELT(1 + seq %% 4, 'new','paid','shipped','cancelled'), (seq * 7919 %% 10000000) / 100, 'EUR',
			       CONCAT('order ', seq, ' ', MD5(seq)), TIMESTAMP('2024-01-01') + INTERVAL seq SECOND + INTERVAL (seq %% 1000000) MICROSECOND,
			       TIMESTAMP('2024-06-01') + INTERVAL seq SECOND, seq %% 256, JSON_OBJECT('k', seq, 'tag', MD5(seq + 1))
			FROM seq_%d_to_%d`, table, lo, hi)
}

// captureProc is a running capture whose output goes to a log file.
type captureProc struct {
	cmd     *exec.Cmd
	log     string
	started time.Time     // just before the process started (after the build)
	exited  chan struct{} // closed when it has exited; err is then set
	err     error
}

// startCapture builds and starts capture with env; it is killed at the
// end of the test if still running.
func startCapture(t *testing.T, env []string) *captureProc {
	t.Helper()
	p := &captureProc{cmd: exec.Command(build(t, "capture")), log: filepath.Join(t.TempDir(), "capture.log"), exited: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr, p.cmd.Env = logf, logf, env
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// stop interrupts capture and waits for it to exit.
func (p *captureProc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	<-p.exited
}

// logTail is the end of capture's log, for failure messages.
func (p *captureProc) logTail() string {
	b, _ := os.ReadFile(p.log)
	return tail(b)
}

// debeziumWorker writes the properties of a Debezium MariaDB connector
// worker (deploy/local/debezium.sh) named name for cfg, and returns their
// file and a runner of the script's commands for that worker; the worker
// is reset (offsets and history deleted) before and after the test. Unlike
// debezium.Run, the caller drives it: the benchmarks time its run and
// stop it with its offsets kept.
func debeziumWorker(t *testing.T, m testenv.MariaDB, name string, cfg debezium.Config) (string, func(args ...string)) {
	t.Helper()
	props := debezium.Properties(name, cfg, m.Addr, os.Getenv("BINLAKE_MARIADB_DEBEZIUM_USER"),
		os.Getenv("BINLAKE_MARIADB_DEBEZIUM_PASSWORD"), testenv.RegistryURL(t))
	file := filepath.Join(t.TempDir(), name+".properties")
	if err := os.WriteFile(file, []byte(debezium.FormatProperties(props)), 0o600); err != nil {
		t.Fatal(err)
	}
	stack := os.Getenv("BINLAKE_STACK_DIR")
	script := func(args ...string) {
		t.Helper()
		cmd := exec.Command("bash", append([]string{debezium.Script()}, args...)...)
		cmd.Env = append(os.Environ(), "BINLAKE_STACK_DIR="+stack)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("debezium.sh %v: %v\n%s", args, err, out)
		}
	}
	script("reset", name)
	t.Cleanup(func() { script("reset", name) })
	return file, script
}
