//go:build integration

package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/test/testenv"
)

// TestSchemaChangeRacesAnotherWriter is a defect the chaos test found: two
// ingest members consuming partitions of one topic both see the source's
// new column and both add it to the table; the one that commits second
// failed with "current schema changed" (a 409) and the process exited.
// Here another writer adds the column first, behind the pipeline's back:
// the pipeline's schema change must reload the table, find nothing left
// to change, and carry on writing the new column.
func TestSchemaChangeRacesAnotherWriter(t *testing.T) {
	env := testenv.IcebergEnv(t)
	db := testenv.Unique(t, "ev")
	topic := "bl." + db + ".t"
	ctx := t.Context()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(ctx), topic) })
	direct, err := rest.NewCatalog(ctx, "direct", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	ident := schemamap.Namer{Prefix: "bl"}.Ident(db, "t")
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_ = direct.DropTable(ctx, ident)
		_ = direct.DropNamespace(ctx, table.Identifier{ident[0]})
	})
	rows := func() (n int, extra int) {
		tbl, err := direct.LoadTable(ctx, ident)
		if err != nil || tbl.CurrentSnapshot() == nil {
			return 0, 0
		}
		at, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer at.Release()
		if idx := at.Schema().FieldIndices("extra"); len(idx) == 1 {
			for _, ch := range at.Column(idx[0]).Data().Chunks() {
				extra += ch.Len() - ch.NullN()
			}
		}
		return int(at.NumRows()), extra
	}

	r := startPipeline(t, env.URI, db, topic, "ev", 10*time.Second)
	t.Cleanup(func() { r.cancel(); <-r.done })
	for id := int64(1); id <= 3; id++ {
		if err := cl.ProduceSync(ctx, jsonRecord(id, 1)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, time.Minute, 200*time.Millisecond, func() bool { n, _ := rows(); return n == 3 }, "the first three rows in the table")

	// Another member adds the column first.
	tbl, err := direct.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	for id := int64(4); id <= 5; id++ {
		if err := cl.ProduceSync(ctx, jsonRecordCols(id, 1, true)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CheckFor(t, time.Minute, 200*time.Millisecond, func() error {
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("the pipeline stopped: %v\n%s", err, r.log.String())
		default:
		}
		if n, extra := rows(); n != 5 || extra != 2 {
			return fmt.Errorf("the table has %d rows, %d with extra; want 5 and 2", n, extra)
		}
		return nil
	})
}
