package pipeline

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/binlake/binlake/ingest/internal/decode"
)

// TestNameMark: a table's name mark round-trips through its property and
// orders renames by binlog position, then by their record's offset (one
// record per pair of a statement), so a swap's third pair (tmp TO s2) is
// after its first (s1 TO tmp).
func TestNameMark(t *testing.T) {
	pos := func(f string, p int64) decode.SourcePos { return decode.SourcePos{File: f, Pos: p} }
	a := nameMark{pos("mysql-bin.000002", 41523), 17, 0}
	b := nameMark{pos("mysql-bin.000002", 41523), 19, 0}
	c := nameMark{pos("mysql-bin.000010", 4), -1, 0}
	for _, m := range []nameMark{a, b, c} {
		got, ok := namedSince(iceberg.Properties{NameSinceProperty: m.String()})
		if !ok || got != m {
			t.Errorf("%q parsed as %v, %v; want %v", m.String(), got, ok, m)
		}
	}
	if a.compare(b) >= 0 || b.compare(a) <= 0 || b.compare(c) >= 0 || a.compare(a) != 0 {
		t.Errorf("order of %v %v %v wrong", a, b, c)
	}
	for _, bad := range []string{"", "x", "f:1", "f:1:2", ":1:2:3", "f:x:1:2", "f:1:y:2", "f:1:2:z"} {
		if m, ok := parseNameMark(bad); ok {
			t.Errorf("%q parsed as %v", bad, m)
		}
	}
}
