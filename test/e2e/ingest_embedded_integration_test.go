//go:build integration

package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/binlake/binlake/test/icebergreader"
	"github.com/binlake/binlake/test/lakecheck"
	"github.com/binlake/binlake/test/testenv"
)

// TestIngestEmbeddedCatalog runs capture and ingest with no catalog URI:
// ingest keeps its tables in the embedded catalog (SQLite
// <state-dir>/catalog.db, a file warehouse under <state-dir>/warehouse).
// After inserts, updates, deletes and a primary-key update the table is
// read from the metadata file the SQLite catalog points at (the test
// reads iceberg_tables itself) by readers that share no code with ingest
// or iceberg-go: the Java reference reader (StaticTableOperations),
// pyiceberg (StaticTable) and DuckDB (iceberg_scan); each must equal
// MariaDB row for row, also after ingest restarts on the same state
// directory and resumes from it. ingest status, a dry-run ingest maintain
// and ingest replay --publish use the same catalog while ingest runs, and
// the REST catalog of the stack must not hold the table.
func TestIngestEmbeddedCatalog(t *testing.T) {
	t.Parallel() // mostly waits for capture, ingest and the readers
	readers := []string{"java", "pyiceberg", "duckdb"}
	for _, r := range readers {
		icebergreader.Start(r)
	}
	c := newCaptureEnv(t)
	exec1(t, c, typesDDL)
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 30*time.Second)

	stateDir := filepath.Join(t.TempDir(), "state")
	ident := table.Identifier{c.dbName, "t"}
	// The readers must read through the updates' deletes.
	ingestEnv := append([]string{
		"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","),
		"INGEST_GROUP_ID=" + testenv.Unique(t, "g"),
		"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t),
		"INGEST_CATALOG_URI=", // none: the embedded catalog
		"INGEST_STATE_DIR=" + stateDir,
	}, noRewrite...)
	runEnv := append([]string{
		"INGEST_TOPICS=" + c.topic("t"),
		"INGEST_FLUSH_INTERVAL=1s",
		"INGEST_METRICS_ADDR=127.0.0.1:0",
	}, ingestEnv...)
	ip := start(t, binary(t, "ingest"), runEnv, "ingest.log")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ingest log:\n%s", ip.output())
		}
	})
	waitLog(t, ip, "using the embedded catalog", 30*time.Second)
	catalogFile := filepath.Join(stateDir, "catalog.db")
	for _, want := range []string{"catalog_file=" + catalogFile, "warehouse=file://" + filepath.Join(stateDir, "warehouse")} {
		if !strings.Contains(ip.output(), want) {
			t.Errorf("the start log does not name %s:\n%s", want, ip.output())
		}
	}

	// Each statement committed before the next, so that the updates and
	// deletes need delete files in the table rather than collapsing in
	// one batch.
	steps := [][]string{
		{`INSERT INTO t VALUES
		 (1, 10000000000, 'one', 1.50, '2024-02-29 23:59:59.123456', '2024-01-01 10:00:00.123', '2024-02-29', '{"a": [1, 2]}', NULL),
		 (2, -5, 'two ü😀', -2.25, '1970-01-01 00:00:00.000000', '2038-01-19 03:14:07.999', '1999-12-31', NULL, 'x'),
		 (3, 0, '', 99999999.99, '9999-12-31 23:59:59.999999', '2001-09-09 01:46:40.000', '1000-01-01', '[]', 'n')`},
		{"UPDATE t SET name = 'TWO', amount = amount + 1, note = NULL WHERE id = 2", "UPDATE t SET id = 4 WHERE id = 1"},
		{"DELETE FROM t WHERE id = 3",
			"INSERT INTO t (id, b, name, amount, dt, d) VALUES (5, 5, 'five', 0.01, '2024-06-01 12:00:00', '2024-06-01')",
			"UPDATE t SET j = '{\"k\": \"v\"}' WHERE id = 5"},
	}
	db := c.db.AdminDB(t, c.dbName)
	if _, err := db.ExecContext(t.Context(), "SET time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // keep the session time zone
	var loc, firstLoc string
	for i, s := range steps {
		exec1(t, c, s...)
		loc = waitEmbeddedJavaEqual(t, ip, catalogFile, ident, db, 60*time.Second)
		t.Logf("step %d: the Java reader reads %s equal to MariaDB", i+1, filepath.Base(loc))
		if i == 0 {
			firstLoc = loc
		}
	}
	// A restart on the same state directory finds the table and its
	// offsets in the catalog file and goes on from there.
	ip.stop(t, 60*time.Second)
	ip = start(t, binary(t, "ingest"), runEnv, "ingest-2.log")
	exec1(t, c, "UPDATE t SET b = b + 1 WHERE id IN (2, 4)", "INSERT INTO t (id, b, name, amount, dt, d) VALUES (6, 6, 'six', 6, '2024-06-06 06:06:06', '2024-06-06')")
	loc = waitEmbeddedJavaEqual(t, ip, catalogFile, ident, db, 60*time.Second)
	t.Logf("after a restart: the Java reader reads %s equal to MariaDB", filepath.Base(loc))
	if strings.Contains(ip.output(), "created table") || strings.Contains(ip.output(), "table holds no offset") {
		t.Errorf("the restarted ingest did not find the table and its offsets in the embedded catalog:\n%s", ip.output())
	}
	if !strings.HasPrefix(loc, "file://"+filepath.Join(stateDir, "warehouse")+"/") {
		t.Errorf("metadata at %s, not in the state directory's warehouse", loc)
	}

	for _, r := range readers[1:] {
		n, diffs := compareMetadata(t, r, loc, ident, db)
		if len(diffs) > 0 {
			t.Errorf("%s reader of %s differs from MariaDB:\n%s", r, loc, strings.Join(diffs, "\n"))
			continue
		}
		t.Logf("%s reader: %d rows equal to MariaDB", r, n)
	}
	tbl := loadAt(t, ident, loc)
	if dels := deleteFileCount(t, tbl); dels == 0 {
		t.Errorf("no delete file in %s: the updates and deletes were not read through deletes", loc)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "keyindex")); err != nil {
		t.Errorf("no key index beside the catalog: %v", err)
	}

	// ingest status and ingest maintain take the same settings and read
	// the same catalog, while ingest runs.
	var rep struct {
		Tables []struct {
			Table string `json:"table"`
			Lag   int64  `json:"lag"`
		} `json:"tables"`
	}
	out := runIngest(t, ingestEnv, "status", "-format=json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("ingest status: %v\n%s", err, out)
	}
	name := c.dbName + ".t"
	if len(rep.Tables) != 1 || rep.Tables[0].Table != name || rep.Tables[0].Lag != 0 {
		t.Errorf("ingest status reports %+v, want %s with lag 0", rep.Tables, name)
	}
	out = runIngest(t, ingestEnv, "maintain", "-maintain-namespaces="+c.dbName, "-dry-run")
	if !strings.Contains(out, "using the embedded catalog") || !strings.Contains(out, c.dbName) || !strings.Contains(out, "tables=1 failed=0") {
		t.Errorf("ingest maintain did not maintain %s through the embedded catalog:\n%s", name, out)
	}

	// ingest replay rebuilds the table from the first step's snapshot in a
	// branch of the same catalog, beside the running ingest (whose key
	// index it must not take), and publishes it.
	first := loadAt(t, ident, firstLoc).CurrentSnapshot().SnapshotID
	out = runIngest(t, append([]string{"INGEST_METRICS_ADDR=off", "INGEST_FLUSH_INTERVAL=1s"}, ingestEnv...),
		"replay", "--tables", strings.ReplaceAll(name, ".", `\.`), "--from-snapshot", fmt.Sprint(first), "--publish")
	if !strings.Contains(out, "replay published") || !strings.Contains(out, "using the embedded catalog") {
		t.Errorf("ingest replay did not publish through the embedded catalog:\n%s", out)
	}
	replayed := waitEmbeddedJavaEqual(t, ip, catalogFile, ident, db, 60*time.Second)
	if replayed == loc {
		t.Errorf("the table's metadata is still %s after the replay published", filepath.Base(loc))
	}
	t.Logf("after ingest replay --publish: the Java reader reads %s equal to MariaDB", filepath.Base(replayed))

	// The stack's REST catalog never saw the table.
	ice := testenv.IcebergEnv(t)
	restCat, err := rest.NewCatalog(t.Context(), "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restCat.LoadTable(t.Context(), ident); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Errorf("the REST catalog has %s (%v): ingest did not use the embedded catalog", name, err)
	}
	ip.stop(t, 60*time.Second)
}

// runIngest runs the ingest binary with a subcommand and returns its
// output (stdout and stderr); it must succeed.
func runIngest(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t, "ingest"), args...)
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("ingest %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// metadataLocation reads the table's current metadata location from the
// SQLite catalog file itself (iceberg_tables, as the JDBC and iceberg-go
// SQL catalogs lay it out); "" while the table does not exist.
func metadataLocation(t *testing.T, catalogFile string, ident table.Identifier) string {
	t.Helper()
	dsn := (&url.URL{Scheme: "file", Path: catalogFile, RawQuery: "mode=ro&_busy_timeout=5000"}).String()
	db, err := sql.Open(sqliteshim.ShimName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var loc sql.NullString
	err = db.QueryRowContext(t.Context(), "SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? AND table_name = ?",
		ident[0], ident[1]).Scan(&loc)
	if errors.Is(err, sql.ErrNoRows) || (err != nil && strings.Contains(err.Error(), "no such table")) {
		return ""
	}
	if err != nil {
		t.Fatalf("reading the metadata location of %v from %s: %v", ident, catalogFile, err)
	}
	return loc.String
}

// loadAt loads the table at a metadata location (for its schema and
// files; the rows are read by the independent readers).
func loadAt(t *testing.T, ident table.Identifier, loc string) *table.Table {
	t.Helper()
	tbl, err := table.NewFromLocation(t.Context(), ident, loc, icebergio.LoadFSFunc(iceberg.Properties{}, loc), nil)
	if err != nil {
		t.Fatalf("loading %s: %v", loc, err)
	}
	return tbl
}

// waitEmbeddedJavaEqual waits until the Java reader, reading the table at the
// metadata location the catalog file holds, equals MariaDB; it returns
// that location.
func waitEmbeddedJavaEqual(t *testing.T, ip *proc, catalogFile string, ident table.Identifier, db *sql.DB, timeout time.Duration) string {
	t.Helper()
	var loc string
	testenv.CheckFor(t, timeout, time.Second, func() error {
		if ip.exited() {
			t.Fatalf("ingest exited: %v", ip.err)
		}
		if loc = metadataLocation(t, catalogFile, ident); loc == "" {
			return errors.New("no table in the catalog yet")
		}
		if _, diffs := compareMetadata(t, "java", loc, ident, db); len(diffs) > 0 {
			return fmt.Errorf("the Java reader of %s differs from MariaDB:\n%s", loc, strings.Join(diffs, "\n"))
		}
		return nil
	})
	return loc
}

// compareMetadata reads the table at loc with reader and compares it with
// the MariaDB table value by value: the number of rows and the
// differences.
func compareMetadata(t *testing.T, reader, loc string, ident table.Identifier, db *sql.DB) (int, []string) {
	t.Helper()
	tbl := loadAt(t, ident, loc)
	types := map[string]iceberg.Type{}
	var cols []string
	for _, f := range tbl.Schema().Fields() {
		if f.Name != lakecheck.SourceOrderColumn {
			cols = append(cols, f.Name)
			types[f.Name] = f.Type
		}
	}
	rows, err := icebergreader.ReadMetadataWith(reader, loc)
	if err != nil {
		return 0, []string{err.Error()}
	}
	conv := make([]map[string]*string, len(rows))
	for i, r := range rows {
		conv[i] = r
	}
	key := []string{"id"}
	got, err := lakecheck.FromJava(conv, cols, key, types)
	if err != nil {
		return 0, []string{reader + " reader: " + err.Error()}
	}
	want, err := lakecheck.MariaDB(t.Context(), db, ident[1], key, types)
	if err != nil {
		t.Fatal(err)
	}
	return len(want.ByKey), lakecheck.Diff(want, got, 20)
}

// deleteFileCount is the number of delete files of the table's current
// snapshot.
func deleteFileCount(t *testing.T, tbl *table.Table) int {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		n += len(task.DeleteFiles) + len(task.EqualityDeleteFiles)
	}
	return n
}
