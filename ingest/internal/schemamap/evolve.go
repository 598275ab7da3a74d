package schemamap

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ChangeKind is the kind of one schema change.
type ChangeKind uint8

// Schema change kinds, all of which Iceberg applies without rewriting data.
const (
	// AddColumn adds an optional column (a nested field when Path is longer
	// than one element). Rows written before read it as null.
	AddColumn ChangeKind = iota + 1
	// Widen promotes a primitive type: int→long, float→double, or a
	// decimal to a larger precision at the same scale.
	Widen
	// MakeOptional turns a required column into an optional one.
	MakeOptional
)

// Change is one schema change to apply to a table.
type Change struct {
	Kind ChangeKind
	Path []string     // column path; nested fields have more than one element
	Type iceberg.Type // the new type (AddColumn, Widen)
	From iceberg.Type // the old type (Widen)
	Doc  string
}

func (c Change) String() string {
	p := strings.Join(c.Path, ".")
	switch c.Kind {
	case AddColumn:
		return "add column " + p + " " + c.Type.String()
	case Widen:
		return "widen " + p + " from " + c.From.String() + " to " + c.Type.String()
	case MakeOptional:
		return "make " + p + " optional"
	}
	return "unknown change to " + p
}

// IncompatibleError reports a source schema change that the table cannot
// follow. It wraps [ErrIncompatible].
type IncompatibleError struct {
	Column string // dotted column path
	Change string // what changed, e.g. "string → long"
	Fix    string // what an operator can do about it
}

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("schemamap: incompatible schema change of column %s: %s; %s", e.Column, e.Change, e.Fix)
}

// Unwrap makes errors.Is(err, ErrIncompatible) true.
func (e *IncompatibleError) Unwrap() error { return ErrIncompatible }

// Evolve returns the changes that make the table schema current accept rows
// of the schema next (as built by [Map]). Columns are matched by name.
//
// Allowed: new columns (added as optional, at any depth), int→long,
// float→double, decimal(p,s)→decimal(p',s) with p'>p, required→optional.
// A column that next no longer has stays in the table (it must be optional
// or become optional; rows written from now on leave it null). A type that
// next narrows within what the table holds (long column, int source) needs
// no change. Anything else, including a change of the identifier (primary
// key) fields, is an [*IncompatibleError].
func Evolve(current, next *iceberg.Schema) ([]Change, error) {
	curKey := identifierNames(current)
	nextKey := identifierNames(next)
	if !slices.Equal(curKey, nextKey) {
		return nil, &IncompatibleError{
			Column: strings.Join(nextKey, ","),
			Change: fmt.Sprintf("primary key [%s] → [%s]", strings.Join(curKey, ","), strings.Join(nextKey, ",")),
			Fix:    "equality deletes need a stable key: create a new table for the new key (rename or drop the old one) and re-snapshot the source table",
		}
	}
	var out []Change
	err := evolveFields(nil, current.Fields(), next.Fields(), &out)
	return out, err
}

func identifierNames(s *iceberg.Schema) []string {
	var names []string
	for _, id := range s.IdentifierFieldIDs {
		if n, ok := s.FindColumnName(id); ok {
			names = append(names, n)
		}
	}
	return names
}

func evolveFields(parent []string, cur, next []iceberg.NestedField, out *[]Change) error {
	for _, nf := range next {
		path := append(slices.Clone(parent), nf.Name)
		i := slices.IndexFunc(cur, func(f iceberg.NestedField) bool { return f.Name == nf.Name })
		if i < 0 {
			*out = append(*out, Change{Kind: AddColumn, Path: path, Type: nf.Type, Doc: nf.Doc})
			continue
		}
		cf := cur[i]
		if err := evolveType(path, cf.Type, nf.Type, out); err != nil {
			return err
		}
		if cf.Required && !nf.Required {
			*out = append(*out, Change{Kind: MakeOptional, Path: path})
		}
	}
	for _, cf := range cur {
		if cf.Required && !slices.ContainsFunc(next, func(f iceberg.NestedField) bool { return f.Name == cf.Name }) {
			*out = append(*out, Change{Kind: MakeOptional, Path: append(slices.Clone(parent), cf.Name)})
		}
	}
	return nil
}

func evolveType(path []string, cur, next iceberg.Type, out *[]Change) error {
	if cur.Equals(next) {
		return nil
	}
	incompatible := func() error {
		return &IncompatibleError{
			Column: strings.Join(path, "."),
			Change: cur.String() + " → " + next.String(),
			Fix: "Iceberg can only widen int→long, float→double and decimal precision; " +
				"keep the source type compatible, or add a new column with the new type and stop writing the old one, " +
				"or recreate the table and re-snapshot",
		}
	}
	switch c := cur.(type) {
	case iceberg.Int32Type:
		if _, ok := next.(iceberg.Int64Type); ok {
			*out = append(*out, Change{Kind: Widen, Path: path, From: cur, Type: next})
			return nil
		}
	case iceberg.Int64Type:
		if _, ok := next.(iceberg.Int32Type); ok {
			return nil // the table already holds every int
		}
	case iceberg.Float32Type:
		if _, ok := next.(iceberg.Float64Type); ok {
			*out = append(*out, Change{Kind: Widen, Path: path, From: cur, Type: next})
			return nil
		}
	case iceberg.Float64Type:
		if _, ok := next.(iceberg.Float32Type); ok {
			return nil
		}
	case iceberg.DecimalType:
		if n, ok := next.(iceberg.DecimalType); ok && n.Scale() == c.Scale() {
			if n.Precision() > c.Precision() {
				*out = append(*out, Change{Kind: Widen, Path: path, From: cur, Type: next})
			}
			return nil
		}
	case *iceberg.StructType:
		if n, ok := next.(*iceberg.StructType); ok {
			return evolveFields(path, c.FieldList, n.FieldList, out)
		}
	case *iceberg.ListType:
		if n, ok := next.(*iceberg.ListType); ok {
			if err := evolveType(append(slices.Clone(path), "element"), c.Element, n.Element, out); err != nil {
				return err
			}
			if c.ElementRequired && !n.ElementRequired {
				return incompatible()
			}
			return nil
		}
	}
	return incompatible()
}

// Apply stages the changes on u (from tx.UpdateSchema(true, false)); the
// caller commits u and then the transaction.
func Apply(u *table.UpdateSchema, changes []Change) *table.UpdateSchema {
	for _, c := range changes {
		switch c.Kind {
		case AddColumn:
			u = u.AddColumn(c.Path, c.Type, c.Doc, false, nil)
		case Widen:
			u = u.UpdateColumn(c.Path, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Val: c.Type, Valid: true}})
		case MakeOptional:
			u = u.UpdateColumn(c.Path, table.ColumnUpdate{Required: iceberg.Optional[bool]{Val: false, Valid: true}})
		}
	}
	return u
}
