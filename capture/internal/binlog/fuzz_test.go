package binlog

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// rowsEventTypes are the rows events FuzzRowsDecode writes, by its kind
// argument modulo 4.
var rowsEventTypes = [4]byte{evWriteRowsV2, evUpdateRowsV2, evDeleteRowsV2, evPartialUpdateRows}

// fuzzColumnTypes are the column types FuzzRowsDecode's table maps hold,
// with the bytes of table-map metadata each has (as go-mysql's
// TableMapEvent.decodeMeta reads them).
var fuzzColumnTypes = []struct{ typ, metaLen byte }{
	{1, 0}, {2, 0}, {9, 0}, {3, 0}, {8, 0}, {4, 1}, {5, 1}, {246, 2}, {15, 2}, {254, 2}, {16, 2},
	{252, 1}, {245, 1}, {19, 1}, {18, 1}, {17, 1}, {10, 0}, {13, 0}, {7, 0}, {12, 0}, {11, 0}, {255, 1},
}

// fuzzTable is the table a FuzzRowsDecode cols argument describes: three
// bytes a column, a type (an index into fuzzColumnTypes; its top bit:
// unsigned) and two bytes of
// which its metadata takes what the type has. The table map is always
// well formed (go-mysql's own table-map decoding is not what is fuzzed:
// it panics on a truncated one, which its BinlogSyncer recovers into a
// stream error); the types and metadata are anything.
func fuzzTable(cols []byte) []tmColumn {
	var out []tmColumn
	for i := 0; i+3 <= len(cols) && len(out) < 64; i += 3 {
		ct := fuzzColumnTypes[int(cols[i]&0x7f)%len(fuzzColumnTypes)]
		c := tmColumn{name: fmt.Sprintf("c%d", len(out)), typ: ct.typ, meta: cols[i+1 : i+1+int(ct.metaLen)], nullable: true, unsigned: cols[i]&0x80 != 0}
		if c.typ == 254 && (c.meta[0] == mysqlTypeEnum || c.meta[0] == mysqlTypeSet) {
			c.labels = []string{"a", "b", "c"}
		}
		out = append(out, c)
	}
	return out
}

// fuzzCols is the FuzzRowsDecode cols argument of a table.
func fuzzCols(t testing.TB, table []tmColumn) []byte {
	var out []byte
	for _, c := range table {
		i := slices.IndexFunc(fuzzColumnTypes, func(ct struct{ typ, metaLen byte }) bool { return ct.typ == c.typ })
		if i < 0 || len(c.meta) != int(fuzzColumnTypes[i].metaLen) {
			t.Fatalf("column %s: type %d with %d bytes of metadata is not in fuzzColumnTypes", c.name, c.typ, len(c.meta))
		}
		if c.unsigned {
			i |= 0x80
		}
		m := append(slices.Clone(c.meta), 0, 0)
		out = append(out, byte(i), m[0], m[1])
	}
	return out
}

type rowsSeed struct {
	mysql      bool
	kind       byte
	cols, rows []byte
}

// rowsSeeds are FuzzRowsDecode's seeds: a temporal table (MariaDB's path,
// rowsDecoder) and a MySQL 8 table with a JSON column (decodeRows and
// mysqljson), with valid rows of each event kind.
func rowsSeeds(t testing.TB) []rowsSeed {
	cols, _ := temporalTable()
	rng := rand.New(rand.NewPCG(3, 4))
	var trows [][][]byte
	for range 4 {
		trows = append(trows, temporalRow(rng))
	}
	doc := jsonDoc(jobj{"sku": "A-1", "qty": int16(3), "gift": false, "tags": []any{"x", 1.5, nil}}, false)
	ts := datetime2(2024, 2, 29, 13, 14, 15, 123456)
	orow := orderRow(42, "héllo", false, "1234", "56", doc, 2, 0b101, -5, ts)
	tc, oc := fuzzCols(t, cols), fuzzCols(t, ordersTable)
	return []rowsSeed{
		{false, 0, tc, rowsBody(77, len(cols), trows, false, false, nil, true)},
		{false, 1, tc, rowsBody(77, len(cols), trows, true, false, nil, true)},
		{true, 0, oc, rowsBody(77, 8, [][][]byte{orow}, false, false, nil, true)},
		{true, 1, oc, rowsBody(77, 8, [][][]byte{orow, orow}, true, false, nil, true)},
		{true, 3, oc, rowsBody(77, 8, [][][]byte{orow, orow}, true, true, []bool{false}, true)},
		{true, 2, oc, rowsBody(77, 8, [][][]byte{{le64(1), nil, nil, nil, nil, nil, nil, nil}}, false, false, nil, true)},
	}
}

// FuzzRowsDecode decodes a mutated rows event of a table of mutated column
// types and metadata with a parser set up as capture's syncer sets up its
// own (rowsDecoder for MariaDB, decodeRows with its own binary JSON
// rendering for MySQL). Malformed events may fail; none may panic
// (testdata/fuzz/FuzzRowsDecode holds the seeds and any crashers).
func FuzzRowsDecode(f *testing.F) {
	for _, s := range rowsSeeds(f) {
		f.Add(s.mysql, s.kind, s.cols, s.rows)
	}
	f.Fuzz(func(t *testing.T, mysql bool, kind byte, cols, rows []byte) {
		_ = parseRows(mysql, kind, cols, rows)
	})
}

// parseRows parses a format description, the table map of cols and the
// rows event as capture's syncer would.
func parseRows(mysql bool, kind byte, cols, rows []byte) error {
	flavor := FlavorMariaDB
	if mysql {
		flavor = FlavorMySQL
	}
	c := syncerConfig(Config{Flavor: flavor, ServerID: 1}, "127.0.0.1", 3306, time.Second, slog.Default())
	p := replication.NewBinlogParser()
	p.SetFlavor(c.Flavor)
	p.SetRawMode(c.RawModeEnabled)
	p.SetParseTime(c.ParseTime)
	p.SetTimestampStringLocation(c.TimestampStringLocation)
	p.SetUseDecimal(c.UseDecimal)
	p.SetUseFloatWithTrailingZero(c.UseFloatWithTrailingZero)
	p.SetRenderJSONAsMySQLText(c.RenderJSONAsMySQLText)
	p.SetRowsEventDecodeFunc(c.RowsEventDecodeFunc)
	w := newBinlogWriter()
	for _, ev := range [][]byte{
		w.event(evFormatDescription, formatDescriptionBody("8.0.36")),
		w.event(evTableMap, tableMapBody(77, "db", "t", fuzzTable(cols), nil)),
		w.event(rowsEventTypes[kind%4], rows),
	} {
		if _, err := p.Parse(ev); err != nil {
			return err
		}
	}
	return nil
}

// TestRowsSeedsDecode: the fuzz seeds are rows events capture decodes, so
// that fuzzing starts from the paths that matter.
func TestRowsSeedsDecode(t *testing.T) {
	for i, s := range rowsSeeds(t) {
		if err := parseRows(s.mysql, s.kind, s.cols, s.rows); err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}

// TestWriteRowsFuzzSeeds rewrites testdata/fuzz/FuzzRowsDecode from
// rowsSeeds when UPDATE_FUZZ_SEEDS=1.
func TestWriteRowsFuzzSeeds(t *testing.T) {
	if os.Getenv("UPDATE_FUZZ_SEEDS") != "1" {
		t.Skip("set UPDATE_FUZZ_SEEDS=1 to rewrite the seeds")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRowsDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range rowsSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\nbool(%v)\nbyte(%q)\n[]byte(%q)\n[]byte(%q)\n", s.mysql, s.kind, s.cols, s.rows)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
