package binlog

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"
)

// rowOrders returns (pos, row) of every row of the rows events, in binlog
// order, as capture emits them in source.pos and source.row.
func rowOrders(evs []Event) [][2]int64 {
	var out [][2]int64
	for _, e := range evs {
		if e.Kind != KindRows {
			continue
		}
		n := len(e.Rows)
		if e.RowsType == Update {
			n /= 2
		}
		for i := 0; i < n; i++ {
			out = append(out, [2]int64{int64(e.Pos), int64(e.RowIndex(i))})
		}
	}
	return out
}

// TestRecordedMySQL8PayloadRowOrder checks that the rows of the inner
// events of a recorded MySQL 8.0.27 transaction payload (an insert, an
// update of two rows, a delete) get distinct, increasing (pos, row), with
// pos + row inside the payload event, so that ingest's source order
// (pos + row) is unique and below the next event's.
func TestRecordedMySQL8PayloadRowOrder(t *testing.T) {
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := dec.DecodeAll(payload80027, nil)
	dec.Close()
	if err != nil {
		t.Fatal(err)
	}
	w := newBinlogWriter()
	r := mysqlReader(t, "5ccc1033-44a8-11ea-bd59-0242ac190003:1-118", "binlog.000009")
	p := captureParser(t)
	evs, err := feed(t, p, r,
		w.event(evFormatDescription, formatDescriptionBody("8.0.27")),
		w.event(evGTID, gtid80019))
	if err != nil {
		t.Fatal(err)
	}
	start := w.pos
	more, err := feed(t, p, r, w.event(evTransactionPay, transactionPayloadBody(payload80027, len(plain))))
	if err != nil {
		t.Fatal(err)
	}
	evs = append(evs, more...)
	got := rowOrders(evs)
	if len(got) != 4 { // 1 inserted, 2 updated, 1 deleted
		t.Fatalf("rows %v, want 4", got)
	}
	for i, o := range got {
		if o[0] != int64(start) {
			t.Errorf("row %d at pos %d, want the payload's %d", i, o[0], start)
		}
		if o[0]+o[1] >= int64(w.pos) {
			t.Errorf("row %d: pos + row = %d reaches the next event at %d", i, o[0]+o[1], w.pos)
		}
		if i > 0 && o[0]+o[1] <= got[i-1][0]+got[i-1][1] {
			t.Errorf("rows %d and %d: (pos, row) %v then %v, not increasing", i-1, i, got[i-1], o)
		}
	}
}

// TestReaderPayloadRowsNumberedAcross checks the numbering of rows across a
// payload's inner events, and that it restarts at the next payload.
func TestReaderPayloadRowsNumberedAcross(t *testing.T) {
	set, _ := ParseGTIDSet(FlavorMySQL, "")
	r := &Reader{flavor: FlavorMySQL, gset: set, file: "binlog.000001"}
	tm := &replication.TableMapEvent{Schema: []byte("app"), Table: []byte("t"), ColumnCount: 1}
	row := func(v int32) []any { return []any{v} }
	payload := func() *replication.TransactionPayloadEvent {
		return &replication.TransactionPayloadEvent{Events: []*replication.BinlogEvent{
			{Header: header(replication.QUERY_EVENT, 0, 0), Event: &replication.QueryEvent{Query: []byte("BEGIN")}},
			{Header: header(replication.WRITE_ROWS_EVENTv2, 0, 0), Event: &replication.RowsEvent{Table: tm, Rows: [][]any{row(1), row(2), row(3)}}},
			{Header: header(replication.UPDATE_ROWS_EVENTv2, 0, 0), Event: &replication.RowsEvent{Table: tm, Rows: [][]any{row(1), row(4), row(2), row(5)}}},
			{Header: header(replication.DELETE_ROWS_EVENTv2, 0, 0), Event: &replication.RowsEvent{Table: tm, Rows: [][]any{row(3)}}},
			{Header: header(replication.XID_EVENT, 0, 0), Event: &replication.XIDEvent{XID: 1}},
		}}
	}
	var evs []Event
	for _, end := range []uint32{900, 1500} {
		if err := r.decode(&replication.BinlogEvent{Header: header(replication.TRANSACTION_PAYLOAD_EVENT, end, 500), Event: payload()}); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, drain(r)...)
	}
	got := rowOrders(evs)
	want := [][2]int64{{400, 0}, {400, 1}, {400, 2}, {400, 3}, {400, 4}, {400, 5}, {1000, 0}, {1000, 1}, {1000, 2}, {1000, 3}, {1000, 4}, {1000, 5}}
	if len(got) != len(want) {
		t.Fatalf("(pos, row) %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("(pos, row) %v, want %v", got, want)
		}
	}
	// A rows event outside a payload numbers from 0 again.
	if err := r.decode(&replication.BinlogEvent{Header: header(replication.WRITE_ROWS_EVENTv2, 1600, 60), Event: &replication.RowsEvent{Table: tm, Rows: [][]any{row(9)}}}); err != nil {
		t.Fatal(err)
	}
	if e := drain(r)[0]; e.Pos != 1540 || e.RowIndex(0) != 0 {
		t.Errorf("plain rows event after payloads: pos %d row %d", e.Pos, e.RowIndex(0))
	}
}

// TestReaderCompressedRowsCapped checks a compressed event that holds more
// rows than bytes (MariaDB log_bin_compress, or a MySQL 8 payload): its
// rows' pos + row stays below the next event's position, the rows past the
// cap sharing the last value, and rows keep Debezium's numbering below it.
func TestReaderCompressedRowsCapped(t *testing.T) {
	set, _ := ParseGTIDSet(FlavorMariaDB, "")
	r := &Reader{flavor: FlavorMariaDB, gset: set, file: "mysql-bin.000001"}
	tm := &replication.TableMapEvent{Schema: []byte("app"), Table: []byte("t"), ColumnCount: 1}
	rows := make([][]any, 1000)
	for i := range rows {
		rows[i] = []any{int32(7)}
	}
	// 1000 rows in a 60-byte event ending at 1060; the next event at 1060.
	if err := r.decode(&replication.BinlogEvent{Header: header(replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1, 1060, 60), Event: &replication.RowsEvent{Table: tm, Rows: rows}}); err != nil {
		t.Fatal(err)
	}
	got := rowOrders(drain(r))
	if len(got) != 1000 {
		t.Fatalf("%d rows", len(got))
	}
	for i, o := range got {
		if o[0] != 1000 || o[0]+o[1] >= 1060 {
			t.Fatalf("row %d: (pos, row) %v: pos + row reaches the next event at 1060", i, o)
		}
		if want := int64(min(i, 59)); o[1] != want {
			t.Fatalf("row %d: source.row %d, want %d", i, o[1], want)
		}
	}
}
