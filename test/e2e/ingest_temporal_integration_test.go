//go:build integration

package e2e

import (
	"github.com/apache/iceberg-go/table"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/testenv"
)

// temporalWorkload is the compat workload of every temporal limit (DATE,
// DATETIME(0-6), TIMESTAMP(0-6), TIME(0-6), YEAR, zero dates, year 0 and
// 1, non-UTC session zones, CURRENT_TIMESTAMP defaults), also run against
// Debezium by TestCompatRealWorld.
const temporalWorkload = "test/compat/testdata/realworld/50_temporal.sql"

// workloadStatements reads a realworld workload file: statements end with
// ';' at the end of a line, comment lines start with "--".
func workloadStatements(t *testing.T, path string) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(debezium.RepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	var cur strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			stmts = append(stmts, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		t.Fatalf("%s: statement without ';': %q", path, s)
	}
	return stmts
}

// TestIngestTemporalLimits runs the temporal compat workload through
// capture → ingest → Iceberg, once streamed and once snapshotted, and compares every table, read with Iceberg's
// Java reference reader, with MariaDB value for value in the canonical
// forms of package lakecheck (zero dates by its stated rule, everything
// else exactly). Debezium is not a producer here: it stops on nothing in
// this file but differs from MariaDB on YEAR 0000 and on years 0-99
// (TestCompatRealWorld lists those as allowed differences).
func TestIngestTemporalLimits(t *testing.T) {
	// binlog: the workload runs while capture streams; snapshot: it runs
	// before capture starts, which reads the tables by SELECT.
	for _, mode := range []string{"binlog", "snapshot"} {
		t.Run(mode, func(t *testing.T) { ingestTemporal(t, mode == "snapshot") })
	}
}

func ingestTemporal(t *testing.T, snapshot bool) {
	snapshotMode := "no_data"
	if snapshot {
		snapshotMode = "initial"
	}
	c := newCaptureEnv(t, "CAPTURE_SNAPSHOT_MODE="+snapshotMode)
	ice := testenv.IcebergEnv(t)
	ctx := t.Context()
	stmts := workloadStatements(t, temporalWorkload)
	var tables []keyedTable
	create := regexp.MustCompile(`^CREATE TABLE (\w+) `)
	for _, s := range stmts {
		if m := create.FindStringSubmatch(s); m != nil {
			tables = append(tables, keyedTable{m[1], []string{"id"}})
		}
	}
	if len(tables) < 10 {
		t.Fatalf("%s: %d tables, want the temporal families", temporalWorkload, len(tables))
	}

	// One connection: the file's SET sql_mode and SET time_zone apply to
	// the statements after them.
	runWorkload := func() {
		conn, err := c.db.AdminDB(t, c.dbName).Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, s := range stmts {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	if snapshot {
		runWorkload()
	}
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 30*time.Second)
	ing := start(t, binary(t, "ingest"), []string{
		"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","),
		"INGEST_GROUP_ID=" + testenv.Unique(t, "g"),
		"INGEST_TOPIC_REGEX=" + c.prefix + `\.` + c.dbName + `\..*`,
		"INGEST_NAMESPACE_WITH_PREFIX=true",
		"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t),
		"INGEST_CATALOG_URI=" + ice.URI, "INGEST_S3_ENDPOINT=" + ice.S3Endpoint, "INGEST_S3_REGION=" + ice.Region,
		"INGEST_FLUSH_INTERVAL=1s", "INGEST_METRICS_ADDR=127.0.0.1:0",
	}, "ingest.log")

	if !snapshot {
		runWorkload()
	}

	cat, err := rest.NewCatalog(ctx, "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	db := c.db.AdminDB(t, c.dbName)
	db.SetMaxOpenConns(1) // keep the session time zone
	if _, err := db.ExecContext(ctx, "SET time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	ns := c.prefix + "_" + c.dbName
	poll := time.NewTicker(time.Second) // each round reads the table again
	defer poll.Stop()
	compared := 0
	for _, tb := range tables {
		var last []string
		deadline := time.Now().Add(3 * time.Minute)
		for {
			if cp.exited() {
				t.Fatalf("capture exited: %v\n%s", cp.err, cp.output())
			}
			if ing.exited() {
				t.Fatalf("ingest exited: %v\n%s", ing.err, ing.output())
			}
			n, diffs := javaEqualsMariaDB(ctx, t, cat, db, table.Identifier{ns, tb.name}, tb.name, tb.key)
			if len(diffs) == 0 {
				compared += n
				break
			}
			last = diffs
			if time.Now().After(deadline) {
				t.Fatalf("%s.%s differs from MariaDB through the Java reader:\n%s\ningest log:\n%s",
					ns, tb.name, strings.Join(last, "\n"), ing.output())
			}
			select {
			case <-poll.C:
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
	}
	t.Logf("LAKE temporal (%s): %d rows of %d tables equal to MariaDB through the Java reader", snapshotMode, compared, len(tables))
}
