package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/schemamap"
)

func TestParsePartitionSpecs(t *testing.T) {
	p, err := ParsePartitionSpecs(" *=bucket(16) ; shop.orders=bucket(4, customer_id);shop.logs=none")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		db, table string
		want      *Bucket
		explicit  bool
	}{
		{"shop", "orders", &Bucket{N: 4, Column: "customer_id"}, true},
		{"shop", "logs", nil, true},
		{"shop", "items", &Bucket{N: 16}, false},
	}
	for _, c := range cases {
		got, explicit := p.For(c.db, c.table)
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want || explicit != c.explicit {
			t.Errorf("%s.%s: %+v %v, want %+v %v", c.db, c.table, got, explicit, c.want, c.explicit)
		}
	}
	if b, _ := (PartitionSpecs{}).For("a", "b"); b != nil {
		t.Errorf("default is %+v, want unpartitioned", b)
	}
	for _, bad := range []string{"shop.t=day(ts)", "shop.t=bucket(0)", "t=bucket(4)", "shop.t", "*=bucket(2);*=bucket(3)", "a.b=bucket(2);a.b=none", "a.b=bucket(4, x, y)", "a.b.c=bucket(2)"} {
		if _, err := ParsePartitionSpecs(bad); !errors.Is(err, ErrPartition) {
			t.Errorf("%q: err %v, want ErrPartition", bad, err)
		}
	}
}

func TestBucketSpecOnlyOnKeyColumns(t *testing.T) {
	sch := iceberg.NewSchemaWithIdentifiers(0, []int{1, 2},
		iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "v", Type: iceberg.PrimitiveTypes.String})
	key := []string{"a", "b"}
	spec, err := (&Bucket{N: 8}).Spec(sch, key)
	if err != nil || spec.NumFields() != 1 || spec.Field(0).SourceID() != 1 || spec.Field(0).Transform.String() != "bucket[8]" {
		t.Fatalf("bucket(8): %v %v", spec, err)
	}
	spec, err = (&Bucket{N: 2, Column: "b"}).Spec(sch, key)
	if err != nil || spec.Field(0).SourceID() != 2 {
		t.Fatalf("bucket(2, b): %v %v", spec, err)
	}
	if err := checkSpec(spec, sch); err != nil {
		t.Errorf("checkSpec of a key bucket: %v", err)
	}
	_, err = (&Bucket{N: 2, Column: "v"}).Spec(sch, key)
	if !errors.Is(err, ErrPartition) || !strings.Contains(err.Error(), "v is not a primary-key column") {
		t.Errorf("bucket(2, v): err %v, want a refusal naming v", err)
	}
	if _, err := (&Bucket{N: 2}).Spec(sch, nil); !errors.Is(err, ErrPartition) {
		t.Errorf("bucket(2) without a key: err %v", err)
	}
	if spec, err := (*Bucket)(nil).Spec(sch, key); err != nil || !spec.IsUnpartitioned() {
		t.Errorf("nil bucket: %v %v", spec, err)
	}
	// A table made elsewhere, partitioned by a mutable column, is refused.
	bad, err := iceberg.NewPartitionSpecOpts(iceberg.AddPartitionFieldBySourceID(3, "v_bucket", iceberg.BucketTransform{NumBuckets: 4}, sch, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSpec(bad, sch); !errors.Is(err, ErrPartition) || !strings.Contains(err.Error(), "bucket[4](v)") {
		t.Errorf("checkSpec of a bucket on v: %v", err)
	}
}

// The Converter writes batch.OrderColumn, the tables get
// schemamap.SourceOrderColumn: one column.
func TestSourceOrderColumnNames(t *testing.T) {
	if batch.OrderColumn != schemamap.SourceOrderColumn {
		t.Fatalf("batch.OrderColumn %q != schemamap.SourceOrderColumn %q", batch.OrderColumn, schemamap.SourceOrderColumn)
	}
}

func TestParseDeleteModes(t *testing.T) {
	d, err := ParseDeleteModes(" position ; shop.audit=equality;shop.big = dv")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		db, table string
		want      commit.DeleteMode
	}{
		{"shop", "audit", commit.DeleteEquality},
		{"shop", "big", commit.DeleteDV},
		{"shop", "orders", commit.DeletePosition},
	} {
		if got := d.For(c.db, c.table); got != c.want {
			t.Errorf("%s.%s: %s, want %s", c.db, c.table, got, c.want)
		}
	}
	if !d.Uses(commit.DeleteDV) || !d.Uses(commit.DeleteEquality) {
		t.Errorf("Uses misses a mode of %v", d.Modes())
	}
	if m := (DeleteModes{}).For("a", "b"); m != commit.DeleteEquality {
		t.Errorf("default %s, want equality", m)
	}
	if m, _ := ParseDeleteModes("shop.t=equality"); m.For("a", "b") != commit.DeleteAuto || m.For("shop", "t") != commit.DeleteEquality {
		t.Errorf("an override alone changed the default (auto) or missed its table")
	}
	for _, s := range []string{"", " ; "} {
		if m, _ := ParseDeleteModes(s); m.For("a", "b") != commit.DeleteAuto || !m.Positional() {
			t.Errorf("%q: default %s, want auto (which keeps the key index)", s, m.For("a", "b"))
		}
	}
	if m, _ := ParseDeleteModes("equality"); m.Positional() {
		t.Errorf("equality for every table still wants the key index")
	}
	// A table's Committer gets its own mode.
	w := &worker{p: &Pipeline{cfg: Config{DeleteModes: d, Commit: commit.Config{MaxAttempts: 3}}}, names: topicNames{db: "shop", table: "big"}}
	if cfg := w.commitConfig(); cfg.DeleteMode != commit.DeleteDV || cfg.MaxAttempts != 3 {
		t.Errorf("shop.big committer config %+v, want dv and the pipeline's other settings", cfg)
	}
	for _, bad := range []string{"cow", "position; equality", "position; t=dv", "*=dv; *=position", "a.b=dv; a.b=position", "a.b.c=dv", "a.b=merge", "auto; a.b="} {
		if _, err := ParseDeleteModes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestHoldTable: while maintenance holds a table, its commits wait (and
// give up when their context ends); other tables commit; release lets
// them through.
func TestHoldTable(t *testing.T) {
	p := &Pipeline{}
	a, b := table.Identifier{"db", "a"}, table.Identifier{"db", "b"}
	release, err := p.HoldTable(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.lockCommits(short, a); err == nil {
		t.Fatal("a commit went through while the table was held")
	}
	rb, err := p.lockCommits(t.Context(), b)
	if err != nil {
		t.Fatalf("another table's commit waited: %v", err)
	}
	rb()
	release()
	ra, err := p.lockCommits(t.Context(), a)
	if err != nil {
		t.Fatalf("commit after release: %v", err)
	}
	ra()
}
