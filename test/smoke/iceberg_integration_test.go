//go:build integration

package smoke

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/binlake/binlake/test/testenv"
)

// TestIcebergRESTCatalog creates a namespace and a format-v2 table with an
// identifier field through the REST catalog, commits an append with
// iceberg-go, checks that the data and metadata files landed in MinIO under
// the table's location, and reads the same rows back.
func TestIcebergRESTCatalog(t *testing.T) {
	env := testenv.IcebergEnv(t)
	ctx := t.Context()
	cat, err := rest.NewCatalog(ctx, "smoke", env.URI, rest.WithAdditionalProps(env.FileIOProps()))
	if err != nil {
		t.Fatalf("connecting to the REST catalog: %v", err)
	}
	ns := table.Identifier{testenv.Unique(t, "smoke")}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	ident := append(slices.Clone(ns), "orders")
	t.Cleanup(func() {
		_ = cat.DropTable(ctx, ident)
		_ = cat.DropNamespace(ctx, ns)
	})

	schema := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
	)
	tbl, err := cat.CreateTable(ctx, ident, schema, catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	if err != nil {
		t.Fatalf("creating table: %v", err)
	}
	if v := tbl.Metadata().Version(); v != 2 {
		t.Fatalf("table format version %d, want 2", v)
	}
	if ids := tbl.Schema().IdentifierFieldIDs; !slices.Equal(ids, []int{1}) {
		t.Fatalf("identifier fields %v, want [1]", ids)
	}

	arrowSchema, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrowSchema)
	defer b.Release()
	const n = 100
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%d", i))
		b.Field(2).(*array.Decimal128Builder).Append(decimalOf(int64(i)*100 + 1))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(arrowSchema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err = tbl.Append(ctx, rdr, iceberg.Properties{"binlake.smoke": "1"})
	if err != nil {
		t.Fatalf("appending: %v", err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.Summary.Properties["binlake.smoke"] != "1" || snap.Summary.Properties["added-records"] != fmt.Sprint(n) {
		t.Fatalf("snapshot summary %+v lacks our property or record count", snap)
	}

	// The files must be in MinIO, under the table's location.
	loc, err := url.Parse(tbl.Location())
	if err != nil {
		t.Fatal(err)
	}
	if loc.Scheme != "s3" || loc.Host != env.Bucket {
		t.Fatalf("table location %s is not in bucket %s", tbl.Location(), env.Bucket)
	}
	s3c := s3.New(s3.Options{
		BaseEndpoint: aws.String(env.S3Endpoint), Region: env.Region, UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(env.AccessKey, env.SecretKey, ""),
	})
	list, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(env.Bucket), Prefix: aws.String(strings.TrimPrefix(loc.Path, "/"))})
	if err != nil {
		t.Fatalf("listing %s: %v", tbl.Location(), err)
	}
	var parquet, metadata int
	for _, o := range list.Contents {
		switch k := aws.ToString(o.Key); {
		case strings.HasSuffix(k, ".parquet"):
			parquet++
		case strings.HasSuffix(k, ".metadata.json"):
			metadata++
		}
	}
	if parquet == 0 || metadata == 0 {
		t.Fatalf("MinIO holds %d parquet and %d metadata files under %s, want at least one of each", parquet, metadata, tbl.Location())
	}

	// Read back through a freshly loaded table.
	tbl, err = cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scanning: %v", err)
	}
	defer got.Release()
	if got.NumRows() != n {
		t.Fatalf("read %d rows, want %d", got.NumRows(), n)
	}
	seen := make(map[int64]string, n)
	tr := array.NewTableReader(got, 0)
	defer tr.Release()
	for tr.Next() {
		r := tr.RecordBatch()
		ids := r.Column(0).(*array.Int64)
		names := r.Column(1).(*array.String)
		amounts := r.Column(2).(*array.Decimal128)
		for i := range int(r.NumRows()) {
			id := ids.Value(i)
			if want := fmt.Sprintf("name-%d", id); names.Value(i) != want {
				t.Fatalf("row %d name %q, want %q", id, names.Value(i), want)
			}
			if amounts.Value(i) != decimalOf(id*100+1) {
				t.Fatalf("row %d amount %v, want %d", id, amounts.Value(i), id*100+1)
			}
			seen[id] = names.Value(i)
		}
	}
	if len(seen) != n {
		t.Fatalf("read %d distinct ids, want %d", len(seen), n)
	}
}

func decimalOf(unscaled int64) decimal128.Num { return decimal128.FromI64(unscaled) }
