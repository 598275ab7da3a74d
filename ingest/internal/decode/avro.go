package decode

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/schemas/debezium"
)

// avroKind is an Avro schema type.
type avroKind uint8

const (
	avroNull avroKind = iota + 1
	avroBoolean
	avroInt
	avroLong
	avroFloat
	avroDouble
	avroBytes
	avroString
	avroRecord
	avroEnum
	avroArray
	avroMap
	avroFixed
	avroUnion
)

// node is one Avro schema node, enough to read (or skip) its binary form.
type node struct {
	kind     avroKind
	name     string // full name of a named type
	fields   []avroField
	symbols  []string
	items    *node // array items, map values
	size     int   // fixed
	branches []*node
}

type avroField struct {
	name string
	typ  *node
}

// parseAvroNodes reads the schema JSON into a node tree, resolving named
// type references.
func parseAvroNodes(schema []byte) (*node, error) {
	var v any
	if err := json.Unmarshal(schema, &v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSchema, err)
	}
	p := nodeParser{named: map[string]*node{}}
	n, err := p.parse(v, "", 0)
	if err != nil {
		return nil, err
	}
	if err := checkArrays(n, map[*node]bool{}); err != nil {
		return nil, err
	}
	return n, nil
}

// checkArrays refuses an array whose items can take no bytes (null, an
// empty record, a fixed of size 0, a record of only such fields): each
// block header of such an array would stand for as many items as it
// claims, without the data to bound them.
func checkArrays(n *node, seen map[*node]bool) error {
	if seen[n] {
		return nil
	}
	seen[n] = true
	if n.kind == avroArray && zeroSize(n.items, map[*node]bool{}) {
		return fmt.Errorf("%w: %w: an array of items that take no bytes", ErrBadSchema, ErrLimit)
	}
	for _, f := range n.fields {
		if err := checkArrays(f.typ, seen); err != nil {
			return err
		}
	}
	for _, b := range n.branches {
		if err := checkArrays(b, seen); err != nil {
			return err
		}
	}
	if n.items != nil {
		return checkArrays(n.items, seen)
	}
	return nil
}

// zeroSize reports whether a value of n can be encoded in no bytes. A
// record that contains itself is not (it cannot be encoded at all).
func zeroSize(n *node, visiting map[*node]bool) bool {
	switch n.kind {
	case avroNull:
		return true
	case avroFixed:
		return n.size == 0
	case avroRecord:
		if visiting[n] {
			return false
		}
		visiting[n] = true
		defer delete(visiting, n)
		for _, f := range n.fields {
			if !zeroSize(f.typ, visiting) {
				return false
			}
		}
		return true
	}
	return false
}

type nodeParser struct{ named map[string]*node }

func (p *nodeParser) parse(v any, ns string, depth int) (*node, error) {
	if depth > 64 {
		return nil, fmt.Errorf("%w: nested more than 64 levels", ErrBadSchema)
	}
	switch t := v.(type) {
	case string:
		return p.ref(t, ns)
	case []any:
		n := &node{kind: avroUnion}
		for _, b := range t {
			bn, err := p.parse(b, ns, depth+1)
			if err != nil {
				return nil, err
			}
			n.branches = append(n.branches, bn)
		}
		if len(n.branches) == 0 {
			return nil, fmt.Errorf("%w: empty union", ErrBadSchema)
		}
		return n, nil
	case map[string]any:
		typ, ok := t["type"].(string)
		if !ok {
			if inner, ok := t["type"]; ok {
				return p.parse(inner, ns, depth+1)
			}
			return nil, fmt.Errorf("%w: object without type", ErrBadSchema)
		}
		switch typ {
		case "record", "error":
			n := &node{kind: avroRecord}
			inner := p.define(t, ns, n)
			fields, _ := t["fields"].([]any)
			for _, f := range fields {
				fo, ok := f.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%w: record field is %T", ErrBadSchema, f)
				}
				name, _ := fo["name"].(string)
				fn, err := p.parse(fo["type"], inner, depth+1)
				if err != nil {
					return nil, err
				}
				n.fields = append(n.fields, avroField{name: name, typ: fn})
			}
			return n, nil
		case "enum":
			n := &node{kind: avroEnum}
			p.define(t, ns, n)
			syms, _ := t["symbols"].([]any)
			for _, s := range syms {
				str, _ := s.(string)
				n.symbols = append(n.symbols, str)
			}
			return n, nil
		case "fixed":
			n := &node{kind: avroFixed}
			p.define(t, ns, n)
			size, _ := t["size"].(float64)
			if size < 0 || size > 1<<20 {
				return nil, fmt.Errorf("%w: fixed size %v", ErrBadSchema, size)
			}
			n.size = int(size)
			return n, nil
		case "array":
			items, err := p.parse(t["items"], ns, depth+1)
			if err != nil {
				return nil, err
			}
			return &node{kind: avroArray, items: items}, nil
		case "map":
			vals, err := p.parse(t["values"], ns, depth+1)
			if err != nil {
				return nil, err
			}
			return &node{kind: avroMap, items: vals}, nil
		default:
			return p.ref(typ, ns)
		}
	}
	return nil, fmt.Errorf("%w: unexpected JSON %T", ErrBadSchema, v)
}

func (p *nodeParser) ref(name, ns string) (*node, error) {
	prim := map[string]avroKind{
		"null": avroNull, "boolean": avroBoolean, "int": avroInt, "long": avroLong,
		"float": avroFloat, "double": avroDouble, "bytes": avroBytes, "string": avroString,
	}
	if k, ok := prim[name]; ok {
		return &node{kind: k}, nil
	}
	if n, ok := p.named[qualify(name, ns)]; ok {
		return n, nil
	}
	if n, ok := p.named[name]; ok {
		return n, nil
	}
	return nil, fmt.Errorf("%w: unknown type %q", ErrBadSchema, name)
}

func qualify(name, ns string) string {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			return name
		}
	}
	if ns == "" {
		return name
	}
	return ns + "." + name
}

// define registers a named type and returns the namespace its fields use.
func (p *nodeParser) define(o map[string]any, ns string, n *node) string {
	name, _ := o["name"].(string)
	if v, ok := o["namespace"].(string); ok {
		ns = v
	}
	if name == "" {
		return ns
	}
	full := qualify(name, ns)
	n.name = full
	p.named[full] = n
	for i := len(full) - 1; i >= 0; i-- {
		if full[i] == '.' {
			return full[:i]
		}
	}
	return ""
}

// reader reads Avro binary data with a sticky error, within the budget
// of the record it reads.
type reader struct {
	b   []byte
	i   int
	err error
	bud *budget
}

// spend takes one value of n content bytes from the budget, failing the
// reader when it is spent.
func (r *reader) spend(n int) bool {
	if r.bud.spend(n) {
		return true
	}
	if r.err == nil {
		r.err = r.bud.err
	}
	r.i = len(r.b)
	return false
}

// spendBytes takes n content bytes, of a value already counted, from the
// budget.
func (r *reader) spendBytes(n int) bool {
	if r.bud.spendBytes(n) {
		return true
	}
	if r.err == nil {
		r.err = r.bud.err
	}
	r.i = len(r.b)
	return false
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format+" at byte %d", append([]any{ErrMalformed}, append(args, r.i)...)...)
	}
	r.i = len(r.b)
}

func (r *reader) long() int64 {
	var u uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if r.i >= len(r.b) {
			r.fail("truncated varint")
			return 0
		}
		c := r.b[r.i]
		r.i++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1)
		}
	}
	r.fail("varint longer than 10 bytes")
	return 0
}

func (r *reader) int() int32 {
	v := r.long()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("int out of range")
		return 0
	}
	return int32(v)
}

func (r *reader) bool() bool {
	if r.i >= len(r.b) {
		r.fail("truncated boolean")
		return false
	}
	c := r.b[r.i]
	r.i++
	return c != 0
}

func (r *reader) float() float32 {
	if len(r.b)-r.i < 4 {
		r.fail("truncated float")
		return 0
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(r.b[r.i:]))
	r.i += 4
	return v
}

func (r *reader) double() float64 {
	if len(r.b)-r.i < 8 {
		r.fail("truncated double")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.i:]))
	r.i += 8
	return v
}

// raw returns the next n bytes, aliasing the input.
func (r *reader) raw(n int) []byte {
	if n < 0 || n > len(r.b)-r.i {
		r.fail("length %d beyond the data", n)
		return nil
	}
	b := r.b[r.i : r.i+n : r.i+n]
	r.i += n
	return b
}

// bytes returns a length-prefixed byte string, aliasing the input.
func (r *reader) bytes() []byte {
	n := r.long()
	if n < 0 || n > int64(len(r.b)-r.i) {
		r.fail("length %d beyond the data", n)
		return nil
	}
	return r.raw(int(n))
}

func (r *reader) string() string {
	b := r.bytes()
	if !r.spendBytes(len(b)) {
		return ""
	}
	return string(b)
}

// blockCount reads an array or map block header.
func (r *reader) blockCount() int {
	n := r.long()
	if n < 0 {
		r.long() // block size in bytes
		n = -n
	}
	// Every item takes at least a byte (arrays of items that take none
	// are refused with their schema; a map item has its key).
	if n > int64(len(r.b)-r.i) {
		r.fail("block count %d beyond the data", n)
		return 0
	}
	return int(n)
}

func (r *reader) union(n int) int {
	i := r.long()
	if i < 0 || i >= int64(n) {
		r.fail("union branch %d of %d", i, n)
		return -1
	}
	return int(i)
}

// value reads a value of n in the Go model of the debezium package
// (records as debezium.Struct), the input schemamap.Column.Convert accepts.
func (r *reader) value(n *node, depth int) any {
	if depth > 64 {
		r.fail("nested more than 64 levels")
		return nil
	}
	if !r.spend(0) {
		return nil
	}
	switch n.kind {
	case avroNull:
		return nil
	case avroBoolean:
		return r.bool()
	case avroInt:
		return r.int()
	case avroLong:
		return r.long()
	case avroFloat:
		return r.float()
	case avroDouble:
		return r.double()
	case avroBytes:
		b := r.bytes()
		if !r.spendBytes(len(b)) {
			return nil
		}
		return append([]byte(nil), b...)
	case avroString:
		return r.string()
	case avroFixed:
		b := r.raw(n.size)
		if !r.spendBytes(len(b)) {
			return nil
		}
		return append([]byte(nil), b...)
	case avroEnum:
		i := r.long()
		if i < 0 || i >= int64(len(n.symbols)) {
			r.fail("enum index %d of %d", i, len(n.symbols))
			return nil
		}
		return n.symbols[i]
	case avroRecord:
		out := make(debezium.Struct, len(n.fields))
		for i, f := range n.fields {
			out[i] = r.value(f.typ, depth+1)
		}
		return out
	case avroArray:
		var out []any
		for {
			c := r.blockCount()
			if c == 0 || r.err != nil {
				break
			}
			for range c {
				out = append(out, r.value(n.items, depth+1))
				if r.err != nil {
					return nil
				}
			}
		}
		if out == nil {
			out = []any{}
		}
		return out
	case avroMap:
		out := map[string]any{}
		for {
			c := r.blockCount()
			if c == 0 || r.err != nil {
				break
			}
			for range c {
				k := r.string()
				out[k] = r.value(n.items, depth+1)
				if r.err != nil {
					return nil
				}
			}
		}
		return out
	case avroUnion:
		b := r.union(len(n.branches))
		if b < 0 {
			return nil
		}
		return r.value(n.branches[b], depth+1)
	}
	r.fail("unknown schema kind %d", n.kind)
	return nil
}

// skip reads past a value of n.
func (r *reader) skip(n *node, depth int) {
	if depth > 64 {
		r.fail("nested more than 64 levels")
		return
	}
	if !r.spend(-valueCost) { // a value read past: counted, not kept
		return
	}
	switch n.kind {
	case avroNull:
	case avroBoolean:
		r.raw(1)
	case avroInt, avroLong, avroEnum:
		r.long()
	case avroFloat:
		r.raw(4)
	case avroDouble:
		r.raw(8)
	case avroBytes, avroString:
		r.bytes()
	case avroFixed:
		r.raw(n.size)
	case avroRecord:
		for _, f := range n.fields {
			r.skip(f.typ, depth+1)
		}
	case avroArray, avroMap:
		for {
			c := r.long()
			if c == 0 || r.err != nil {
				return
			}
			if c < 0 {
				size := r.long()
				r.raw(int(size))
				continue
			}
			if c > int64(len(r.b)-r.i) { // every item takes a byte at least
				r.fail("block count %d beyond the data", c)
				return
			}
			for range c {
				if n.kind == avroMap {
					r.bytes()
				}
				r.skip(n.items, depth+1)
				if r.err != nil {
					return
				}
			}
		}
	case avroUnion:
		if b := r.union(len(n.branches)); b >= 0 {
			r.skip(n.branches[b], depth+1)
		}
	}
}

// readFunc reads one column value and returns it converted for the batch
// package (schemamap.Column.Convert's output).
type readFunc func(r *reader) (any, error)

// compileColumn returns the reader of a column of schema n converted as
// col. Common primitive kinds are read straight into their converted
// form; the rest go through the generic value and Column.Convert.
func compileColumn(n *node, col *schemamap.Column) readFunc {
	if n.kind == avroUnion && len(n.branches) == 2 {
		nullAt := -1
		for i, b := range n.branches {
			if b.kind == avroNull {
				nullAt = i
			}
		}
		if nullAt >= 0 {
			inner := compileColumn(n.branches[1-nullAt], col)
			return func(r *reader) (any, error) {
				b := r.union(2)
				if b < 0 || b == nullAt {
					return nil, nil
				}
				return inner(r)
			}
		}
	}
	switch {
	case n.kind == avroLong && (col.Kind == schemamap.KindLong || col.Kind == schemamap.KindTimestampMicros || col.Kind == schemamap.KindTimeMicros):
		return func(r *reader) (any, error) { return r.long(), nil }
	case n.kind == avroLong && col.Kind == schemamap.KindTimestampMillis:
		return func(r *reader) (any, error) { return r.long() * 1000, nil }
	case n.kind == avroInt && (col.Kind == schemamap.KindInt || col.Kind == schemamap.KindDate):
		return func(r *reader) (any, error) { return r.int(), nil }
	case n.kind == avroString && col.Kind == schemamap.KindString:
		return func(r *reader) (any, error) { return r.string(), nil }
	case n.kind == avroBoolean && col.Kind == schemamap.KindBool:
		return func(r *reader) (any, error) { return r.bool(), nil }
	case n.kind == avroDouble && col.Kind == schemamap.KindDouble:
		return func(r *reader) (any, error) { return r.double(), nil }
	case n.kind == avroBytes && col.Kind == schemamap.KindDecimal:
		name := col.Name
		return func(r *reader) (any, error) {
			v, ok := schemamap.DecimalFromBytes(r.bytes())
			if !ok {
				return nil, fmt.Errorf("%w: column %s: decimal overflows 128 bits", schemamap.ErrValue, name)
			}
			return v, nil
		}
	case n.kind == avroString && col.Kind == schemamap.KindZonedTimestamp:
		name := col.Name
		return func(r *reader) (any, error) {
			s := r.bytes()
			if r.err != nil {
				return nil, nil
			}
			t, err := time.Parse(time.RFC3339Nano, string(s))
			if err != nil {
				return nil, fmt.Errorf("%w: column %s: not an ISO-8601 timestamp", schemamap.ErrValue, name)
			}
			return t.UnixMicro(), nil
		}
	}
	return func(r *reader) (any, error) {
		v := r.value(n, 0)
		if r.err != nil {
			return nil, nil
		}
		return convert(col, v)
	}
}

// recordReader reads a record's fields as converted columns.
type recordReader struct {
	fields []readFunc
	names  []string
}

func compileRecord(n *node, cols []schemamap.Column) (*recordReader, error) {
	if n.kind != avroRecord || len(n.fields) != len(cols) {
		return nil, fmt.Errorf("%w: record with %d fields for %d columns", ErrBadSchema, len(n.fields), len(cols))
	}
	rr := &recordReader{}
	for i, f := range n.fields {
		rr.fields = append(rr.fields, compileColumn(f.typ, &cols[i]))
		rr.names = append(rr.names, f.name)
	}
	return rr, nil
}

// read appends the record's converted values to dst.
func (rr *recordReader) read(r *reader, dst []any) ([]any, error) {
	for _, f := range rr.fields {
		if !r.spend(0) {
			return nil, r.err
		}
		v, err := f(r)
		if err != nil {
			return nil, err
		}
		if r.err != nil {
			return nil, r.err
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// nonNull returns the record inside an optional union, or n itself.
func nonNull(n *node) (*node, int, int) {
	if n.kind != avroUnion {
		return n, -1, -1
	}
	nullAt, valAt := -1, -1
	for i, b := range n.branches {
		if b.kind == avroNull {
			nullAt = i
		} else {
			valAt = i
		}
	}
	if len(n.branches) != 2 || nullAt < 0 {
		return nil, -1, -1
	}
	return n.branches[valAt], nullAt, valAt
}
