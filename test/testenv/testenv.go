// Package testenv gives integration and end-to-end tests the endpoints of the
// real local stack (deploy/local/stack.sh), read from the variables that
// `stack.sh env` prints.
//
// A test that asks for an endpoint that is not set is skipped, so that
// `go test -tags integration ./...` on a laptop without the stack reports
// skips rather than failures. `make integration` sets BINLAKE_REQUIRE_STACK=1,
// which turns a missing endpoint into a failure: CI never passes by skipping.
package testenv

import (
	"crypto/rand"
	"crypto/tls"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func get(t testing.TB, key string) string {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		if os.Getenv("BINLAKE_REQUIRE_STACK") == "1" {
			t.Fatalf("%s is not set; run: eval \"$(deploy/local/stack.sh env)\"", key)
		}
		t.Skipf("%s is not set; start the local stack (make stack-up) and eval \"$(deploy/local/stack.sh env)\"", key)
	}
	return v
}

// MariaDB describes the local MariaDB server and its users.
type MariaDB struct {
	Addr            string // host:port
	AdminUser       string // all privileges: workloads and DDL in tests
	AdminPassword   string
	CaptureUser     string // only the grants capture needs
	CapturePassword string
	// TLS, when set, is the client TLS configuration AdminDB connects
	// with (a private server with require_secure_transport=ON).
	TLS *tls.Config
}

// MariaDBEnv returns the MariaDB endpoint, or skips the test.
func MariaDBEnv(t testing.TB) MariaDB {
	t.Helper()
	return MariaDB{
		Addr:            get(t, "BINLAKE_MARIADB_ADDR"),
		AdminUser:       get(t, "BINLAKE_MARIADB_ADMIN_USER"),
		AdminPassword:   get(t, "BINLAKE_MARIADB_ADMIN_PASSWORD"),
		CaptureUser:     get(t, "BINLAKE_MARIADB_CAPTURE_USER"),
		CapturePassword: get(t, "BINLAKE_MARIADB_CAPTURE_PASSWORD"),
	}
}

// AdminDB opens a connection pool as the admin user, on database db ("" for
// none), closed when the test ends.
func (m MariaDB) AdminDB(t testing.TB, db string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", m.Addr, db
	cfg.User, cfg.Passwd = m.AdminUser, m.AdminPassword
	cfg.MultiStatements = true
	cfg.ParseTime = false
	if m.TLS != nil {
		cfg.TLS = m.TLS.Clone()
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatalf("configuring mariadb connection: %v", err)
	}
	pool := sql.OpenDB(conn)
	t.Cleanup(func() { _ = pool.Close() })
	if err := pool.PingContext(t.Context()); err != nil {
		t.Fatalf("connecting to mariadb at %s: %v", m.Addr, err)
	}
	return pool
}

// CreateDatabase creates a fresh database with a unique name and drops it
// when the test ends.
func (m MariaDB) CreateDatabase(t testing.TB, prefix string) string {
	t.Helper()
	name := Unique(t, prefix)
	admin := m.AdminDB(t, "")
	if _, err := admin.ExecContext(t.Context(), "CREATE DATABASE `"+name+"`"); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE IF EXISTS `" + name + "`") })
	return name
}

// KafkaBrokers returns the seed brokers, or skips the test.
func KafkaBrokers(t testing.TB) []string {
	t.Helper()
	return strings.Split(get(t, "BINLAKE_KAFKA_BROKERS"), ",")
}

// RegistryURL returns the base URL of the Confluent-compatible schema registry
// API, or skips the test.
func RegistryURL(t testing.TB) string {
	t.Helper()
	return get(t, "BINLAKE_SCHEMA_REGISTRY_URL")
}

// Iceberg describes the REST catalog and its S3 warehouse.
type Iceberg struct {
	URI        string
	Warehouse  string // s3://bucket/
	S3Endpoint string
	Bucket     string
	AccessKey  string
	SecretKey  string
	Region     string
}

// IcebergEnv returns the catalog endpoint, or skips the test.
func IcebergEnv(t testing.TB) Iceberg {
	t.Helper()
	return Iceberg{
		URI:        get(t, "BINLAKE_ICEBERG_URI"),
		Warehouse:  get(t, "BINLAKE_ICEBERG_WAREHOUSE"),
		S3Endpoint: get(t, "BINLAKE_S3_ENDPOINT"),
		Bucket:     get(t, "BINLAKE_S3_BUCKET"),
		AccessKey:  get(t, "AWS_ACCESS_KEY_ID"),
		SecretKey:  get(t, "AWS_SECRET_ACCESS_KEY"),
		Region:     get(t, "AWS_REGION"),
	}
}

// FileIOProps are the iceberg-go FileIO properties that reach MinIO.
func (i Iceberg) FileIOProps() map[string]string {
	return map[string]string{
		"s3.endpoint":          i.S3Endpoint,
		"s3.access-key-id":     i.AccessKey,
		"s3.secret-access-key": i.SecretKey,
		"s3.region":            i.Region,
		"client.region":        i.Region,
	}
}

var nonName = regexp.MustCompile(`[^a-z0-9_]+`)

// Unique returns a name made of prefix, the test name and a random suffix,
// usable as a database, topic, subject or namespace name, so that tests can
// run side by side and again on the same stack.
func Unique(t testing.TB, prefix string) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := nonName.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 24 {
		name = name[:24]
	}
	return prefix + "_" + name + "_" + hex.EncodeToString(b[:])
}

// CheckFor calls check every interval until it returns nil, and fails the
// test if it has not within timeout. check returns why the condition does
// not hold yet; the failure reports the last such reason, so that a timeout
// explains itself. The last call is made after the deadline, so a
// condition that became true during the last interval still passes. check
// runs on the test's goroutine and may call t.Fatal.
func CheckFor(t testing.TB, timeout, interval time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %s: %v", timeout, err)
			return
		}
		time.Sleep(interval) // polling interval: the loop re-checks the condition
	}
}

// Eventually is CheckFor for a condition that has no reason to give: it
// fails with msg. Prefer CheckFor when the state that keeps cond false can
// be described.
func Eventually(t testing.TB, timeout, interval time.Duration, cond func() bool, msg string) {
	t.Helper()
	CheckFor(t, timeout, interval, func() error {
		if cond() {
			return nil
		}
		return errors.New(msg)
	})
}
