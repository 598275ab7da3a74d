package pipeline

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/schemamap"
)

// TestTopicNames checks how a topic names its table: by its last two dots
// when it has three parts, and from its records' source block when it has
// more (a dot in the prefix, the database or the table name).
func TestTopicNames(t *testing.T) {
	p := &Pipeline{cfg: Config{Namer: schemamap.Namer{}}, log: slog.New(slog.DiscardHandler)}
	if id, err := p.ident("p.db.t"); err != nil || !slices.Equal(id, table.Identifier{"db", "t"}) {
		t.Errorf("ident(p.db.t) = %v, %v", id, err)
	}
	if _, err := p.ident("p.db.my.table"); !errors.Is(err, errAmbiguousTopic) {
		t.Errorf("ident(p.db.my.table) error %v, want errAmbiguousTopic", err)
	}
	if _, err := p.ident("p.transaction"); err == nil || errors.Is(err, errAmbiguousTopic) {
		t.Errorf("ident(p.transaction) error %v, want not a table's topic", err)
	}

	for _, tc := range []struct {
		topic, db, tbl string
		want           topicNames
		ok             bool
	}{
		{"p.db.my.table", "db", "my.table", topicNames{"p", "db", "my.table"}, true},
		{"p.db.my.table", "db.my", "table", topicNames{"p", "db.my", "table"}, true},
		{"a.b.db.t", "db", "t", topicNames{"a.b", "db", "t"}, true},
		{"p.db.my_table", "db", "my table", topicNames{"p", "db", "my_table"}, true}, // as tableTopic spells it
		{"p.db.my.table", "my", "table", topicNames{"p.db", "my", "table"}, true},
		{"p.db.my.table", "other", "table", topicNames{}, false},
		{"db.my.table", "db", "my.table", topicNames{}, false}, // no prefix left
		{"p.db.my.table", "", "", topicNames{}, false},
	} {
		got, ok := namesFor(tc.topic, tc.db, tc.tbl)
		if got != tc.want || ok != tc.ok {
			t.Errorf("namesFor(%q, %q, %q) = %+v, %v; want %+v, %v", tc.topic, tc.db, tc.tbl, got, ok, tc.want, tc.ok)
		}
	}

	got := splits("p.db.my.table")
	want := []topicNames{{"p", "db", "my.table"}, {"p", "db.my", "table"}, {"p.db", "my", "table"}}
	if !slices.Equal(got, want) {
		t.Errorf("splits = %+v, want %+v", got, want)
	}
}

// TestResolveFromSource checks that a worker of a topic with dots in its
// names takes its table from the first change record's source block, and
// stops on a record that disagrees, one without db and table, and a table
// other than the one that held the topic's offsets.
func TestResolveFromSource(t *testing.T) {
	newWorker := func() *worker {
		p := &Pipeline{cfg: Config{Namer: schemamap.Namer{}}, log: slog.New(slog.DiscardHandler)}
		return &worker{p: p, topic: "p.db.my.table", ambiguous: true, log: p.log}
	}
	rec := &kgo.Record{Topic: "p.db.my.table", Offset: 7}
	change := func(db, tbl string) *decode.Change { return &decode.Change{SourceDB: db, SourceTable: tbl} }

	w := newWorker()
	if err := w.resolve(rec, change("db", "my.table")); err != nil {
		t.Fatal(err)
	}
	wantIdent := schemamap.Namer{}.Ident("db", "my.table")
	if !slices.Equal(w.ident, wantIdent) || w.names != (topicNames{"p", "db", "my.table"}) {
		t.Fatalf("ident %v names %+v, want %v", w.ident, w.names, wantIdent)
	}
	if w.ident[0] != "db" {
		t.Errorf("namespace %q, want db", w.ident[0])
	}
	if err := w.resolve(rec, change("db", "my.table")); err != nil {
		t.Errorf("a record that agrees: %v", err)
	}
	if err := w.resolve(rec, change("db.my", "table")); err == nil || !strings.Contains(err.Error(), "p.db.my.table") || !strings.Contains(err.Error(), "topic-regex") {
		t.Errorf("a record that disagrees: error %v, want one naming the topic and the settings", err)
	}

	if err := newWorker().resolve(rec, change("", "")); err == nil || !strings.Contains(err.Error(), "p.db.my.table") || !strings.Contains(err.Error(), "topic-regex") {
		t.Errorf("a record without db and table: error %v, want one naming the topic and the settings", err)
	}
	if err := newWorker().resolve(rec, change("elsewhere", "t")); err == nil {
		t.Error("a record of a table the topic does not end in: no error")
	}

	// The table the old guess made (namespace my) holds the topic's
	// offsets: the worker must not write elsewhere from those offsets.
	w = newWorker()
	w.p.heldBy = map[string]table.Identifier{w.topic: {"my", "table"}}
	if err := w.resolve(rec, change("db", "my.table")); err == nil || !strings.Contains(err.Error(), "holds the topic's offsets") {
		t.Errorf("offsets held by another table: error %v", err)
	}
	w = newWorker()
	w.p.heldBy = map[string]table.Identifier{w.topic: wantIdent}
	if err := w.resolve(rec, change("db", "my.table")); err != nil {
		t.Errorf("offsets held by the topic's table: %v", err)
	}
}

// TestHeldLegacyName checks that a topic with dots in its names keeps the
// table that held its offsets at assignment when that table has one of
// its names (here the name of earlier versions), not only the natural one.
func TestHeldLegacyName(t *testing.T) {
	p := &Pipeline{cfg: Config{Namer: schemamap.Namer{}}, log: slog.New(slog.DiscardHandler)}
	w := &worker{p: p, topic: "p.db.My.Table", ambiguous: true, log: p.log}
	legacy := schemamap.Namer{Prefix: "p"}.Legacy("db", "My.Table")
	p.heldBy = map[string]table.Identifier{w.topic: legacy}
	if err := w.resolve(&kgo.Record{Topic: w.topic}, &decode.Change{SourceDB: "db", SourceTable: "My.Table"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.ident, legacy) {
		t.Errorf("ident %v, want the held legacy table %v", w.ident, legacy)
	}
}

// TestTopicNameMap checks that table-name-map's source names are matched
// as topics spell them, and that two that spell alike are refused.
func TestTopicNameMap(t *testing.T) {
	m, err := topicNameMap(schemamap.NameMap{{DB: "shop", Table: "Order Items"}: {"shop", "items"}})
	if err != nil {
		t.Fatal(err)
	}
	if id := (schemamap.Namer{Map: m}).Ident("shop", "Order_Items"); !slices.Equal(id, table.Identifier{"shop", "items"}) {
		t.Errorf("Ident = %v, want shop.items", id)
	}
	_, err = topicNameMap(schemamap.NameMap{{DB: "shop", Table: "a b"}: {"shop", "x"}, {DB: "shop", Table: "a_b"}: {"shop", "y"}})
	if err == nil || !strings.Contains(err.Error(), "table-name-map") {
		t.Errorf("two sources of one topic name: error %v", err)
	}
}
