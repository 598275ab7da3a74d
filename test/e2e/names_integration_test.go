//go:build integration

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/lakecheck"
	"github.com/binlake/binlake/test/testenv"
)

// prefixTopics returns the end offset (uncommitted records and
// transaction markers included) of every topic whose name contains
// prefix.
func prefixTopics(t *testing.T, prefix string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for topic, parts := range kafkatest.EndOffsets(t, testenv.KafkaBrokers(t), func(n string) bool { return strings.Contains(n, prefix) }) {
		for _, end := range parts {
			out[topic] += end
		}
	}
	return out
}

// storedPositions counts the records of the offsets topic keyed by id.
func storedPositions(t *testing.T, id string) int {
	t.Helper()
	// Control records are kept: the topic is written in transactions, so
	// its end offset is a commit marker's, which a reader must see to know
	// it has reached the end.
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...),
		kgo.ConsumeTopics("__binlake-capture-offsets"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), "__binlake-capture-offsets")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	n := 0
	testenv.Eventually(t, 60*time.Second, 10*time.Millisecond, func() bool {
		// A bounded poll: with nothing more to read, the wait below
		// must still see its deadline.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		fs := cl.PollRecords(ctx, 10000)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() && string(r.Key) == id {
				n++
			}
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
		for p, end := range want {
			if end == 0 {
				delete(want, p)
			}
		}
		return len(want) == 0
	}, "reading the offsets topic to its end")
	return n
}

// TestCaptureNamesNoneStopsAtStart checks that with
// field-name-adjustment-mode none, a captured table with a column Avro
// cannot carry stops capture at start-up with an error naming the table,
// the column and the setting, and that capture wrote nothing to Kafka: no
// record on any of its topics and no stored position.
func TestCaptureNamesNoneStopsAtStart(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_FIELD_NAME_ADJUSTMENT_MODE=none")
	exec1(t, c, "CREATE TABLE fine (id INT PRIMARY KEY)", "INSERT INTO fine VALUES (1)",
		"CREATE TABLE `order items` (id INT PRIMARY KEY, `created at` DATETIME)", "INSERT INTO `order items` VALUES (1, NOW())")
	p := start(t, binary(t, "capture"), c.env, "capture.log")
	testenv.Eventually(t, 60*time.Second, 100*time.Millisecond, p.exited, "capture to stop on the column name")
	if p.err == nil {
		t.Fatalf("capture exited 0:\n%s", p.output())
	}
	out := p.output()
	for _, want := range []string{c.dbName + ".order items", `"created at"`, "field-name-adjustment-mode", "CAPTURE_FIELD_NAME_ADJUSTMENT_MODE", "avro"} {
		if !strings.Contains(out, want) {
			t.Errorf("the error does not mention %q:\n%s", want, out)
		}
	}
	for topic, end := range prefixTopics(t, c.prefix) {
		if end != 0 {
			t.Errorf("capture wrote %d records or markers to %s before stopping", end, topic)
		}
	}
	if n := storedPositions(t, c.prefix); n != 0 {
		t.Errorf("capture stored its position %d times before stopping", n)
	}
}

// TestCaptureNamesNoneStopsAtDDL checks that with mode none a DDL adding
// a column Avro cannot carry stops capture with the named error before
// anything of that DDL is written: the end offsets of capture's topics do
// not move (no schema-change event, not even an aborted one).
func TestCaptureNamesNoneStopsAtDDL(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_SNAPSHOT_MODE=no_data", "CAPTURE_FIELD_NAME_ADJUSTMENT_MODE=none")
	p := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, p, "Connected to server", 30*time.Second)
	exec1(t, c, "CREATE TABLE prices (id INT PRIMARY KEY, amount INT)", "INSERT INTO prices VALUES (1, 1)")
	c.caughtUp(t, time.Minute)
	before := prefixTopics(t, c.prefix)
	if before[c.prefix] == 0 {
		t.Fatalf("no schema-change events on %s before the DDL: %v", c.prefix, before)
	}

	exec1(t, c, "ALTER TABLE prices ADD COLUMN `Amount€` INT", "INSERT INTO prices VALUES (2, 2, 2)")
	testenv.Eventually(t, 60*time.Second, 100*time.Millisecond, p.exited, "capture to stop on the column name")
	out := p.output()
	for _, want := range []string{c.dbName + ".prices", `"Amount€"`, "field-name-adjustment-mode", "CAPTURE_FIELD_NAME_ADJUSTMENT_MODE"} {
		if !strings.Contains(out, want) {
			t.Errorf("the error does not mention %q:\n%s", want, out)
		}
	}
	after := prefixTopics(t, c.prefix)
	for topic, end := range after {
		if end != before[topic] {
			t.Errorf("%s: end offset %d after the DDL, %d before: capture wrote to it", topic, end, before[topic])
		}
	}
}

// namesTable is one source table of TestIngestNamesAvro: its name, its
// Iceberg table's natural name, the Iceberg column names expected (Avro's
// adjusted field names) and a query rendering its rows in cell's
// canonical form.
type namesTable struct {
	name    string
	lake    string
	columns []string
	query   string
}

// TestIngestNamesAvro runs capture (field and schema names adjusted with
// avro) and ingest on tables whose table and column names are outside
// Avro's alphabet, through a snapshot and streamed changes, and checks that
// every table lands in Iceberg under its natural name (`order items` →
// order_items, no hash suffix) with the adjusted names as its columns and
// equal to MariaDB row for row.
func TestIngestNamesAvro(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_FIELD_NAME_ADJUSTMENT_MODE=avro", "CAPTURE_SCHEMA_NAME_ADJUSTMENT_MODE=avro")
	exec1(t, c,
		"CREATE TABLE `order items` (`order id` INT NOT NULL PRIMARY KEY, `created at` DATETIME(3), `Amount€` DECIMAL(10,2), `unit-price` INT, `1st_place` INT, `select` INT, `naïve` VARCHAR(10))",
		"INSERT INTO `order items` VALUES (1, '2024-05-01 10:00:00.123', 12.50, 3, 1, 2, 'oui'), (2, NULL, NULL, NULL, NULL, NULL, NULL)",
		"CREATE TABLE `2024-sales` (`key` INT NOT NULL PRIMARY KEY, `Qty Sold` INT)",
		"INSERT INTO `2024-sales` VALUES (1, 10), (2, 20)",
		"CREATE TABLE `Café` (`Größe` INT NOT NULL PRIMARY KEY, `日本語` VARCHAR(10))",
		"INSERT INTO `Café` VALUES (1, 'はい')",
	)
	tables := []namesTable{
		{"order items", "order_items", []string{"order_id", "created_at", "Amount_", "unit_price", "_1st_place", "select", "na_ve"},
			"SELECT CONCAT_WS('|', `order id`, IFNULL(DATE_FORMAT(`created at`, '%Y-%m-%d %H:%i:%s.%f'), 'NULL'), IFNULL(`Amount€`, 'NULL'), IFNULL(`unit-price`, 'NULL'), IFNULL(`1st_place`, 'NULL'), IFNULL(`select`, 'NULL'), IFNULL(`naïve`, 'NULL')) FROM `order items` ORDER BY 1"},
		{"2024-sales", "2024_sales", []string{"key", "Qty_Sold"}, "SELECT CONCAT_WS('|', `key`, IFNULL(`Qty Sold`, 'NULL')) FROM `2024-sales` ORDER BY 1"},
		{"Café", "caf", []string{"Gr__e", "___"}, "SELECT CONCAT_WS('|', `Größe`, IFNULL(`日本語`, 'NULL')) FROM `Café` ORDER BY 1"},
	}
	var topics []string
	for _, tb := range tables {
		topics = append(topics, c.topic(strings.NewReplacer(" ", "_", "é", "_").Replace(tb.name)))
	}
	capture := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, capture, "Connected to server", 60*time.Second)
	r := newIngestRun(t, c, "INGEST_TOPICS="+strings.Join(topics, ","))
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		list, _ := collectTables(ctx, r.cat, c.dbName)
		for _, id := range list {
			_ = r.cat.DropTable(ctx, id)
		}
	})
	ingest := r.start(t)
	exec1(t, c,
		"INSERT INTO `order items` VALUES (3, '2024-06-01 00:00:00', 1.25, 1, 1, 1, 'non')",
		"UPDATE `order items` SET `Amount€` = 99.99, `select` = 20 WHERE `order id` = 1",
		"UPDATE `order items` SET `order id` = 4 WHERE `order id` = 2",
		"DELETE FROM `2024-sales` WHERE `key` = 2",
		"UPDATE `Café` SET `日本語` = 'いいえ' WHERE `Größe` = 1",
		"INSERT INTO `Café` VALUES (2, NULL)",
	)
	for _, tb := range tables {
		want := queryStrings(t, c, tb.query)
		slices.Sort(want)
		var got []string
		var cols []string
		testenv.CheckFor(t, 3*time.Minute, time.Second, func() error {
			if ingest.exited() || capture.exited() {
				t.Fatalf("a process exited:\ningest: %v\n%s\ncapture: %v\n%s", ingest.err, ingest.output(), capture.err, capture.output())
			}
			cols, got = lakeRows(t, r.cat, c.dbName, tb)
			if !slices.Equal(got, want) {
				return fmt.Errorf("Iceberg table for %s differs from MariaDB (-mariadb +iceberg):\n%s", tb.name, cmp.Diff(want, got))
			}
			return nil
		})
		if !slices.Equal(cols[1:], tb.columns) {
			t.Errorf("%s: Iceberg columns %q, want %q", tb.name, cols[1:], tb.columns)
		}
		t.Logf("%s: Iceberg table %s.%s columns %q, %d rows equal to MariaDB", tb.name, c.dbName, strings.TrimSuffix(cols[0], ":"), cols[1:], len(got))
	}
}

// queryStrings runs a query returning one string per row.
func queryStrings(t *testing.T, c *captureEnv, q string) []string {
	t.Helper()
	db := c.db.AdminDB(t, c.dbName)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "SET time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func collectTables(ctx context.Context, cat catalog.Catalog, ns string) ([]table.Identifier, error) {
	var out []table.Identifier
	for id, err := range cat.ListTables(ctx, table.Identifier{ns}) {
		if err != nil {
			return out, err
		}
		out = append(out, id)
	}
	return out, nil
}

// lakeRows reads the Iceberg table of tb in namespace ns (named tb.lake)
// and returns its name followed by ":" and its column names, and its rows
// in canonical form, sorted.
func lakeRows(t *testing.T, cat catalog.Catalog, ns string, tb namesTable) (cols, rows []string) {
	t.Helper()
	ids, err := collectTables(t.Context(), cat, ns)
	if err != nil {
		return nil, nil
	}
	for _, id := range ids {
		if id[len(id)-1] != tb.lake {
			continue
		}
		tbl, err := cat.LoadTable(t.Context(), id)
		if err != nil || tbl.CurrentSnapshot() == nil {
			return nil, nil
		}
		cols = append(cols, id[len(id)-1]+":")
		for _, f := range tbl.Schema().Fields() {
			if f.Name != lakecheck.SourceOrderColumn { // ingest's own column
				cols = append(cols, f.Name)
			}
		}
		at, err := tbl.Scan().ToArrowTable(t.Context())
		if err != nil {
			t.Fatalf("scanning %v: %v", id, err)
		}
		defer at.Release()
		tr := array.NewTableReader(at, 0)
		defer tr.Release()
		for tr.Next() {
			rec := tr.RecordBatch()
			for i := range int(rec.NumRows()) {
				var parts []string
				for _, c := range cols[1:] {
					idx := rec.Schema().FieldIndices(c)
					if len(idx) != 1 {
						t.Fatalf("column %s missing from the scan of %v", c, id)
					}
					parts = append(parts, cell(t, rec.Column(idx[0]), i))
				}
				rows = append(rows, strings.Join(parts, "|"))
			}
		}
		slices.Sort(rows)
		return cols, rows
	}
	return nil, nil
}
