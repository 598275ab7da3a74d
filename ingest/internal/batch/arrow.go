package batch

import (
	"fmt"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// DefaultRecordRows is the number of rows per Arrow record batch.
const DefaultRecordRows = 64 * 1024

// Converter builds Arrow record batches for one table schema: full rows
// for data files and key-only rows for equality deletes. Columns are built
// directly from the row values with one type-specific appender per column,
// without reflection or per-value allocation.
type Converter struct {
	mem        memory.Allocator
	schema     *arrow.Schema // data rows: the table schema with field IDs
	keySchema  *arrow.Schema // equality-delete rows: the identifier fields
	keyIDs     []int
	rowIdx     []int // per data field: index in Event.Row, -1 = always null
	keyIdx     []int // per key field: index in Event.Key
	appenders  []appender
	keyAppends []appender
	// RecordRows is the number of rows per record batch; default
	// DefaultRecordRows.
	RecordRows int
}

type appender func(b array.Builder, v any) error

// NewConverter prepares conversion of rows laid out as columns and keys laid
// out as key into the table schema sch (its current schema). Table columns
// the rows lack (dropped at the source) are written as null. The key columns
// must be sch's identifier fields. mem nil means memory.DefaultAllocator.
func NewConverter(sch *iceberg.Schema, columns, key []string, mem memory.Allocator) (*Converter, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	as, err := table.SchemaToArrowSchema(sch, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("converting table schema to Arrow: %w", err)
	}
	c := &Converter{mem: mem, schema: as, keyIDs: slices.Clone(sch.IdentifierFieldIDs), RecordRows: DefaultRecordRows}
	for i, f := range as.Fields() {
		idx := slices.Index(columns, f.Name)
		if idx < 0 && !f.Nullable {
			return nil, fmt.Errorf("%w: required table column %q has no source column", ErrInvalidEvent, f.Name)
		}
		ap, err := newAppender(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", sch.Field(i).Name, err)
		}
		c.rowIdx = append(c.rowIdx, idx)
		c.appenders = append(c.appenders, ap)
	}
	if len(c.keyIDs) == 0 {
		if len(key) == 0 {
			return c, nil // append-only: rows, no keys
		}
		return nil, fmt.Errorf("%w: table has no identifier fields", ErrInvalidEvent)
	}
	keyFields := make([]iceberg.NestedField, 0, len(c.keyIDs))
	for _, id := range c.keyIDs {
		f, ok := sch.FindFieldByID(id)
		if !ok {
			return nil, fmt.Errorf("%w: identifier field %d not in schema", ErrInvalidEvent, id)
		}
		idx := slices.Index(key, f.Name)
		if idx < 0 {
			return nil, fmt.Errorf("%w: identifier field %q is not a key column %v", ErrInvalidEvent, f.Name, key)
		}
		keyFields = append(keyFields, f)
		c.keyIdx = append(c.keyIdx, idx)
	}
	if len(keyFields) != len(key) {
		return nil, fmt.Errorf("%w: key %v differs from the table's identifier fields", ErrInvalidEvent, key)
	}
	c.keySchema, err = table.SchemaToArrowSchema(iceberg.NewSchema(0, keyFields...), nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("converting key schema to Arrow: %w", err)
	}
	for _, f := range c.keySchema.Fields() {
		ap, err := newAppender(f.Type)
		if err != nil {
			return nil, err
		}
		c.keyAppends = append(c.keyAppends, ap)
	}
	return c, nil
}

// Schema returns the Arrow schema of the data record batches.
func (c *Converter) Schema() *arrow.Schema { return c.schema }

// KeySchema returns the Arrow schema of the equality-delete record batches.
func (c *Converter) KeySchema() *arrow.Schema { return c.keySchema }

// KeyFieldIDs returns the equality field IDs (the identifier fields).
func (c *Converter) KeyFieldIDs() []int { return c.keyIDs }

// Rows yields the data rows of evs (their Row images) as record batches.
// The consumer owns (and must release) each batch it receives.
func (c *Converter) Rows(evs []*Event) iter.Seq2[arrow.RecordBatch, error] {
	return c.records(evs, c.schema, c.appenders, func(ev *Event, i int) any {
		if c.rowIdx[i] < 0 {
			return nil
		}
		return ev.Row[c.rowIdx[i]]
	})
}

// Keys yields the keys of evs as record batches of the key schema.
func (c *Converter) Keys(evs []*Event) iter.Seq2[arrow.RecordBatch, error] {
	return c.records(evs, c.keySchema, c.keyAppends, func(ev *Event, i int) any {
		return ev.Key[c.keyIdx[i]]
	})
}

func (c *Converter) records(evs []*Event, sch *arrow.Schema, aps []appender, value func(*Event, int) any) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		per := c.RecordRows
		if per <= 0 {
			per = DefaultRecordRows
		}
		b := array.NewRecordBuilder(c.mem, sch)
		defer b.Release()
		for start := 0; start < len(evs); start += per {
			chunk := evs[start:min(start+per, len(evs))]
			b.Reserve(len(chunk))
			for i, ap := range aps {
				fb := b.Field(i)
				for _, ev := range chunk {
					if err := ap(fb, value(ev, i)); err != nil {
						yield(nil, fmt.Errorf("%s/%d/%d column %s: %w", ev.Topic, ev.Partition, ev.Offset, sch.Field(i).Name, err))
						return
					}
				}
			}
			if !yield(b.NewRecordBatch(), nil) {
				return
			}
		}
	}
}

func mismatch(t arrow.DataType, v any) error {
	return fmt.Errorf("%w: %T for Arrow %s", ErrInvalidEvent, v, t)
}

// newAppender returns the appender for one Arrow type.
func newAppender(t arrow.DataType) (appender, error) {
	switch t.ID() {
	case arrow.BOOL:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case bool:
				b.(*array.BooleanBuilder).Append(x)
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.INT32:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case int32:
				b.(*array.Int32Builder).Append(x)
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.INT64:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case int64:
				b.(*array.Int64Builder).Append(x)
			case int32: // table column widened earlier, source narrower now
				b.(*array.Int64Builder).Append(int64(x))
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.FLOAT32:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case float32:
				b.(*array.Float32Builder).Append(x)
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.FLOAT64:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case float64:
				b.(*array.Float64Builder).Append(x)
			case float32:
				b.(*array.Float64Builder).Append(float64(x))
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.STRING:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case string:
				b.(*array.StringBuilder).Append(x)
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.LARGE_STRING:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case string:
				b.(*array.LargeStringBuilder).Append(x)
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.BINARY, arrow.LARGE_BINARY:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case []byte:
				b.(*array.BinaryBuilder).Append(x)
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.DECIMAL128:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case decimal128.Num:
				b.(*array.Decimal128Builder).Append(x)
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.DATE32:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case int32:
				b.(*array.Date32Builder).Append(arrow.Date32(x))
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.TIME64:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case int64:
				b.(*array.Time64Builder).Append(arrow.Time64(x))
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.TIMESTAMP:
		return func(b array.Builder, v any) error {
			switch x := v.(type) {
			case nil:
				b.AppendNull()
			case int64:
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(x))
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.STRUCT:
		st := t.(*arrow.StructType)
		fields := make([]appender, st.NumFields())
		for i, f := range st.Fields() {
			ap, err := newAppender(f.Type)
			if err != nil {
				return nil, err
			}
			fields[i] = ap
		}
		return func(b array.Builder, v any) error {
			sb := b.(*array.StructBuilder)
			switch x := v.(type) {
			case nil:
				sb.AppendNull()
			case []any:
				if len(x) != len(fields) {
					return fmt.Errorf("%w: struct of %d values for %d fields", ErrInvalidEvent, len(x), len(fields))
				}
				sb.Append(true)
				for i, ap := range fields {
					if err := ap(sb.FieldBuilder(i), x[i]); err != nil {
						return err
					}
				}
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.LIST:
		elem, err := newAppender(t.(*arrow.ListType).Elem())
		if err != nil {
			return nil, err
		}
		return func(b array.Builder, v any) error {
			lb := b.(*array.ListBuilder)
			switch x := v.(type) {
			case nil:
				lb.AppendNull()
			case []any:
				lb.Append(true)
				vb := lb.ValueBuilder()
				for _, e := range x {
					if err := elem(vb, e); err != nil {
						return err
					}
				}
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	case arrow.MAP:
		mt := t.(*arrow.MapType)
		key, err := newAppender(mt.KeyType())
		if err != nil {
			return nil, err
		}
		item, err := newAppender(mt.ItemType())
		if err != nil {
			return nil, err
		}
		return func(b array.Builder, v any) error {
			mb := b.(*array.MapBuilder)
			switch x := v.(type) {
			case nil:
				mb.AppendNull()
			case map[string]any:
				mb.Append(true)
				for k, e := range x {
					if err := key(mb.KeyBuilder(), k); err != nil {
						return err
					}
					if err := item(mb.ItemBuilder(), e); err != nil {
						return err
					}
				}
			default:
				return mismatch(t, v)
			}
			return nil
		}, nil
	}
	return nil, fmt.Errorf("%w: Arrow type %s", ErrInvalidEvent, t)
}
