//go:build integration

package schemamap

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/schemas/debezium"
	"github.com/binlake/binlake/test/testenv"
)

// TestRegistryToIcebergEvolution registers a Debezium envelope in the real
// registry, reads it back by id, maps it and creates the table in the real
// REST catalog under a Namer name; then registers an evolved schema (added
// column, int→long, decimal widening, NOT NULL dropped, a column dropped),
// and applies Evolve's changes to the table.
func TestRegistryToIcebergEvolution(t *testing.T) {
	ctx := t.Context()
	reg, err := sr.NewClient(sr.URLs(testenv.RegistryURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(ctx, "ingest", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}

	db := testenv.Unique(t, "Inv-DB") // deliberately not a valid S3 Tables name
	// The database name has a dash, which an Avro record name cannot carry:
	// named as capture names it with schema-name-adjustment-mode=avro.
	tid := debezium.TableID{Prefix: "dbserver1", DB: db, Table: "Orders", SchemaNames: debezium.AdjustAvro}
	subject := tid.Topic() + "-value"
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_, _ = reg.DeleteSubject(ctx, subject, sr.SoftDelete)
		_, _ = reg.DeleteSubject(ctx, subject, sr.HardDelete)
	})
	register := func(fields []debezium.Field) *Mapping {
		t.Helper()
		avro, err := debezium.AvroSchema(debezium.EnvelopeSchema(tid, debezium.FlavorMariaDB, debezium.ValueSchema(tid, fields)))
		if err != nil {
			t.Fatal(err)
		}
		ss, err := reg.CreateSchema(ctx, subject, sr.Schema{Schema: string(avro), Type: sr.TypeAvro})
		if err != nil {
			t.Fatalf("registering: %v", err)
		}
		got, err := reg.SchemaByID(ctx, ss.ID)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseAvro([]byte(got.Schema))
		if err != nil {
			t.Fatal(err)
		}
		m, err := Map(s, []string{"id"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	v1 := register([]debezium.Field{
		{Name: "id", Schema: &debezium.Schema{Type: debezium.INT32}},
		{Name: "qty", Schema: &debezium.Schema{Type: debezium.INT32}},
		{Name: "price", Schema: dec("10", "2")},
		{Name: "note", Schema: &debezium.Schema{Type: debezium.STRING, Optional: true}},
		{Name: "ts", Schema: sch(debezium.STRING, debezium.ZonedTimestampName)},
	})

	ident := Namer{Prefix: tid.Prefix}.Ident(tid.DB, tid.Table)
	if err := cat.CreateNamespace(ctx, ident[:1], nil); err != nil {
		t.Fatalf("creating namespace %v: %v", ident[:1], err)
	}
	tbl, err := cat.CreateTable(ctx, ident, v1.Schema, catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	if err != nil {
		t.Fatalf("creating table %v: %v", ident, err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_ = cat.DropTable(ctx, ident)
		_ = cat.DropNamespace(ctx, ident[:1])
	})

	v2 := register([]debezium.Field{
		{Name: "id", Schema: &debezium.Schema{Type: debezium.INT32}},
		{Name: "qty", Schema: &debezium.Schema{Type: debezium.INT64}},
		{Name: "price", Schema: dec("12", "2")},
		{Name: "ts", Schema: opt(sch(debezium.STRING, debezium.ZonedTimestampName))},
		{Name: "added", Schema: opt(&debezium.Schema{Type: debezium.STRING})},
	})
	changes, err := Evolve(tbl.Schema(), v2.Schema)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := Apply(tx.UpdateSchema(true, false), changes, 2, false).Commit(); err != nil {
		t.Fatalf("staging %v: %v", changes, err)
	}
	tbl, err = tx.Commit(ctx)
	if err != nil {
		t.Fatalf("committing %v: %v", changes, err)
	}
	got := tbl.Schema()
	if again, err := Evolve(got, v2.Schema); err != nil || len(again) != 0 {
		t.Errorf("after applying, Evolve = %v, %v; want nothing left", again, err)
	}
	for name, want := range map[string]iceberg.Type{
		"qty": iceberg.PrimitiveTypes.Int64, "price": iceberg.DecimalTypeOf(12, 2),
		"added": iceberg.PrimitiveTypes.String, "note": iceberg.PrimitiveTypes.String, "ts": iceberg.PrimitiveTypes.TimestampTz,
	} {
		f, ok := got.FindFieldByName(name)
		if !ok || !f.Type.Equals(want) {
			t.Errorf("column %s = %+v, want type %s", name, f, want)
		}
		if name != "qty" && name != "price" && f.Required {
			t.Errorf("column %s still required", name)
		}
	}
	if !slices.Equal(got.IdentifierFieldIDs, tbl.Schema().IdentifierFieldIDs) || len(got.IdentifierFieldIDs) != 1 {
		t.Errorf("identifier fields %v", got.IdentifierFieldIDs)
	}
}
