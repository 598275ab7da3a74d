//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/validate"
)

// typesDDL covers the column types the pipeline test compares.
const typesDDL = `CREATE TABLE t (
	id INT PRIMARY KEY,
	b BIGINT NOT NULL,
	name VARCHAR(50) NOT NULL,
	amount DECIMAL(10,2) NOT NULL,
	dt DATETIME(6) NOT NULL,
	ts TIMESTAMP(3) NOT NULL DEFAULT '2020-01-01 00:00:00.000',
	d DATE NOT NULL,
	j JSON,
	note VARCHAR(20) NULL)`

// typesChanges change typesDDL's table after its row 1 was written: two
// rows inserted (UTF-8, extremes of every type), one updated, row 1 given
// a new key, one deleted.
var typesChanges = []string{
	`INSERT INTO t VALUES
		 (2, -5, 'two ü😀', -2.25, '1970-01-01 00:00:00.000000', '2038-01-19 03:14:07.999', '1999-12-31', NULL, 'x'),
		 (3, 0, '', 99999999.99, '9999-12-31 23:59:59.999999', '2001-09-09 01:46:40.000', '1000-01-01', '[]', 'n')`,
	"UPDATE t SET name = 'TWO', amount = amount + 1, note = NULL WHERE id = 2",
	"UPDATE t SET id = 4 WHERE id = 1",
	"DELETE FROM t WHERE id = 3",
}

// canonicalSQL renders each MariaDB row the way canonical renders an
// Iceberg row (session time zone UTC, as capture reads it).
const canonicalSQL = `SELECT CONCAT_WS('|', id, b, name, amount,
	DATE_FORMAT(dt, '%Y-%m-%d %H:%i:%s.%f'), DATE_FORMAT(ts, '%Y-%m-%d %H:%i:%s.%f'), DATE_FORMAT(d, '%Y-%m-%d'),
	IFNULL(j, 'NULL'), IFNULL(note, 'NULL')) FROM t ORDER BY id`

type ingestRun struct {
	c       *captureEnv
	env     []string
	cat     catalog.Catalog
	ident   table.Identifier
	topic   string
	restart int
	bin     string // the ingest binary; "" for the normal build
	lake    *lake  // where ingest writes; r.cat is the stack's catalog behind it
}

// newIngestRun is newIngestRunOn the lake of newLake's defaults.
func newIngestRun(t *testing.T, c *captureEnv, extra ...string) *ingestRun {
	t.Helper()
	return newIngestRunOn(t, c, newLake(t, lakeOpts{}), extra...)
}

// newIngestRunOn prepares ingest processes on c's table t writing to l;
// the test reads the table from the stack's catalog.
func newIngestRunOn(t *testing.T, c *captureEnv, l *lake, extra ...string) *ingestRun {
	t.Helper()
	ice := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(t.Context(), "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	r := &ingestRun{c: c, cat: cat, ident: table.Identifier{c.dbName, "t"}, topic: c.topic("t"), lake: l}
	r.env = append(append([]string{
		"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","),
		"INGEST_GROUP_ID=" + testenv.Unique(t, "g"),
		"INGEST_TOPICS=" + r.topic,
		"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t)}, l.env...),
		"INGEST_FLUSH_INTERVAL=1s",
		"INGEST_METRICS_ADDR=127.0.0.1:0",
		"INGEST_LOG_LEVEL=debug",
	)
	r.env = append(r.env, extra...)
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = cat.DropTable(ctx, r.ident)
		_ = cat.DropNamespace(ctx, table.Identifier{r.ident[0]})
	})
	return r
}

func (r *ingestRun) start(t *testing.T) *proc {
	t.Helper()
	r.restart++
	bin := r.bin
	if bin == "" {
		bin = binary(t, "ingest")
	}
	return start(t, bin, r.env, fmt.Sprintf("ingest-%d.log", r.restart))
}

// snapshotID is the table's current snapshot (0: none, or no table yet).
func (r *ingestRun) snapshotID(t *testing.T) int64 {
	t.Helper()
	tbl, err := r.cat.LoadTable(t.Context(), r.ident)
	if err != nil || tbl.CurrentSnapshot() == nil {
		return 0
	}
	return tbl.CurrentSnapshot().SnapshotID
}

// committed is a number that changes when ingest commits: the table's
// current snapshot, or through the S3 Tables stand-in the commits it
// forwarded (there, a managed compaction also changes the snapshot).
func (r *ingestRun) committed(t *testing.T) int64 {
	t.Helper()
	if n := r.lake.ingestCommits(r.ident); n >= 0 {
		return int64(n)
	}
	return r.snapshotID(t)
}

// mariaRows returns the table's rows in canonical form.
func (r *ingestRun) mariaRows(t *testing.T) []string {
	t.Helper()
	return queryStrings(t, r.c, canonicalSQL)
}

// icebergRows scans the table (equality deletes applied) and returns its
// rows in canonical form, sorted by id; nil when the table is not there.
// A failed scan is tried again for 30 s (see scanRows).
func (r *ingestRun) icebergRows(t *testing.T) []string {
	t.Helper()
	var rows []string
	testenv.CheckFor(t, 30*time.Second, 500*time.Millisecond, func() error {
		var err error
		rows, err = r.scanRows(t)
		return err
	})
	return rows
}

// scanRows is icebergRows returning a failed scan: one that managed
// maintenance raced (the snapshot scanned was expired and its files
// deleted while it was read) is worth trying again.
func (r *ingestRun) scanRows(t *testing.T) ([]string, error) {
	t.Helper()
	tbl, err := r.cat.LoadTable(t.Context(), r.ident)
	if err != nil || tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		return nil, fmt.Errorf("scanning snapshot %d: %w", tbl.CurrentSnapshot().SnapshotID, err)
	}
	defer at.Release()
	cols := []string{"id", "b", "name", "amount", "dt", "ts", "d", "j", "note"}
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	type row struct {
		id int32
		s  string
	}
	var rows []row
	for tr.Next() {
		rec := tr.RecordBatch()
		idx := make([]int, len(cols))
		for i, c := range cols {
			f := rec.Schema().FieldIndices(c)
			if len(f) != 1 {
				t.Fatalf("column %s missing from the Iceberg table: %v", c, rec.Schema())
			}
			idx[i] = f[0]
		}
		for i := range int(rec.NumRows()) {
			parts := make([]string, len(cols))
			for j := range cols {
				parts[j] = cell(t, rec.Column(idx[j]), i)
			}
			rows = append(rows, row{id: rec.Column(idx[0]).(*array.Int32).Value(i), s: strings.Join(parts, "|")})
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return int(a.id) - int(b.id) })
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.s
	}
	return out, nil
}

func cell(t *testing.T, col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "NULL"
	}
	switch a := col.(type) {
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).UTC().Format("2006-01-02 15:04:05.000000")
	case *array.Date32:
		return a.Value(i).ToTime().Format("2006-01-02")
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Int32:
		return fmt.Sprint(a.Value(i))
	case *array.Int64:
		return fmt.Sprint(a.Value(i))
	}
	t.Fatalf("no canonical form for %s", col.DataType())
	return ""
}

// waitEqual waits until the Iceberg table equals the MariaDB table row for
// row and value for value.
func (r *ingestRun) waitEqual(t *testing.T, timeout time.Duration, p *proc) {
	t.Helper()
	want := r.mariaRows(t)
	var got []string
	var scanErr error
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p != nil && p.exited() {
			t.Fatalf("ingest exited: %v\n%s", p.err, p.output())
		}
		if got, scanErr = r.scanRows(t); scanErr == nil && slices.Equal(got, want) {
			return
		}
		time.Sleep(time.Second) // polling interval: the loop compares again
	}
	if scanErr != nil {
		t.Fatalf("Iceberg table unreadable after %s: %v", timeout, scanErr)
	}
	if p != nil {
		t.Logf("ingest log:\n%s", p.output())
	}
	t.Fatalf("Iceberg table differs from MariaDB after %s (-mariadb +iceberg):\n%s", timeout, cmp.Diff(want, got))
}

// TestIngestPipeline runs capture and ingest as processes and checks that
// the Iceberg table ends equal to the MariaDB table after inserts,
// updates, deletes and a primary-key update.
func TestIngestPipeline(t *testing.T) {
	parallelThroughS3Tables(t)
	c := newCaptureEnv(t)
	exec1(t, c, typesDDL)
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 30*time.Second)
	r := newIngestRun(t, c)
	ip := r.start(t)

	exec1(t, c,
		`INSERT INTO t VALUES
		 (1, 10000000000, 'one', 1.50, '2024-02-29 23:59:59.123456', '2024-01-01 10:00:00.123', '2024-02-29', '{"a": [1, 2]}', NULL),
		 (2, -5, 'two ü😀', -2.25, '1970-01-01 00:00:00.000000', '2038-01-19 03:14:07.999', '1999-12-31', NULL, 'x'),
		 (3, 0, '', 99999999.99, '9999-12-31 23:59:59.999999', '2001-09-09 01:46:40.000', '1000-01-01', '[]', 'n')`,
		"UPDATE t SET name = 'TWO', amount = amount + 1, note = NULL WHERE id = 2",
		"UPDATE t SET id = 4 WHERE id = 1",
		"DELETE FROM t WHERE id = 3",
		"INSERT INTO t (id, b, name, amount, dt, d) VALUES (5, 5, 'five', 0.01, '2024-06-01 12:00:00', '2024-06-01')",
		"UPDATE t SET j = '{\"k\": \"v\"}' WHERE id = 5",
	)
	r.waitEqual(t, 120*time.Second, ip)
	if throughS3Tables() {
		// Managed maintenance compacts (applying the deletes) and
		// expires; ingest's next commits land on top of it. The
		// statements above make one or two commits, with every update
		// collapsed into its insert: nothing to compact. Three more
		// commits, each updating rows of the earlier ones, give
		// maintenance delete files to apply and snapshots to expire.
		for i := range 3 {
			exec1(t, c, fmt.Sprintf("UPDATE t SET b = b + %d, note = 'round %d' WHERE id IN (2, 4)", i+1, i))
			r.waitEqual(t, 60*time.Second, ip)
		}
		r.lake.requireManaged(t, 90*time.Second)
		exec1(t, c,
			"UPDATE t SET name = 'after maintenance', amount = amount + 2 WHERE id = 2",
			"DELETE FROM t WHERE id = 4",
			"INSERT INTO t (id, b, name, amount, dt, d) VALUES (6, 6, 'six', 6.00, '2024-06-02 12:00:00', '2024-06-02')")
		r.waitEqual(t, 120*time.Second, ip)
		r.lake.requireCommitsAfterCompaction(t)
		r.lake.requireVerified(t)
		r.lake.report(t)
	}
	ip.stop(t, 60*time.Second)
	if !strings.Contains(ip.fullLog(t), "created table") {
		t.Errorf("ingest did not log the table creation:\n%s", ip.output())
	}
}

// TestIngestKill kills ingest with SIGKILL at random moments while a
// workload runs, twenty times (six with -short, as make test runs it), restarting it each time, and checks that the
// table ends equal to MariaDB with no duplicate key and that the lake
// validator finds every offset of the topic applied in exactly one
// snapshot. The table equality alone would pass with the exactly-once
// machinery removed (re-applied upserts converge); the offset tiling would
// not (TestIngestKillBrokenOffsets).
func TestIngestKill(t *testing.T) {
	t.Parallel() // mostly waits: each restart waits out the killed member's session
	kills := 20
	if testing.Short() {
		kills = 6
	}
	r, ends := runIngestKill(t, binary(t, "ingest"), kills)
	ip := r.start(t)
	r.waitEqual(t, 180*time.Second, ip)
	rows := r.icebergRows(t)
	seen := map[string]bool{}
	for _, row := range rows {
		id := strings.SplitN(row, "|", 2)[0]
		if seen[id] {
			t.Fatalf("duplicate key %s", id)
		}
		seen[id] = true
	}
	r.waitStored(t, ends, 60*time.Second, ip)
	// Through the stand-in: its maintenance compacted and expired
	// snapshots while ingest was killed and restarted, and the killed
	// ingests committed on top of it; the tiling below walks the history
	// across the expired snapshots (noted before each expiry).
	r.lake.requireManaged(t, 2*time.Minute)
	r.lake.requireCommitsAfterCompaction(t)
	tiling := r.tiling(t, ends)
	t.Logf("%d rows equal after %d kills; %s", len(rows), r.restart-1, tiling)
	if f := tiling.Failures(); len(f) > 0 {
		t.Fatalf("lake validator:\n%s", validate.Report(f, 20))
	}
	r.waitEqual(t, 60*time.Second, ip) // still equal after the maintenance
	r.lake.report(t)
	ip.stop(t, 60*time.Second)
}

// TestIngestKillBrokenOffsets is TestIngestKill against an ingest built
// with the tag binlake_broken_offsets, which ignores the offsets stored in
// the table: the lake validator must report offsets applied twice. Three
// kills are enough: every restart of that ingest re-applies the topic.
func TestIngestKillBrokenOffsets(t *testing.T) {
	t.Parallel() // mostly waits, as TestIngestKill
	r, ends := runIngestKill(t, taggedBinary(t, "ingest", "binlake_broken_offsets"), 3)
	ip := r.start(t)
	// Wait for the table to store the end offsets; the broken ingest gets
	// there too, having re-read the topic from the start.
	r.waitStored(t, ends, 180*time.Second, ip)
	ip.stop(t, 60*time.Second)
	tiling := r.tiling(t, ends)
	f := tiling.Failures()
	t.Logf("%s; %d failures:\n%s", tiling, len(f), validate.Report(f, 10))
	applied := 0
	for _, l := range f {
		if strings.Contains(l, "applied again") {
			applied++
		}
	}
	if applied == 0 {
		t.Fatalf("the lake validator found no offset applied twice by an ingest that ignores its stored offsets")
	}
}

// runIngestKill runs capture and the ingest binary bin, kills ingest n
// times while a workload runs, and returns once capture has published the
// whole workload, with the offset after each partition's last record.
func runIngestKill(t *testing.T, bin string, n int) (*ingestRun, map[int32]int64) {
	c := newCaptureEnv(t)
	exec1(t, c, typesDDL)
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 30*time.Second)
	// A 10 s session: each restart waits that long, not 45 s, for the
	// killed member to leave the group.
	// Through the stand-in, expiry spares snapshots younger than 30 s,
	// longer than a note and the expiry after it take (recordBound, see
	// lakeOpts.record), so the history walk sees every snapshot.
	l := newLake(t, lakeOpts{record: true, expireOlderThan: 30 * time.Second})
	r := newIngestRunOn(t, c, l, "INGEST_FLUSH_INTERVAL=500ms", "INGEST_FLUSH_ROWS=400", "INGEST_GROUP_SESSION_TIMEOUT=10s")
	r.bin = bin

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var statements int
	wg.Add(1)
	go func() {
		defer wg.Done()
		db := c.db.AdminDB(t, c.dbName)
		rng := rand.New(rand.NewPCG(1, 2))
		for ctx.Err() == nil {
			id := rng.IntN(200)
			var q string
			switch rng.IntN(6) {
			case 0, 1:
				q = fmt.Sprintf("INSERT INTO t (id, b, name, amount, dt, d, j, note) VALUES (%d, %d, 'n%d', %d.%02d, '2024-01-01 00:00:00.%06d', '2024-01-%02d', '{\"i\": %d}', NULL) ON DUPLICATE KEY UPDATE b = b + 1, note = 'dup'",
					id, rng.Int64N(1<<40), id, rng.IntN(1000), rng.IntN(100), rng.IntN(1000000), 1+rng.IntN(28), id)
			case 2:
				q = fmt.Sprintf("UPDATE t SET name = 'u%d', amount = amount + 0.01, note = IF(note IS NULL, 'x', NULL) WHERE id = %d", rng.IntN(1000), id)
			case 3:
				q = fmt.Sprintf("DELETE FROM t WHERE id = %d", id)
			case 4:
				q = fmt.Sprintf("UPDATE IGNORE t SET id = %d WHERE id = %d", 200+rng.IntN(200), id)
			case 5:
				q = fmt.Sprintf("BEGIN; INSERT IGNORE INTO t (id, b, name, amount, dt, d) VALUES (%d, 1, 'tx', 1, NOW(6), CURDATE()); UPDATE t SET b = b + 7 WHERE id < %d; COMMIT", id, rng.IntN(50))
			}
			if _, err := db.ExecContext(ctx, q); err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", q, err)
				return
			}
			statements++
			time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond) // writer pacing, not a wait
		}
	}()

	rng := rand.New(rand.NewPCG(3, 4))
	kills := 0
	for kills < n {
		// Each process is killed only after it has committed something,
		// then at a random moment (mid-batch, mid-commit): a restarted one
		// first waits out the killed member's session, and killed before
		// its first commit it would prove nothing (TestIngestKillBrokenOffsets
		// once saw no offset re-applied for that reason).
		before := r.committed(t)
		ip := r.start(t)
		testenv.CheckFor(t, 2*time.Minute, 200*time.Millisecond, func() error {
			if ip.exited() || r.committed(t) != before {
				return nil
			}
			return fmt.Errorf("ingest %d has committed nothing yet", r.restart)
		})
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond) // a random kill moment: pacing, not a wait
		if ip.exited() {
			cancel()
			t.Fatalf("ingest exited on its own: %v\n%s", ip.err, ip.output())
		}
		ip.kill()
		kills++
	}
	cancel()
	wg.Wait()
	t.Logf("%d statements, %d kills", statements, kills)
	c.caughtUp(t, 2*time.Minute)
	return r, topicEnds(t, r.topic)
}

// topicEnds reads topic (read_committed) and returns, per partition, the
// offset after its last change record (tombstones apply nothing, and
// ingest does not advance its stored offset for them): what the table must
// end up holding.
func topicEnds(t *testing.T, topic string) map[int32]int64 {
	t.Helper()
	ends := map[int32]int64{}
	n := kafkatest.Consume(t, testenv.KafkaBrokers(t), topic, 0, 2*time.Minute, func(rec *kgo.Record) {
		if rec.Value != nil { // ingest stores no offset for a trailing tombstone
			ends[rec.Partition] = max(ends[rec.Partition], rec.Offset+1)
		}
	})
	t.Logf("%s: %d records, ends %v", topic, n, ends)
	return ends
}

// stored is the offsets the table stores for the topic, as ingest
// recovers them: from its properties, else the newest snapshot summary
// holding them (the current snapshot may be a maintenance one's).
func (r *ingestRun) stored(t *testing.T) map[int32]int64 {
	tbl, err := r.cat.LoadTable(t.Context(), r.ident)
	if err != nil {
		return nil
	}
	offs, err := validate.TableOffsets(tbl)
	if err != nil {
		t.Fatal(err)
	}
	return offs[r.topic]
}

// waitStored waits until the table's current snapshot stores the end of
// every partition of the topic.
func (r *ingestRun) waitStored(t *testing.T, ends map[int32]int64, timeout time.Duration, p *proc) {
	t.Helper()
	testenv.CheckFor(t, timeout, 500*time.Millisecond, func() error {
		if p.exited() {
			t.Fatalf("ingest exited: %v\n%s", p.err, p.output())
		}
		m := r.stored(t)
		for part, end := range ends {
			if m[part] < end {
				return fmt.Errorf("the table stores offsets %v, want the topic's end offsets %v", m, ends)
			}
		}
		return nil
	})
}

// tiling runs the lake validator over the table's snapshot history.
func (r *ingestRun) tiling(t *testing.T, ends map[int32]int64) *validate.Tiling {
	t.Helper()
	tbl, err := r.cat.LoadTable(t.Context(), r.ident)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := r.lake.rec.History(tbl) // a nil Recorder: the table's own history
	if err != nil {
		t.Fatal(err)
	}
	v := validate.OffsetTiling(r.topic)
	for _, s := range hist {
		v.NoteSnapshot(s)
	}
	for p, n := range ends {
		v.NoteEnd(p, n)
	}
	return v
}
