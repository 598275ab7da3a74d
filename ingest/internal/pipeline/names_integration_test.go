//go:build integration

package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// namesEnv is a database's worth of change topics and the REST catalog
// of TestNaturalNames.
type namesEnv struct {
	t      *testing.T
	db     string
	cl     *kgo.Client
	direct *rest.Catalog
}

func newNamesEnv(t *testing.T, tables ...string) *namesEnv {
	t.Helper()
	env := testenv.IcebergEnv(t)
	ctx := t.Context()
	e := &namesEnv{t: t, db: testenv.Unique(t, "nm")}
	var err error
	if e.cl, err = kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.cl.Close)
	if e.direct, err = rest.NewCatalog(ctx, "direct", env.URI, rest.WithAdditionalProps(env.FileIOProps())); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(e.cl)
	var topics []string
	for _, tb := range tables {
		topics = append(topics, e.topic(tb))
	}
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, topics...); err != nil {
		t.Fatalf("creating topics: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_, _ = adm.DeleteTopics(ctx, topics...)
		for _, id := range e.tables() {
			_ = e.direct.DropTable(ctx, id)
		}
		_ = e.direct.DropNamespace(ctx, table.Identifier{e.db})
	})
	return e
}

// hashOf is the hash suffix the naming before natural names gave s.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:5])
}

func (e *namesEnv) topic(tbl string) string { return "bl." + e.db + "." + tbl }

// produce writes rows ids from..to to source table tbl's topic.
func (e *namesEnv) produce(tbl string, from, to, version int64) {
	e.t.Helper()
	for id := from; id <= to; id++ {
		r := jsonRecord(id, version)
		r.Topic = e.topic(tbl)
		if err := e.cl.ProduceSync(e.t.Context(), r).FirstErr(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// tables lists the namespace's tables, sorted by name.
func (e *namesEnv) tables() []table.Identifier {
	var out []table.Identifier
	for id, err := range e.direct.ListTables(context.WithoutCancel(e.t.Context()), table.Identifier{e.db}) {
		if err != nil {
			return out
		}
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b table.Identifier) int { return strings.Compare(strings.Join(a, "."), strings.Join(b, ".")) })
	return out
}

func (e *namesEnv) tableNames() []string {
	var out []string
	for _, id := range e.tables() {
		out = append(out, id[len(id)-1])
	}
	return out
}

// ids are the keys in table name.
func (e *namesEnv) ids(name string) []int64 {
	var out []int64
	for id := range idNames(e.t, e.direct, table.Identifier{e.db, name}) {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func (e *namesEnv) source(name string) string {
	tbl, err := e.direct.LoadTable(e.t.Context(), table.Identifier{e.db, name})
	if err != nil {
		e.t.Fatalf("loading %s: %v", name, err)
	}
	return tbl.Properties()[schemamap.SourceProperty]
}

// waitIDs waits until table name holds keys from..to.
func (e *namesEnv) waitIDs(name string, from, to int64, runs ...*running) {
	e.t.Helper()
	var want []int64
	for id := from; id <= to; id++ {
		want = append(want, id)
	}
	testenv.CheckFor(e.t, 90*time.Second, 200*time.Millisecond, func() error {
		for _, r := range runs {
			select {
			case err := <-r.done:
				e.t.Fatalf("a pipeline stopped: %v; log:\n%s", err, r.log.String())
			default:
			}
		}
		if got := e.ids(name); !slices.Equal(got, want) {
			return fmt.Errorf("table %s holds keys %v, want %d..%d (tables %v)", name, got, from, to, e.tableNames())
		}
		return nil
	})
}

// start runs a pipeline on the source tables' topics.
func (e *namesEnv) start(name, group string, namer schemamap.Namer, tables ...string) *running {
	e.t.Helper()
	return e.startWith(name, group, func(c *Config) { c.Namer = namer }, tables...)
}

// startWith runs a pipeline on the source tables' topics, its
// configuration changed by set.
func (e *namesEnv) startWith(name, group string, set func(*Config), tables ...string) *running {
	e.t.Helper()
	env := testenv.IcebergEnv(e.t)
	cat, err := rest.NewCatalog(e.t.Context(), "ingest", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		e.t.Fatal(err)
	}
	var topics []string
	for _, tb := range tables {
		topics = append(topics, e.topic(tb))
	}
	r := &running{log: &syncBuffer{}, done: make(chan error, 1)}
	cfg := Config{Brokers: testenv.KafkaBrokers(e.t), Group: group, Topics: topics,
		Limits: batch.Limits{MaxAge: 500 * time.Millisecond}, ShutdownTimeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(r.log, nil)).With("run", name)}
	set(&cfg)
	r.p, err = New(cfg, cat, decode.New(nil))
	if err != nil {
		e.t.Fatal(err)
	}
	var pctx context.Context
	pctx, r.cancel = context.WithCancel(e.t.Context())
	go func() { r.done <- r.p.Run(pctx) }()
	return r
}

func (e *namesEnv) stop(r *running) {
	e.t.Helper()
	r.cancel()
	if err := <-r.done; err != nil {
		e.t.Fatalf("pipeline: %v; log:\n%s", err, r.log.String())
	}
}

// TestNaturalNames is issue 10 item 2 against the REST catalog: a source
// table gets its natural name (Orders → orders); of two source tables with
// one natural name the one created first keeps it and the other gets the
// hashed name, in one process (Order-Items and order_items at once) and
// across two processes (Pay-Ments and pay_ments at once), each table
// holding only its own source's rows and found again after a restart; a
// table under the name of earlier versions (Customers →
// customers_x<sha256("Customers")>) keeps being written; a mapped table
// gets its mapped name.
func TestNaturalNames(t *testing.T) {
	e := newNamesEnv(t, "Orders", "orders", "Order-Items", "order_items", "Pay-Ments", "pay_ments", "Customers", "Mapped")
	ctx := t.Context()
	namer := schemamap.Namer{Map: schemamap.NameMap{{DB: e.db, Table: "Mapped"}: {e.db, "explicit_name"}}}
	hashed := func(tbl string) string { return namer.Hashed(e.db, tbl)[1] }

	// A table created by an earlier version, under its legacy name and
	// without the source property.
	legacy := schemamap.Namer{}.Legacy(e.db, "Customers")
	if legacy[1] != "customers_x"+hashOf("Customers") {
		t.Fatalf("legacy name %v", legacy)
	}
	if err := e.direct.CreateNamespace(ctx, table.Identifier{e.db}, nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	if _, err := e.direct.CreateTable(ctx, legacy, sch, catalog.WithProperties(iceberg.Properties{"format-version": "2"})); err != nil {
		t.Fatal(err)
	}

	// Orders first, alone; then orders, whose natural name Orders holds.
	e.produce("Orders", 1, 5, 1)
	e.produce("Customers", 1, 3, 1)
	e.produce("Mapped", 1, 2, 1)
	first := e.start("first", e.db, namer, "Orders", "orders", "Order-Items", "order_items", "Customers", "Mapped")
	e.waitIDs("orders", 1, 5, first)
	e.waitIDs(legacy[1], 1, 3, first)
	e.waitIDs("explicit_name", 1, 2, first)
	e.produce("orders", 101, 104, 1)
	e.waitIDs(hashed("orders"), 101, 104, first)

	// Two source tables of one natural name at once, in one process.
	e.produce("Order-Items", 1, 3, 1)
	e.produce("order_items", 101, 102, 1)
	var itemsNatural, itemsHashed string
	testenv.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		names := e.tableNames()
		switch {
		case slices.Contains(names, hashed("Order-Items")):
			itemsNatural, itemsHashed = "order_items", hashed("Order-Items")
		case slices.Contains(names, hashed("order_items")):
			itemsNatural, itemsHashed = "order_items", hashed("order_items")
		default:
			return fmt.Errorf("no hashed order_items table among %v", names)
		}
		if !slices.Contains(names, "order_items") {
			return fmt.Errorf("no order_items table among %v", names)
		}
		return nil
	})
	itemsFirst := "Order-Items" // the source holding the natural name
	if itemsHashed == hashed("Order-Items") {
		itemsFirst = "order_items"
	}
	wantItems := map[string][2]int64{"Order-Items": {1, 3}, "order_items": {101, 102}}
	e.waitIDs(itemsNatural, wantItems[itemsFirst][0], wantItems[itemsFirst][1], first)
	other := map[string]string{"Order-Items": "order_items", "order_items": "Order-Items"}[itemsFirst]
	e.waitIDs(itemsHashed, wantItems[other][0], wantItems[other][1], first)
	t.Logf("NAMES one process: %s → %s, %s → %s", itemsFirst, itemsNatural, other, itemsHashed)

	// Two processes, one source table each, at once: the catalog decides.
	e.produce("Pay-Ments", 1, 3, 1)
	e.produce("pay_ments", 101, 102, 1)
	a := e.start("a", e.db+"_a", namer, "Pay-Ments")
	b := e.start("b", e.db+"_b", namer, "pay_ments")
	var payFirst string
	testenv.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		names := e.tableNames()
		if !slices.Contains(names, "pay_ments") {
			return fmt.Errorf("no pay_ments table among %v", names)
		}
		switch {
		case slices.Contains(names, hashed("Pay-Ments")):
			payFirst = "pay_ments"
		case slices.Contains(names, hashed("pay_ments")):
			payFirst = "Pay-Ments"
		default:
			return fmt.Errorf("no hashed pay_ments table among %v", names)
		}
		return nil
	})
	payOther := map[string]string{"Pay-Ments": "pay_ments", "pay_ments": "Pay-Ments"}[payFirst]
	wantPay := map[string][2]int64{"Pay-Ments": {1, 3}, "pay_ments": {101, 102}}
	e.waitIDs("pay_ments", wantPay[payFirst][0], wantPay[payFirst][1], a, b)
	e.waitIDs(hashed(payOther), wantPay[payOther][0], wantPay[payOther][1], a, b)
	t.Logf("NAMES two processes: %s → pay_ments, %s → %s", payFirst, payOther, hashed(payOther))
	e.stop(a)
	e.stop(b)

	// Each table records its source.
	for name, src := range map[string]string{
		"orders": "Orders", hashed("orders"): "orders", itemsNatural: itemsFirst, itemsHashed: other,
		"pay_ments": payFirst, hashed(payOther): payOther, "explicit_name": "Mapped",
	} {
		if got, want := e.source(name), e.db+"."+src; got != want {
			t.Errorf("table %s: %s=%q, want %q", name, schemamap.SourceProperty, got, want)
		}
	}
	if got := e.source(legacy[1]); got != "" {
		t.Errorf("the legacy table got %s=%q; ingest leaves it as it was", schemamap.SourceProperty, got)
	}

	// A restart finds every table again: more rows land in the same
	// tables, and no table is added.
	e.stop(first)
	before := e.tableNames()
	e.produce("Orders", 6, 7, 1)
	e.produce("orders", 105, 106, 1)
	e.produce("Order-Items", 4, 4, 1)
	e.produce("order_items", 103, 103, 1)
	e.produce("Customers", 4, 4, 1)
	e.produce("Mapped", 3, 3, 1)
	second := e.start("second", e.db, namer, "Orders", "orders", "Order-Items", "order_items", "Customers", "Mapped")
	defer e.stop(second)
	e.waitIDs("orders", 1, 7, second)
	e.waitIDs(hashed("orders"), 101, 106, second)
	wantItems = map[string][2]int64{"Order-Items": {1, 4}, "order_items": {101, 103}}
	e.waitIDs(itemsNatural, wantItems[itemsFirst][0], wantItems[itemsFirst][1], second)
	e.waitIDs(itemsHashed, wantItems[other][0], wantItems[other][1], second)
	e.waitIDs(legacy[1], 1, 4, second)
	e.waitIDs("explicit_name", 1, 3, second)
	if after := e.tableNames(); !slices.Equal(before, after) {
		t.Errorf("tables after the restart %v, before %v", after, before)
	}
	want := []string{"customers_x" + hashOf("Customers"), "explicit_name", "order_items", itemsHashed, "orders", hashed("orders"), "pay_ments", hashed(payOther)}
	slices.Sort(want)
	if got := e.tableNames(); !slices.Equal(got, want) {
		t.Errorf("tables %v, want %v", got, want)
	}
	t.Logf("NAMES tables %v", e.tableNames())
}

// casedRecord is jsonRecord with the key column named keyCol and the
// string column named strCol.
func casedRecord(keyCol, strCol string, id int64) *kgo.Record {
	key := fmt.Sprintf(`{"schema":{"type":"struct","optional":false,"name":"bl.db.t.Key","fields":[{"type":"int64","optional":false,"field":%q}]},"payload":{%q:%d}}`, keyCol, keyCol, id)
	row := `{"type":"struct","optional":true,"name":"bl.db.t.Value","fields":[{"type":"int64","optional":false,"field":%q},{"type":"string","optional":true,"field":%q}],"field":"%s"}`
	value := fmt.Sprintf(`{"schema":{"type":"struct","optional":false,"name":"bl.db.t.Envelope","version":2,"fields":[`+row+`,`+row+`,`+
		`{"type":"struct","optional":false,"name":"io.debezium.connector.mysql.Source","field":"source","fields":[{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},{"type":"int32","optional":false,"field":"row"}]},`+
		`{"type":"string","optional":false,"field":"op"}]},`+
		`"payload":{"before":null,"after":{%q:%d,%q:"v%d"},"source":{"ts_ms":1700000000000,"file":"mysql-bin.000001","pos":%d,"row":0},"op":"c"}}`,
		keyCol, strCol, "before", keyCol, strCol, "after", keyCol, id, strCol, id, 1000+id)
	return &kgo.Record{Key: []byte(key), Value: []byte(value)}
}

// TestLowerCaseColumns is issue 10 item 2's columns against the REST
// catalog: with LowerCaseColumns (the default on S3 Tables and Glue) a
// source column OrderID is the lake column orderid, whose doc keeps the
// source name, and is the table's identifier field; a source table with
// columns OrderID and orderid stops ingest with an error naming both.
func TestLowerCaseColumns(t *testing.T) {
	e := newNamesEnv(t, "Cased", "Clash")
	produce := func(tbl string, r *kgo.Record) {
		t.Helper()
		r.Topic = e.topic(tbl)
		if err := e.cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for id := int64(1); id <= 3; id++ {
		produce("Cased", casedRecord("OrderID", "Customer", id))
	}
	r := e.startWith("cased", e.db, func(c *Config) { c.LowerCaseColumns = true }, "Cased")
	e.waitIDs("cased", 1, 3, r)
	e.stop(r)
	tbl, err := e.direct.LoadTable(t.Context(), table.Identifier{e.db, "cased"})
	if err != nil {
		t.Fatal(err)
	}
	sch := tbl.Schema()
	var names []string
	for _, f := range sch.Fields() {
		names = append(names, f.Name)
	}
	if want := []string{"orderid", "customer", schemamap.SourceOrderColumn}; !slices.Equal(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	f, _ := sch.FindFieldByName("orderid")
	if !strings.Contains(f.Doc, "source column OrderID") || !slices.Equal(sch.IdentifierFieldIDs, []int{f.ID}) {
		t.Errorf("orderid: doc %q, identifier fields %v (id %d)", f.Doc, sch.IdentifierFieldIDs, f.ID)
	}
	t.Logf("COLUMNS %v, orderid doc %q", names, f.Doc)

	produce("Clash", casedRecord("OrderID", "orderid", 1))
	c := e.startWith("clash", e.db+"_clash", func(c *Config) { c.LowerCaseColumns = true }, "Clash")
	var stopErr error
	select {
	case stopErr = <-c.done:
	case <-time.After(90 * time.Second):
		c.cancel()
		t.Fatalf("ingest did not stop on the column collision; log:\n%s", c.log.String())
	}
	if !errors.Is(stopErr, schemamap.ErrColumnCollision) || !strings.Contains(stopErr.Error(), `"OrderID"`) || !strings.Contains(stopErr.Error(), `"orderid"`) {
		t.Errorf("stop error %v, want ErrColumnCollision naming OrderID and orderid", stopErr)
	}
	t.Logf("COLLISION %v", stopErr)
}

// TestRenameResumedAfterCrash: ingest killed between renaming the lake
// table of a to b and recording b as its source leaves table b holding
// a's rows with binlake.source naming a. The rename, handled again after
// the restart, must take that table for the renamed one and record its
// new source: resolving b's name afresh took it for another source's
// table, aimed the rename at b's hashed name (which does not exist), did
// nothing, and b's later changes went into a new hashed table while table
// b kept the rows from before the rename (TestRenamesKill9 in CI).
func TestRenameResumedAfterCrash(t *testing.T) {
	e := newNamesEnv(t, "a", "b")
	ctx := t.Context()
	namer := schemamap.Namer{Prefix: "bl"}
	if err := e.direct.CreateNamespace(ctx, table.Identifier{e.db}, nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1}, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	renamed := namer.Natural(e.db, "b")
	if _, err := e.direct.CreateTable(ctx, renamed, sch, catalog.WithProperties(iceberg.Properties{
		"format-version": "2", schemamap.SourceProperty: namer.Source(e.db, "a")})); err != nil {
		t.Fatal(err)
	}
	env := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(ctx, "ingest", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Brokers: testenv.KafkaBrokers(t), Group: testenv.Unique(t, "g"), Topics: []string{e.topic("a"), e.topic("b")},
		Logger: slog.New(slog.DiscardHandler)}, cat, decode.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	mark := nameMark{decode.SourcePos{File: "mariadb-bin.000001", Pos: 4}, 0, 0}
	if err := p.renameLake(ctx, p.log, topicNames{"bl", e.db, "a"}, e.topic("a"), topicNames{"bl", e.db, "b"}, e.topic("b"), mark); err != nil {
		t.Fatal(err)
	}
	if got, want := e.source("b"), namer.Source(e.db, "b"); got != want {
		t.Errorf("table b's %s = %q after the rename was handled again, want %q", schemamap.SourceProperty, got, want)
	}
	if names := e.tableNames(); !slices.Equal(names, []string{"b"}) {
		t.Errorf("tables %v, want only b", names)
	}
}

// TestRefetchedRecordsOnce: records the open batch holds, fetched again
// (a handoff that gave up waiting keeps the batch; the partition assigned
// back resumes from the table's offsets, below it), are not added again.
// They were: the chaos workload's keyless change log had one update's
// before and after images twice in one commit.
func TestRefetchedRecordsOnce(t *testing.T) {
	e := newNamesEnv(t, "t")
	ctx := t.Context()
	env := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(ctx, "ingest", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Brokers: testenv.KafkaBrokers(t), Group: testenv.Unique(t, "g"), Topics: []string{e.topic("t")},
		Logger: slog.New(slog.DiscardHandler)}, cat, decode.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	ident, err := p.ident(e.topic("t"))
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{p: p, topic: e.topic("t"), ident: ident, names: topicNames{"bl", e.db, "t"}, log: p.log}
	feed := func(from, to int64) {
		t.Helper()
		for off := from; off <= to; off++ {
			r := jsonRecord(off+1, 1)
			r.Topic, r.Partition, r.Offset = e.topic("t"), 0, off
			if err := w.handle(ctx, msg{rec: r, at: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	feed(0, 4)
	feed(2, 6) // fetched again from offset 2
	var offs []int64
	for _, ev := range w.buf.Events() {
		offs = append(offs, ev.Offset)
	}
	if want := []int64{0, 1, 2, 3, 4, 5, 6}; !slices.Equal(offs, want) {
		t.Errorf("the batch holds offsets %v, want %v", offs, want)
	}
	if err := w.flush(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	feed(5, 7) // after the commit: the table's offsets decide
	if err := w.flush(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	if got := e.ids("t"); !slices.Equal(got, []int64{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("table t holds ids %v, want 1..8", got)
	}
}

// TestCarriedOffsetsOfThisDeploymentOnly: after a rename a → b, table b
// (a's, renamed) holds topic a's offsets and none of topic b's yet, so
// adjustOffsets looks for b's offsets carried by a table renamed away
// (a swap). A second ingest deployment writing the same catalog in other
// namespaces (namespace-with-prefix) holds topic b's offsets in its own
// table b: they are not this deployment's. Taking them skipped the
// renamed table's first records in the 100-fault chaos run (seed
// 604210061: 13 rows kept values from before the rename, one lost).
func TestCarriedOffsetsOfThisDeploymentOnly(t *testing.T) {
	e := newNamesEnv(t, "a", "b")
	ctx := t.Context()
	mine := schemamap.Namer{Prefix: "bl"}
	theirs := schemamap.Namer{Prefix: "bl", NamespaceWithPrefix: true}
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1}, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	create := func(n schemamap.Namer, tbl string, offsets map[string]string) table.Identifier {
		t.Helper()
		id := n.Natural(e.db, tbl)
		if err := e.direct.CreateNamespace(ctx, table.Identifier{id[0]}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			t.Fatal(err)
		}
		props := iceberg.Properties{"format-version": "2", schemamap.SourceProperty: n.Source(e.db, tbl)}
		for topic, v := range offsets {
			props[commit.OffsetsKeyPrefix+topic] = v
		}
		if _, err := e.direct.CreateTable(ctx, id, sch, catalog.WithProperties(props)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx := context.WithoutCancel(ctx)
			_ = e.direct.DropTable(ctx, id)
			if id[0] != e.db {
				_ = e.direct.DropNamespace(ctx, table.Identifier{id[0]})
			}
		})
		return id
	}
	own := create(mine, "b", map[string]string{e.topic("a"): `{"0":7}`})
	create(theirs, "b", map[string]string{e.topic("b"): `{"0":5}`})
	env := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(ctx, "ingest", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Brokers: testenv.KafkaBrokers(t), Group: testenv.Unique(t, "g"), Topics: []string{e.topic("a"), e.topic("b")},
		Namer: mine, Logger: slog.New(slog.DiscardHandler)}, cat, decode.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.carriedOffsets(ctx, e.topic("b"), own)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("carried offsets of %s: %v from another deployment's table, want none (start at the beginning)", e.topic("b"), got)
	}
	// A table of this deployment that carries them (b renamed away to c
	// in a swap) is found.
	create(mine, "c", map[string]string{e.topic("b"): `{"0":3}`})
	if got, err = p.carriedOffsets(ctx, e.topic("b"), own); err != nil {
		t.Fatal(err)
	}
	if want := map[int32]int64{0: 3}; !maps.Equal(got, want) {
		t.Errorf("carried offsets of %s: %v, want %v from this deployment's table c", e.topic("b"), got, want)
	}
}

// loadCounter is a catalog that counts the loads of each table.
type loadCounter struct {
	catalog.Catalog
	mu    sync.Mutex
	loads map[string]int
}

func (c *loadCounter) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	c.mu.Lock()
	c.loads[strings.Join(ident, ".")]++
	c.mu.Unlock()
	return c.Catalog.LoadTable(ctx, ident)
}

// TestCarriedOffsetsOneScanPerAssignment: two topics assigned at once
// whose tables hold none of their own offsets (each took its name in a
// rename) are looked for in one pass over the catalog, not one pass each:
// every pass loads every table, and make test's TestRenames timed out when
// a member spent 2.5 minutes of its assignment loading the catalog's 174
// tables again for each new topic.
func TestCarriedOffsetsOneScanPerAssignment(t *testing.T) {
	e := newNamesEnv(t, "b", "d")
	ctx := t.Context()
	mine := schemamap.Namer{Prefix: "bl"}
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1}, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if err := e.direct.CreateNamespace(ctx, table.Identifier{e.db}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		t.Fatal(err)
	}
	create := func(tbl string, offsets map[string]string) {
		t.Helper()
		props := iceberg.Properties{"format-version": "2", schemamap.SourceProperty: mine.Source(e.db, tbl)}
		for topic, v := range offsets {
			props[commit.OffsetsKeyPrefix+topic] = v
		}
		if _, err := e.direct.CreateTable(ctx, mine.Natural(e.db, tbl), sch, catalog.WithProperties(props)); err != nil {
			t.Fatal(err)
		}
	}
	// b and d were renamed from a and c; d's own topic's offsets went
	// with the table renamed away to z.
	create("b", map[string]string{e.topic("a"): `{"0":7}`})
	create("d", map[string]string{e.topic("c"): `{"0":4}`})
	create("z", map[string]string{e.topic("d"): `{"0":2}`})
	e.produce("d", 1, 3, 1) // offsets 0 to 2: the carried offset is in the log
	env := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(ctx, "ingest", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	counter := &loadCounter{Catalog: cat, loads: map[string]int{}}
	// The pipeline's own group consumes another topic: its assignment
	// must not scan the catalog beside the call counted here.
	p, err := New(Config{Brokers: testenv.KafkaBrokers(t), Group: testenv.Unique(t, "g"), Topics: []string{e.topic("none")},
		Namer: mine, Logger: slog.New(slog.DiscardHandler)}, counter, decode.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.adjustOffsets(ctx, map[string]map[int32]kgo.Offset{
		e.topic("b"): {0: kgo.NewOffset().AtStart()},
		e.topic("d"): {0: kgo.NewOffset().AtStart()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if off := got[e.topic("d")][0].EpochOffset().Offset; off != 2 {
		t.Errorf("topic d starts at %d, want 2, the offset table z carried away", off)
	}
	if off := got[e.topic("b")][0].EpochOffset().Offset; off != kgo.NewOffset().AtStart().EpochOffset().Offset {
		t.Errorf("topic b starts at %d, want its start: no table carries its offsets", off)
	}
	if n := counter.loads[strings.Join(mine.Natural(e.db, "z"), ".")]; n != 1 {
		t.Errorf("table z was loaded %d times for one assignment, want once", n)
	}
}
