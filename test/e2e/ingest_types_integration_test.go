//go:build integration

package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	dbz "github.com/binlake/binlake/schemas/debezium"
	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/icebergreader"
	"github.com/binlake/binlake/test/lakecheck"
	"github.com/binlake/binlake/test/testenv"
)

// typesTables are one table per type family of schemas/TYPES.md (the
// families of schemas/testdata/debezium/workload.sql, with every DATETIME
// and TIMESTAMP precision), keyed by an INT, a BIGINT UNSIGNED (with keys
// above 2^63) and a 4-byte UTF-8 VARCHAR.
var typesTables = []string{
	`CREATE TABLE ints (id INT NOT NULL PRIMARY KEY,
		ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
		mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
		bi BIGINT, biu BIGINT UNSIGNED, b1 TINYINT(1), nn INT NOT NULL DEFAULT 7)`,
	`CREATE TABLE nums (id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
		d10 DECIMAL(10,2), d65 DECIMAL(65,30), du DECIMAL(5,0) UNSIGNED, d38 DECIMAL(38,10),
		f FLOAT, d DOUBLE, bit1 BIT(1), bit10 BIT(10), bit64 BIT(64))`,
	`CREATE TABLE strs (id VARCHAR(20) NOT NULL PRIMARY KEY,
		c CHAR(10), vc VARCHAR(100), t TEXT, lt LONGTEXT,
		bn BINARY(4), vb VARBINARY(16), bl BLOB,
		e ENUM('small','medium','large') NOT NULL DEFAULT 'small',
		s SET('a','b','c'), j JSON) DEFAULT CHARSET=utf8mb4`,
	`CREATE TABLE times (id INT NOT NULL PRIMARY KEY,
		d DATE, t0 TIME, t6 TIME(6),
		dt0 DATETIME, dt1 DATETIME(1), dt2 DATETIME(2), dt3 DATETIME(3), dt4 DATETIME(4), dt5 DATETIME(5), dt6 DATETIME(6),
		ts0 TIMESTAMP NULL, ts1 TIMESTAMP(1) NULL, ts2 TIMESTAMP(2) NULL, ts3 TIMESTAMP(3) NULL,
		ts4 TIMESTAMP(4) NULL, ts5 TIMESTAMP(5) NULL, ts6 TIMESTAMP(6) NULL,
		y YEAR, dnn DATE NOT NULL DEFAULT '2000-01-01')`,
	`CREATE TABLE geo (id INT NOT NULL PRIMARY KEY, p POINT, g GEOMETRY)`,
	// Partitioned by bucket(4, id) in Iceberg (INGEST_PARTITION_SPEC).
	`CREATE TABLE buck (id INT NOT NULL PRIMARY KEY, v VARCHAR(20), n INT)`,
	// No primary key: an append-only change log in Iceberg.
	`CREATE TABLE nopk (a INT, b VARCHAR(10), f DOUBLE)`,
}

// typesWorkload changes every table of typesTables: inserts of the limits
// of each type and of NULLs, updates, deletes, primary-key updates, a
// truncate and an ADD COLUMN.
var typesWorkload = []string{
	// The bucketed table's rows first (TestIngestBothProducersTypes runs
	// this statement alone, as its seed, and the rest after it).
	`INSERT INTO buck SELECT seq, CONCAT('v', seq), seq * 10 FROM seq_1_to_40`,

	// Integers at their limits; TINYINT(1); NULLs.
	`INSERT INTO ints VALUES (1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615, 1, 0),
		(2, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, 9223372036854775808, 0, -1),
		(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 3)`,
	"UPDATE ints SET ti = 0, b1 = NULL, biu = 9223372036854775807 WHERE id = 3",
	"UPDATE ints SET b1 = 5, biu = 0, tiu = 128 WHERE id = 1",
	"DELETE FROM ints WHERE id = 2",
	"UPDATE ints SET id = 30 WHERE id = 3",

	// Decimals (beyond Iceberg's 38 digits too), floats, bits; keys above 2^63.
	`INSERT INTO nums VALUES (18446744073709551615, 12345678.90, 12345678901234567890123456789012345.123456789012345678901234567890, 99999, 9999999999999999999999999999.9999999999, 3.14, 2.718281828459045, b'1', b'1000000001', b'1111111111111111111111111111111111111111111111111111111111111111'),
		(0, -0.01, -0.000000000000000000000000000001, 0, -0.0000000001, -1.5e-10, -1.7976931348623157e308, b'0', b'0', b'0'),
		(9223372036854775808, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
		(7, 0.50, -99999999999999999999999999999999999.999999999999999999999999999999, 1, 0, 1e20, 5e-324, b'1', b'0000000001', b'1000000000000000000000000000000000000000000000000000000000000000')`,
	"UPDATE nums SET f = 0, d10 = -99999999.99, bit10 = b'1111111111' WHERE id = 0",
	"DELETE FROM nums WHERE id = 7",
	"UPDATE nums SET id = 9223372036854775807 WHERE id = 9223372036854775808",
	// No DEFAULT: MariaDB fills a default into existing rows without
	// writing row events, which no binlog reader can see (ingest/README.md).
	"ALTER TABLE nums ADD COLUMN extra VARCHAR(10)",
	"INSERT INTO nums (id, d10, extra) VALUES (5, 1.25, 'new'), (6, NULL, DEFAULT)",
	"UPDATE nums SET extra = 'set' WHERE id = 18446744073709551615",

	// Strings with 4-byte UTF-8 (in the key too), binary strings, ENUM, SET, JSON.
	`INSERT INTO strs VALUES ('k1', 'abc', 'héllo wörld 😀', 'text 𝄞 music', REPEAT('x', 3000), x'00010203', x'DEADBEEF', x'00FF00FF', 'large', 'a,c', '{"k": [1, 2.5, "x", null, true], "emoji": "😀"}'),
		('k😀', '', '', '', '', x'00', x'', x'', 'medium', '', '[]'),
		('k3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'small', NULL, NULL)`,
	`UPDATE strs SET vc = 'ünïcödé 🎉', bn = x'FF', s = 'a,b,c', j = '{"a": {"b": [1, 2]}}' WHERE id = 'k1'`,
	"UPDATE strs SET id = 'k4 🐘' WHERE id = 'k3'",
	"DELETE FROM strs WHERE id = 'k😀'",

	// Temporal types: every precision, negative and > 24h TIME, range
	// limits, zero dates (NULL in Iceberg: see lakecheck), then a TRUNCATE
	// and rows after it.
	`INSERT INTO times VALUES (1, '2024-02-29', '23:59:59', '12:34:56.789012',
		'2024-02-29 23:59:59', '2024-02-29 23:59:59.1', '2024-02-29 23:59:59.12', '2024-02-29 23:59:59.123', '2024-02-29 23:59:59.1234', '2024-02-29 23:59:59.12345', '2024-02-29 23:59:59.123456',
		'2024-02-29 23:59:59', '2024-02-29 23:59:59.1', '2024-02-29 23:59:59.12', '2024-02-29 23:59:59.123', '2024-02-29 23:59:59.1234', '2024-02-29 23:59:59.12345', '2024-02-29 23:59:59.123456', 2024, '2024-01-01')`,
	"TRUNCATE TABLE times",
	`INSERT INTO times VALUES (1, '1000-01-01', '-838:59:59', '-01:02:03.000004',
		'1000-01-01 00:00:00', '1000-01-01 00:00:00.1', '1969-12-31 23:59:59.99', '9999-12-31 23:59:59.999', '1969-12-31 23:59:59.9999', '1970-01-01 00:00:00.00001', '1970-01-01 00:00:00.000001',
		'1970-01-01 00:00:01', '2038-01-19 03:14:07.9', '2000-01-01 00:00:00.5', '2038-01-19 03:14:07.999', '1999-12-31 23:59:59.9999', '2000-02-29 12:00:00.00001', '2038-01-19 03:14:07.999999', 1901, '1000-01-01'),
		(2, '9999-12-31', '838:59:59', '25:00:00.5', '1969-12-31 23:59:59', '1969-12-31 23:59:59.9', '1969-12-31 23:59:59.99', '1969-12-31 23:59:59.999', '1969-12-31 23:59:59.9999', '1969-12-31 23:59:59.99999', '1969-12-31 23:59:59.999999',
		'2000-01-01 00:00:00', NULL, NULL, NULL, NULL, NULL, '2000-01-01 00:00:00.5', 2155, '9999-12-31'),
		(3, '0000-00-00', '00:00:00', NULL, '0000-00-00 00:00:00', NULL, NULL, NULL, NULL, NULL, '0000-00-00 00:00:00.000000', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '1969-12-31'),
		(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, DEFAULT)`,
	"UPDATE times SET t0 = '-00:00:01', y = 2000, dt6 = '2000-01-01 00:00:00.000001' WHERE id = 4",
	"UPDATE times SET id = 40 WHERE id = 4",
	"DELETE FROM times WHERE id = 2",

	// Spatial: a POINT (SRID 0 → NULL) and a LINESTRING with an SRID.
	`INSERT INTO geo VALUES (1, ST_GeomFromText('POINT(1.5 -2.25)'), ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)', 4326)),
		(2, NULL, NULL), (3, ST_GeomFromText('POINT(0 0)'), ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))'))`,
	"UPDATE geo SET g = ST_GeomFromText('POINT(3 4)', 3857), p = ST_GeomFromText('POINT(-1e20 1e-20)') WHERE id = 2",
	"DELETE FROM geo WHERE id = 3",
	"UPDATE geo SET id = 10 WHERE id = 1",

	// A bucketed table: rows spread over the buckets, updated, deleted,
	// and moved to other keys (so, mostly, to other buckets: the old copy
	// must go from the old bucket's partition).
	"UPDATE buck SET v = 'updated', n = NULL WHERE id % 3 = 0",
	"DELETE FROM buck WHERE id % 7 = 0",
	"UPDATE buck SET id = id + 1000 WHERE id % 5 = 1",
	"UPDATE buck SET id = 7, v = 'moved back' WHERE id = 1001", // 7 was deleted

	// No primary key: duplicates, an update of two identical rows, a
	// delete, a truncate and rows after it, NULLs.
	"INSERT INTO nopk VALUES (1, 'x', 0.5), (2, 'y', NULL), (2, 'y', NULL), (NULL, NULL, NULL)",
	"UPDATE nopk SET b = 'z', f = -1e300 WHERE a = 2",
	"DELETE FROM nopk WHERE a = 1",
	"TRUNCATE TABLE nopk",
	"INSERT INTO nopk VALUES (3, 'w', 1.25), (3, 'w', 1.25), (4, NULL, 2)",
	"UPDATE nopk SET a = 5 WHERE a = 4",
	"DELETE FROM nopk WHERE b IS NULL",
	"ALTER TABLE nopk ADD COLUMN c VARCHAR(5)",
	"INSERT INTO nopk VALUES (6, 'v', NULL, 'new')",
}

// TestIngestBothProducersTypes is TestIngestBothProducersJavaReader over
// every type family of schemas/TYPES.md: capture and the real Debezium
// connector on one database at once, one ingest consuming both into two
// namespaces, and each table read with Iceberg's Java reference reader and
// compared with MariaDB value for value in the canonical forms of package
// lakecheck (which also states the rule for values that cannot round-trip,
// such as zero dates).
func TestIngestBothProducersTypes(t *testing.T) {
	parallelThroughS3Tables(t)
	c := newCaptureEnv(t, "CAPTURE_SNAPSHOT_MODE=no_data")
	exec1(t, c, typesTables...)
	cat, namespaces := runBothProducers(t, c, bothProducers{
		// The delete layout below is what the readers must meet.
		ingestEnv: append([]string{"INGEST_PARTITION_SPEC=*=none; " + c.dbName + ".buck=bucket(4, id)"}, noRewrite...),
		// The bucketed table's rows first, committed in both namespaces
		// before the workload: its changes then need deletes in each
		// bucket. (Within one batch ingest would fold them into the
		// inserts and write no delete at all: with a fixed pause the
		// folding depended on how fast Debezium was.)
		seed:     typesWorkload[:1],
		seedRows: map[string]int64{"buck": 40},
		workload: typesWorkload[1:],
		tables: []keyedTable{{"ints", []string{"id"}}, {"nums", []string{"id"}}, {"strs", []string{"id"}}, {"times", []string{"id"}},
			{"geo", []string{"id"}}, {"buck", []string{"id"}}, {"nopk", nil}},
		nonChange: true,
	})
	ctx := t.Context()
	for _, ns := range namespaces {
		tbl, err := cat.LoadTable(ctx, table.Identifier{ns, "buck"})
		if err != nil {
			t.Errorf("loading the bucketed table: %v", err)
			continue
		}
		spec := tbl.Spec()
		if spec.NumFields() != 1 || spec.Field(0).Transform.String() != "bucket[4]" {
			t.Errorf("%v: partition spec %s, want bucket[4](id)", tbl.Identifier(), spec.String())
		}
		// Rows live in several buckets, and each delete file is in the
		// partition of the rows it deletes: position deletes or deletion
		// vectors (and no equality delete) in the default mode (auto),
		// equality deletes when the ingest under test runs with
		// INGEST_DELETE_MODE=equality.
		position := os.Getenv("INGEST_DELETE_MODE") != "equality"
		// The layout ingest wrote: its newest snapshot, which through the
		// S3 Tables stand-in may lie under a compaction that removed the
		// deletes.
		snap, err := ingestSnapshotID(tbl)
		if err != nil {
			t.Fatalf("%v: %v", tbl.Identifier(), err)
		}
		tasks, err := tbl.Scan(table.WithSnapshotID(snap)).PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		data, eqDeletes, posDeletes := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for _, task := range tasks {
			part := fmt.Sprint(task.File.Partition())
			data[part] = true
			for _, d := range task.EqualityDeleteFiles {
				eqDeletes[fmt.Sprint(d.Partition())] = true
			}
			for _, d := range append(slices.Clone(task.DeleteFiles), task.DeletionVectorFiles...) {
				if d.ContentType() == iceberg.EntryContentPosDeletes {
					if fmt.Sprint(d.Partition()) != part {
						t.Errorf("%v: position delete %s in partition %v applies to a data file in %s", tbl.Identifier(), d.FilePath(), d.Partition(), part)
					}
					posDeletes[fmt.Sprint(d.Partition())] = true
				}
			}
		}
		switch {
		case position && (len(data) < 2 || len(posDeletes) < 2 || len(eqDeletes) > 0):
			t.Errorf("%v: data files in %d buckets, position deletes in %d, equality deletes in %d: want rows and position deletes spread over buckets, no equality delete", tbl.Identifier(), len(data), len(posDeletes), len(eqDeletes))
		case !position && (len(data) < 2 || len(eqDeletes) < 2):
			t.Errorf("%v: data files in %d buckets, equality deletes in %d: want rows and deletes spread over buckets", tbl.Identifier(), len(data), len(eqDeletes))
		}
		if position {
			t.Logf("%v: position deletes in %d buckets", tbl.Identifier(), len(posDeletes))
		}
		t.Logf("%v: partition spec %s; data files in %d buckets, live equality deletes in %d", tbl.Identifier(), spec.String(), len(data), len(eqDeletes))
	}
}

// keyedTable is a table to compare; a nil key is a table without a primary
// key, compared through its change log.
type keyedTable struct {
	name string
	key  []string
}

// bothProducers are the settings of runBothProducers.
type bothProducers struct {
	ingestEnv []string // extra ingest settings
	// seed is run once capture, Debezium and ingest run; then the
	// workload waits until each table of seedRows has that many rows in
	// both namespaces.
	seed     []string
	seedRows map[string]int64
	workload []string // statements run once capture, Debezium and ingest run (and seed is in)
	tables   []keyedTable
	// nonChange has Debezium also write its schema change topic
	// <prefix>, transaction metadata on <prefix>.transaction and
	// heartbeats, all matched by ingest's topic regex: ingest must skip
	// them, and log that it did.
	nonChange bool
}

// runBothProducers starts the real Debezium connector, capture and one
// ingest (consuming both producers' topics into namespaces
// <producer>_<db>) on c's database, whose tables exist, runs the workload
// and waits until every table, in both namespaces, read with the Java
// reference reader, equals MariaDB. It returns the catalog and the two
// namespaces.
func runBothProducers(t *testing.T, c *captureEnv, run bothProducers) (*rest.Catalog, []string) {
	t.Helper()
	ice := testenv.IcebergEnv(t)
	ctx := t.Context()
	dbzPrefix := "dbz_" + c.prefix
	extra := map[string]string{"skipped.operations": "none"}
	regex := "(" + c.prefix + "|" + dbzPrefix + `)\.` + c.dbName + `\..*`
	if run.nonChange {
		extra["include.schema.changes"] = "true"
		extra["provide.transaction.metadata"] = "true"
		extra["heartbeat.interval.ms"] = "500"
		regex = "(" + c.prefix + "|" + dbzPrefix + `)(\.` + c.dbName + `\..*|\.transaction)?|__debezium-heartbeat\.` + dbzPrefix
	}
	debezium.Run(t, debezium.Config{Database: c.dbName, TopicPrefix: dbzPrefix, ServerID: 6600 + uint32(time.Now().UnixNano()%100000),
		SnapshotMode: "no_data", Extra: extra})
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 30*time.Second)
	// Through the S3 Tables stand-in, expiry keeps 2 snapshots: ingest's
	// newest beside a compaction on top of it, whose delete layout
	// TestIngestBothProducersTypes checks.
	l := newLake(t, lakeOpts{retainLast: 2})
	ing := start(t, binary(t, "ingest"), append(append(append([]string{
		"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","),
		"INGEST_GROUP_ID=" + testenv.Unique(t, "g"),
		"INGEST_TOPIC_REGEX=" + regex,
		"INGEST_NAMESPACE_WITH_PREFIX=true",
		"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t)}, l.env...),
		"INGEST_FLUSH_INTERVAL=1s", "INGEST_METRICS_ADDR=127.0.0.1:0",
	), run.ingestEnv...), "ingest.log")
	cat, err := rest.NewCatalog(ctx, "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	namespaces := []string{c.prefix + "_" + c.dbName, dbzPrefix + "_" + c.dbName}
	if len(run.seed) > 0 {
		exec1(t, c, run.seed...)
		for _, ns := range namespaces {
			for name, want := range run.seedRows {
				waitTableRecords(t, ing, cat, table.Identifier{ns, name}, want, 3*time.Minute)
			}
		}
	}
	exec1(t, c, run.workload...)

	db := c.db.AdminDB(t, c.dbName)
	if _, err := db.ExecContext(ctx, "SET time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // keep the session time zone
	compared := 0
	compareAll := func() {
		for _, ns := range namespaces {
			for _, tb := range run.tables {
				var last []string
				deadline := time.Now().Add(3 * time.Minute)
				for {
					if ing.exited() {
						t.Fatalf("ingest exited: %v\n%s", ing.err, ing.output())
					}
					var n int
					var diffs []string
					ident := table.Identifier{ns, tb.name}
					if tb.key == nil {
						n, diffs = changeLogEqualsMariaDB(ctx, t, cat, db, ident, tb.name)
					} else {
						n, diffs = javaEqualsMariaDB(ctx, t, cat, db, ident, tb.name, tb.key)
					}
					if len(diffs) == 0 {
						compared += n
						break
					}
					last = diffs
					if time.Now().Second()%20 == 0 {
						t.Logf("%s.%s not equal yet: %s", ns, tb.name, strings.Join(last, "; "))
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s.%s differs from MariaDB through the Java reader:\n%s\ningest log:\n%s",
							ns, tb.name, strings.Join(last, "\n"), ing.output())
					}
					time.Sleep(time.Second) // polling interval: the loop compares again
				}
			}
		}
	}
	compareAll()
	t.Logf("%d rows of %d tables equal through the Java reader, with capture and with Debezium as the producer", compared, len(run.tables))
	if l.standIn != nil {
		// The managed maintenance compacted (applying the deletes) and
		// expired snapshots: every table still reads equal.
		l.requireManaged(t, 3*time.Minute)
		compared = 0
		compareAll()
		t.Logf("%d rows of %d tables still equal through the Java reader after the managed maintenance", compared, len(run.tables))
		l.report(t)
	}
	if run.nonChange {
		full, err := os.ReadFile(ing.log) // output() is only the tail
		if err != nil {
			t.Fatal(err)
		}
		for _, schema := range []string{"io.debezium.connector.mariadb.SchemaChangeValue", "io.debezium.connector.common.TransactionMetadataValue", "io.debezium.connector.common.Heartbeat"} {
			if !strings.Contains(string(full), `msg="skipping records that are not row changes"`) || !strings.Contains(string(full), " schema="+schema+" ") {
				t.Errorf("ingest did not log skipping %s records", schema)
			}
		}
	}
	return cat, namespaces
}

// changeLogEqualsMariaDB reads the change log ident of a table without a
// primary key (schemamap.ChangeLog) with the Java reader, replays it in
// Kafka order (c, r: add the row; u: remove the before image, add the
// after image; d: remove the before image; t: empty) and compares the
// multiset of rows with the MariaDB table's (name, in db's database).
func changeLogEqualsMariaDB(ctx context.Context, t *testing.T, cat *rest.Catalog, db *sql.DB, ident table.Identifier, name string) (int, []string) {
	t.Helper()
	return changeLogReaderEqualsMariaDB(ctx, t, cat, db, ident, name, "java")
}

// changeLogReaderEqualsMariaDB is changeLogEqualsMariaDB with reader (one
// of icebergreader.Readers) reading the change log.
func changeLogReaderEqualsMariaDB(ctx context.Context, t *testing.T, cat *rest.Catalog, db *sql.DB, ident table.Identifier, name, reader string) (int, []string) {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return 0, []string{err.Error()}
	}
	ns, lakeName := ident[0], ident[1]
	if ids := tbl.Schema().IdentifierFieldIDs; len(ids) != 0 {
		t.Fatalf("%s.%s: change log with identifier fields %v", ns, lakeName, ids)
	}
	types := map[string]iceberg.Type{}
	for _, f := range tbl.Schema().Fields() {
		types[f.Name] = f.Type
	}
	cols, want, err := lakecheck.MariaDBMultiset(ctx, db, name, types)
	if err != nil {
		return 0, []string{err.Error()}
	}
	rows, err := icebergreader.ReadWith(reader, ns+"."+lakeName)
	if err != nil {
		return 0, []string{firstLine(err.Error())} // a table the reader cannot read differs
	}
	if d := columnsDiff(rows, tbl.Schema()); d != "" {
		return 0, []string{reader + " reader: " + d}
	}
	type change struct {
		part, off int64
		before    bool
		op, row   string
	}
	var log []change
	for _, r := range rows {
		num := func(c string) int64 {
			if r[c] == nil {
				t.Fatalf("%s.%s: %s is NULL", ns, lakeName, c)
			}
			n, err := strconv.ParseInt(*r[c], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		log = append(log, change{part: num("_binlake_partition"), off: num("_binlake_offset"),
			before: r["_binlake_before"] != nil && *r["_binlake_before"] == "true", op: *r["_binlake_op"],
			row: strings.Join(lakecheck.JavaRow(r, cols, types), lakecheck.RowSep)})
	}
	sort.Slice(log, func(i, j int) bool {
		a, b := log[i], log[j]
		if a.part != b.part || a.off != b.off {
			return a.part < b.part || a.part == b.part && a.off < b.off
		}
		return a.before && !b.before
	})
	got := lakecheck.Multiset{}
	var diffs []string
	for _, ch := range log {
		switch {
		case ch.op == "t":
			clear(got)
		case ch.before:
			if got[ch.row] == 0 {
				diffs = append(diffs, fmt.Sprintf("%s at offset %d removes a row not there: %q", ch.op, ch.off, ch.row))
				continue
			}
			got[ch.row]--
			if got[ch.row] == 0 {
				delete(got, ch.row)
			}
		default:
			got[ch.row]++
		}
	}
	for r, n := range want {
		if got[r] != n {
			diffs = append(diffs, fmt.Sprintf("row %q: mariadb %d times, change log %d", r, n, got[r]))
		}
	}
	for r, n := range got {
		if _, ok := want[r]; !ok {
			diffs = append(diffs, fmt.Sprintf("row %q: change log %d times, not in mariadb", r, n))
		}
	}
	return len(log), diffs
}

// javaEqualsMariaDB reads ident with the Java reader and compares it with
// the MariaDB table name (in db's database) by key: it returns the rows
// compared, or the differences.
func javaEqualsMariaDB(ctx context.Context, t *testing.T, cat *rest.Catalog, db *sql.DB, ident table.Identifier, name string, key []string) (int, []string) {
	t.Helper()
	return readerEqualsMariaDB(ctx, t, cat, db, ident, name, key, "java")
}

// readerEqualsMariaDB is javaEqualsMariaDB with reader (one of
// icebergreader.Readers, which all print the Java reader's canonical
// strings) reading ident. A reader that ignored a delete would read a key
// twice, which lakecheck.FromJava refuses.
func readerEqualsMariaDB(ctx context.Context, t *testing.T, cat *rest.Catalog, db *sql.DB, ident table.Identifier, name string, key []string, reader string) (int, []string) {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return 0, []string{err.Error()}
	}
	// The iceberg-go scan gives the column types (and checks it too).
	_, types, err := lakecheck.Iceberg(ctx, tbl, key)
	if err != nil {
		return 0, []string{err.Error()}
	}
	var cols []string
	for _, f := range tbl.Schema().Fields() {
		if f.Name != lakecheck.SourceOrderColumn {
			cols = append(cols, f.Name)
		}
	}
	rows, err := icebergreader.ReadWith(reader, ident[0]+"."+ident[1])
	if err != nil {
		return 0, []string{firstLine(err.Error())} // a table the reader cannot read differs
	}
	if d := columnsDiff(rows, tbl.Schema()); d != "" {
		return 0, []string{reader + " reader: " + d}
	}
	conv := make([]map[string]*string, len(rows))
	for i, r := range rows {
		conv[i] = r
	}
	java, err := lakecheck.FromJava(conv, cols, key, types)
	if err != nil {
		return 0, []string{reader + " reader: " + err.Error()}
	}
	lakeName, err := lakeColumnNames(ctx, db, name, types)
	if err != nil {
		return 0, []string{err.Error()}
	}
	srcTypes := map[string]iceberg.Type{}
	for c, l := range lakeName {
		srcTypes[c] = types[l]
	}
	// The key in MariaDB's names (the lake's may be adjusted: Café → Caf_).
	srcKey := make([]string, len(key))
	for i, k := range key {
		srcKey[i] = k
		for c, l := range lakeName {
			if l == k {
				srcKey[i] = c
			}
		}
	}
	src, err := lakecheck.MariaDB(ctx, db, name, srcKey, srcTypes)
	if err != nil {
		return 0, []string{err.Error()}
	}
	for i, c := range src.Columns {
		src.Columns[i] = lakeName[c]
	}
	return len(src.ByKey), lakecheck.Diff(src, java, 50)
}

// columnsDiff says how the columns of rows read by a reader differ from
// the table's (every reader prints every column, NULLs too): a reader
// that left a column out would read it as all NULL.
func columnsDiff(rows []icebergreader.Row, sch *iceberg.Schema) string {
	want := map[string]bool{}
	for _, f := range sch.Fields() {
		want[f.Name] = true
	}
	for _, r := range rows {
		for c := range r {
			if !want[c] {
				return fmt.Sprintf("column %s is not in the table's schema %v", c, sch)
			}
		}
		if len(r) != len(want) {
			var got []string
			for c := range r {
				got = append(got, c)
			}
			sort.Strings(got)
			return fmt.Sprintf("a row has columns %v, the table's schema %v", got, sch)
		}
	}
	return ""
}

// lakeColumnNames maps each column of MariaDB table name to its Iceberg
// column: the same name, or else the name as a field-name adjustment mode
// (avro, capture's default and what Debezium's Avro converter does, or
// avro_unicode) writes it, when the table has that column.
func lakeColumnNames(ctx context.Context, db *sql.DB, name string, types map[string]iceberg.Type) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT * FROM `"+strings.ReplaceAll(name, "`", "``")+"` LIMIT 0")
	if err != nil {
		return nil, err
	}
	cols, err := rows.Columns()
	rows.Close()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(cols))
	for _, c := range cols {
		out[c] = c
		if _, ok := types[c]; ok {
			continue
		}
		for _, mode := range []dbz.NameAdjustment{dbz.AdjustAvro, dbz.AdjustAvroUnicode} {
			if a := dbz.AdjustFieldName(mode, c); types[a] != nil {
				out[c] = a
				break
			}
		}
	}
	return out, nil
}

// firstLine is the first two lines of s (a Java stack trace is long).
func firstLine(s string) string {
	lines := strings.SplitN(s, "\n", 3)
	return strings.Join(lines[:min(2, len(lines))], " ")
}

// waitTableRecords waits until ident's current snapshot counts want
// records (its summary's total-records), failing after timeout or when
// ingest exits.
func waitTableRecords(t *testing.T, ing *proc, cat *rest.Catalog, ident table.Identifier, want int64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	got := "no table"
	for {
		if ing.exited() {
			t.Fatalf("ingest exited: %v\n%s", ing.err, ing.output())
		}
		if tbl, err := cat.LoadTable(t.Context(), ident); err == nil {
			got = "no snapshot"
			if s := tbl.CurrentSnapshot(); s != nil && s.Summary != nil {
				got = s.Summary.Properties["total-records"]
				if got == strconv.FormatInt(want, 10) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v: %s records after %s, want %d\ningest log:\n%s", ident, got, timeout, want, ing.output())
		}
		time.Sleep(500 * time.Millisecond) // polling interval
	}
}
