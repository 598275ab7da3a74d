package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// PrivateMariaDBConfig configures a MariaDB server of the test's own.
type PrivateMariaDBConfig struct {
	// SystemZone is the server's TZ environment (its system_time_zone and,
	// with time_zone=SYSTEM, every session's zone), e.g. "Europe/Berlin".
	// Empty means UTC.
	SystemZone string
	// TimeZoneTables loads the named zones of /usr/share/zoneinfo into the
	// mysql.time_zone* tables (mariadb-tzinfo-to-sql), so that sessions can
	// SET time_zone='America/New_York'.
	TimeZoneTables bool
	// ServerArgs are more mariadbd options, e.g. --ssl-cert=... or
	// --require-secure-transport=ON.
	ServerArgs []string
	// ServerID is the server's server_id; 0 means 1.
	ServerID uint32
	// LogBin is the binlog basename; empty means mysql-bin.
	LogBin string
}

// PrivateMariaDB starts a MariaDB server of the test's own on a free
// loopback port, in a temporary datadir, with the binlog settings of the
// shared stack (deploy/local/stack.sh) and its three users and passwords
// (taken from the stack's environment), and stops it when the test ends.
// Use it where a test needs a server setting others share and must not
// change (a non-UTC system zone, zone tables). It skips the test when the
// stack's environment or the MariaDB binaries are missing.
func PrivateMariaDB(t testing.TB, cfg PrivateMariaDBConfig) MariaDB {
	t.Helper()
	shared := MariaDBEnv(t)
	dbzUser, dbzPassword := get(t, "BINLAKE_MARIADB_DEBEZIUM_USER"), get(t, "BINLAKE_MARIADB_DEBEZIUM_PASSWORD")
	for _, bin := range []string{"mariadbd", "mariadb-install-db", "mariadb", "mariadb-tzinfo-to-sql"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("BINLAKE_REQUIRE_STACK") == "1" {
				t.Fatalf("%s not found: install mariadb-server and mariadb-client", bin)
			}
			t.Skipf("%s not found: install mariadb-server and mariadb-client", bin)
		}
	}
	// The server runs as the invoking user, as the stack's does
	// (deploy/local/stack.sh): as root it must be told so.
	var user []string
	if os.Geteuid() == 0 {
		user = []string{"--user=root"}
	}
	base := t.TempDir()
	datadir := filepath.Join(base, "db")
	sock := filepath.Join(base, "mariadbd.sock")
	run := func(stdin []byte, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run(nil, "mariadb-install-db", append([]string{"--no-defaults"}, append(user, "--datadir="+datadir, "--tmpdir="+base,
		"--auth-root-authentication-method=normal", "--skip-test-db")...)...)

	port := freePort(t)
	serverID, logBin := cfg.ServerID, cfg.LogBin
	if serverID == 0 {
		serverID = 1
	}
	if logBin == "" {
		logBin = "mysql-bin"
	}
	srv := exec.Command("mariadbd", append(append([]string{"--no-defaults"}, user...), "--datadir="+datadir, "--tmpdir="+base, "--socket="+sock,
		"--pid-file="+filepath.Join(base, "mariadbd.pid"), "--log-error="+filepath.Join(base, "error.log"),
		fmt.Sprintf("--port=%d", port), "--bind-address=127.0.0.1", "--skip-name-resolve", fmt.Sprintf("--server-id=%d", serverID),
		"--log-bin="+filepath.Join(datadir, logBin), "--log-slave-updates=ON", "--binlog-format=ROW", "--binlog-row-image=FULL",
		"--binlog-row-metadata=FULL", "--gtid-strict-mode=ON", "--binlog-annotate-row-events=OFF",
		"--max-allowed-packet=256M", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
		"--innodb-buffer-pool-size=64M", "--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0")...)
	srv.Args = append(srv.Args, cfg.ServerArgs...)
	zone := cfg.SystemZone
	if zone == "" {
		zone = "UTC"
	}
	srv.Env = append(os.Environ(), "TZ="+zone)
	if err := srv.Start(); err != nil {
		t.Fatalf("starting mariadbd: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	t.Cleanup(func() {
		_ = srv.Process.Signal(os.Interrupt) // SIGINT: a clean shutdown
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = srv.Process.Kill()
			<-done
		}
	})
	root := func(stdin []byte, args ...string) {
		t.Helper()
		run(stdin, "mariadb", append([]string{"--no-defaults", "--socket=" + sock, "-uroot"}, args...)...)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for {
		if exec.CommandContext(ctx, "mariadb-admin", "--no-defaults", "--socket="+sock, "-uroot", "ping").Run() == nil {
			break
		}
		select {
		case err := <-done:
			log, _ := os.ReadFile(filepath.Join(base, "error.log"))
			t.Fatalf("mariadbd exited: %v\n%s", err, log)
		case <-ctx.Done():
			t.Fatalf("mariadbd on port %d not up after 60s", port)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if cfg.TimeZoneTables {
		zones, err := exec.Command("mariadb-tzinfo-to-sql", "/usr/share/zoneinfo").Output()
		if err != nil {
			t.Fatalf("mariadb-tzinfo-to-sql: %v", err)
		}
		root(zones, "mysql")
	}
	// The users are not binlogged: a replica of this server (another
	// private server with the same users) starts from an empty binlog.
	var users strings.Builder
	users.WriteString("SET sql_log_bin = 0;\n")
	for _, u := range []struct{ name, password, grants string }{
		{shared.AdminUser, shared.AdminPassword, "ALL PRIVILEGES ON *.* TO '%s'@'%%' WITH GRANT OPTION"},
		{shared.CaptureUser, shared.CapturePassword, "SELECT, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '%s'@'%%'"},
		{dbzUser, dbzPassword, "SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT, LOCK TABLES ON *.* TO '%s'@'%%'"},
	} {
		fmt.Fprintf(&users, "CREATE USER '%s'@'%%' IDENTIFIED BY '%s';\n", u.name, u.password)
		fmt.Fprintf(&users, "GRANT "+u.grants+";\n", u.name)
	}
	users.WriteString("FLUSH PRIVILEGES;\n")
	root([]byte(users.String()))
	m := shared
	m.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	return m
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
