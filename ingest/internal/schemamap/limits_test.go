package schemamap

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/binlake/binlake/schemas/debezium"
)

func decimalRow(prec, scale string) *debezium.Schema {
	return &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{{Name: "d", Schema: &debezium.Schema{
		Type: debezium.BYTES, Name: debezium.DecimalName,
		Parameters: []debezium.Param{{Key: debezium.DecimalScaleParam, Value: scale}, {Key: debezium.DecimalPrecisionParam, Value: prec}},
	}}}}
}

// TestMapLimits: every schema value a record controls that
// iceberg.DecimalTypeOf would panic on, or that would make the mapping work
// without bound, is ErrLimit (an ErrUnsupported), never a panic.
func TestMapLimits(t *testing.T) {
	field := func(name string) debezium.Field {
		return debezium.Field{Name: name, Schema: &debezium.Schema{Type: debezium.INT32}}
	}
	nested := func(depth int) *debezium.Schema {
		s := &debezium.Schema{Type: debezium.INT32}
		for range depth {
			s = &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{{Name: "s", Schema: s}}}
		}
		return &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{{Name: "top", Schema: s}}}
	}
	// A struct type whose two fields are one shared struct type, 40
	// levels deep: 2^40 fields once expanded.
	fan := &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{field("x")}}
	for range 40 {
		fan = &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{{Name: "a", Schema: fan}, {Name: "b", Schema: fan}}}
	}
	cycle := &debezium.Schema{Type: debezium.STRUCT}
	cycle.Fields = []debezium.Field{{Name: "self", Schema: cycle}}
	many := &debezium.Schema{Type: debezium.STRUCT}
	for i := range MaxFields + 1 {
		many.Fields = append(many.Fields, field(fmt.Sprintf("c%d", i)))
	}
	for _, c := range []struct {
		name string
		row  *debezium.Schema
	}{
		{"scale over precision", decimalRow("10", "11")},
		{"precision 0", decimalRow("0", "0")},
		{"negative precision", decimalRow("-3", "0")},
		{"negative scale", decimalRow("10", "-1")},
		{"scale 39", decimalRow("60", "39")},
		{"scale 200000", decimalRow("300000", "200000")},
		{"precision 1001", decimalRow("1001", "2")},
		{"empty name", &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{field("")}}},
		{"long name", &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{field(strings.Repeat("n", MaxNameBytes+1))}}},
		{"not UTF-8", &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{field("a\xff")}}},
		{"duplicate", &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{field("a"), field("a")}}},
		{"nested duplicate", &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{{Name: "s", Schema: &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{field("a"), field("a")}}}}}},
		{"too deep", nested(MaxDepth + 1)},
		{"shared struct 2^40 fields", fan},
		{"struct containing itself", &debezium.Schema{Type: debezium.STRUCT, Fields: []debezium.Field{{Name: "c", Schema: cycle}}}},
		{"too many columns", many},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, mapper := range []func() error{
				func() error { _, err := Map(c.row, nil); return err },
				func() error { _, err := ChangeLog(c.row); return err },
			} {
				if err := mapper(); !errors.Is(err, ErrLimit) || !errors.Is(err, ErrUnsupported) {
					t.Errorf("err = %v, want ErrLimit", err)
				}
			}
		})
	}
	for _, ok := range []*debezium.Schema{decimalRow("38", "38"), decimalRow("65", "30"), decimalRow("1000", "38"), decimalRow("1", "0"), nested(MaxDepth - 1)} {
		if _, err := Map(ok, nil); err != nil {
			t.Errorf("Map: %v", err)
		}
	}
}

// TestRecoveredPanic: a panic in a mapping function is its ErrPanic.
func TestRecoveredPanic(t *testing.T) {
	f := func() (err error) {
		defer recovered(&err)
		var m map[string]int
		m["x"] = 1
		return nil
	}
	if err := f(); !errors.Is(err, ErrPanic) || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want ErrPanic", err)
	}
}

// TestFormatDecimalScale: formatting is linear in the scale (it was
// quadratic), and right at the edges.
func TestFormatDecimalScale(t *testing.T) {
	c := Column{Kind: KindDecimalString, Scale: 5}
	for in, want := range map[string]string{"\x01": "0.00001", "\xff": "-0.00001", "\x01\x86\xa0": "1.00000"} {
		got, err := c.Convert([]byte(in))
		if err != nil || got != want {
			t.Errorf("Convert(%x) = %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := c.Convert(make([]byte, maxDecimalStringBytes+1)); !errors.Is(err, ErrValue) {
		t.Errorf("a %d-byte decimal: err = %v, want ErrValue", maxDecimalStringBytes+1, err)
	}
}
