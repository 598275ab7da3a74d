//go:build integration

package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/test/testenv"
)

// renameRig is a source database's schema-change topic and table topics
// (one partition each), a catalog client of the test's own, and one
// pipeline consuming them: what the rename tests share.
type renameRig struct {
	t      *testing.T
	db     string
	prefix string
	namer  schemamap.Namer
	cl     *kgo.Client
	direct *rest.Catalog
	r      *running
}

// newRenameRig creates the topics of prefix and of tables, and drops the
// tables' lake tables (and namespace) at the end.
func newRenameRig(t *testing.T, tag string, tables ...string) *renameRig {
	t.Helper()
	ctx := t.Context()
	db := testenv.Unique(t, tag)
	g := &renameRig{t: t, db: db, prefix: "p" + db, namer: schemamap.Namer{Prefix: "p" + db}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	g.cl = cl
	adm := kadm.NewClient(cl)
	topics := []string{g.prefix}
	for _, tb := range tables {
		topics = append(topics, g.topic(tb))
	}
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, topics...); err != nil {
		t.Fatalf("creating topics: %v", err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(ctx), topics...) })
	env := testenv.IcebergEnv(t)
	if g.direct, err = rest.NewCatalog(ctx, "direct", env.URI, rest.WithAdditionalProps(env.FileIOProps())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		for _, tb := range tables {
			_ = g.direct.DropTable(ctx, g.ident(tb))
		}
		_ = g.direct.DropNamespace(ctx, table.Identifier{g.ident(tables[0])[0]})
	})
	return g
}

func (g *renameRig) topic(tb string) string           { return g.prefix + "." + g.db + "." + tb }
func (g *renameRig) ident(tb string) table.Identifier { return g.namer.Ident(g.db, tb) }

// start runs the pipeline on every topic of the rig through the catalog
// at catURI, until the test ends.
func (g *renameRig) start(catURI string, tables ...string) {
	t := g.t
	env := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(t.Context(), "ingest", catURI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	topics := []string{g.prefix}
	for _, tb := range tables {
		topics = append(topics, g.topic(tb))
	}
	r := &running{log: &syncBuffer{}, done: make(chan error, 1)}
	r.p, err = New(Config{Brokers: testenv.KafkaBrokers(t), Group: testenv.Unique(t, "g"), Topics: topics,
		Limits: batch.Limits{MaxAge: 300 * time.Millisecond}, ShutdownTimeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(r.log, nil))}, cat, decode.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(t.Context())
	go func() { r.done <- r.p.Run(pctx) }()
	t.Cleanup(func() { cancel(); <-r.done })
	g.r = r
}

// alive fails the test when the pipeline has stopped.
func (g *renameRig) alive() {
	g.t.Helper()
	select {
	case err := <-g.r.done:
		g.r.done <- err
		g.t.Fatalf("the pipeline stopped: %v; log:\n%s", err, g.r.log.String())
	default:
	}
}

// produce writes a change of each id to table tb's topic at binlog
// position pos.
func (g *renameRig) produce(tb string, pos int64, ids ...int64) {
	g.t.Helper()
	for _, id := range ids {
		rec := colChange(g.db, tb, []jcol{{"v", "string"}}, map[string]any{"id": id, "v": fmt.Sprintf("%s-%d", tb, id)}, pos)
		rec.Topic = g.topic(tb)
		if err := g.cl.ProduceSync(g.t.Context(), rec).FirstErr(); err != nil {
			g.t.Fatal(err)
		}
	}
}

// schemaChange writes a schema-change record of table tb's DDL.
func (g *renameRig) schemaChange(tb, ddl string, pos int64) {
	g.t.Helper()
	rec := schemaChangeRecord(g.db, tb, ddl, pos)
	rec.Topic = g.prefix
	if err := g.cl.ProduceSync(g.t.Context(), rec).FirstErr(); err != nil {
		g.t.Fatal(err)
	}
}

// waitIDs waits until table tb holds exactly the ids want.
func (g *renameRig) waitIDs(tb string, want ...int64) {
	g.t.Helper()
	testenv.CheckFor(g.t, 90*time.Second, 200*time.Millisecond, func() error {
		g.alive()
		if got := slices.Sorted(maps.Keys(lakeRows(g.t, g.direct, g.ident(tb)))); !slices.Equal(got, want) {
			return fmt.Errorf("table %v holds ids %v, want %v", g.ident(tb), got, want)
		}
		return nil
	})
}
