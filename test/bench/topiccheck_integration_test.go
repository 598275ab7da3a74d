//go:build integration

package bench

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/schemas/debezium"
	"github.com/binlake/binlake/test/kafkatest"
)

// snapshotCheck is what checkSnapshotTopic found on a topic.
type snapshotCheck struct {
	records int64
	ops     map[string]int64 // envelope op → records ("" for tombstones)
	missing int64            // ids 1..n without an op=r record
	dup     int64            // op=r records beyond the first of their id
	foreign int64            // op=r records of an id outside 1..n
}

func (c snapshotCheck) complete(n int) bool {
	return c.records == int64(n) && c.ops["r"] == int64(n) && c.missing == 0 && c.dup == 0 && c.foreign == 0
}

func (c snapshotCheck) String() string {
	return fmt.Sprintf("records=%d ops=%v missing=%d duplicated=%d foreign=%d", c.records, c.ops, c.missing, c.dup, c.foreign)
}

// checkSnapshotTopic reads topic from the start (kafkatest.Consume) until
// it has n records and then up to the end offsets listed at that point,
// and counts the op=r records of
// each id 1..n of a table keyed by one BIGINT column: a complete snapshot
// has exactly one per id and nothing else. Values are not decoded whole
// (millions of records): an Avro walker driven by the registered writer
// schema skips to the envelope's op field (kafkatest.ReadAll would decode
// every record whole with goavro and keep them all).
func checkSnapshotTopic(t *testing.T, brokers []string, dec *kafkatest.Decoder, topic string, n int, timeout time.Duration) snapshotCheck {
	t.Helper()
	ctx := t.Context()
	seen := make([]uint8, n+1)
	c := snapshotCheck{ops: map[string]int64{}}
	walkers := map[int]*avroWalker{}
	walker := func(id int) *avroWalker {
		if w := walkers[id]; w != nil {
			return w
		}
		text, err := dec.Schema(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		w, err := newAvroWalker(text)
		if err != nil {
			t.Fatalf("schema %d: %v", id, err)
		}
		walkers[id] = w
		return w
	}
	c.records = int64(kafkatest.Consume(t, brokers, topic, n, timeout, func(r *kgo.Record) {
		if r.Value == nil {
			c.ops[""]++
			return
		}
		vid, vb, err := debezium.ParseFrame(r.Value)
		if err != nil {
			t.Fatalf("%s@%d: %v", topic, r.Offset, err)
		}
		op, err := walker(int(vid)).field(vb, "op")
		if err != nil {
			t.Fatalf("%s@%d: reading op: %v", topic, r.Offset, err)
		}
		c.ops[op]++
		if op != "r" {
			return
		}
		// The key is a record of one long: its Avro form is one zigzag varint.
		_, kb, err := debezium.ParseFrame(r.Key)
		if err != nil {
			t.Fatalf("%s@%d: key: %v", topic, r.Offset, err)
		}
		id, k := binary.Varint(kb)
		if k <= 0 || k != len(kb) {
			t.Fatalf("%s@%d: key %x is not a single long", topic, r.Offset, kb)
		}
		switch {
		case id < 1 || id > int64(n):
			c.foreign++
		case seen[id] > 0:
			c.dup++
		default:
			seen[id] = 1
		}
	}, kgo.FetchMaxBytes(64<<20)))
	for id := 1; id <= n; id++ {
		if seen[id] == 0 {
			c.missing++
		}
	}
	return c
}

// avroWalker reads one string field of a top-level Avro record, skipping
// the others, driven by the writer schema.
type avroWalker struct {
	root  *avroNode
	named map[string]*avroNode
}

type avroNode struct {
	typ      string // primitive name, record, enum, array, map, fixed, union or ref
	fields   []avroField
	branches []*avroNode
	items    *avroNode
	size     int
	ref      string
}

type avroField struct {
	name string
	node *avroNode
}

func newAvroWalker(schema string) (*avroWalker, error) {
	var v any
	if err := json.Unmarshal([]byte(schema), &v); err != nil {
		return nil, err
	}
	w := &avroWalker{named: map[string]*avroNode{}}
	root, err := w.compile(v, "")
	if err != nil {
		return nil, err
	}
	if root.typ != "record" {
		return nil, fmt.Errorf("top-level schema is %s, not a record", root.typ)
	}
	w.root = root
	return w, nil
}

func (w *avroWalker) compile(v any, ns string) (*avroNode, error) {
	switch x := v.(type) {
	case string:
		switch x {
		case "null", "boolean", "int", "long", "float", "double", "bytes", "string":
			return &avroNode{typ: x}, nil
		}
		if !strings.Contains(x, ".") && ns != "" {
			x = ns + "." + x
		}
		return &avroNode{typ: "ref", ref: x}, nil
	case []any:
		u := &avroNode{typ: "union"}
		for _, b := range x {
			n, err := w.compile(b, ns)
			if err != nil {
				return nil, err
			}
			u.branches = append(u.branches, n)
		}
		return u, nil
	case map[string]any:
		typ, _ := x["type"].(string)
		switch typ {
		case "record", "error", "enum", "fixed":
			name, _ := x["name"].(string)
			if space, ok := x["namespace"].(string); ok && !strings.Contains(name, ".") {
				ns = space
			}
			full := name
			if !strings.Contains(name, ".") && ns != "" {
				full = ns + "." + name
			}
			if i := strings.LastIndexByte(full, '.'); i >= 0 {
				ns = full[:i]
			}
			n := &avroNode{typ: typ}
			if typ == "error" {
				n.typ = "record"
			}
			w.named[full] = n
			switch typ {
			case "fixed":
				size, _ := x["size"].(float64)
				n.size = int(size)
			case "record", "error":
				fields, _ := x["fields"].([]any)
				for _, f := range fields {
					fm, _ := f.(map[string]any)
					fname, _ := fm["name"].(string)
					fn, err := w.compile(fm["type"], ns)
					if err != nil {
						return nil, fmt.Errorf("field %s: %w", fname, err)
					}
					n.fields = append(n.fields, avroField{name: fname, node: fn})
				}
			}
			return n, nil
		case "array":
			items, err := w.compile(x["items"], ns)
			return &avroNode{typ: "array", items: items}, err
		case "map":
			values, err := w.compile(x["values"], ns)
			return &avroNode{typ: "map", items: values}, err
		}
		return w.compile(x["type"], ns) // a primitive with properties (logical types)
	}
	return nil, fmt.Errorf("unexpected schema element %T", v)
}

var errShort = errors.New("datum too short")

// field returns the value of the string field name of a datum.
func (w *avroWalker) field(b []byte, name string) (string, error) {
	for _, f := range w.root.fields {
		if f.name == name {
			s, _, err := readString(b)
			return s, err
		}
		var err error
		if b, err = w.skip(f.node, b); err != nil {
			return "", fmt.Errorf("skipping %s: %w", f.name, err)
		}
	}
	return "", fmt.Errorf("no field %s", name)
}

func readLong(b []byte) (int64, []byte, error) {
	v, k := binary.Varint(b)
	if k <= 0 {
		return 0, nil, errShort
	}
	return v, b[k:], nil
}

func readString(b []byte) (string, []byte, error) {
	l, b, err := readLong(b)
	if err != nil || l < 0 || int64(len(b)) < l {
		return "", nil, errShort
	}
	return string(b[:l]), b[l:], nil
}

func (w *avroWalker) skip(n *avroNode, b []byte) ([]byte, error) {
	need := func(k int) ([]byte, error) {
		if len(b) < k {
			return nil, errShort
		}
		return b[k:], nil
	}
	switch n.typ {
	case "null":
		return b, nil
	case "boolean":
		return need(1)
	case "int", "long", "enum":
		_, rest, err := readLong(b)
		return rest, err
	case "float":
		return need(4)
	case "double":
		return need(8)
	case "bytes", "string":
		_, rest, err := readString(b)
		return rest, err
	case "fixed":
		return need(n.size)
	case "ref":
		target := w.named[n.ref]
		if target == nil {
			return nil, fmt.Errorf("unknown type %s", n.ref)
		}
		return w.skip(target, b)
	case "record":
		var err error
		for _, f := range n.fields {
			if b, err = w.skip(f.node, b); err != nil {
				return nil, err
			}
		}
		return b, nil
	case "union":
		i, rest, err := readLong(b)
		if err != nil || i < 0 || int(i) >= len(n.branches) {
			return nil, fmt.Errorf("bad union branch %d", i)
		}
		return w.skip(n.branches[i], rest)
	case "array", "map":
		for {
			cnt, rest, err := readLong(b)
			if err != nil {
				return nil, err
			}
			b = rest
			if cnt == 0 {
				return b, nil
			}
			if cnt < 0 { // a block with its byte size
				size, rest, err := readLong(b)
				if err != nil || size < 0 || int64(len(rest)) < size {
					return nil, errShort
				}
				b = rest[size:]
				continue
			}
			for range cnt {
				if n.typ == "map" {
					if _, b, err = readString(b); err != nil {
						return nil, err
					}
				}
				if b, err = w.skip(n.items, b); err != nil {
					return nil, err
				}
			}
		}
	}
	return nil, fmt.Errorf("unknown Avro type %s", n.typ)
}
