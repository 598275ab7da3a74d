//go:build integration

package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/test/testenv"
)

// jcol is a column of a JSON-converter change record: its name and its
// Kafka Connect type (int32, int64, string).
type jcol struct{ name, typ string }

// colChange is a c event of source table db.tbl with key column id,
// columns cols and values vals, at binlog position pos.
func colChange(db, tbl string, cols []jcol, vals map[string]any, pos int64) *kgo.Record {
	fields := []map[string]any{{"type": "int64", "optional": false, "field": "id"}}
	for _, c := range cols {
		fields = append(fields, map[string]any{"type": c.typ, "optional": true, "field": c.name})
	}
	row := func(field string) map[string]any {
		return map[string]any{"type": "struct", "optional": true, "name": "bl." + db + "." + tbl + ".Value", "fields": fields, "field": field}
	}
	value := map[string]any{
		"schema": map[string]any{"type": "struct", "optional": false, "name": "bl." + db + "." + tbl + ".Envelope", "version": 2, "fields": []any{
			row("before"), row("after"),
			map[string]any{"type": "struct", "optional": false, "name": "io.debezium.connector.mysql.Source", "field": "source", "fields": []any{
				map[string]any{"type": "int64", "optional": false, "field": "ts_ms"},
				map[string]any{"type": "string", "optional": false, "field": "file"},
				map[string]any{"type": "int64", "optional": false, "field": "pos"},
				map[string]any{"type": "int32", "optional": false, "field": "row"},
			}},
			map[string]any{"type": "string", "optional": false, "field": "op"},
		}},
		"payload": map[string]any{"before": nil, "after": vals, "op": "c",
			"source": map[string]any{"ts_ms": 1700000000000, "file": "mysql-bin.000001", "pos": pos, "row": 0}},
	}
	key := map[string]any{
		"schema":  map[string]any{"type": "struct", "optional": false, "name": "bl." + db + "." + tbl + ".Key", "fields": []any{fields[0]}},
		"payload": map[string]any{"id": vals["id"]},
	}
	kb, _ := json.Marshal(key)
	vb, _ := json.Marshal(value)
	return &kgo.Record{Key: kb, Value: vb}
}

// schemaChangeRecord is a schema-change record of statement ddl in
// database db at binlog position pos, changing table db.tbl.
func schemaChangeRecord(db, tbl, ddl string, pos int64) *kgo.Record {
	value := map[string]any{
		"schema": map[string]any{"type": "struct", "optional": false, "name": "io.debezium.connector.mysql.SchemaChangeValue", "fields": []any{}},
		"payload": map[string]any{"source": map[string]any{"file": "mysql-bin.000001", "pos": pos}, "databaseName": db, "ddl": ddl,
			"tableChanges": []any{map[string]any{"type": "ALTER", "id": `"` + db + `"."` + tbl + `"`}}},
	}
	vb, _ := json.Marshal(value)
	return &kgo.Record{Value: vb}
}

// lakeRows reads table ident as id → column → value text ("NULL" for
// null).
func lakeRows(t *testing.T, cat *rest.Catalog, ident table.Identifier) map[int64]map[string]string {
	t.Helper()
	ctx := t.Context()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil || tbl.CurrentSnapshot() == nil {
		return nil
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	out := map[int64]map[string]string{}
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		r := tr.RecordBatch()
		for i := range int(r.NumRows()) {
			row := map[string]string{}
			var id int64
			for c, f := range r.Schema().Fields() {
				col := r.Column(c)
				switch {
				case f.Name == "id":
					id = col.(*array.Int64).Value(i)
				case strings.HasPrefix(f.Name, "_"):
				case col.IsNull(i):
					row[f.Name] = "NULL"
				default:
					row[f.Name] = col.ValueStr(i)
				}
			}
			out[id] = row
		}
	}
	return out
}

// colRenameEnv is a schema-change topic <prefix>, one table topic
// <prefix>.<db>.t of partitions partitions and its lake table.
type colRenameEnv struct {
	t                    *testing.T
	prefix, db, topic    string
	ident                table.Identifier
	cl                   *kgo.Client
	direct               *rest.Catalog
	partitions           int32
	lowerCase            bool
	runs                 []*running
	produced, schemaRecs int
}

func newColRenameEnv(t *testing.T, partitions int32) *colRenameEnv {
	t.Helper()
	env := testenv.IcebergEnv(t)
	ctx := t.Context()
	e := &colRenameEnv{t: t, partitions: partitions}
	e.db = testenv.Unique(t, "cr")
	e.prefix = "p" + e.db
	e.topic = e.prefix + "." + e.db + ".t"
	e.ident = schemamap.Namer{Prefix: e.prefix}.Ident(e.db, "t")
	var err error
	if e.cl, err = kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.cl.Close)
	adm := kadm.NewClient(e.cl)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, e.topic); err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, e.prefix); err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(ctx), e.topic, e.prefix) })
	if e.direct, err = rest.NewCatalog(ctx, "direct", env.URI, rest.WithAdditionalProps(env.FileIOProps())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_ = e.direct.DropTable(ctx, e.ident)
		_ = e.direct.DropNamespace(ctx, table.Identifier{e.ident[0]})
	})
	return e
}

func (e *colRenameEnv) start(name, group string) {
	e.t.Helper()
	env := testenv.IcebergEnv(e.t)
	cat, err := rest.NewCatalog(e.t.Context(), "ingest", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		e.t.Fatal(err)
	}
	r := &running{log: &syncBuffer{}, done: make(chan error, 1)}
	r.p, err = New(Config{Brokers: testenv.KafkaBrokers(e.t), Group: group, Topics: []string{e.prefix, e.topic},
		Limits: batch.Limits{MaxAge: 300 * time.Millisecond}, ShutdownTimeout: 10 * time.Second, LowerCaseColumns: e.lowerCase,
		Logger: slog.New(slog.NewTextHandler(r.log, nil)).With("run", name)}, cat, decode.New(nil))
	if err != nil {
		e.t.Fatal(err)
	}
	var pctx context.Context
	pctx, r.cancel = context.WithCancel(e.t.Context())
	go func() { r.done <- r.p.Run(pctx) }()
	e.runs = append(e.runs, r)
	e.t.Cleanup(func() { r.cancel(); <-r.done })
}

// rows writes a change of each id at pos under cols, with value
// <column>-<id> (the id itself for an int column).
func (e *colRenameEnv) rows(cols []jcol, pos int64, ids ...int64) {
	e.t.Helper()
	for _, id := range ids {
		vals := map[string]any{"id": id}
		for _, c := range cols {
			if c.typ == "string" {
				vals[c.name] = fmt.Sprintf("%s-%d", c.name, id)
			} else {
				vals[c.name] = id
			}
		}
		r := colChange(e.db, "t", cols, vals, pos)
		r.Topic = e.topic
		if e.partitions > 1 {
			r.Partition = int32(id) % e.partitions
		}
		if err := e.cl.ProduceSync(e.t.Context(), r).FirstErr(); err != nil {
			e.t.Fatal(err)
		}
		e.produced++
	}
}

func (e *colRenameEnv) ddl(ddl string, pos int64) {
	e.t.Helper()
	r := schemaChangeRecord(e.db, "t", ddl, pos)
	r.Topic = e.prefix
	if err := e.cl.ProduceSync(e.t.Context(), r).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
}

// fieldIDs are the lake table's column ids by name.
func (e *colRenameEnv) fieldIDs() map[string]int {
	e.t.Helper()
	tbl, err := e.direct.LoadTable(e.t.Context(), e.ident)
	if err != nil {
		e.t.Fatalf("loading %v: %v", e.ident, err)
	}
	out := map[string]int{}
	for _, f := range tbl.Schema().Fields() {
		out[f.Name] = f.ID
	}
	return out
}

// wait waits until the table holds want (id → column → value), checking
// only the columns want names.
func (e *colRenameEnv) wait(want map[int64]map[string]string) {
	e.t.Helper()
	testenv.CheckFor(e.t, 90*time.Second, 200*time.Millisecond, func() error {
		for _, r := range e.runs {
			select {
			case err := <-r.done:
				r.done <- err
				e.t.Fatalf("a pipeline stopped: %v; log:\n%s", err, r.log.String())
			default:
			}
		}
		got := lakeRows(e.t, e.direct, e.ident)
		if len(got) != len(want) {
			return fmt.Errorf("the table holds ids %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
		for id, cols := range want {
			for c, v := range cols {
				if got[id][c] != v {
					return fmt.Errorf("id %d: %s = %q, want %q (row %v)", id, c, got[id][c], v, got[id])
				}
			}
		}
		return nil
	})
}

// TestColumnRenames: columns renamed at the source (CHANGE with and
// without a type change, RENAME COLUMN, several in one ALTER, a swap in
// one statement, a rename followed by an ADD of the old name, a rename in
// an ALTER that does other things, backquoted and db-qualified names) are
// renamed in the lake: the rows written before hold their values under
// the new names, in the same Iceberg fields. Before, each new name was a
// new column, NULL in every earlier row.
func TestColumnRenames(t *testing.T) {
	e := newColRenameEnv(t, 1)
	e.start("one", testenv.Unique(t, "g"))

	v1 := []jcol{{"a", "string"}, {"b", "int32"}, {"c", "string"}, {"d", "string"}, {"e", "string"}, {"f", "string"}}
	e.rows(v1, 100, 1, 2, 3)
	all := func(id int64, cols map[string]string) map[string]string { return cols }
	e.wait(map[int64]map[string]string{
		1: all(1, map[string]string{"a": "a-1", "b": "1"}), 2: {"a": "a-2"}, 3: {"a": "a-3"},
	})
	ids := e.fieldIDs()

	// CHANGE without and with a type change.
	e.ddl("ALTER TABLE t CHANGE a a2 VARCHAR(10), CHANGE COLUMN b b2 BIGINT", 200)
	v2 := []jcol{{"a2", "string"}, {"b2", "int64"}, {"c", "string"}, {"d", "string"}, {"e", "string"}, {"f", "string"}}
	e.rows(v2, 250, 4)
	e.wait(map[int64]map[string]string{
		1: {"a2": "a-1", "b2": "1"}, 2: {"a2": "a-2"}, 3: {"a2": "a-3", "b2": "3"}, 4: {"a2": "a2-4", "b2": "4"},
	})

	// Several statements before the next change, applied at once: a swap,
	// a rename followed by an ADD of the old name, a rename among other
	// clauses with backquoted, db-qualified names, and a CHANGE that is no
	// rename.
	e.ddl("ALTER TABLE t RENAME COLUMN c TO d, RENAME COLUMN d TO c", 300)
	e.ddl("ALTER TABLE t RENAME COLUMN e TO e2, ADD COLUMN e VARCHAR(5)", 400)
	e.ddl("ALTER TABLE `"+e.db+"`.`t` ADD COLUMN g INT, CHANGE `f` `f 2` TEXT COMMENT 'x', CHANGE a2 a2 TEXT", 500)
	v3 := []jcol{{"a2", "string"}, {"b2", "int64"}, {"d", "string"}, {"c", "string"}, {"e2", "string"}, {"e", "string"}, {"f 2", "string"}, {"g", "int32"}}
	e.rows(v3, 600, 5)
	e.wait(map[int64]map[string]string{
		1: {"a2": "a-1", "c": "d-1", "d": "c-1", "e2": "e-1", "e": "NULL", "f 2": "f-1", "g": "NULL"},
		2: {"a2": "a-2", "c": "d-2", "d": "c-2", "e2": "e-2", "e": "NULL", "f 2": "f-2"},
		3: {"c": "d-3", "d": "c-3", "e2": "e-3", "f 2": "f-3"},
		4: {"a2": "a2-4", "c": "d-4", "d": "c-4", "e2": "e-4", "e": "NULL", "f 2": "f-4"},
		5: {"a2": "a2-5", "c": "c-5", "d": "d-5", "e2": "e2-5", "e": "e-5", "f 2": "f 2-5", "g": "5"},
	})
	got := e.fieldIDs()
	for old, nw := range map[string]string{"a": "a2", "b": "b2", "c": "d", "d": "c", "e": "e2", "f": "f 2", "id": "id"} {
		if got[nw] != ids[old] {
			t.Errorf("column %s (was %s) has field id %d, want %d", nw, old, got[nw], ids[old])
		}
	}
	for _, old := range []string{"a", "b", "f"} {
		if _, ok := got[old]; ok {
			t.Errorf("the table still has column %s: %v", old, got)
		}
	}
	if got["e"] == ids["e"] || got["e"] == 0 {
		t.Errorf("the column e added after e was renamed has field id %d, want a new one (old %d)", got["e"], ids["e"])
	}
	tbl, err := e.direct.LoadTable(t.Context(), e.ident)
	if err != nil {
		t.Fatal(err)
	}
	if at := tbl.Properties()[columnsRenamedAtProperty]; at != "mysql-bin.000001:500" {
		t.Errorf("%s = %q, want mysql-bin.000001:500", columnsRenamedAtProperty, at)
	}
}

// TestColumnRenamesLateChange: a change from before a rename, on another
// partition and polled after the table's columns were renamed, goes into
// the renamed columns. It re-added the old columns, holding its values
// there and NULL under the new names.
func TestColumnRenamesLateChange(t *testing.T) {
	e := newColRenameEnv(t, 2)
	e.start("one", testenv.Unique(t, "g"))
	v1 := []jcol{{"a", "string"}, {"b", "int32"}, {"c", "string"}, {"d", "string"}}
	e.rows(v1, 100, 1, 2)
	e.wait(map[int64]map[string]string{1: {"a": "a-1"}, 2: {"a": "a-2"}})
	ids := e.fieldIDs()
	e.ddl("ALTER TABLE t CHANGE a a2 TEXT, CHANGE b b2 BIGINT, RENAME COLUMN c TO d, RENAME COLUMN d TO c", 200)
	v2 := []jcol{{"a2", "string"}, {"b2", "int64"}, {"d", "string"}, {"c", "string"}}
	e.rows(v2, 300, 3)
	e.wait(map[int64]map[string]string{1: {"a2": "a-1"}, 2: {"a2": "a-2"}, 3: {"a2": "a2-3", "b2": "3"}})
	// Row 4 changed before the rename, its partition lagging behind.
	e.rows(v1, 150, 4)
	e.wait(map[int64]map[string]string{
		1: {"a2": "a-1", "b2": "1", "c": "d-1", "d": "c-1"},
		2: {"a2": "a-2", "b2": "2", "c": "d-2", "d": "c-2"},
		3: {"a2": "a2-3", "b2": "3", "c": "c-3", "d": "d-3"},
		4: {"a2": "a-4", "b2": "4", "c": "d-4", "d": "c-4"},
	})
	got := e.fieldIDs()
	for _, old := range []string{"a", "b"} {
		if _, ok := got[old]; ok {
			t.Errorf("the late change re-added column %s: %v", old, got)
		}
	}
	if got["a2"] != ids["a"] || got["c"] != ids["d"] || got["d"] != ids["c"] {
		t.Errorf("field ids %v, want a2=%d c=%d d=%d", got, ids["a"], ids["d"], ids["c"])
	}
}

// TestColumnRenameRace: two workers (of two processes, each with its own
// partitions of the topic) apply the same renames to one table at once.
// Each rename is made once: a swap applied twice would swap back.
func TestColumnRenameRace(t *testing.T) {
	e := newColRenameEnv(t, 1)
	ctx := t.Context()
	env := testenv.IcebergEnv(t)
	if err := e.direct.CreateNamespace(ctx, table.Identifier{e.ident[0]}, nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "c", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "d", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "e", Type: iceberg.PrimitiveTypes.String})
	if _, err := e.direct.CreateTable(ctx, e.ident, sch, catalog.WithProperties(iceberg.Properties{"format-version": "2"})); err != nil {
		t.Fatal(err)
	}
	pos := func(n int64) decode.SourcePos { return decode.SourcePos{File: "mysql-bin.000001", Pos: n} }
	const workers = 3
	errs := make(chan error, workers)
	start := make(chan struct{})
	for i := range workers {
		cat, err := rest.NewCatalog(ctx, "ingest", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(Config{Brokers: testenv.KafkaBrokers(t), Group: testenv.Unique(t, "g"), Topics: []string{e.prefix, e.topic},
			Logger: slog.New(slog.DiscardHandler)}, cat, decode.New(nil))
		if err != nil {
			t.Fatal(err)
		}
		p.noteColumnRenames(e.prefix, &decode.SchemaChange{Source: pos(200), Database: e.db, DDL: "ALTER TABLE t RENAME COLUMN c TO d, RENAME COLUMN d TO c"})
		p.noteColumnRenames(e.prefix, &decode.SchemaChange{Source: pos(300), Database: e.db, DDL: "ALTER TABLE t CHANGE e e2 TEXT"})
		w := &worker{p: p, topic: e.topic, names: topicNames{e.prefix, e.db, "t"}, ident: e.ident, log: p.log.With("worker", i), changeAt: pos(400)}
		if w.committer, err = commit.New(ctx, cat, e.ident, w.commitConfig()); err != nil {
			t.Fatal(err)
		}
		go func() {
			<-start
			errs <- w.followColumnRenames(ctx)
		}()
	}
	close(start)
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := e.fieldIDs()
	if want := map[string]int{"id": 1, "d": 2, "c": 3, "e2": 4}; !maps.Equal(got, want) {
		t.Errorf("columns %v, want %v", got, want)
	}
	tbl, err := e.direct.LoadTable(ctx, e.ident)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Schemas()); n != 2 {
		t.Errorf("the table has %d schemas, want 2 (the renames in one commit)", n)
	}
}

// TestColumnRenameAcrossRestart: a rename noted, its schema record's group
// offset committed, and ingest stopped before the table took on the new
// schema (no change of the table came since): the next process still
// renames the column. It lost the rename: the schema topic resumed past
// the record, and the new name became a new column.
func TestColumnRenameAcrossRestart(t *testing.T) {
	e := newColRenameEnv(t, 1)
	group := testenv.Unique(t, "g")
	e.start("one", group)
	v1 := []jcol{{"a", "string"}, {"b", "string"}}
	e.rows(v1, 100, 1, 2)
	e.wait(map[int64]map[string]string{1: {"a": "a-1"}, 2: {"a": "a-2"}})
	e.ddl("ALTER TABLE t RENAME COLUMN a TO a2", 200)
	adm := kadm.NewClient(e.cl)
	testenv.CheckFor(t, time.Minute, 200*time.Millisecond, func() error {
		offs, err := adm.FetchOffsets(t.Context(), group)
		if err != nil {
			return err
		}
		if o, ok := offs.Lookup(e.prefix, 0); !ok || o.At < 1 {
			return fmt.Errorf("the group's offset of %s is %v, want past the rename", e.prefix, o.At)
		}
		return nil
	})
	r := e.runs[0]
	r.cancel()
	if err := <-r.done; err != nil {
		t.Fatalf("stopping: %v", err)
	}
	r.done <- nil
	e.runs = nil
	e.start("two", group)
	e.rows([]jcol{{"a2", "string"}, {"b", "string"}}, 300, 3)
	e.wait(map[int64]map[string]string{1: {"a2": "a-1"}, 2: {"a2": "a-2"}, 3: {"a2": "a2-3"}})
	if _, ok := e.fieldIDs()["a"]; ok {
		t.Errorf("the table still has column a: %v", e.fieldIDs())
	}
}

// TestColumnRenameHistorySparesOldTables: a table without
// binlake.columns-renamed-at was written by a version that did not follow
// column renames, by name: a swap from before this process started (read
// from the schema topic's start) is not applied to it, which would swap
// its columns back.
func TestColumnRenameHistorySparesOldTables(t *testing.T) {
	e := newColRenameEnv(t, 1)
	ctx := t.Context()
	group := testenv.Unique(t, "g")
	v1 := []jcol{{"a", "string"}, {"b", "string"}}
	e.start("one", group)
	e.rows(v1, 100, 1)
	e.wait(map[int64]map[string]string{1: {"a": "a-1", "b": "b-1"}})
	r := e.runs[0]
	r.cancel()
	if err := <-r.done; err != nil {
		t.Fatalf("stopping: %v", err)
	}
	r.done <- nil
	e.runs = nil
	// As an earlier version left it: no property, the swap's schema
	// record handled (the group is past it).
	tbl, err := e.direct.LoadTable(ctx, e.ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.RemoveProperties([]string{columnsRenamedAtProperty}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	e.ddl("ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO a", 200)
	adm := kadm.NewClient(e.cl)
	offs := kadm.Offsets{}
	offs.AddOffset(e.prefix, 0, 1, -1)
	if _, err := adm.CommitOffsets(ctx, group, offs); err != nil {
		t.Fatal(err)
	}
	e.start("two", group)
	e.rows(v1, 300, 2)
	e.wait(map[int64]map[string]string{1: {"a": "a-1", "b": "b-1"}, 2: {"a": "a-2", "b": "b-2"}})
}
