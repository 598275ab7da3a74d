//go:build integration

package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/lakecheck"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/validate"
)

// scaleTables are the scale-out test's tables: three keyed ones, one whose
// rows change primary key every few seconds, one truncated mid-run and one
// without a primary key (an append-only change log in the lake).
var scaleTables = []struct {
	name, ddl string
	keyless   bool
}{
	{"k1", "CREATE TABLE k1 (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))", false},
	{"k2", "CREATE TABLE k2 (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))", false},
	{"k3", "CREATE TABLE k3 (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))", false},
	{"pk", "CREATE TABLE pk (id INT PRIMARY KEY, v INT NOT NULL)", false},
	{"tr", "CREATE TABLE tr (id INT PRIMARY KEY, v INT NOT NULL)", false},
	{"nk", "CREATE TABLE nk (a INT NOT NULL, b VARCHAR(20))", true},
}

// scaleDuration is how long the workload and the membership changes run:
// BINLAKE_SCALEOUT_DURATION (a Go duration), default 2m, short with -short
// (make test; make test-full runs the 2m).
func scaleDuration(t *testing.T, short time.Duration) time.Duration {
	if s := os.Getenv("BINLAKE_SCALEOUT_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("BINLAKE_SCALEOUT_DURATION=%q: %v", s, err)
		}
		return d
	}
	if testing.Short() {
		return short
	}
	return 2 * time.Minute
}

// TestScaleOut runs capture with 12-partition topics for six tables and
// three ingest processes in one consumer group, and while a workload runs
// changes the group's membership at least 30 times (kill -9, SIGTERM, new
// processes joining). Then, with every change on Kafka and every table
// holding its topic's end offsets, it checks:
//
//   - on Kafka, per topic: each key in one partition with its changes in
//     binlog order, a tombstone after each delete, at most one op=r per key;
//   - on the lake, per table: every (partition, offset) applied in exactly
//     one snapshot (offset tiling over the snapshot history); the keyed
//     tables equal MariaDB; the keyless table's change log holds each event
//     exactly once and, replayed in source order, equals MariaDB; every
//     table lists one binlog history (binlake.source.epochs): one source,
//     no failover;
//   - the ingest processes run in the default delete mode (auto: format v2
//     tables, so position deletes through each process's own key index):
//     no snapshot adds an equality delete and every keyed table got
//     position deletes, so the key indexes of processes that took over
//     each other's partitions caught up with the table.
func TestScaleOut(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_TOPIC_CREATION_DEFAULT_PARTITIONS=12", "CAPTURE_LOG_LEVEL=info", "CAPTURE_COMMIT_INTERVAL=100ms")
	var topics []string
	for _, tb := range scaleTables {
		exec1(t, c, tb.ddl)
		topics = append(topics, c.topic(tb.name))
	}
	exec1(t, c,
		"INSERT INTO k1 SELECT seq, 0, 'seed' FROM seq_1_to_200", "INSERT INTO k2 SELECT seq, 0, 'seed' FROM seq_1_to_200",
		"INSERT INTO k3 SELECT seq, 0, 'seed' FROM seq_1_to_200", "INSERT INTO pk SELECT seq, 0 FROM seq_1_to_100",
		"INSERT INTO tr SELECT seq, 0 FROM seq_1_to_200", "INSERT INTO nk SELECT seq % 50, CONCAT('s', seq % 7) FROM seq_1_to_200")
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	// The snapshot creates every topic; ingest subscribes to them by name.
	waitLog(t, cp, "Connected to server", time.Minute)
	c.caughtUp(t, 2*time.Minute)

	ice := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(t.Context(), "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		for _, tb := range scaleTables {
			_ = cat.DropTable(ctx, table.Identifier{c.dbName, tb.name})
		}
		_ = cat.DropNamespace(ctx, table.Identifier{c.dbName})
	})
	env := []string{
		"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","),
		"INGEST_GROUP_ID=" + testenv.Unique(t, "g"),
		// kill -9 leaves a member the group waits for until its session
		// times out: 10 s here, not the 45 s default.
		"INGEST_GROUP_SESSION_TIMEOUT=10s",
		"INGEST_TOPICS=" + strings.Join(topics, ","),
		"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t),
		"INGEST_CATALOG_URI=" + ice.URI,
		"INGEST_S3_ENDPOINT=" + ice.S3Endpoint,
		"INGEST_S3_REGION=" + ice.Region,
		"INGEST_FLUSH_INTERVAL=1s",
		"INGEST_METRICS_ADDR=127.0.0.1:0",
		"INGEST_LOG_LEVEL=info",
	}
	g := newScaleGroup(t, env, 3)

	// The workload: one writer, paced, over every table; a primary-key
	// change of pk every 3 s; one TRUNCATE of tr halfway.
	dur := scaleDuration(t, 45*time.Second)
	wctx, stopWriter := context.WithTimeout(t.Context(), dur)
	defer stopWriter()
	var wg sync.WaitGroup
	var stmts, truncated atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		db := c.db.AdminDB(t, c.dbName)
		rng := rand.New(rand.NewPCG(21, 22))
		began, lastRekey := time.Now(), time.Now()
		for wctx.Err() == nil {
			var q string
			switch {
			case time.Since(lastRekey) > 3*time.Second:
				q, lastRekey = "UPDATE pk SET id = id + 1000 ORDER BY id DESC LIMIT 3", time.Now()
			case truncated.Load() == 0 && time.Since(began) > dur/2:
				q = "TRUNCATE TABLE tr"
				truncated.Store(1)
			default:
				id := 1 + rng.IntN(300)
				tb := []string{"k1", "k2", "k3", "tr"}[rng.IntN(4)]
				switch r := rng.IntN(12); {
				case r < 4:
					q = fmt.Sprintf("INSERT INTO %s (id, v) VALUES (%d, %d) ON DUPLICATE KEY UPDATE v = v + 1", tb, id, rng.IntN(100))
				case r < 7:
					q = fmt.Sprintf("UPDATE %s SET v = v + 1 WHERE id BETWEEN %d AND %d", tb, id, id+2)
				case r < 8:
					q = fmt.Sprintf("DELETE FROM %s WHERE id = %d", tb, id)
				case r < 9:
					q = fmt.Sprintf("UPDATE pk SET v = v + 1 WHERE id %% 7 = %d", rng.IntN(7))
				case r < 10:
					q = fmt.Sprintf("INSERT INTO nk VALUES (%d, 'w%d')", rng.IntN(60), rng.IntN(5))
				case r < 11:
					q = fmt.Sprintf("UPDATE nk SET b = CONCAT(COALESCE(b, ''), '+') WHERE a = %d LIMIT 1", rng.IntN(60))
				default:
					q = fmt.Sprintf("DELETE FROM nk WHERE a = %d LIMIT 1", rng.IntN(60))
				}
			}
			// Not cancelled with the writer: a statement cut off by the
			// client can still commit.
			if _, err := db.ExecContext(context.WithoutCancel(wctx), q); err != nil {
				t.Errorf("%s: %v", q, err)
				return
			}
			stmts.Add(1)
			time.Sleep(time.Duration(2+rng.IntN(8)) * time.Millisecond) // pacing, not waiting
		}
	}()

	// The nemesis: every 0.3–1 s one member leaves or joins (scaleGroup.churn).
	g.churn(wctx, 300*time.Millisecond, time.Second)
	wg.Wait()
	changes := g.summary(t, fmt.Sprintf("workload: %d statements in %s", stmts.Load(), dur))
	if changes < 30 {
		t.Errorf("only %d membership changes during the workload; want at least 30", changes)
	}
	if truncated.Load() == 0 {
		t.Fatal("the workload never truncated tr")
	}

	// Everything on Kafka, then every table holding its topic's end.
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	var recs map[string][]kafkatest.Record
	var ends map[string]map[int32]int64
	held := func() {
		c.caughtUp(t, 2*time.Minute)
		recs = map[string][]kafkatest.Record{}
		ends = map[string]map[int32]int64{}
		for _, tp := range topics {
			recs[tp] = kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, tp, 1, 3*time.Minute)
			ends[tp] = map[int32]int64{}
			for _, r := range recs[tp] {
				if r.Value != nil { // ingest stores no offset for a trailing tombstone
					ends[tp][r.Partition] = max(ends[tp][r.Partition], r.Offset+1)
				}
			}
		}
		testenv.CheckFor(t, 5*time.Minute, time.Second, func() error {
			g.alive(t)
			var behind []string
			for i, tb := range scaleTables {
				tbl, err := cat.LoadTable(t.Context(), table.Identifier{c.dbName, tb.name})
				if err != nil || tbl.CurrentSnapshot() == nil {
					behind = append(behind, tb.name+": no snapshot yet")
					continue
				}
				// As ingest recovers them: the current snapshot may be an
				// in-ingest rewrite's, which records no offsets.
				offs, err := validate.TableOffsets(tbl)
				if err != nil {
					t.Fatal(err)
				}
				m := offs[topics[i]]
				for p, end := range ends[topics[i]] {
					if got := m[p]; got < end {
						behind = append(behind, fmt.Sprintf("%s: partition %d stored %d of %d", tb.name, p, got, end))
					}
				}
			}
			if len(behind) > 0 {
				return fmt.Errorf("tables behind their topics' end offsets: %s", strings.Join(behind, "; "))
			}
			return nil
		})
	}
	held()
	// One more change of every row of the keyed tables, in commits after
	// those that hold the rows, while the members stay: under heavy
	// rebalancing the whole workload can land in the last commits, where
	// updates collapse and need no deletes, and the delete-mode check
	// below would prove nothing.
	admin := c.db.AdminDB(t, c.dbName)
	for _, tb := range scaleTables {
		if !tb.keyless {
			if _, err := admin.ExecContext(t.Context(), "UPDATE "+tb.name+" SET v = v + 1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	held()

	var failures []string
	for i, tb := range scaleTables {
		tp := topics[i]
		kv := validate.Events(validate.PositionOrder(), validate.Tombstones(), validate.SnapshotReads())
		validate.NoteRecords(kv, recs[tp], nil)
		f := kv.Failures()

		tbl, err := cat.LoadTable(t.Context(), table.Identifier{c.dbName, tb.name})
		if err != nil {
			t.Fatal(err)
		}
		hist, err := validate.History(tbl)
		if err != nil {
			t.Fatal(err)
		}
		tiling := validate.OffsetTiling(tp)
		tiling.NoteApplied(recs[tp])
		for _, s := range hist {
			tiling.NoteSnapshot(s)
		}
		for p, n := range ends[tp] {
			tiling.NoteEnd(p, n)
		}
		f = append(f, tiling.Failures()...)

		var rows int
		if tb.keyless {
			cl := validate.ChangeLogOnce(tp)
			validate.NoteRecords(cl, recs[tp], nil)
			if err := validate.ChangeLogRows(t.Context(), tbl, cl); err != nil {
				t.Fatal(err)
			}
			f = append(f, cl.Failures()...)
			var rf []string
			rows, rf = replayChangeLog(t, tbl, admin, tb.name)
			f = append(f, rf...)
		} else {
			got, types, err := lakecheck.Iceberg(t.Context(), tbl, []string{"id"})
			if err != nil {
				t.Fatal(err)
			}
			want, err := lakecheck.MariaDB(t.Context(), admin, tb.name, []string{"id"}, types)
			if err != nil {
				t.Fatal(err)
			}
			rows = len(want.ByKey)
			f = append(f, validate.TableEquals(tb.name, want, got).Failures()...)
			eq, pos := addedDeleteFiles(tbl)
			if eq != 0 || pos == 0 {
				f = append(f, fmt.Sprintf("delete mode: %s: snapshots added %d equality-delete and %d position-delete files, want none and some", tb.name, eq, pos))
			}
		}
		// One source and no failover: one binlog history. A second one
		// puts every later change above every earlier one in source order
		// (a keyless table's snapshot rows once started one of their own).
		if raw := tbl.Properties()[epochsProperty]; raw != "" {
			var hs []json.RawMessage
			if err := json.Unmarshal([]byte(raw), &hs); err != nil || len(hs) != 1 {
				f = append(f, fmt.Sprintf("epochs: %s: %s = %s, want one binlog history (%v)", tb.name, epochsProperty, raw, err))
			}
		}
		by := map[string]int{}
		for _, l := range f {
			by[strings.SplitN(l, ":", 2)[0]]++
		}
		t.Logf("table %s: %d records on %d partitions, %d source rows; %s; %d failures %v", tb.name, len(recs[tp]), len(ends[tp]), rows, tiling, len(f), by)
		failures = append(failures, f...)
	}
	g.stop()
	if len(failures) > 0 {
		t.Fatalf("%d validator failures:\n%s", len(failures), validate.Report(failures, 40))
	}
}

// sourceOrders reads the source-order column of a change-log table, by
// row, and reports whether the table has it (test/lakecheck leaves it out
// of its rows: it is no source value).
func sourceOrders(t *testing.T, tbl *table.Table) (map[validate.ChangeRow]int64, bool) {
	t.Helper()
	if _, ok := tbl.Schema().FindFieldByName(sourceOrderColumn); !ok {
		return nil, false
	}
	at, err := tbl.Scan(table.WithSelectedFields("_binlake_partition", "_binlake_offset", "_binlake_before", sourceOrderColumn)).ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	out := map[validate.ChangeRow]int64{}
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(n string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(n)[0]) }
		parts, offs, before, order := col("_binlake_partition").(*array.Int32), col("_binlake_offset").(*array.Int64),
			col("_binlake_before").(*array.Boolean), col(sourceOrderColumn).(*array.Int64)
		for i := range int(rec.NumRows()) {
			if !order.IsNull(i) {
				out[validate.ChangeRow{Partition: parts.Value(i), Offset: offs.Value(i), Before: before.Value(i)}] = order.Value(i)
			}
		}
	}
	return out, true
}

// epochsProperty is the table property in which ingest lists the binlog
// histories a table's changes came from (ingest/internal/commit.EpochsKey).
const epochsProperty = "binlake.source.epochs"

// sourceOrderColumn is the column in which ingest (from the ingestorder
// change on) keeps each change's binlog position, read as data.
const sourceOrderColumn = "_binlake_source_order"

// replayChangeLog rebuilds a keyless table from its lake change log (r and
// c add the after image, u replaces the before image by the after image, d
// removes the before image, t empties the table), in source order when the
// table has the source-order column and by (partition, offset) when not
// (then correct only for one partition, and reported), and compares the
// result with the MariaDB table as multisets. It returns the source's row
// count and the differences.
func replayChangeLog(t *testing.T, tbl *table.Table, db *sql.DB, name string) (int, []string) {
	t.Helper()
	meta := []string{"_binlake_partition", "_binlake_offset", "_binlake_before"}
	got, types, err := lakecheck.Iceberg(t.Context(), tbl, meta)
	if err != nil {
		t.Fatal(err)
	}
	cols, want, err := lakecheck.MariaDBMultiset(t.Context(), db, name, types)
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for i, c := range got.Columns {
		idx[c] = i
	}
	var fails []string
	orders, ordered := sourceOrders(t, tbl)
	if !ordered {
		fails = append(fails, fmt.Sprintf("replay %s: the change log has no %s column: replaying by (partition, offset), which is not source order across partitions", name, sourceOrderColumn))
	}
	type change struct {
		order, part, off int64
		before           bool
		op, row, ts      string
	}
	num := func(v string) int64 { n, _ := strconv.ParseInt(v, 10, 64); return n }
	var log []change
	for _, r := range got.ByKey {
		vals := make([]string, len(cols))
		for i, c := range cols {
			vals[i] = r[idx[c]]
		}
		ch := change{part: num(r[idx["_binlake_partition"]]), off: num(r[idx["_binlake_offset"]]), before: r[idx["_binlake_before"]] == "true",
			op: r[idx["_binlake_op"]], ts: r[idx["_binlake_ts_ms"]], row: strings.Join(vals, lakecheck.RowSep)}
		if ordered {
			o, ok := orders[validate.ChangeRow{Partition: int32(ch.part), Offset: ch.off, Before: ch.before}]
			if !ok && ch.op != "t" {
				fails = append(fails, fmt.Sprintf("replay %s: [%d]@%d has no source order", name, ch.part, ch.off))
			}
			ch.order = o
		}
		log = append(log, ch)
	}
	sort.Slice(log, func(i, j int) bool {
		a, b := log[i], log[j]
		if a.order != b.order {
			return a.order < b.order
		}
		if a.part != b.part {
			return a.part < b.part
		}
		if a.off != b.off {
			return a.off < b.off
		}
		return a.before && !b.before
	})
	table := lakecheck.Multiset{}
	// explain logs, for the first removals of rows the replay does not
	// hold, every change-log entry of that row value and the entries
	// around the removal in its partition, with source order and time:
	// enough to tell a missing record from a misordered one.
	explained := 0
	explain := func(bad change) {
		if explained++; explained > 3 {
			return
		}
		t.Logf("replay %s: %s at [%d]@%d (order %s, ts_ms %s) removes %q; the table's epochs: %s; entries of that row or near it:",
			name, bad.op, bad.part, bad.off, fmtOrder(bad.order), bad.ts, bad.row, tbl.Properties()[epochsProperty])
		for _, ch := range log {
			if ch.row == bad.row || (ch.part == bad.part && ch.off >= bad.off-3 && ch.off <= bad.off+3) {
				t.Logf("  %s [%d]@%d before=%v order %s ts_ms %s row %q", ch.op, ch.part, ch.off, ch.before, fmtOrder(ch.order), ch.ts, ch.row)
			}
		}
	}
	for _, ch := range log {
		switch {
		case ch.op == "t":
			clear(table)
		case ch.before:
			if table[ch.row] == 0 {
				fails = append(fails, fmt.Sprintf("replay %s: %s at [%d]@%d removes %q, which the replay does not hold", name, ch.op, ch.part, ch.off, ch.row))
				explain(ch)
				continue
			}
			if table[ch.row]--; table[ch.row] == 0 {
				delete(table, ch.row)
			}
		default:
			table[ch.row]++
		}
	}
	n := 0
	for r, w := range want {
		n += w
		if table[r] != w {
			fails = append(fails, fmt.Sprintf("replay %s: row %q %d times in the replayed change log, %d in MariaDB", name, r, table[r], w))
		}
	}
	for r, g := range table {
		if want[r] == 0 {
			fails = append(fails, fmt.Sprintf("replay %s: row %q %d times in the replayed change log, not in MariaDB", name, r, g))
		}
	}
	return n, fails
}

// fmtOrder renders a source order as ingest's batch.FormatOrder does:
// "<seq>:<offset>", "<epoch>/<seq>:<offset>" from epoch 1 on (epoch 8
// bits | binlog file seq 22 bits | position 33 bits).
func fmtOrder(o int64) string {
	s := fmt.Sprintf("%d:%d", o>>33&(1<<22-1), o&(1<<33-1))
	if e := o >> 55; e > 0 {
		s = fmt.Sprintf("%d/%s", e, s)
	}
	return s
}

// addedDeleteFiles sums the equality- and position-delete files (deletion
// vectors included) the table's snapshots added, from their summaries.
func addedDeleteFiles(tbl *table.Table) (equality, position int) {
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary == nil {
			continue
		}
		n, _ := strconv.Atoi(s.Summary.Properties["added-equality-delete-files"])
		equality += n
		n, _ = strconv.Atoi(s.Summary.Properties["added-position-delete-files"])
		position += n
	}
	return equality, position
}

// scaleGroup is one consumer group of ingest processes, started with the
// same environment, that the scale-out tests grow, shrink and kill. Each
// process logs to its own file (ingest-<n>.log); when the test fails the
// logs are copied to a directory that outlives the test, named in the
// test's output.
type scaleGroup struct {
	bin, dir string
	env      []string
	started  int
	logs     []*proc
	running  []*proc
	termWG   sync.WaitGroup

	leaves, kills, terms int
	tt                   *testing.T
}

// newScaleGroup starts n ingest processes with env in one group (env
// names the group).
func newScaleGroup(t *testing.T, env []string, n int) *scaleGroup {
	t.Helper()
	g := &scaleGroup{bin: binary(t, "ingest"), env: env, tt: t}
	// The logs' directory is removed after keepLogs (cleanups run last
	// registered first), which runs after the processes' kills and after
	// the SIGTERMed members have exited.
	_ = t.TempDir()
	t.Cleanup(func() { g.keepLogs(t) })
	t.Cleanup(g.termWG.Wait)
	for range n {
		g.running = append(g.running, g.launch())
	}
	return g
}

// launch starts one more member.
func (g *scaleGroup) launch() *proc {
	g.started++
	p := start(g.tt, g.bin, g.env, fmt.Sprintf("ingest-%d.log", g.started))
	g.logs = append(g.logs, p)
	return p
}

// joined: the member has logged an assignment.
func (g *scaleGroup) joined(p *proc) bool {
	return strings.Contains(p.fullLog(g.tt), "partitions assigned")
}

// up: the member has been assigned partitions, or it started its consumer
// (and so sent its JoinGroup) at least 3 s ago. Waiting for an assignment
// every time would allow only a few changes a minute: each rebalance waits
// for every member to give up its partitions, which takes their
// revoke-time commits (and a killed member's session timeout).
func (g *scaleGroup) up(p *proc) bool {
	if g.joined(p) {
		return true
	}
	return strings.Contains(p.fullLog(g.tt), "starting ingest") && time.Since(p.started) > 3*time.Second
}

// term sends p SIGTERM; it must exit 0 within a minute, which is checked
// in the background so the changes keep coming.
func (g *scaleGroup) term(p *proc) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	g.termWG.Add(1)
	go func() {
		defer g.termWG.Done()
		select {
		case <-p.done:
			if p.err != nil {
				g.tt.Errorf("ingest exited with %v after SIGTERM; log:\n%s", p.err, p.output())
			}
		case <-time.After(60 * time.Second):
			g.tt.Errorf("ingest did not stop within 60s of SIGTERM; killing it; log:\n%s", p.output())
			p.kill()
		}
	}()
}

// churn changes the group's membership until ctx is done, one change
// every minPause to maxPause: one member leaves, picked at random among
// those that are up (a process killed before it joined changes nothing):
// kill -9 and start another, SIGTERM and start another, or start one (a
// fourth member) and SIGTERM the oldest. A member that exits on its own
// fails the test.
func (g *scaleGroup) churn(ctx context.Context, minPause, maxPause time.Duration) {
	rng := rand.New(rand.NewPCG(31, uint64(time.Now().UnixNano())))
	for ctx.Err() == nil {
		time.Sleep(minPause + time.Duration(rng.Int64N(int64(maxPause-minPause)+1))) // pacing the nemesis
		var ups []int
		for i, p := range g.running {
			if p.exited() {
				g.tt.Fatalf("ingest exited on its own: %v\n%s", p.err, p.output())
			}
			if g.up(p) {
				ups = append(ups, i)
			}
		}
		if len(ups) == 0 {
			continue
		}
		i := ups[rng.IntN(len(ups))]
		// kill -9 is rarer: the group holds every rebalance until a killed
		// member's session times out, while a SIGTERMed member leaves at once.
		switch r := rng.IntN(8); {
		case r == 0:
			g.running[i].kill()
			g.kills++
			g.running[i] = g.launch()
		case r < 5:
			g.term(g.running[i])
			g.terms++
			g.running[i] = g.launch()
		default:
			if !g.up(g.running[0]) {
				continue
			}
			g.running = append(g.running, g.launch())
			g.term(g.running[0])
			g.terms++
			g.running = g.running[1:]
		}
		g.leaves++
	}
}

// summary logs the membership changes after what (the workload's
// figures) and returns their number: leaves plus members started after
// the first three that got as far as starting their consumer.
func (g *scaleGroup) summary(t *testing.T, what string) int {
	t.Helper()
	joins, assigned := 0, 0
	for _, p := range g.logs[min(3, len(g.logs)):] {
		if strings.Contains(p.fullLog(t), "starting ingest") {
			joins++
		}
		if g.joined(p) {
			assigned++
		}
	}
	changes := g.leaves + joins
	t.Logf("%s; membership changes: %d (%d leaves: %d kill -9, %d SIGTERM; %d joins, %d of them assigned partitions before the workload ended), %d ingest processes in all",
		what, changes, g.leaves, g.kills, g.terms, joins, assigned, g.started)
	return changes
}

// alive fails the test if a running member has exited.
func (g *scaleGroup) alive(t *testing.T) {
	t.Helper()
	for _, p := range g.running {
		if p.exited() {
			t.Fatalf("ingest exited: %v\n%s", p.err, p.output())
		}
	}
}

// stop sends every running member SIGTERM and waits until they exited.
func (g *scaleGroup) stop() {
	for _, p := range g.running {
		g.term(p)
	}
	g.running = nil
	g.termWG.Wait()
}

// keepLogs copies every member's log to a directory that outlives the
// test when the test failed, and names it.
func (g *scaleGroup) keepLogs(t *testing.T) {
	if !t.Failed() || len(g.logs) == 0 {
		return
	}
	dir, err := os.MkdirTemp("", "binlake-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Logf("keeping the ingest logs: %v", err)
		return
	}
	for _, p := range g.logs {
		b, err := os.ReadFile(p.log)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(p.log)), b, 0o644)
		}
		if err != nil {
			t.Logf("keeping %s: %v", p.log, err)
		}
	}
	t.Logf("the %d ingest logs are kept in %s", len(g.logs), dir)
}
