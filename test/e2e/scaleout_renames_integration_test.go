//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/validate"
)

// stillWaiting is what an ingest process logs while it waits for the
// schema-change topic to be handled by whoever holds its partitions.
const stillWaiting = "still waiting for the schema-change topic"

// srTable is one table of TestScaleOutRenames as the workload sees it: its
// database and name now, its key and the INT columns it changes. The
// rename statements change these as they run.
type srTable struct {
	orig, db, name, key string
	cols                []string
	columns             bool // a table of the column renames
}

func (s *srTable) ref() string { return "`" + s.db + "`.`" + s.name + "`" }

// srRename is one DDL statement of the workload, run at a fraction of its
// duration, and what it changes in the workload's view of the tables.
type srRename struct {
	at    float64
	stmt  string
	apply func()
}

// TestScaleOutRenames is TestScaleOut with renames: capture with
// N-partition topics (N = 4 and 12), three ingest processes in one group
// whose topic regex takes in the schema-change topic, and, during a paced
// workload over ten tables and while the group's membership changes (kill
// -9, SIGTERM, joiners), a plain RENAME TABLE, a swap through a temporary
// name, a rename of a table keyed on a UNIQUE NOT NULL key (no primary
// key), a rename into the other captured database, and column renames:
// CHANGE, RENAME COLUMN, two columns swapped in one statement, and a
// rename followed by an ADD COLUMN of the old name. Every renamed table and
// column is written before and after its rename. Once capture has caught
// up and every table holds its topic's end offsets it checks:
//
//   - every table under its final name equals MariaDB, read with the Java
//     reader and with pyiceberg (rows not changed since a rename too);
//   - each renamed table is the lake table of its old name (same table
//     UUID), and the lake holds no other table (the old names and the
//     swap's temporary name are gone);
//   - each renamed column is the Iceberg column of its old name (same
//     field id), the old column names are gone, and the column added
//     under a renamed column's old name is a new field;
//   - no ingest process logged that it waits for the schema-change topic
//     (handled by another member).
func TestScaleOutRenames(t *testing.T) {
	parts := []int{4, 12}
	if testing.Short() {
		parts = []int{12} // make test's time; make test-full runs both
	}
	for _, n := range parts {
		t.Run(fmt.Sprintf("partitions=%d", n), func(t *testing.T) { runScaleOutRenames(t, n, true) })
	}
}

func runScaleOutRenames(t *testing.T, partitions int, columns bool) {
	ctx := t.Context()
	c := newCaptureEnv(t, fmt.Sprintf("CAPTURE_TOPIC_CREATION_DEFAULT_PARTITIONS=%d", partitions), "CAPTURE_LOG_LEVEL=info", "CAPTURE_COMMIT_INTERVAL=100ms")
	db1 := c.dbName
	db2 := c.db.CreateDatabase(t, "e2r")
	c.env = append(c.env, "CAPTURE_DATABASE_INCLUDE_LIST="+db1+","+db2)

	tbl := func(name, key string, cols ...string) *srTable {
		return &srTable{orig: name, db: db1, name: name, key: key, cols: cols}
	}
	k, a, s1, s2 := tbl("k", "id", "v"), tbl("a", "id", "v"), tbl("s1", "id", "v"), tbl("s2", "id", "v")
	u, m := tbl("u", "uk", "v"), tbl("m", "id", "v")
	c1, cr, cs, ca := tbl("c1", "id", "v", "c"), tbl("cr", "id", "v", "x"), tbl("cs", "id", "v", "p", "q"), tbl("ca", "id", "v", "o")
	tables := []*srTable{k, a, s1, s2, u, m}
	renames := []srRename{
		{0.20, "RENAME TABLE a TO b", func() { a.name = "b" }},
		{0.25, "RENAME TABLE s1 TO s_tmp, s2 TO s1, s_tmp TO s2", func() { s1.name, s2.name = "s2", "s1" }},
		{0.30, "RENAME TABLE u TO u2", func() { u.name = "u2" }},
		{0.35, "RENAME TABLE m TO `" + db2 + "`.m2", func() { m.db, m.name = db2, "m2" }},
	}
	if columns {
		for _, ct := range []*srTable{c1, cr, cs, ca} {
			ct.columns = true
		}
		tables = append(tables, c1, cr, cs, ca)
		renames = append(renames,
			srRename{0.45, "ALTER TABLE c1 CHANGE c c2 INT", func() { c1.cols = []string{"v", "c2"} }},
			srRename{0.50, "ALTER TABLE cr RENAME COLUMN x TO y", func() { cr.cols = []string{"v", "y"} }},
			srRename{0.55, "ALTER TABLE cs RENAME COLUMN p TO q, RENAME COLUMN q TO p", func() {}},
			srRename{0.60, "ALTER TABLE ca RENAME COLUMN o TO o2", func() { ca.cols = []string{"v", "o2"} }},
			srRename{0.70, "ALTER TABLE ca ADD COLUMN o INT", func() { ca.cols = []string{"v", "o2", "o"} }},
		)
	}
	// 200 rows each, every column set: the workload changes keys 1–150
	// only, so rows 151–200 hold their snapshot values under the renamed
	// names.
	for _, tb := range tables {
		ddl := fmt.Sprintf("CREATE TABLE %s (%s INT PRIMARY KEY", tb.name, tb.key)
		if tb.key == "uk" {
			ddl = "CREATE TABLE u (uk INT NOT NULL"
		}
		sel := "seq"
		for i, col := range tb.cols {
			ddl += ", " + col + " INT"
			sel += fmt.Sprintf(", seq * %d", i+2)
		}
		if tb.key == "uk" {
			ddl += ", UNIQUE KEY (uk)"
		}
		exec1(t, c, ddl+")", fmt.Sprintf("INSERT INTO %s (%s, %s) SELECT %s FROM seq_1_to_200", tb.name, tb.key, strings.Join(tb.cols, ", "), sel))
	}
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", time.Minute)
	c.caughtUp(t, 2*time.Minute)

	ice := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(ctx, "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		for _, db := range []string{db1, db2} {
			ns := table.Identifier{db}
			for id, err := range cat.ListTables(ctx, ns) {
				if err == nil {
					_ = cat.DropTable(ctx, id)
				}
			}
			_ = cat.DropNamespace(ctx, ns)
		}
	})
	g := newScaleGroup(t, []string{
		"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","),
		"INGEST_GROUP_ID=" + testenv.Unique(t, "g"),
		"INGEST_GROUP_SESSION_TIMEOUT=10s", // a kill -9 holds the group for 10 s, not 45
		// The schema-change topic <prefix> and both databases' tables,
		// those created and renamed into them later too.
		"INGEST_TOPIC_REGEX=" + c.prefix + `(\.(` + db1 + "|" + db2 + `)\..*)?`,
		"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t),
		"INGEST_CATALOG_URI=" + ice.URI, "INGEST_S3_ENDPOINT=" + ice.S3Endpoint, "INGEST_S3_REGION=" + ice.Region,
		"INGEST_FLUSH_INTERVAL=1s", "INGEST_METRICS_ADDR=127.0.0.1:0", "INGEST_LOG_LEVEL=info",
	}, 3)

	// The snapshot in the lake first, so that every rename moves a table
	// that holds rows and every renamed column has values; then the lake
	// table and field ids the renames must keep.
	var failures []string
	seedDeadline := time.Now().Add(3 * time.Minute)
	for _, tb := range tables {
		for {
			g.alive(t)
			n := lakeRowCount(ctx, cat, table.Identifier{db1, tb.name})
			if n == 200 {
				break
			}
			if time.Now().After(seedDeadline) {
				failures = append(failures, fmt.Sprintf("seed: %s.%s holds %d of its 200 snapshot rows 3 minutes after ingest started", db1, tb.name, n))
				break
			}
			time.Sleep(time.Second) // polling interval: the loop counts again
		}
	}
	uuids := map[*srTable]string{}
	fieldIDs := map[*srTable]map[string]int{}
	for _, tb := range tables {
		lt, err := cat.LoadTable(ctx, table.Identifier{db1, tb.name})
		if err != nil {
			continue // reported above
		}
		uuids[tb] = lt.Metadata().TableUUID().String()
		fieldIDs[tb] = map[string]int{}
		for _, f := range lt.Schema().Fields() {
			fieldIDs[tb][f.Name] = f.ID
		}
	}

	// The workload: one writer, paced, over every table under its current
	// name and columns; each rename statement at its moment, with writes
	// to every column of the renamed table just before and just after it.
	dur := scaleDuration(t, 35*time.Second)
	wctx, stopWriter := context.WithTimeout(ctx, dur)
	defer stopWriter()
	var wg sync.WaitGroup
	var stmts, done atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		db := c.db.AdminDB(t, db1)
		rng := rand.New(rand.NewPCG(41, 42))
		exec := func(q string) bool {
			// Not cancelled with the writer: a statement cut off by the
			// client can still commit.
			if _, err := db.ExecContext(context.WithoutCancel(wctx), q); err != nil {
				t.Errorf("%s: %v", q, err)
				return false
			}
			stmts.Add(1)
			return true
		}
		touch := func(tb *srTable) bool {
			for _, col := range tb.cols {
				if !exec(fmt.Sprintf("UPDATE %s SET %s = COALESCE(%s, 0) + 1 WHERE %s %% 10 = %d AND %s <= 150", tb.ref(), col, col, tb.key, rng.IntN(10), tb.key)) {
					return false
				}
			}
			return true
		}
		began := time.Now()
		for wctx.Err() == nil {
			if i := int(done.Load()); i < len(renames) && time.Since(began) > time.Duration(renames[i].at*float64(dur)) {
				var renamed []*srTable
				for _, x := range tables {
					if strings.Contains(renames[i].stmt, " "+x.name+" ") {
						renamed = append(renamed, x)
					}
				}
				for _, x := range renamed {
					if !touch(x) {
						return
					}
				}
				if !exec(renames[i].stmt) {
					return
				}
				renames[i].apply()
				done.Add(1)
				for _, x := range renamed {
					if !touch(x) {
						return
					}
				}
				continue
			}
			tb := tables[rng.IntN(len(tables))]
			id, col := 1+rng.IntN(150), tb.cols[rng.IntN(len(tb.cols))]
			var q string
			switch r := rng.IntN(9); {
			case r < 4:
				q = fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES (%d, %d) ON DUPLICATE KEY UPDATE %s = COALESCE(%s, 0) + 1", tb.ref(), tb.key, col, id, rng.IntN(1000), col, col)
			case r < 8:
				q = fmt.Sprintf("UPDATE %s SET %s = COALESCE(%s, 0) + 1 WHERE %s BETWEEN %d AND %d", tb.ref(), col, col, tb.key, id, min(id+2, 150))
			default:
				q = fmt.Sprintf("DELETE FROM %s WHERE %s = %d", tb.ref(), tb.key, id)
			}
			if !exec(q) {
				return
			}
			time.Sleep(time.Duration(2+rng.IntN(8)) * time.Millisecond) // pacing, not waiting
		}
	}()

	// The nemesis. Fewer changes under -short (two subtests share make
	// test's budget), TestScaleOut's pace at full length.
	minChanges, pause := 30, [2]time.Duration{300 * time.Millisecond, time.Second}
	if testing.Short() {
		minChanges, pause = 10, [2]time.Duration{time.Second, 3 * time.Second}
	}
	g.churn(wctx, pause[0], pause[1])
	wg.Wait()
	changes := g.summary(t, fmt.Sprintf("%d partitions, workload: %d statements, %d of %d renames in %s", partitions, stmts.Load(), done.Load(), len(renames), dur))
	if changes < minChanges {
		t.Errorf("only %d membership changes during the workload; want at least %d", changes, minChanges)
	}
	if int(done.Load()) != len(renames) {
		t.Fatalf("the workload ran %d of its %d renames", done.Load(), len(renames))
	}

	// Everything on Kafka, then every table under its final name holding
	// its topic's end offsets.
	c.caughtUp(t, 2*time.Minute)
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	ends := map[*srTable]map[int32]int64{}
	records := 0
	for _, tb := range tables {
		ends[tb] = map[int32]int64{}
		recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.prefix+"."+tb.db+"."+tb.name, 1, 3*time.Minute)
		records += len(recs)
		for _, r := range recs {
			if r.Value != nil { // ingest stores no offset for a trailing tombstone
				ends[tb][r.Partition] = max(ends[tb][r.Partition], r.Offset+1)
			}
		}
	}
	behind := tablesBehind(ctx, cat, c.prefix, tables, ends)
	for deadline := time.Now().Add(4 * time.Minute); len(behind) > 0 && time.Now().Before(deadline); behind = tablesBehind(ctx, cat, c.prefix, tables, ends) {
		g.alive(t)
		time.Sleep(time.Second) // polling interval: the loop reads the offsets again
	}
	for _, b := range behind {
		failures = append(failures, "offsets: "+b+" 4 minutes after the workload")
	}

	// Every table under its final name, through both readers.
	rows := 0
	for _, tb := range tables {
		id := table.Identifier{tb.db, tb.name}
		db := c.db.AdminDB(t, tb.db)
		for _, reader := range []string{"java", "pyiceberg"} {
			n, diffs := readerEqualsMariaDB(ctx, t, cat, db, id, tb.name, []string{tb.key}, reader)
			for _, d := range diffs {
				failures = append(failures, fmt.Sprintf("%s: %s.%s (was %s): %s", reader, tb.db, tb.name, tb.orig, d))
			}
			if reader == "java" {
				rows += n
			}
		}
		lt, err := cat.LoadTable(ctx, id)
		if err != nil {
			failures = append(failures, fmt.Sprintf("table: %s.%s (was %s): %v", tb.db, tb.name, tb.orig, err))
			continue
		}
		if want, ok := uuids[tb]; ok && lt.Metadata().TableUUID().String() != want {
			failures = append(failures, fmt.Sprintf("table: %s.%s is table %s, not %s's %s: the rename did not move the lake table", tb.db, tb.name, lt.Metadata().TableUUID(), tb.orig, want))
		}
		if tb.columns {
			failures = append(failures, columnIDs(tb, fieldIDs[tb], lt)...)
		}
	}
	// The old names (and the swap's temporary one) are gone: the lake
	// holds the final names and the caught-up marker, nothing else.
	final := map[string]bool{db1 + ".zz_caught_up": true}
	for _, tb := range tables {
		final[tb.db+"."+tb.name] = true
	}
	for _, db := range []string{db1, db2} {
		for id, err := range cat.ListTables(ctx, table.Identifier{db}) {
			if err != nil {
				failures = append(failures, fmt.Sprintf("gone: listing %s: %v", db, err))
				break
			}
			if name := strings.Join(id, "."); !final[name] {
				failures = append(failures, fmt.Sprintf("gone: %s is in the lake, no table of that name is in MariaDB", name))
			}
		}
	}
	for _, p := range g.logs {
		if n := strings.Count(p.fullLog(t), stillWaiting); n > 0 {
			failures = append(failures, fmt.Sprintf("waiting: %s logged %q %d times", p.log, stillWaiting, n))
		}
	}
	g.stop()

	// The failures by kind (the text before the first colon), the first
	// few of each kind.
	by := map[string][]string{}
	var kinds []string
	for _, f := range failures {
		kind := strings.SplitN(f, ":", 2)[0]
		if by[kind] == nil {
			kinds = append(kinds, kind)
		}
		by[kind] = append(by[kind], f)
	}
	var counts, sample []string
	for _, kind := range kinds {
		counts = append(counts, fmt.Sprintf("%s %d", kind, len(by[kind])))
		sample = append(sample, validate.Report(by[kind], 6))
	}
	t.Logf("%d partitions: %d tables, %d records on their final topics, %d rows compared per reader; %d failures (%s)", partitions, len(tables), records, rows, len(failures), strings.Join(counts, ", "))
	if len(failures) > 0 {
		t.Fatalf("%d failures:\n%s", len(failures), strings.Join(sample, "\n"))
	}
}

// tablesBehind lists the tables (under their final names) whose current
// snapshot stores offsets of their topic below ends.
func tablesBehind(ctx context.Context, cat *rest.Catalog, prefix string, tables []*srTable, ends map[*srTable]map[int32]int64) []string {
	var behind []string
	for _, tb := range tables {
		lt, err := cat.LoadTable(ctx, table.Identifier{tb.db, tb.name})
		if err != nil || lt.CurrentSnapshot() == nil {
			behind = append(behind, fmt.Sprintf("%s.%s: no snapshot (err %v)", tb.db, tb.name, err))
			continue
		}
		// As ingest recovers them: the current snapshot may be an
		// in-ingest rewrite's, which records no offsets.
		offs, err := validate.TableOffsets(lt)
		if err != nil {
			behind = append(behind, fmt.Sprintf("%s.%s: %v", tb.db, tb.name, err))
			continue
		}
		stored := offs[prefix+"."+tb.db+"."+tb.name]
		var parts []int32
		for p := range ends[tb] {
			parts = append(parts, p)
		}
		slices.Sort(parts)
		for _, p := range parts {
			if got := stored[p]; got < ends[tb][p] {
				behind = append(behind, fmt.Sprintf("%s.%s: partition %d stored %d of %d", tb.db, tb.name, p, got, ends[tb][p]))
			}
		}
	}
	return behind
}

// columnIDs checks a column-rename table's Iceberg fields against the field
// ids its columns had before the renames (before): a renamed column keeps
// its old name's field id, the old name is gone (or, re-added, a new
// field).
func columnIDs(tb *srTable, before map[string]int, lt *table.Table) []string {
	if before == nil {
		return []string{fmt.Sprintf("columns: %s: no lake table before the renames", tb.name)}
	}
	// final name → the name whose field it must be ("" for a new field).
	want := map[string]map[string]string{
		"c1": {"c2": "c", "c": "-"},
		"cr": {"y": "x", "x": "-"},
		"cs": {"q": "p", "p": "q"},
		"ca": {"o2": "o", "o": ""},
	}[tb.name]
	var fails []string
	for final, old := range want {
		f, ok := lt.Schema().FindFieldByName(final)
		switch {
		case old == "-" && ok:
			fails = append(fails, fmt.Sprintf("columns: %s.%s: still in the lake after its rename (field %d)", tb.name, final, f.ID))
		case old == "-":
		case !ok:
			fails = append(fails, fmt.Sprintf("columns: %s.%s: not in the lake", tb.name, final))
		case old == "" && f.ID == before[final]:
			fails = append(fails, fmt.Sprintf("columns: %s.%s: re-added after its rename, but field %d is the renamed column's", tb.name, final, f.ID))
		case old != "" && f.ID != before[old]:
			fails = append(fails, fmt.Sprintf("columns: %s.%s: field %d, want %d (the field of %s before the rename)", tb.name, final, f.ID, before[old], old))
		}
	}
	return fails
}
