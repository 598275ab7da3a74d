//go:build integration

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/icebergreader"
	"github.com/binlake/binlake/test/lakecheck"
	"github.com/binlake/binlake/test/testenv"
)

// TestIngestBothProducersJavaReader runs capture and the real Debezium
// connector on the same database at once, one ingest consuming both
// producers' topics into two namespaces, and then reads every resulting
// table with Iceberg's Java reference reader (which applies equality deletes
// itself, sharing no code with iceberg-go) and compares it with MariaDB, row
// for row and value for value, after inserts, updates, deletes, a
// primary-key update, a truncate and an ADD COLUMN.
func TestIngestBothProducersJavaReader(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_SNAPSHOT_MODE=no_data")
	ice := testenv.IcebergEnv(t)
	ctx := t.Context()
	exec1(t, c,
		`CREATE TABLE items (id INT PRIMARY KEY, big BIGINT, name VARCHAR(50) NOT NULL, price DECIMAL(10,2),
			qty SMALLINT UNSIGNED, ratio DOUBLE, born DATE, seen DATETIME(6), stamp TIMESTAMP(3) NULL,
			kind ENUM('a','b','c') NOT NULL DEFAULT 'a', tags SET('x','y','z'), doc JSON, raw VARBINARY(16), note TEXT)`,
		`CREATE TABLE pairs (a INT NOT NULL, b VARCHAR(10) NOT NULL, v INT, PRIMARY KEY (a, b))`,
	)
	dbzPrefix := "dbz_" + c.prefix
	debezium.Run(t, debezium.Config{Database: c.dbName, TopicPrefix: dbzPrefix, ServerID: 6600 + uint32(time.Now().UnixNano()%100000),
		SnapshotMode: "no_data", Extra: map[string]string{"skipped.operations": "none"}})
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 30*time.Second)
	ing := start(t, binary(t, "ingest"), []string{
		"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","),
		"INGEST_GROUP_ID=" + testenv.Unique(t, "g"),
		"INGEST_TOPIC_REGEX=(" + c.prefix + "|" + dbzPrefix + `)\.` + c.dbName + `\..*`,
		"INGEST_NAMESPACE_WITH_PREFIX=true",
		"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t),
		"INGEST_CATALOG_URI=" + ice.URI, "INGEST_S3_ENDPOINT=" + ice.S3Endpoint, "INGEST_S3_REGION=" + ice.Region,
		"INGEST_FLUSH_INTERVAL=1s", "INGEST_METRICS_ADDR=127.0.0.1:0",
	}, "ingest.log")

	exec1(t, c,
		`INSERT INTO items VALUES (1, -9000000000, 'one', 1.50, 65535, 0.25, '2024-02-29', '2024-02-29 23:59:59.123456', '2024-02-29 23:59:59.123', 'b', 'x,z', '{"k": [1, "😀"]}', x'00FF', 'ü 😀'),
			(2, NULL, 'two', NULL, NULL, NULL, NULL, '1970-01-01 00:00:00.000001', NULL, 'a', NULL, NULL, NULL, NULL),
			(3, 3, 'three', -0.01, 0, -1e300, '1000-01-01', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999', 'c', '', '[]', x'', '')`,
		"INSERT INTO pairs VALUES (1, 'x', 1), (1, 'y', 2), (2, 'x', 3)",
		"UPDATE items SET name = 'ONE', price = price * 2, tags = 'y' WHERE id = 1",
		"UPDATE items SET id = 20 WHERE id = 2",
		"DELETE FROM items WHERE id = 3",
		"UPDATE pairs SET b = 'z' WHERE a = 1 AND b = 'y'",
		"DELETE FROM pairs WHERE a = 2",
		"TRUNCATE TABLE pairs",
		"INSERT INTO pairs VALUES (5, 'q', 5)",
		// No DEFAULT: MariaDB fills a default into existing rows without
		// writing row events, which no binlog reader can see (README, ingest).
		"ALTER TABLE items ADD COLUMN extra VARCHAR(10)",
		"INSERT INTO items (id, name, extra) VALUES (4, 'four', 'x'), (5, 'five', DEFAULT)",
		"UPDATE items SET extra = 'set' WHERE id = 20",
	)

	cat, err := rest.NewCatalog(ctx, "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	db := c.db.AdminDB(t, c.dbName)
	if _, err := db.ExecContext(ctx, "SET time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // keep the session time zone
	compared := 0
	for _, producer := range []string{c.prefix, dbzPrefix} {
		ns := producer + "_" + c.dbName
		for _, tb := range []struct {
			name string
			key  []string
		}{{"items", []string{"id"}}, {"pairs", []string{"a", "b"}}} {
			var last []string
			check := func() bool {
				if ing.exited() {
					t.Fatalf("ingest exited: %v\n%s", ing.err, ing.output())
				}
				tbl, err := cat.LoadTable(ctx, table.Identifier{ns, tb.name})
				if err != nil {
					last = []string{err.Error()}
					return false
				}
				_, types, err := lakecheck.Iceberg(ctx, tbl, tb.key)
				if err != nil {
					last = []string{err.Error()}
					return false
				}
				var cols []string
				for _, f := range tbl.Schema().Fields() {
					cols = append(cols, f.Name)
				}
				rows, err := icebergreader.ReadErr(ns + "." + tb.name)
				if err != nil {
					t.Fatal(err)
				}
				conv := make([]map[string]*string, len(rows))
				for i, r := range rows {
					conv[i] = r
				}
				java, err := lakecheck.FromJava(conv, cols, tb.key, types)
				if err != nil {
					last = []string{err.Error()}
					return false
				}
				src, err := lakecheck.MariaDB(ctx, db, tb.name, tb.key, types)
				if err != nil {
					t.Fatal(err)
				}
				last = lakecheck.Diff(src, java, 10)
				if len(last) == 0 {
					compared += len(src.ByKey)
				}
				return len(last) == 0
			}
			deadline := time.Now().Add(3 * time.Minute)
			for !check() {
				if time.Now().After(deadline) {
					t.Fatalf("%s.%s (producer %s) differs from MariaDB through the Java reader:\n%s\ningest log:\n%s",
						ns, tb.name, producer, strings.Join(last, "\n"), ing.output())
				}
				time.Sleep(time.Second)
			}
		}
	}
	t.Logf("%d rows equal through the Java reader, with capture and with Debezium as the producer", compared)
}
