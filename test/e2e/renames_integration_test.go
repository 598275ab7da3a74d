//go:build integration

package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/testenv"
)

// renameTable is the schema of every table of the rename tests.
const renameTable = "(id INT PRIMARY KEY, v VARCHAR(20), n INT)"

// renameOpts are the variants of runRenames.
type renameOpts struct {
	debezium bool // also run the real Debezium connector into its own namespaces
	kills    bool // kill -9 ingest during the renames and capture right after them
	// processes is the number of ingest processes in the group (default
	// 1), partitions the partitions of every table topic (default 1).
	processes, partitions int
}

// runRenames changes tables before and after every rename form (RENAME
// TABLE, a swap, ALTER TABLE … ADD COLUMN, RENAME TO, a rename into another
// captured database, one out of the captured databases and one into them)
// with capture
// (and Debezium) → ingest, and waits until every renamed table, read with
// the Java reader, equals MariaDB under its new name, with the rows from
// before the rename; the old names are gone from the lake, and the table
// renamed out of the include list keeps the rows it had at the rename.
func runRenames(t *testing.T, o renameOpts) {
	ctx := t.Context()
	c := newCaptureEnv(t)
	if o.partitions > 1 {
		c.env = append(c.env, fmt.Sprintf("CAPTURE_TOPIC_CREATION_DEFAULT_PARTITIONS=%d", o.partitions))
	}
	db1 := c.dbName
	db2 := c.db.CreateDatabase(t, "e2r")
	db3 := c.db.CreateDatabase(t, "e2o") // not captured
	c.env = append(c.env, "CAPTURE_DATABASE_INCLUDE_LIST="+db1+","+db2)
	for _, tb := range []string{"a", "s1", "s3", "x", "m", "o"} {
		exec1(t, c, "CREATE TABLE "+tb+" "+renameTable)
	}
	// Keyed on a unique key, not a primary key (both producers key it on id).
	exec1(t, c, "CREATE TABLE u (id INT NOT NULL, v VARCHAR(20), n INT, UNIQUE KEY (id))")
	// Renamed into the captured databases later: its rows must be snapshotted.
	exec1(t, c, "CREATE TABLE `"+db3+"`.i "+renameTable, "INSERT INTO `"+db3+"`.i VALUES (1, 'i1', 1), (2, 'i2', 2), (3, 'i3', 3)")
	prefixes := []string{c.prefix}
	if o.debezium {
		dbzPrefix := "dbz_" + c.prefix
		prefixes = append(prefixes, dbzPrefix)
		extra := map[string]string{"database.include.list": db1 + "," + db2, "include.schema.changes": "true",
			// Without these Debezium 3.5 stops at the first change of the
			// table renamed into its include list: it kept no schema for it.
			"schema.history.internal.store.only.captured.tables.ddl":    "false",
			"schema.history.internal.store.only.captured.databases.ddl": "false"}
		if o.partitions > 1 {
			extra["topic.creation.default.partitions"] = fmt.Sprint(o.partitions)
			extra["topic.creation.default.replication.factor"] = "1"
		}
		debezium.Run(t, debezium.Config{Database: db1, TopicPrefix: dbzPrefix, ServerID: 6700 + uint32(time.Now().UnixNano()%100000),
			SnapshotMode: "no_data", Extra: extra})
	}
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 30*time.Second)

	ice := testenv.IcebergEnv(t)
	regex := "(" + strings.Join(prefixes, "|") + `)(\.(` + db1 + "|" + db2 + `)\..*)?`
	ingestEnv := []string{
		"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","),
		"INGEST_GROUP_ID=" + testenv.Unique(t, "g"),
		"INGEST_GROUP_SESSION_TIMEOUT=10s", // the kill -9 run: rejoin after 10 s, not 45 s
		"INGEST_TOPIC_REGEX=" + regex,
		"INGEST_NAMESPACE_WITH_PREFIX=true",
		"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t),
		"INGEST_CATALOG_URI=" + ice.URI, "INGEST_S3_ENDPOINT=" + ice.S3Endpoint, "INGEST_S3_REGION=" + ice.Region,
		"INGEST_FLUSH_INTERVAL=1s", "INGEST_METRICS_ADDR=127.0.0.1:0",
	}
	ingests := 0
	var all []*proc
	startIngest := func() *proc {
		ingests++
		p := start(t, binary(t, "ingest"), ingestEnv, fmt.Sprintf("ingest-%d.log", ingests))
		all = append(all, p)
		return p
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dir, err := os.MkdirTemp("", "binlake-"+t.Name()+"-")
		if err != nil {
			return
		}
		for i, p := range all {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("ingest-%d.log", i+1)), []byte(p.fullLog(t)), 0o644)
		}
		t.Logf("the ingest logs are kept in %s", dir)
	})
	ing := startIngest()
	var others []*proc // the group's other members
	for range o.processes - 1 {
		others = append(others, startIngest())
	}
	t.Cleanup(func() {
		for _, p := range others {
			if p.exited() {
				t.Errorf("an ingest process of the group exited: %v\n%s", p.err, p.output())
			} else if strings.Contains(p.fullLog(t), "still waiting for the schema-change topic") {
				t.Errorf("an ingest process waited on the schema-change topic:\n%s", p.output())
			}
		}
	})
	cat, err := rest.NewCatalog(ctx, "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		for _, p := range prefixes {
			for _, db := range []string{db1, db2} {
				ns := table.Identifier{p + "_" + db}
				for id, err := range cat.ListTables(ctx, ns) {
					if err == nil {
						_ = cat.DropTable(ctx, id)
					}
				}
				_ = cat.DropNamespace(ctx, ns)
			}
		}
	})

	// Before the renames: 40 rows per table, some updated, some deleted.
	for _, tb := range []string{"a", "s1", "s3", "x", "m", "o", "u"} {
		var vals []string
		for i := 1; i <= 40; i++ {
			vals = append(vals, fmt.Sprintf("(%d, '%s-%d', %d)", i, tb, i, i))
		}
		exec1(t, c, "INSERT INTO "+tb+" VALUES "+strings.Join(vals, ", "),
			"UPDATE "+tb+" SET n = n * 10 WHERE id % 3 = 0",
			"DELETE FROM "+tb+" WHERE id % 7 = 0")
	}
	// Let ingest commit the old tables first, so that the renames move
	// tables that hold rows and offsets.
	for _, p := range prefixes {
		for _, tb := range []string{"a", "s1", "s3", "x", "m", "o", "u"} {
			want := countRows(t, c.db.AdminDB(t, db1), tb)
			testenv.CheckFor(t, 3*time.Minute, time.Second, func() error {
				if ing.exited() {
					t.Fatalf("ingest exited: %v\n%s", ing.err, ing.output())
				}
				if got := lakeRowCount(ctx, cat, table.Identifier{p + "_" + db1, tb}); got != want {
					return fmt.Errorf("%s_%s.%s holds %d rows before the renames, want %d", p, db1, tb, got, want)
				}
				return nil
			})
		}
	}
	oRows := countRows(t, c.db.AdminDB(t, db1), "o")

	exec1(t, c,
		"RENAME TABLE a TO b",
		"RENAME TABLE s1 TO s2, s3 TO s1",
		"ALTER TABLE x ADD COLUMN w INT NULL, RENAME TO y",
		"RENAME TABLE m TO `"+db2+"`.m2",
		"RENAME TABLE o TO `"+db3+"`.o",
		"RENAME TABLE `"+db3+"`.i TO i",
		"RENAME TABLE u TO u2")
	if o.kills {
		waitLog(t, ing, "following a table rename", time.Minute)
		ing.kill()
		cp.kill()
		ing = startIngest()
		cp = start(t, binary(t, "capture"), c.env, "capture-2.log")
	}
	// After the renames, under the new names; a table took s1's old name.
	for _, tb := range []string{"b", "s2", "s1", "y", "`" + db2 + "`.m2", "`" + db3 + "`.o", "i", "u2"} {
		var vals []string
		for i := 101; i <= 120; i++ {
			vals = append(vals, fmt.Sprintf("(%d, 'new-%d', %d)", i, i, i))
		}
		exec1(t, c, "INSERT INTO "+tb+" (id, v, n) VALUES "+strings.Join(vals, ", "),
			"UPDATE "+tb+" SET v = CONCAT(v, '+') WHERE id % 4 = 0",
			"DELETE FROM "+tb+" WHERE id % 5 = 0")
	}
	exec1(t, c, "UPDATE y SET w = id WHERE id < 10")
	if o.kills {
		c.caughtUp(t, 2*time.Minute) // the restarted capture published everything
		ing.kill()
		ing = startIngest()
	}

	for _, p := range prefixes {
		ns1, ns2 := p+"_"+db1, p+"_"+db2
		for _, tb := range []string{"b", "s2", "s1", "y", "u2"} {
			waitJavaEqual(t, ing, cat, c.db.AdminDB(t, db1), ns1, tb)
		}
		waitJavaEqual(t, ing, cat, c.db.AdminDB(t, db2), ns2, "m2")
		if p == c.prefix {
			// Renamed in: capture snapshots it (Debezium does not; see capture/README.md).
			waitJavaEqual(t, ing, cat, c.db.AdminDB(t, db1), ns1, "i")
		}
		for _, gone := range []string{"a", "s3", "x", "m", "u"} {
			if ok, err := cat.CheckTableExists(ctx, table.Identifier{ns1, gone}); err != nil || ok {
				t.Errorf("%s.%s: still in the lake after its rename (err %v)", ns1, gone, err)
			}
		}
		// Renamed out of the captured databases: no more changes reach it,
		// it keeps the rows it had at the rename.
		// capture writes no event for it (the new name is not captured): the
		// lake table keeps its name. Debezium with its full schema history
		// reports the rename: ingest follows it into the new database's
		// namespace.
		id := table.Identifier{ns1, "o"}
		if p != c.prefix {
			id = table.Identifier{p + "_" + db3, "o"}
			t.Cleanup(func() {
				_ = cat.DropTable(context.WithoutCancel(ctx), id)
				_ = cat.DropNamespace(context.WithoutCancel(ctx), table.Identifier{id[0]})
			})
		}
		if got := lakeRowCount(ctx, cat, id); got != oRows {
			t.Errorf("%v has %d rows, want the %d it had at the rename", id, got, oRows)
		}
	}
	if strings.Contains(ing.fullLog(t), "still waiting for the schema-change topic") {
		t.Errorf("ingest waited on the schema-change topic:\n%s", ing.output())
	}
	t.Logf("every renamed table equals MariaDB through the Java reader with producers %v, %d ingest process(es)", prefixes, 1+len(others))
}

// lakeRowCount counts the rows of a lake table read with iceberg-go (equality
// deletes applied); -1 when it cannot be read.
func lakeRowCount(ctx context.Context, cat *rest.Catalog, id table.Identifier) int {
	tbl, err := cat.LoadTable(ctx, id)
	if err != nil {
		return -1
	}
	if tbl.CurrentSnapshot() == nil {
		return 0
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return -1
	}
	defer at.Release()
	return int(at.NumRows())
}

func countRows(t *testing.T, db *sql.DB, tb string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM "+tb).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitJavaEqual waits until ns.name, read with the Java reader, equals the
// MariaDB table name of db.
func waitJavaEqual(t *testing.T, ing *proc, cat *rest.Catalog, db *sql.DB, ns, name string) {
	t.Helper()
	ctx := t.Context()
	db.SetMaxOpenConns(1) // keep the session time zone
	if _, err := db.ExecContext(ctx, "SET time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	var last []string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if ing.exited() {
			t.Fatalf("ingest exited: %v\n%s", ing.err, ing.output())
		}
		_, diffs := javaEqualsMariaDB(ctx, t, cat, db, table.Identifier{ns, name}, name, []string{"id"})
		if len(diffs) == 0 {
			return
		}
		last = diffs
		if time.Now().After(deadline) {
			t.Fatalf("%s.%s differs from MariaDB through the Java reader:\n%s\ningest log:\n%s", ns, name, strings.Join(last, "\n"), ing.output())
		}
		time.Sleep(time.Second) // polling interval: the loop compares again
	}
}

// TestRenames: every rename form through capture and through the real
// Debezium connector, then three ingest processes in one group over
// 4-partition topics: every process follows the schema-change topics
// itself, and none waits on another's partitions.
func TestRenames(t *testing.T) {
	runRenames(t, renameOpts{debezium: true, processes: 3, partitions: 4})
}

// TestRenamesKill9: the same through capture, with ingest and capture
// killed (-9) while ingest follows the renames, and ingest again once the
// restarted capture has published the changes after them.
func TestRenamesKill9(t *testing.T) { runRenames(t, renameOpts{kills: true}) }

// TestRenamesCapture: every rename form through capture → ingest.
func TestRenamesCapture(t *testing.T) { runRenames(t, renameOpts{}) }
