package binlog

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/capture/internal/mysqltype"
)

// temporalTable has DATETIME(0..6) and TIMESTAMP(0..6) columns, then one
// integer column of each width, unsigned and signed.
func temporalTable() ([]tmColumn, []mysqltype.Column) {
	var cols []tmColumn
	var defs []mysqltype.Column
	for dec := range 7 {
		cols = append(cols, tmColumn{name: fmt.Sprintf("dt%d", dec), typ: 18, meta: []byte{byte(dec)}, nullable: true})
		defs = append(defs, mysqltype.Column{Name: fmt.Sprintf("dt%d", dec), Type: fmt.Sprintf("datetime(%d)", dec), Nullable: true})
	}
	for dec := range 7 {
		cols = append(cols, tmColumn{name: fmt.Sprintf("ts%d", dec), typ: 17, meta: []byte{byte(dec)}, nullable: true})
		defs = append(defs, mysqltype.Column{Name: fmt.Sprintf("ts%d", dec), Type: fmt.Sprintf("timestamp(%d)", dec), Nullable: true})
	}
	for _, c := range []struct {
		typ  byte
		name string
	}{{1, "tinyint"}, {2, "smallint"}, {9, "mediumint"}, {3, "int"}, {8, "bigint"}} {
		for _, unsigned := range []bool{true, false} {
			sql := c.name
			if unsigned {
				sql += " unsigned"
			}
			cols = append(cols, tmColumn{name: fmt.Sprintf("%s%v", c.name, unsigned), typ: c.typ, nullable: true, unsigned: unsigned})
			defs = append(defs, mysqltype.Column{Name: fmt.Sprintf("%s%v", c.name, unsigned), Type: sql, Nullable: true})
		}
	}
	return cols, defs
}

// temporalRow is a row of temporalTable: its values random bytes of each
// column's width, with edges (zero, all ones, valid dates) mixed in, and
// NULLs.
func temporalRow(rng *rand.Rand) [][]byte {
	width := func(typ byte, dec int) int {
		switch typ {
		case 18:
			return 5 + (dec+1)/2
		case 17:
			return 4 + (dec+1)/2
		}
		return map[byte]int{1: 1, 2: 2, 9: 3, 3: 4, 8: 8}[typ]
	}
	cols, _ := temporalTable()
	row := make([][]byte, len(cols))
	for i, c := range cols {
		dec := 0
		if len(c.meta) > 0 {
			dec = int(c.meta[0])
		}
		b := make([]byte, width(c.typ, dec))
		switch rng.IntN(8) {
		case 0:
			row[i] = nil
			continue
		case 1: // zero
		case 2:
			for j := range b {
				b[j] = 0xff
			}
		case 3: // a valid value, as the server writes
			if c.typ == 18 {
				copy(b, datetime2(1000+rng.IntN(9000), 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), 0))
				frac := rng.IntN(1_000_000)
				switch (dec + 1) / 2 {
				case 1:
					b[5] = byte(frac / 10000)
				case 2:
					binary.BigEndian.PutUint16(b[5:], uint16(frac/100))
				case 3:
					b[5], b[6], b[7] = byte(frac>>16), byte(frac>>8), byte(frac)
				}
				break
			}
			if c.typ == 17 {
				binary.BigEndian.PutUint32(b, rng.Uint32())
				if len(b) > 4 {
					b[4] = byte(rng.IntN(100))
				}
				break
			}
			fallthrough
		default:
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
		}
		row[i] = b
	}
	return row
}

// TestRowsDecoderEqualsGoMySQL decodes the same rows events with go-mysql
// and with rowsDecoder: the DATETIME and TIMESTAMP texts must be equal byte
// for byte, and every value must convert to the same Debezium value.
func TestRowsDecoderEqualsGoMySQL(t *testing.T) {
	cols, defs := temporalTable()
	conv, err := mysqltype.NewTable(defs, mysqltype.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	w := newBinlogWriter()
	const tid = 77
	events := [][]byte{w.event(evFormatDescription, formatDescriptionBody("8.0.36")), w.event(evTableMap, tableMapBody(tid, "db", "t", cols, nil))}
	for i := range 200 {
		var rows [][][]byte
		for range 50 {
			rows = append(rows, temporalRow(rng))
		}
		// One statement: go-mysql forgets its table maps after the last.
		events = append(events, w.event(evWriteRowsV2, rowsBody(tid, len(cols), rows, false, false, nil, i == 199)))
	}
	decode := func(fn func(*replication.RowsEvent, []byte) error) [][]any {
		c := syncerConfig(Config{Flavor: FlavorMariaDB, ServerID: 1}, "127.0.0.1", 3306, time.Second, slog.Default())
		p := replication.NewBinlogParser()
		p.SetFlavor(c.Flavor)
		p.SetTimestampStringLocation(c.TimestampStringLocation)
		p.SetRowsEventDecodeFunc(fn)
		p.SetVerifyChecksum(true)
		var out [][]any
		for i, b := range events {
			ev, err := p.Parse(b)
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			if re, ok := ev.Event.(*replication.RowsEvent); ok {
				out = append(out, re.Rows...)
			}
		}
		return out
	}
	c := syncerConfig(Config{Flavor: FlavorMariaDB, ServerID: 1}, "127.0.0.1", 3306, time.Second, slog.Default())
	want, got := decode(nil), decode(c.RowsEventDecodeFunc)
	if len(got) != len(want) || len(want) != 200*50 {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	converted := 0
	for i := range want {
		for j := range cols {
			if j < 14 && want[i][j] != got[i][j] {
				t.Fatalf("row %d column %s: %#v, go-mysql gives %#v", i, cols[j].name, got[i][j], want[i][j])
			}
			wv, werr := conv.Converter(j).Convert(want[i][j])
			gv, gerr := conv.Converter(j).Convert(got[i][j])
			if !reflect.DeepEqual(wv, gv) || fmt.Sprint(werr) != fmt.Sprint(gerr) {
				t.Fatalf("row %d column %s: %#v converts to %#v, %v; go-mysql's %#v to %#v, %v", i, cols[j].name, got[i][j], gv, gerr, want[i][j], wv, werr)
			}
			if werr == nil && wv != nil {
				converted++
			}
		}
	}
	if converted < len(want)*len(cols)/3 {
		t.Errorf("only %d values converted: the test data is mostly invalid", converted)
	}
}

// BenchmarkRowsDecode decodes a rows event of 50 rows of temporalTable
// with go-mysql (goMySQL) and with rowsDecoder.
func BenchmarkRowsDecode(b *testing.B) {
	cols, _ := temporalTable()
	rng := rand.New(rand.NewPCG(1, 2))
	w := newBinlogWriter()
	var rows [][][]byte
	for range 50 {
		rows = append(rows, temporalRow(rng))
	}
	fde := w.event(evFormatDescription, formatDescriptionBody("8.0.36"))
	tm := w.event(evTableMap, tableMapBody(77, "db", "t", cols, nil))
	ev := w.event(evWriteRowsV2, rowsBody(77, len(cols), rows, false, false, nil, false))
	for _, c := range []struct {
		name string
		fn   func(*replication.RowsEvent, []byte) error
	}{{"goMySQL", nil}, {"rowsDecoder", newRowsDecoder(time.UTC).decode}} {
		b.Run(c.name, func(b *testing.B) {
			p := replication.NewBinlogParser()
			p.SetFlavor("mariadb")
			p.SetTimestampStringLocation(time.UTC)
			p.SetRowsEventDecodeFunc(c.fn)
			for _, e := range [][]byte{fde, tm} {
				if _, err := p.Parse(e); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Parse(ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestAppendDigitsEqualsFmt(t *testing.T) {
	for _, n := range []int64{0, 5, -5, 9, 10, -10, 99, 100, -100, 1234, -1234, 12345, -12345, 1 << 40, -(1 << 40), 1<<63 - 1, -(1<<63 - 1)} {
		for _, w := range []int{2, 4, 6} {
			if got, want := string(appendDigits(nil, n, w)), fmt.Sprintf("%0*d", w, n); got != want {
				t.Errorf("appendDigits(%d, %d) = %q, want %q", n, w, got, want)
			}
		}
	}
}
