//go:build integration

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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

// TestTwoSourcesOneName is issue 29 item 4: sources east and west both
// have <db>.t. One ingest without --namespace-with-prefix writes east's
// rows to <db>.t, then stops at west's first change with ErrOtherSource
// rather than merge west's rows into east's table; with MergeSources the
// table takes both; with NamespaceWithPrefix each source has a table of
// its own.
func TestTwoSourcesOneName(t *testing.T) {
	env := testenv.IcebergEnv(t)
	ctx := t.Context()
	db := testenv.Unique(t, "src")
	east, west := "east."+db+".t", "west."+db+".t"
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, east, west); err != nil {
		t.Fatalf("creating topics: %v", err)
	}
	direct, err := rest.NewCatalog(ctx, "direct", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	merged := table.Identifier{db, "t"}
	eastT, westT := table.Identifier{"east_" + db, "t"}, table.Identifier{"west_" + db, "t"}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_, _ = adm.DeleteTopics(ctx, east, west)
		for _, id := range []table.Identifier{merged, eastT, westT} {
			_ = direct.DropTable(ctx, id)
			_ = direct.DropNamespace(ctx, table.Identifier{id[0]})
		}
	})
	produce := func(topic string, from, to int64) {
		t.Helper()
		for id := from; id <= to; id++ {
			r := jsonRecord(id, 1)
			r.Topic = topic
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := func(name, group string, namer schemamap.Namer) *running {
		t.Helper()
		cat, err := rest.NewCatalog(ctx, "ingest", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
		if err != nil {
			t.Fatal(err)
		}
		r := &running{log: &syncBuffer{}, done: make(chan error, 1)}
		r.p, err = New(Config{Brokers: testenv.KafkaBrokers(t), Group: group, Topics: []string{east, west}, Namer: namer,
			Limits: batch.Limits{MaxAge: 500 * time.Millisecond}, ShutdownTimeout: 10 * time.Second,
			Logger: slog.New(slog.NewTextHandler(r.log, nil)).With("run", name)}, cat, decode.New(nil))
		if err != nil {
			t.Fatal(err)
		}
		var pctx context.Context
		pctx, r.cancel = context.WithCancel(ctx)
		go func() { r.done <- r.p.Run(pctx) }()
		return r
	}
	waitIDs := func(ident table.Identifier, want []int64, r *running) {
		t.Helper()
		testenv.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
			select {
			case err := <-r.done:
				t.Fatalf("ingest stopped: %v; log:\n%s", err, r.log.String())
			default:
			}
			var got []int64
			for id := range idNames(t, direct, ident) {
				got = append(got, id)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return fmt.Errorf("table %v holds keys %v, want %v", ident, got, want)
			}
			return nil
		})
	}

	// One ingest, default naming: east's rows, then a stop at west's.
	produce(east, 1, 5)
	r1 := start("default", db+".default", schemamap.Namer{})
	waitIDs(merged, []int64{1, 2, 3, 4, 5}, r1)
	tbl, err := direct.LoadTable(ctx, merged)
	if err != nil {
		t.Fatal(err)
	}
	if got := tbl.Properties()[schemamap.SourcePrefixProperty]; got != "east" {
		t.Errorf("table %v: %s = %q, want east", merged, schemamap.SourcePrefixProperty, got)
	}
	produce(west, 6, 8)
	select {
	case err := <-r1.done:
		if !errors.Is(err, schemamap.ErrOtherSource) {
			t.Fatalf("ingest stopped with %v, want ErrOtherSource; log:\n%s", err, r1.log.String())
		}
		t.Logf("ingest stopped: %v", err)
		for _, want := range []string{`"east"`, `"west"`, strings.Join(merged, "."), "--namespace-with-prefix", "--table-name-map", "--merge-sources"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name %s: %v", want, err)
			}
		}
	case <-time.After(90 * time.Second):
		r1.cancel()
		<-r1.done
		t.Fatalf("ingest did not stop at west's change into east's table; log:\n%s", r1.log.String())
	}
	var got []int64
	for id := range idNames(t, direct, merged) {
		got = append(got, id)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("table %v holds keys %v after the stop, want east's 1..5 alone", merged, got)
	}

	// Told to merge: the one table takes west's rows too.
	r2 := start("merge", db+".default", schemamap.Namer{MergeSources: true})
	waitIDs(merged, []int64{1, 2, 3, 4, 5, 6, 7, 8}, r2)
	r2.cancel()
	if err := <-r2.done; err != nil {
		t.Fatalf("merge run: %v; log:\n%s", err, r2.log.String())
	}

	// A namespace per source: two tables.
	r3 := start("prefixed", db+".prefixed", schemamap.Namer{NamespaceWithPrefix: true})
	waitIDs(eastT, []int64{1, 2, 3, 4, 5}, r3)
	waitIDs(westT, []int64{6, 7, 8}, r3)
	r3.cancel()
	if err := <-r3.done; err != nil {
		t.Fatalf("prefixed run: %v; log:\n%s", err, r3.log.String())
	}
}
