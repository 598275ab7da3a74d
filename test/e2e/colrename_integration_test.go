//go:build integration

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/testenv"
)

// runColumnRenames writes rows, renames columns at the source in every
// form ingest follows (CHANGE with and without a type change, RENAME
// COLUMN, a swap in one statement, a rename followed by an ADD of the old
// name, a rename among other clauses, backquoted and db-qualified names,
// a CHANGE that renames nothing), writes more, and waits until the lake
// table, read with the Java reader, equals MariaDB: every row holds its
// values under the new names, in the Iceberg fields the old names had.
// With debezium the real connector's records go to a namespace of their
// own and are checked the same way (its own schema tracking cannot take
// the swap, so c and d are renamed to c3 and c instead).
func runColumnRenames(t *testing.T, withDebezium bool) {
	ctx := t.Context()
	c := newCaptureEnv(t)
	db := c.dbName
	const tb = "cr"
	exec1(t, c, "CREATE TABLE "+tb+" (id INT PRIMARY KEY, a VARCHAR(20), b INT, c VARCHAR(20), d VARCHAR(20), e VARCHAR(20), f VARCHAR(20))")
	prefixes := []string{c.prefix}
	if withDebezium {
		dbzPrefix := "dbz_" + c.prefix
		prefixes = append(prefixes, dbzPrefix)
		debezium.Run(t, debezium.Config{Database: db, TopicPrefix: dbzPrefix, ServerID: 6700 + uint32(time.Now().UnixNano()%100000),
			SnapshotMode: "no_data", Extra: map[string]string{"include.schema.changes": "true"}})
	}
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 30*time.Second)
	ice := testenv.IcebergEnv(t)
	ing := start(t, binary(t, "ingest"), []string{
		"INGEST_KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(t), ","),
		"INGEST_GROUP_ID=" + testenv.Unique(t, "g"),
		"INGEST_TOPIC_REGEX=(" + strings.Join(prefixes, "|") + `)(\.` + db + `\..*)?`,
		"INGEST_NAMESPACE_WITH_PREFIX=true",
		"INGEST_SCHEMA_REGISTRY_URL=" + testenv.RegistryURL(t),
		"INGEST_CATALOG_URI=" + ice.URI, "INGEST_S3_ENDPOINT=" + ice.S3Endpoint, "INGEST_S3_REGION=" + ice.Region,
		"INGEST_FLUSH_INTERVAL=1s", "INGEST_METRICS_ADDR=127.0.0.1:0",
	}, "ingest.log")
	cat, err := rest.NewCatalog(ctx, "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		for _, p := range prefixes {
			_ = cat.DropTable(ctx, table.Identifier{p + "_" + db, tb})
			_ = cat.DropNamespace(ctx, table.Identifier{p + "_" + db})
		}
	})

	var vals []string
	for i := 1; i <= 30; i++ {
		vals = append(vals, fmt.Sprintf("(%d, 'a%d', %d, 'c%d', 'd%d', 'e%d', 'f%d')", i, i, i, i, i, i, i))
	}
	exec1(t, c, "INSERT INTO "+tb+" VALUES "+strings.Join(vals, ", "), "UPDATE "+tb+" SET b = b * 10 WHERE id % 3 = 0", "DELETE FROM "+tb+" WHERE id % 7 = 0")
	want := countRows(t, c.db.AdminDB(t, db), tb)
	ids := map[string]map[string]int{}
	for _, p := range prefixes {
		id := table.Identifier{p + "_" + db, tb}
		testenv.CheckFor(t, 3*time.Minute, time.Second, func() error {
			if ing.exited() {
				t.Fatalf("ingest exited: %v\n%s", ing.err, ing.output())
			}
			if got := lakeRowCount(ctx, cat, id); got != want {
				return fmt.Errorf("%v holds %d rows before the renames, want %d", id, got, want)
			}
			return nil
		})
		ids[p] = fieldIDs(t, cat, id)
	}

	renames := map[string]string{"a": "a2", "b": "b2", "c": "d", "d": "c", "e": "e2", "f": "F_2"}
	swap := "ALTER TABLE " + tb + " RENAME COLUMN c TO d, RENAME COLUMN d TO c"
	if withDebezium {
		// Debezium 3.5 applies the clauses one after another: its schema
		// loses a column and it stops at the next row ("internal schema
		// size 8, but row size 9").
		swap = "ALTER TABLE " + tb + " RENAME COLUMN c TO c3, RENAME COLUMN d TO c"
		renames["c"], renames["d"] = "c3", "c"
	}
	exec1(t, c,
		"ALTER TABLE "+tb+" CHANGE a a2 VARCHAR(20)",
		"ALTER TABLE "+tb+" CHANGE COLUMN b b2 BIGINT",
		swap,
		"ALTER TABLE "+tb+" RENAME COLUMN e TO e2, ADD COLUMN e VARCHAR(20)",
		"ALTER TABLE `"+db+"`.`"+tb+"` ADD COLUMN g INT, CHANGE `f` `F_2` VARCHAR(20) COMMENT 'renamed', CHANGE a2 a2 VARCHAR(30)")
	cd := "c, d"
	if withDebezium {
		cd = "c3, c"
	}
	vals = vals[:0]
	for i := 101; i <= 110; i++ {
		vals = append(vals, fmt.Sprintf("(%d, 'a%d', %d, 'c%d', 'd%d', 'e2%d', 'e%d', 'f%d', %d)", i, i, i, i, i, i, i, i, i))
	}
	exec1(t, c, "INSERT INTO "+tb+" (id, a2, b2, "+cd+", e2, e, F_2, g) VALUES "+strings.Join(vals, ", "),
		"UPDATE "+tb+" SET e = 'later' WHERE id % 4 = 0")

	for _, p := range prefixes {
		ns := p + "_" + db
		waitJavaEqual(t, ing, cat, c.db.AdminDB(t, db), ns, tb)
		got := fieldIDs(t, cat, table.Identifier{ns, tb})
		for old, nw := range renames {
			if got[nw] != ids[p][old] {
				t.Errorf("%s.%s: column %s (was %s) has field id %d, want %d", ns, tb, nw, old, got[nw], ids[p][old])
			}
		}
		if got["e"] == ids[p]["e"] {
			t.Errorf("%s.%s: the column e added after e was renamed has the old e's field id %d", ns, tb, got["e"])
		}
		for _, old := range []string{"a", "b", "f"} {
			if _, ok := got[old]; ok {
				t.Errorf("%s.%s: still has column %s: %v", ns, tb, old, got)
			}
		}
	}
	t.Logf("every renamed column holds its rows' values in its field with producers %v", prefixes)
}

// fieldIDs are the lake table's column ids by name.
func fieldIDs(t *testing.T, cat *rest.Catalog, id table.Identifier) map[string]int {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), id)
	if err != nil {
		t.Fatalf("loading %v: %v", id, err)
	}
	out := map[string]int{}
	for _, f := range tbl.Schema().Fields() {
		out[f.Name] = f.ID
	}
	return out
}

// TestColumnRenamesCapture: column renames through capture → ingest.
func TestColumnRenamesCapture(t *testing.T) { runColumnRenames(t, false) }

// TestColumnRenamesDebezium: the same through capture and through the
// real Debezium connector, then ingest.
func TestColumnRenamesDebezium(t *testing.T) { runColumnRenames(t, true) }
