//go:build integration

package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/icebergreader"
	"github.com/binlake/binlake/test/testenv"
)

// noRewrite turns the in-ingest rewrite off, for the tests that check
// the delete files readers meet: it would rewrite the most deleted files
// away.
var noRewrite = []string{"INGEST_REWRITE_DEAD_FRACTION=0", "INGEST_REWRITE_DELETE_FILES=0", "INGEST_REWRITE_MANIFESTS=0"}

// readerModes are ingest's delete modes with the table format each is
// written in.
var readerModes = []struct{ mode, version string }{
	{"equality", "2"}, // equality-delete files
	{"position", "2"}, // Parquet position-delete files
	{"dv", "3"},       // deletion vectors (Puffin)
}

// TestIngestDeleteModesReaders writes every table of typesTables, through
// typesWorkload (inserts at each type's limits, NULLs, updates, deletes,
// key changes, a truncate, an ADD COLUMN, a bucketed table and a keyless
// change log), once in each delete mode: one database, one capture per
// mode (each its own topic prefix, so its own capture id and server id)
// and one ingest per mode into namespace <prefix>_<db>; each INSERT is
// committed before the statements after it, so every keyed table gets
// delete files of its mode (checked). Every table is
// then read by each of icebergreader.Readers (the Java reference reader,
// pyiceberg 0.12, DuckDB 1.5.5's iceberg extension and Spark 4.1 with
// Iceberg's runtime), each through its own engine, and compared with
// MariaDB value by value (lakecheck's canonical forms), except that
// pyiceberg, which does not read equality deletes, must refuse every table
// whose scan has one, saying so (ingest/README.md, "Readers").
func TestIngestDeleteModesReaders(t *testing.T) {
	// Beside TestIngestScheduledMaintenance, which mostly waits.
	t.Parallel()
	t0 := time.Now()
	// The readers' processes start now (a JVM, a Spark session) and come up
	// while the tables are written.
	for _, r := range icebergreader.Readers {
		icebergreader.Start(r)
	}
	c := newCaptureEnv(t, "CAPTURE_SNAPSHOT_MODE=no_data")
	exec1(t, c, typesTables...)
	ice := testenv.IcebergEnv(t)
	ings := map[string]*proc{}
	namespaces := map[string]string{}
	var captures []*proc
	for _, m := range readerModes {
		prefix := c.prefix + "_" + m.mode
		env := slices.Clone(c.env)
		for i, e := range env {
			if strings.HasPrefix(e, "CAPTURE_TOPIC_PREFIX=") {
				env[i] = "CAPTURE_TOPIC_PREFIX=" + prefix
			}
		}
		captures = append(captures, start(t, binary(t, "capture"), env, "capture-"+m.mode+".log"))
		namespaces[m.mode] = prefix + "_" + c.dbName
		// The readers must meet the mode's delete files.
		ings[m.mode] = start(t, binary(t, "ingest"), append([]string{
			"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","),
			"INGEST_GROUP_ID=" + testenv.Unique(t, "g"),
			"INGEST_TOPIC_REGEX=" + regexp.QuoteMeta(prefix+"."+c.dbName+".") + ".*",
			"INGEST_NAMESPACE_WITH_PREFIX=true",
			"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t),
			"INGEST_CATALOG_URI=" + ice.URI, "INGEST_S3_ENDPOINT=" + ice.S3Endpoint, "INGEST_S3_REGION=" + ice.Region,
			"INGEST_FLUSH_INTERVAL=1s", "INGEST_METRICS_ADDR=127.0.0.1:0",
			"INGEST_PARTITION_SPEC=*=none; " + c.dbName + ".buck=bucket(4, id)",
			// Explicit, whatever ingest's defaults are.
			"INGEST_DELETE_MODE=" + m.mode, "INGEST_TABLE_FORMAT_VERSION=" + m.version, "INGEST_STATE_DIR=" + t.TempDir(),
		}, noRewrite...), "ingest-"+m.mode+".log")
	}
	for _, cp := range captures {
		waitLog(t, cp, "Connected to server", 30*time.Second)
	}
	t.Logf("%s: captures connected", time.Since(t0).Round(time.Second))
	ctx := t.Context()
	cat, err := rest.NewCatalog(ctx, "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	var nss []string
	for _, m := range readerModes {
		nss = append(nss, namespaces[m.mode])
	}
	runCommitting(t, c, cat, nss, ings, typesWorkload)
	t.Logf("%s: workload run", time.Since(t0).Round(time.Second))

	db := c.db.AdminDB(t, c.dbName)
	if _, err := db.ExecContext(ctx, "SET time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // keep the session time zone
	tables := []keyedTable{{"ints", []string{"id"}}, {"nums", []string{"id"}}, {"strs", []string{"id"}}, {"times", []string{"id"}},
		{"geo", []string{"id"}}, {"buck", []string{"id"}}, {"nopk", nil}}

	// compare reads one table with reader until it equals MariaDB (or, with
	// refuse, until the reader refuses it naming equality deletes), as the
	// other lake tests poll: a deadline, and the last differences in the
	// failure. It returns the rows compared.
	compare := func(mode, reader string, tb keyedTable, refuse bool, timeout time.Duration) int {
		t.Helper()
		ns, ing := namespaces[mode], ings[mode]
		ident := table.Identifier{ns, tb.name}
		var last []string
		deadline := time.Now().Add(timeout)
		for {
			if ing.exited() {
				t.Fatalf("%s ingest exited: %v\n%s", mode, ing.err, ing.output())
			}
			var n int
			var diffs []string
			switch {
			case refuse:
				_, err := icebergreader.ReadWith(reader, ns+"."+tb.name)
				if err != nil && strings.Contains(err.Error(), "does not yet support equality deletes") {
					return 0
				}
				diffs = []string{fmt.Sprintf("want %s to refuse a table with equality deletes, naming them; got %v", reader, err)}
			case tb.key == nil:
				n, diffs = changeLogReaderEqualsMariaDB(ctx, t, cat, db, ident, tb.name, reader)
			default:
				n, diffs = readerEqualsMariaDB(ctx, t, cat, db, ident, tb.name, tb.key, reader)
			}
			if len(diffs) == 0 {
				return n
			}
			last = diffs
			if time.Now().After(deadline) {
				t.Fatalf("%s.%s (delete mode %s) read by %s differs from MariaDB:\n%s\ningest log:\n%s",
					ns, tb.name, mode, reader, strings.Join(last, "\n"), ing.output())
			}
			time.Sleep(time.Second) // polling interval: the loop compares again
		}
	}

	type tally struct{ rows, tables, refused int }
	results := map[string]map[string]*tally{}
	for _, m := range readerModes {
		results[m.mode] = map[string]*tally{}
		for _, r := range icebergreader.Readers {
			results[m.mode][r] = &tally{}
		}
		eqTables := 0
		for _, tb := range tables {
			// The Java reader first: once it agrees, ingest has committed
			// the whole workload, and the table's delete files are final.
			n := compare(m.mode, "java", tb, false, 3*time.Minute)
			results[m.mode]["java"].rows += n
			results[m.mode]["java"].tables++
			// Every keyed table's updates and deletes found its rows
			// committed (runCommitting), so it has delete files.
			eq := deleteFiles(t, cat, table.Identifier{namespaces[m.mode], tb.name}, m.mode, tb.key != nil)
			if eq {
				eqTables++
			}
			for _, r := range icebergreader.Readers[1:] {
				refuse := r == "pyiceberg" && eq
				n := compare(m.mode, r, tb, refuse, time.Minute)
				res := results[m.mode][r]
				if refuse {
					res.refused++
				} else {
					res.rows += n
					res.tables++
				}
			}
		}
		t.Logf("%s: delete mode %s compared", time.Since(t0).Round(time.Second), m.mode)
		if m.mode == "equality" && eqTables == 0 {
			t.Errorf("equality mode: no table has an equality delete, so pyiceberg's refusal was not checked")
		}
	}
	for _, m := range readerModes {
		for _, r := range icebergreader.Readers {
			res := results[m.mode][r]
			refused := ""
			if res.refused > 0 {
				refused = fmt.Sprintf("; refused %d tables with equality deletes, as expected", res.refused)
			}
			t.Logf("delete mode %s (format v%s), %s reader: %d rows of %d tables equal to MariaDB%s", m.mode, m.version, r, res.rows, res.tables, refused)
		}
	}
}

// runCommitting runs workload on c's database so that each INSERT into a
// table is committed by the ingest of every namespace in nss before the
// statements after it: the updates and deletes that follow then need
// delete files of the mode under test in every type family's table, not
// only in the bucketed one (deleteFiles checks they exist). The first INSERT into each table runs first, all of them,
// then one wait for all the new tables (ingest finds new topics every
// 10 s); the rest in order, with a wait after each later INSERT. The
// tables are independent, so this changes no table's history. The waits
// replace typesWorkload's pause (DO SLEEP), which guessed at ingest's
// discovery of new topics.
func runCommitting(t *testing.T, c *captureEnv, cat *rest.Catalog, nss []string, ings map[string]*proc, workload []string) {
	t.Helper()
	snapshot := func(ns, name string) int64 {
		tbl, err := cat.LoadTable(t.Context(), table.Identifier{ns, name})
		if err != nil || tbl.CurrentSnapshot() == nil {
			return 0
		}
		return tbl.CurrentSnapshot().SnapshotID
	}
	// committed waits until each of names has a snapshot in every
	// namespace other than the one in before (0: none).
	committed := func(names []string, before map[string]int64) {
		t.Helper()
		testenv.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
			for mode, ing := range ings {
				if ing.exited() {
					t.Fatalf("%s ingest exited: %v\n%s", mode, ing.err, ing.output())
				}
			}
			for _, ns := range nss {
				for _, name := range names {
					if id := snapshot(ns, name); id == 0 || id == before[ns+"."+name] {
						return fmt.Errorf("%s.%s: no snapshot committed since its last INSERT", ns, name)
					}
				}
			}
			return nil
		})
	}
	insertInto := func(s string) string {
		name, ok := strings.CutPrefix(s, "INSERT INTO ")
		if !ok {
			return ""
		}
		name, _, _ = strings.Cut(name, " ")
		return name
	}
	var first, rest []string
	seen := map[string]bool{}
	for _, s := range workload {
		switch name := insertInto(s); {
		case strings.HasPrefix(s, "DO SLEEP"):
		case name != "" && !seen[name]:
			seen[name] = true
			first = append(first, s)
		default:
			rest = append(rest, s)
		}
	}
	var names []string
	for _, s := range first {
		names = append(names, insertInto(s))
	}
	exec1(t, c, first...)
	committed(names, nil)
	for _, s := range rest {
		name := insertInto(s)
		before := map[string]int64{}
		for _, ns := range nss {
			before[ns+"."+name] = snapshot(ns, name)
		}
		exec1(t, c, s)
		if name != "" {
			committed([]string{name}, before)
		}
	}
}

// deleteFiles checks that the delete files of ident are those of mode (no
// equality delete in position and dv mode; no deletion vector but in dv
// mode, and no position-delete file in equality mode) and, for want, that
// the table has delete files of its mode at all. It reports whether the
// table's scan has an equality delete.
func deleteFiles(t *testing.T, cat *rest.Catalog, ident table.Identifier, mode string, want bool) bool {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.CurrentSnapshot() == nil {
		return false
	}
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, task := range tasks {
		kinds["equality"] += len(task.EqualityDeleteFiles)
		kinds["dv"] += len(task.DeletionVectorFiles)
		for _, d := range task.DeleteFiles {
			if d.ContentType() == iceberg.EntryContentPosDeletes && d.FileFormat() != iceberg.PuffinFile {
				kinds["position"]++
			} else {
				kinds["dv"]++
			}
		}
	}
	var got []string
	for k, n := range kinds {
		if n > 0 {
			got = append(got, fmt.Sprintf("%d %s", n, k))
			if k != mode {
				t.Errorf("%v (delete mode %s): its scan has %d %s delete files", ident, mode, n, k)
			}
		}
	}
	sort.Strings(got)
	if want && kinds[mode] == 0 {
		t.Errorf("%v (delete mode %s): no %s delete files: the workload did not exercise the mode", ident, mode, mode)
	}
	t.Logf("%v (delete mode %s): live delete files: %v", ident, mode, got)
	return kinds["equality"] > 0
}
