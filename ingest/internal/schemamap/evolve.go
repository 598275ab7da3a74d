package schemamap

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ChangeKind is the kind of one schema change.
type ChangeKind uint8

// Schema change kinds, all of which Iceberg applies without rewriting data.
const (
	// AddColumn adds an optional column (a nested field when Path is longer
	// than one element). Rows written before read it as null, or as the
	// column's Default where the table can hold one (format v3, see
	// [Apply]) or where they are rewritten with it (see [Change.Backfill]).
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
	// Default is the source column's default (AddColumn of a top-level
	// column, from [EvolveMapping]), as [Column.Default]; nil when none.
	Default any
	// Column is the mapped column of an AddColumn from [EvolveMapping].
	Column *Column
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
	// The key is a set: the catalog may store identifier-field-ids in
	// another order than the source key's (REST: ascending), and equality
	// deletes do not depend on it.
	if !slices.Equal(slices.Sorted(slices.Values(curKey)), slices.Sorted(slices.Values(nextKey))) {
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

// EvolveMapping is [Evolve] to next's schema, with each top-level added
// column's Default and mapped Column set from next.
func EvolveMapping(current *iceberg.Schema, next *Mapping) (_ []Change, err error) {
	defer recovered(&err)
	changes, err := Evolve(current, next.Schema)
	if err != nil {
		return nil, err
	}
	for i, c := range changes {
		if c.Kind != AddColumn || len(c.Path) != 1 {
			continue
		}
		for j := range next.Columns {
			if next.Columns[j].Name == c.Path[0] {
				changes[i].Column = &next.Columns[j]
				changes[i].Default = next.Columns[j].Default
			}
		}
	}
	return changes, nil
}

// DefaultsFormatVersion is the first Iceberg format version whose columns
// carry defaults (initial-default: the value of the rows written before
// the column was added; write-default).
const DefaultsFormatVersion = 3

// InitialDefault is the Iceberg literal of an added column's Default that
// [Apply] sets as the column's initial-default and write-default on a
// format v3 table, and whether there is one. Only types whose default
// iceberg-go v0.7.0 writes into table metadata as the Iceberg spec's JSON
// single-value form have one: boolean, int, long (also MySQL TIME as µs),
// float and double with a fraction (see jsonFloat), string (also DECIMAL
// with more than 38 digits) and binary. v0.7.0 writes date, timestamp and timestamptz defaults as JSON
// numbers (the spec wants ISO strings) and refuses decimals whose
// precision is not 9 and every timestamptz default (its literals carry no
// such types), so those columns get none: their older rows read NULL
// unless backfilled (see [Change.Backfill]).
func (c Change) InitialDefault() (iceberg.Literal, bool) {
	if c.Kind != AddColumn || c.Default == nil || c.Column == nil {
		return nil, false
	}
	switch v := c.Default.(type) {
	case bool:
		if c.Column.Kind == KindBool {
			return iceberg.BoolLiteral(v), true
		}
	case int32:
		if c.Column.Kind == KindInt {
			return iceberg.Int32Literal(v), true
		}
	case int64:
		// iceberg-go reads a default back from the table metadata as a
		// float64: beyond 2^53 a long would come back changed.
		if v > 1<<53 || v < -(1<<53) {
			break
		}
		switch c.Column.Kind {
		case KindLong, KindTimeMillis, KindTimeMicros, KindTimeNanos:
			return iceberg.Int64Literal(v), true
		}
	case float32:
		if c.Column.Kind == KindFloat && jsonFloat(float64(v)) {
			return iceberg.Float32Literal(v), true
		}
	case float64:
		if c.Column.Kind == KindDouble && jsonFloat(v) {
			return iceberg.Float64Literal(v), true
		}
	case string:
		if c.Column.Kind == KindString || c.Column.Kind == KindDecimalString {
			return iceberg.StringLiteral(v), true
		}
	case []byte:
		if c.Column.Kind == KindBinary {
			return iceberg.BinaryLiteral(v), true
		}
	}
	return nil, false
}

// jsonFloat reports whether iceberg-go v0.7.0 writes the float default v
// as a JSON number that the Iceberg spec's readers take for a float:
// encoding/json writes an integral value below 1e21 without a fraction
// ("1000"), which Java's parser (and so the REST catalog) refuses for a
// float or double default, and cannot write NaN or infinities at all.
func jsonFloat(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	return v != math.Trunc(v) || math.Abs(v) >= 1e21
}

// Backfill reports whether the rows that exist when the change is applied
// must be rewritten to read the added column's Default, on a table of
// format version formatVersion: an AddColumn with a default that the
// table cannot carry as an initial-default (format v2, or a type without
// [Change.InitialDefault]).
func (c Change) Backfill(formatVersion int) bool {
	if c.Kind != AddColumn || c.Default == nil || c.Column == nil {
		return false
	}
	_, ok := c.InitialDefault()
	return formatVersion < DefaultsFormatVersion || !ok
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

// Apply stages the changes on u (from tx.UpdateSchema(true, false)) of a
// table of format version formatVersion; the caller commits u and then the
// transaction. On a v3 table an added column with an
// [Change.InitialDefault] gets it as initial-default and write-default, so
// that the rows written before read it as MariaDB returns them. Otherwise
// the column's doc says that those rows read NULL (or were rewritten, when
// backfill is set and [Change.Backfill] holds).
func Apply(u *table.UpdateSchema, changes []Change, formatVersion int, backfill bool) *table.UpdateSchema {
	for _, c := range changes {
		switch c.Kind {
		case AddColumn:
			lit, ok := c.InitialDefault()
			switch {
			case c.Default == nil:
			case formatVersion >= DefaultsFormatVersion && ok:
			case backfill && c.Backfill(formatVersion):
				c.Doc = joinDoc(c.Doc, "binlake: the rows that existed when this column was added were rewritten with the source default "+c.defaultText()+" (backfill-defaults)")
			default:
				c.Doc = joinDoc(c.Doc, fmt.Sprintf("binlake: the source default %s is not applied to the rows that existed when this column was added; they read NULL (format v%d table, no backfill-defaults)", c.defaultText(), formatVersion))
			}
			if formatVersion < DefaultsFormatVersion || !ok {
				lit = nil
			}
			u = u.AddColumn(c.Path, c.Type, c.Doc, false, lit)
		case Widen:
			u = u.UpdateColumn(c.Path, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Val: c.Type, Valid: true}})
		case MakeOptional:
			u = u.UpdateColumn(c.Path, table.ColumnUpdate{Required: iceberg.Optional[bool]{Val: false, Valid: true}})
		}
	}
	return u
}

func joinDoc(doc, note string) string {
	if doc == "" {
		return note
	}
	return doc + "; " + note
}

// defaultText renders Default for a column doc.
func (c Change) defaultText() string {
	switch v := c.Default.(type) {
	case []byte:
		return "0x" + hex.EncodeToString(v)
	case decimal128.Num:
		return v.ToString(int32(c.Column.Scale))
	case string:
		return strconv.Quote(v)
	}
	switch c.Column.Kind {
	case KindDate:
		return time.Unix(int64(c.Default.(int32))*86400, 0).UTC().Format("2006-01-02")
	case KindTimestampMillis, KindTimestampMicros, KindTimestampNanos, KindZonedTimestamp:
		return time.UnixMicro(c.Default.(int64)).UTC().Format("2006-01-02T15:04:05.999999Z")
	}
	return fmt.Sprint(c.Default)
}
