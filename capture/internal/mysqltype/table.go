package mysqltype

import (
	"fmt"

	"github.com/binlake/binlake/schemas/debezium"
)

// Table converts whole rows of one table.
type Table struct {
	convs  []*Converter
	fields []debezium.Field
}

// NewTable builds the converters of cols, in column order.
func NewTable(cols []Column, opts Options) (*Table, error) {
	t := &Table{convs: make([]*Converter, len(cols)), fields: make([]debezium.Field, len(cols))}
	for i, col := range cols {
		c, err := New(col, opts)
		if err != nil {
			return nil, err
		}
		t.convs[i] = c
		t.fields[i] = c.Field()
	}
	return t, nil
}

// Fields returns the row's Debezium fields in column order. The slice is
// shared; do not modify it.
func (t *Table) Fields() []debezium.Field { return t.fields }

// Converter returns the converter of column i.
func (t *Table) Converter(i int) *Converter { return t.convs[i] }

// ConvertRow converts a row (binlog or snapshot values in column order)
// into dst, which is grown as needed and returned.
func (t *Table) ConvertRow(dst debezium.Struct, row []any) (debezium.Struct, error) {
	if len(row) != len(t.convs) {
		return dst, fmt.Errorf("%w: row has %d values for %d columns", ErrInvalidValue, len(row), len(t.convs))
	}
	if cap(dst) < len(t.convs) {
		dst = make(debezium.Struct, 0, len(t.convs))
	}
	dst = dst[:0]
	for i, c := range t.convs {
		v, err := c.Convert(row[i])
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
	}
	return dst, nil
}
