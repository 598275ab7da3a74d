//go:build integration

package icebergreader_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/icebergreader"
	"github.com/binlake/binlake/test/lakecheck"
	"github.com/binlake/binlake/test/testenv"
)

// TestReadersRenderAsJava writes one table of every Iceberg type ingest
// writes (edge values, and a row of NULLs) with iceberg-go and checks that
// pyiceberg, DuckDB and Spark print every value as the same string as the
// Java reference reader (floats: the same float, see below).
// A table with an Iceberg time column (which ingest never writes: a MySQL
// TIME is a long of µs) is read the same by all but Spark, which refuses
// it with its own message (ingest/README.md, "Readers").
func TestReadersRenderAsJava(t *testing.T) {
	for _, r := range icebergreader.Readers {
		icebergreader.Start(r)
	}
	ice := testenv.IcebergEnv(t)
	ctx := t.Context()
	cat, err := rest.NewCatalog(ctx, "readers", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	ns := table.Identifier{testenv.Unique(t, "readers")}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	p := iceberg.PrimitiveTypes
	opt := func(id int, name string, typ iceberg.Type) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: typ}
	}
	types := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: p.Int32, Required: true},
		opt(2, "l", p.Int64), opt(3, "f", p.Float32), opt(4, "d", p.Float64),
		opt(5, "dec", iceberg.DecimalTypeOf(38, 10)), opt(6, "dec2", iceberg.DecimalTypeOf(10, 2)),
		opt(7, "b", p.Bool), opt(8, "s", p.String), opt(9, "bin", p.Binary), opt(10, "dt", p.Date),
		opt(11, "ts", p.Timestamp), opt(12, "tstz", p.TimestampTz),
		opt(13, "g", &iceberg.StructType{FieldList: []iceberg.NestedField{
			opt(14, "x", p.Float64), opt(15, "wkb", p.Binary), opt(16, "srid", p.Int32)}}),
	)
	typesRows := `[
		{"id": 1, "l": -9223372036854775808, "f": 3.14, "d": -1.7976931348623157e308, "dec": "-0.0000000001", "dec2": "12345678.90",
		 "b": true, "s": "ü 😀 \"q\"\n\t\\", "bin": "AP8=", "dt": "1000-01-01", "ts": "9999-12-31 23:59:59.999999",
		 "tstz": "1969-12-31 23:59:59.999999Z", "g": {"x": 1.5, "wkb": "AQI=", "srid": null}},
		{"id": 2, "l": 9223372036854775807, "f": 1e20, "d": 5e-324, "dec": "9999999999999999999999999999.9999999999", "dec2": "-0.01",
		 "b": false, "s": "", "bin": "", "dt": "1970-01-01", "ts": "1970-01-01 00:00:00", "tstz": "2038-01-19 03:14:07.9Z",
		 "g": {"x": -1e-20, "wkb": "", "srid": 4326}},
		{"id": 3}]`
	timeSchema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: p.Int32, Required: true}, opt(2, "t", p.Time))
	timeRows := `[{"id": 1, "t": "12:34:56.789012"}, {"id": 2, "t": "00:00:00"}, {"id": 3, "t": "23:59:59.5"}, {"id": 4}]`

	typesIdent := write(t, cat, append(ns, "types"), types, typesRows)
	timeIdent := write(t, cat, append(ns, "times"), timeSchema, timeRows)

	byID := func(reader, ident string) map[string]icebergreader.Row {
		t.Helper()
		rows, err := icebergreader.ReadWith(reader, ident)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]icebergreader.Row{}
		for _, r := range rows {
			out[*r["id"]] = r
		}
		return out
	}
	schemas := map[string]*iceberg.Schema{typesIdent: types, timeIdent: timeSchema}
	for _, ident := range []string{typesIdent, timeIdent} {
		// Floats through lakecheck's canonical form: Java 17's
		// Double.toString is not always the shortest text (4.9E-324 for
		// Double.MIN_VALUE, JDK-4511638), the Python readers' is (5.0E-324).
		// Every other value must be the same string.
		ts := map[string]iceberg.Type{}
		var cols []string
		for _, f := range schemas[ident].Fields() {
			ts[f.Name] = f.Type
			cols = append(cols, f.Name)
		}
		canon := func(r icebergreader.Row) []string { return lakecheck.JavaRow(r, cols, ts) }
		java := byID("java", ident)
		for _, reader := range icebergreader.Readers[1:] {
			if reader == "spark" && ident == timeIdent {
				_, err := icebergreader.ReadWith(reader, ident)
				if err == nil || !strings.Contains(err.Error(), "UnsupportedOperationException: Spark does not support time fields") {
					t.Errorf("spark on a time column: %v, want Spark's refusal of time fields", err)
				}
				continue
			}
			got := byID(reader, ident)
			if len(got) != len(java) {
				t.Errorf("%s: %s read %d rows, java %d", ident, reader, len(got), len(java))
			}
			for id, jr := range java {
				g, j := canon(got[id]), canon(jr)
				for i, c := range cols {
					if g[i] != j[i] {
						t.Errorf("%s id %s column %s: %s %s, java %s", ident, id, c, reader, show(got[id][c]), show(jr[c]))
					}
				}
				if len(got[id]) != len(jr) {
					t.Errorf("%s id %s: %s read columns %v, java %v", ident, id, reader, keys(got[id]), keys(jr))
				}
			}
		}
		alike := icebergreader.Readers
		if ident == timeIdent {
			alike = slices.DeleteFunc(slices.Clone(alike), func(r string) bool { return r == "spark" })
		}
		t.Logf("%s: %d rows read alike by %s", ident, len(java), strings.Join(alike, ", "))
	}
}

// write creates ident with sch (dropped when the test ends) and appends
// rows, given as arrow JSON.
func write(t *testing.T, cat catalog.Catalog, ident table.Identifier, sch *iceberg.Schema, rows string) string {
	t.Helper()
	ctx := t.Context()
	tbl, err := cat.CreateTable(ctx, ident, sch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = cat.DropTable(ctx, ident)
		_ = cat.DropNamespace(ctx, ident[:1])
	})
	as, err := table.SchemaToArrowSchema(sch, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, as, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	at := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
	defer at.Release()
	if _, err := tbl.AppendTable(ctx, at, 1024, nil); err != nil {
		t.Fatal(err)
	}
	return ident[0] + "." + ident[1]
}

func show(v *string) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *v)
}

func keys(r icebergreader.Row) []string {
	var out []string
	for k := range r {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
