package binlog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

func header(t replication.EventType, pos, size uint32) *replication.EventHeader {
	return &replication.EventHeader{EventType: t, Timestamp: 1700000000, ServerID: 7, LogPos: pos, EventSize: size}
}

func drain(r *Reader) []Event {
	out := r.pending
	r.pending = nil
	return out
}

// TestReaderMySQLTransaction feeds the event sequence a MySQL 8 server
// writes for one transaction (GTID, BEGIN, rows, XID) and checks the
// events, the thread id, the GTID and the position after the commit.
func TestReaderMySQLTransaction(t *testing.T) {
	set, err := ParseGTIDSet(FlavorMySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")
	if err != nil {
		t.Fatal(err)
	}
	r := &Reader{flavor: FlavorMySQL, gset: set, file: "binlog.000003"}
	sid := []byte{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}
	tm := &replication.TableMapEvent{Schema: []byte("app"), Table: []byte("t"), ColumnCount: 1}
	steps := []*replication.BinlogEvent{
		{Header: header(replication.GTID_EVENT, 300, 79), Event: &replication.GTIDEvent{SID: sid, GNO: 6}},
		{Header: header(replication.QUERY_EVENT, 380, 80), Event: &replication.QueryEvent{SlaveProxyID: 42, Query: []byte("BEGIN")}},
		{Header: header(replication.WRITE_ROWS_EVENTv2, 450, 70), Event: &replication.RowsEvent{Table: tm, Rows: [][]any{{int32(1)}, {int32(2)}}}},
		{Header: header(replication.UPDATE_ROWS_EVENTv2, 520, 70), Event: &replication.RowsEvent{Table: tm, Rows: [][]any{{int32(1)}, {int32(3)}}}},
		{Header: header(replication.XID_EVENT, 551, 31), Event: &replication.XIDEvent{XID: 9}},
	}
	var evs []Event
	for _, s := range steps {
		if err := r.decode(s); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, drain(r)...)
	}
	kinds := []Kind{KindBegin, KindRows, KindRows, KindCommit}
	if len(evs) != len(kinds) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(kinds), evs)
	}
	for i, k := range kinds {
		if evs[i].Kind != k {
			t.Fatalf("event %d kind %d, want %d", i, evs[i].Kind, k)
		}
	}
	wantGTID := "3e11fa47-71ca-11e1-9e33-c80aa9429562:6"
	for _, e := range evs[1:3] {
		if e.GTID != wantGTID || e.Thread != 42 || e.File != "binlog.000003" {
			t.Errorf("rows event gtid=%q thread=%d file=%q", e.GTID, e.Thread, e.File)
		}
	}
	if evs[1].RowsType != Insert || evs[2].RowsType != Update || evs[1].Pos != 380 {
		t.Errorf("rows types %d %d, first at %d", evs[1].RowsType, evs[2].RowsType, evs[1].Pos)
	}
	pos := evs[3].Position
	if pos.GTIDSet != "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-6" || pos.Pos != 551 || pos.File != "binlog.000003" {
		t.Errorf("position after commit %+v", pos)
	}
}

// TestReaderMariaDBDDLAndRotate checks MariaDB's standalone GTID + DDL and
// a rotate to the next file.
func TestReaderMariaDBDDLAndRotate(t *testing.T) {
	set, _ := ParseGTIDSet(FlavorMariaDB, "0-1-10")
	r := &Reader{flavor: FlavorMariaDB, gset: set}
	steps := []*replication.BinlogEvent{
		{Header: header(replication.ROTATE_EVENT, 0, 40), Event: &replication.RotateEvent{NextLogName: []byte("mysql-bin.000009"), Position: 4}},
		{Header: header(replication.MARIADB_GTID_EVENT, 100, 40), Event: &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: 11}, Flags: replication.BINLOG_MARIADB_FL_STANDALONE | replication.BINLOG_MARIADB_FL_DDL}},
		{Header: header(replication.QUERY_EVENT, 200, 100), Event: &replication.QueryEvent{Schema: []byte("app"), Query: []byte("ALTER TABLE t ADD c INT")}},
	}
	var evs []Event
	for _, s := range steps {
		if err := r.decode(s); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, drain(r)...)
	}
	if len(evs) != 1 || evs[0].Kind != KindQuery || evs[0].Schema != "app" || evs[0].GTID != "0-1-11" {
		t.Fatalf("events %+v", evs)
	}
	if p := evs[0].Position; p.GTIDSet != "0-1-11" || p.File != "mysql-bin.000009" || p.Pos != 200 {
		t.Fatalf("position %+v", p)
	}
}

// TestReaderTransactionPayload checks that a MySQL 8 compressed transaction
// payload's inner events are handled as if written plainly.
func TestReaderTransactionPayload(t *testing.T) {
	set, _ := ParseGTIDSet(FlavorMySQL, "")
	r := &Reader{flavor: FlavorMySQL, gset: set, file: "binlog.000001"}
	sid := make([]byte, 16)
	sid[15] = 1
	tm := &replication.TableMapEvent{Schema: []byte("app"), Table: []byte("t"), ColumnCount: 1}
	if err := r.decode(&replication.BinlogEvent{Header: header(replication.GTID_EVENT, 200, 79), Event: &replication.GTIDEvent{SID: sid, GNO: 1}}); err != nil {
		t.Fatal(err)
	}
	payload := &replication.TransactionPayloadEvent{Events: []*replication.BinlogEvent{
		{Header: header(replication.QUERY_EVENT, 0, 0), Event: &replication.QueryEvent{Query: []byte("BEGIN")}},
		{Header: header(replication.DELETE_ROWS_EVENTv2, 0, 0), Event: &replication.RowsEvent{Table: tm, Rows: [][]any{{int32(5)}}}},
		{Header: header(replication.XID_EVENT, 0, 0), Event: &replication.XIDEvent{XID: 1}},
	}}
	if err := r.decode(&replication.BinlogEvent{Header: header(replication.TRANSACTION_PAYLOAD_EVENT, 900, 600), Event: payload}); err != nil {
		t.Fatal(err)
	}
	evs := drain(r)
	if len(evs) != 3 || evs[1].RowsType != Delete || evs[2].Kind != KindCommit {
		t.Fatalf("events %+v", evs)
	}
	if p := evs[2].Position; p.Pos != 900 || p.GTIDSet != "00000000-0000-0000-0000-000000000001:1" {
		t.Fatalf("position after payload %+v", p)
	}
}

func TestParsePosition(t *testing.T) {
	for _, c := range []struct {
		f    Flavor
		in   string
		want Position
		bad  bool
	}{
		{FlavorMariaDB, "gtid:0-1-100,1-2-5", Position{Flavor: FlavorMariaDB, GTIDSet: "0-1-100,1-2-5"}, false},
		{FlavorMariaDB, "0-1-100", Position{Flavor: FlavorMariaDB, GTIDSet: "0-1-100"}, false},
		{FlavorMySQL, "gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", Position{Flavor: FlavorMySQL, GTIDSet: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"}, false},
		{FlavorMySQL, "file:binlog.000002:1234", Position{Flavor: FlavorMySQL, File: "binlog.000002", Pos: 1234}, false},
		{FlavorMySQL, "file:binlog.000002", Position{}, true},
		{FlavorMySQL, "file:binlog.000002:1", Position{}, true},
		{FlavorMariaDB, "gtid:nonsense", Position{}, true},
	} {
		got, err := ParsePosition(c.f, c.in)
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("ParsePosition(%s, %q) = %+v, %v", c.f, c.in, got, err)
		}
	}
	b, _ := MarshalPosition(Position{Flavor: FlavorMariaDB, GTIDSet: "0-1-9", File: "f", Pos: 4})
	if p, err := UnmarshalPosition(b); err != nil || p.GTIDSet != "0-1-9" {
		t.Errorf("round trip: %+v %v", p, err)
	}
	if _, err := UnmarshalPosition([]byte(`{"flavor":"oracle"}`)); err == nil {
		t.Error("unknown flavor accepted")
	}
}

func FuzzUnmarshalPosition(f *testing.F) {
	f.Add([]byte(`{"flavor":"mariadb","gtid_set":"0-1-9","file":"mysql-bin.000001","pos":4}`))
	f.Add([]byte(`{"flavor":"mysql","gtid_set":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := UnmarshalPosition(b)
		if err != nil {
			return
		}
		b2, err := MarshalPosition(p)
		if err != nil {
			t.Fatal(err)
		}
		if p2, err := UnmarshalPosition(b2); err != nil || p2 != p {
			t.Fatalf("round trip %+v -> %+v, %v", p, p2, err)
		}
	})
}

// TestReadErrorPurged checks that the server's error 1236 (the binlog to
// read is gone) becomes ErrPurged with the way out, and that other errors
// keep their cause.
func TestReadErrorPurged(t *testing.T) {
	at := Position{Flavor: FlavorMariaDB, GTIDSet: "0-1-42", File: "mysql-bin.000003", Pos: 400}
	purged := &mysql.MyError{Code: 1236, State: "HY000", Message: "Could not find GTID state requested by slave in any binlog files"}
	err := readError(at, fmt.Errorf("sync: %w", purged))
	if !errors.Is(err, ErrPurged) {
		t.Fatalf("error 1236: %v, want ErrPurged", err)
	}
	for _, want := range []string{"0-1-42", "Could not find GTID state", "snapshot-mode=when_needed", "binlog retention"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	other := &mysql.MyError{Code: 1045, Message: "Access denied"}
	if err := readError(at, other); errors.Is(err, ErrPurged) || !errors.Is(err, other) {
		t.Errorf("error 1045: %v, want it wrapped, not ErrPurged", err)
	}
}

// TestReplayChecksTransaction: after a reconnection inside a transaction
// the events passed over must be that transaction's, from its Begin.
func TestReplayChecksTransaction(t *testing.T) {
	begun := Event{Kind: KindBegin, GTID: "0-1-7", File: "b.000001", Pos: 100, BeginTimestamp: 42}
	for _, tc := range []struct {
		name   string
		events []Event
		fail   bool
	}{
		{"same transaction", []Event{begun, {Kind: KindRows, GTID: "0-1-7"}}, false},
		{"another GTID", []Event{{Kind: KindBegin, GTID: "0-1-8"}}, true},
		{"not a Begin first", []Event{{Kind: KindRows, GTID: "0-1-7"}}, true},
		{"another offset without GTIDs", []Event{{Kind: KindBegin, File: "b.000001", Pos: 200}}, true},
		{"ended sooner", []Event{begun, {Kind: KindCommit, GTID: "0-1-7"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := begun
			if tc.name == "another offset without GTIDs" {
				b.GTID = ""
			}
			r := &Reader{seen: 3, begun: b, resuming: true}
			var err error
			for _, ev := range tc.events {
				if err = r.replay(ev); err != nil {
					break
				}
			}
			if (err != nil) != tc.fail {
				t.Fatalf("replay error %v, want failure %v", err, tc.fail)
			}
			if !tc.fail && (r.replayed != len(tc.events) || r.beginTs != 42) {
				t.Errorf("replayed %d events with begin timestamp %d, want %d and 42", r.replayed, r.beginTs, len(tc.events))
			}
		})
	}
}
