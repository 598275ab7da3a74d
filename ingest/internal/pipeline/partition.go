package pipeline

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
)

// ErrPartition reports a partition setting a table cannot take.
var ErrPartition = errors.New("pipeline: partition spec")

// Bucket partitions a table by bucket(N, Column), Iceberg's hash bucket
// transform of one primary-key column. Column "" means the first key
// column.
type Bucket struct {
	N      int
	Column string
}

// PartitionSpecs are the partition settings of new tables: by source table
// ("<db>.<table>", as in the topic name) or for all tables ("*"). A nil
// *Bucket is unpartitioned (the default).
type PartitionSpecs struct {
	all    *Bucket
	tables map[string]*Bucket
}

var bucketRe = regexp.MustCompile(`^bucket\(\s*([0-9]+)\s*(?:,\s*([^\s,()]+)\s*)?\)$`)

// ParsePartitionSpecs reads the --partition-spec setting: entries
// separated by ';', each "<target>=<transform>" where target is "*" (every
// table) or "<db>.<table>", and transform is "bucket(N)" (the first
// primary-key column), "bucket(N, column)" or "none". A table's own entry
// wins over "*". "" is every table unpartitioned.
func ParsePartitionSpecs(s string) (PartitionSpecs, error) {
	out := PartitionSpecs{tables: map[string]*Bucket{}}
	for entry := range strings.SplitSeq(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		target, transform, ok := strings.Cut(entry, "=")
		target, transform = strings.TrimSpace(target), strings.TrimSpace(transform)
		if !ok || target == "" {
			return out, fmt.Errorf("%w: entry %q: want <db>.<table>=bucket(N[, column]) or *=bucket(N)", ErrPartition, entry)
		}
		var b *Bucket
		if transform != "none" {
			m := bucketRe.FindStringSubmatch(transform)
			if m == nil {
				return out, fmt.Errorf("%w: entry %q: transform must be bucket(N), bucket(N, <key column>) or none (only key columns can partition an upserted table)", ErrPartition, entry)
			}
			n, err := strconv.Atoi(m[1])
			if err != nil || n < 1 || n > 1<<20 {
				return out, fmt.Errorf("%w: entry %q: bucket count must be 1 to 1048576", ErrPartition, entry)
			}
			b = &Bucket{N: n, Column: m[2]}
		}
		if target == "*" {
			if out.all != nil {
				return out, fmt.Errorf("%w: * given twice", ErrPartition)
			}
			out.all = b
			continue
		}
		if db, tbl, ok := strings.Cut(target, "."); !ok || db == "" || tbl == "" || strings.Contains(tbl, ".") {
			return out, fmt.Errorf("%w: entry %q: target must be * or <db>.<table>", ErrPartition, entry)
		}
		if _, dup := out.tables[target]; dup {
			return out, fmt.Errorf("%w: %s given twice", ErrPartition, target)
		}
		out.tables[target] = b
	}
	return out, nil
}

// For returns the setting of source table db.table (nil: unpartitioned)
// and whether it names the table (rather than coming from "*").
func (p PartitionSpecs) For(db, table string) (*Bucket, bool) {
	if b, ok := p.tables[db+"."+table]; ok {
		return b, true
	}
	return p.all, false
}

// Spec builds the Iceberg partition spec of a new table with schema sch
// and primary key key. The column must be a key column: equality deletes
// only apply within their partition, so a row whose partition column
// changed would keep its old copy in the old partition.
func (b *Bucket) Spec(sch *iceberg.Schema, key []string) (iceberg.PartitionSpec, error) {
	if b == nil {
		return *iceberg.UnpartitionedSpec, nil
	}
	col := b.Column
	if col == "" {
		if len(key) == 0 {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: bucket(%d) needs a primary key column", ErrPartition, b.N)
		}
		col = key[0]
	}
	if !slices.Contains(key, col) {
		return iceberg.PartitionSpec{}, fmt.Errorf("%w: bucket(%d, %s): %s is not a primary-key column (key %v); equality deletes only apply within a partition, so a row whose %s changes would keep its old copy: partition by a key column or not at all",
			ErrPartition, b.N, col, col, key, col)
	}
	f, ok := sch.FindFieldByName(col)
	if !ok {
		return iceberg.PartitionSpec{}, fmt.Errorf("%w: column %s not in the table", ErrPartition, col)
	}
	return iceberg.NewPartitionSpecOpts(iceberg.AddPartitionFieldBySourceID(f.ID, col+"_bucket", iceberg.BucketTransform{NumBuckets: b.N}, sch, nil))
}

// checkSpec refuses a table (created by ingest or not) partitioned by
// anything but identifier (key) columns, for the reason given in Spec.
func checkSpec(spec iceberg.PartitionSpec, sch *iceberg.Schema) error {
	for _, f := range spec.Fields() {
		if _, void := f.Transform.(iceberg.VoidTransform); void {
			continue // a dropped partition field
		}
		for _, id := range f.SourceIDs {
			if slices.Contains(sch.IdentifierFieldIDs, id) {
				continue
			}
			name, _ := sch.FindColumnName(id)
			return fmt.Errorf("%w: the table is partitioned by %s(%s), not a primary-key column; equality deletes only apply within a partition, so updates that move a row would leave its old copy: recreate the table partitioned by a key column or unpartitioned",
				ErrPartition, f.Transform, name)
		}
	}
	return nil
}

// specText describes a spec in one line: "bucket[4](id)" or "none".
func specText(spec iceberg.PartitionSpec, sch *iceberg.Schema) string {
	var parts []string
	for _, f := range spec.Fields() {
		name, _ := sch.FindColumnName(f.SourceID())
		parts = append(parts, fmt.Sprintf("%s(%s)", f.Transform, name))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}
