package binlog

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

// BenchmarkDecodeRowsJSON decodes one WRITE_ROWS event of 100 rows of
// (id INT, doc JSON) as capture does (decodeRows: Debezium's JSON text)
// and as go-mysql does on its own, for the cost of the JSON rendering.
func BenchmarkDecodeRowsJSON(b *testing.B) {
	doc := jsonDoc(jobj{"name": "widget", "price": 12.5, "tags": []any{"a", "b", int32(70000)}, "stock": int16(3), "ok": true}, false)
	var rows [][][]byte
	for i := range 100 {
		rows = append(rows, [][]byte{le32(uint32(i)), jsonColumn(doc)})
	}
	w := newBinlogWriter()
	fde := w.event(evFormatDescription, formatDescriptionBody("8.4.3"))
	tm := w.event(evTableMap, tableMapBody(7, "app", "docs", jsonTable, []int{0}))
	ev := w.event(evWriteRowsV2, rowsBody(7, 2, rows, false, false, nil, false)) // not the statement's last: the table map stays
	for _, c := range []struct {
		name   string
		decode func(*replication.RowsEvent, []byte) error
	}{{"capture", decodeRows}, {"go-mysql", nil}} {
		b.Run(c.name, func(b *testing.B) {
			p := replication.NewBinlogParser()
			p.SetFlavor(string(FlavorMySQL))
			p.SetRowsEventDecodeFunc(c.decode)
			for _, e := range [][]byte{fde, tm} {
				if _, err := p.Parse(e); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(ev)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Parse(ev); err != nil {
					b.Fatal("parsing the rows event failed")
				}
			}
		})
	}
}
