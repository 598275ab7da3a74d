package schemamap

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/binlake/binlake/schemas/debezium"
)

// ErrColumnCollision reports two source columns of one table whose lake
// names would be equal (LowerColumns).
var ErrColumnCollision = errors.New("schemamap: two source columns have one lake column name")

// LowerColumn is the lake name of source column name where the catalog
// wants lower-case column names (S3 Tables, Glue): strings.ToLower.
func LowerColumn(name string) string { return strings.ToLower(name) }

// sourceColumnDoc is the note a renamed column's doc carries.
func sourceColumnDoc(name string) string { return "binlake: source column " + name }

// LowerColumns returns row with its columns (its top-level fields) named
// by LowerColumn, and key (column names) likewise, for catalogs that need
// lower-case column names: Athena and Glue see no table of S3 Tables
// whose definition has an upper-case letter. A renamed column keeps its
// source name in its doc ("binlake: source column OrderID", after the
// column's comment). Nested field names are kept: Debezium's are
// lower-case for every MySQL type. Two columns whose lake names are equal
// are ErrColumnCollision, naming both. A column keep reports (one the
// existing table has under its source name, written by an earlier version)
// keeps its name, so that existing tables go on as they are. row itself is
// not changed; it is returned as is when no name changes.
func LowerColumns(row *debezium.Schema, key []string, keep func(name string) bool) (_ *debezium.Schema, _ []string, err error) {
	defer recovered(&err)
	lake := func(name string) string {
		if keep != nil && keep(name) {
			return name
		}
		return LowerColumn(name)
	}
	lkey := make([]string, len(key))
	for i, k := range key {
		lkey[i] = lake(k)
	}
	if row == nil {
		return row, lkey, nil
	}
	changed := false
	by := make(map[string]string, len(row.Fields))
	for _, f := range row.Fields {
		l := lake(f.Name)
		if prev, dup := by[l]; dup {
			return nil, nil, fmt.Errorf("%w: source columns %q and %q of %s are both %q in the lake, which wants lower-case column names (setting lower-case-columns): rename one of them at the source, or set lower-case-columns=false where the catalog allows",
				ErrColumnCollision, prev, f.Name, tableOf(row.Name), l)
		}
		by[l] = f.Name
		changed = changed || l != f.Name
	}
	if !changed {
		return row, lkey, nil
	}
	out := *row
	out.Fields = slices.Clone(row.Fields)
	for i, f := range out.Fields {
		l := lake(f.Name)
		if l == f.Name {
			continue
		}
		s := *f.Schema
		s.Doc = joinDoc(s.Doc, sourceColumnDoc(f.Name))
		out.Fields[i] = debezium.Field{Name: l, Schema: &s}
	}
	return &out, lkey, nil
}

// tableOf is the table a row schema name <prefix>.<db>.<table>.Value
// names, or the name itself.
func tableOf(name string) string {
	if t, ok := strings.CutSuffix(name, ".Value"); ok {
		return t
	}
	if name == "" {
		return "the table"
	}
	return name
}
