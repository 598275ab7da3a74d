package binlog

// MySQL 8 event bytes recorded from real servers, published as test data
// in go-mysql's test suite (github.com/go-mysql-org/go-mysql v1.16.0,
// replication/*_test.go; each vector names its test). They are data here:
// they go through capture's decoding path, not go-mysql's tests.

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"

	"github.com/binlake/binlake/capture/internal/mysqltype"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/schemas/debezium"
)

// payload80027 is the zstd payload of a TRANSACTION_PAYLOAD_EVENT written
// by MySQL 8.0.27 with binlog_transaction_compression=ON: a transaction of
// QUERY(BEGIN), TABLE_MAP, WRITE_ROWS v2, TABLE_MAP, UPDATE_ROWS v2,
// TABLE_MAP, DELETE_ROWS v2 and XID (go-mysql
// replication/transaction_payload_event_test.go, TestTransactionPayloadEventDecode).
var payload80027 = []byte{
	0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58, 0xbc, 0x0a, 0x00, 0xf6, 0x13, 0x44, 0x35, 0x60, 0x45, 0xd3,
	0x1c, 0x00, 0x92, 0x80, 0xa2, 0x43, 0x5d, 0x92, 0xe0, 0x70, 0x43, 0xc5, 0x30, 0x0c, 0x12, 0x9c,
	0xdf, 0xcd, 0xfa, 0x0d, 0x1a, 0x06, 0x11, 0x11, 0x91, 0x05, 0x79, 0x83, 0x3e, 0x4a, 0x41, 0xda,
	0xbb, 0xb5, 0x6e, 0xd4, 0xb7, 0xb0, 0x36, 0x45, 0x98, 0x23, 0x74, 0x0d, 0x6b, 0x3c, 0xfa, 0xde,
	0x24, 0x05, 0x37, 0x00, 0x34, 0x00, 0x36, 0x00, 0xec, 0x97, 0x4b, 0xfe, 0x33, 0x04, 0x9c, 0x27,
	0xeb, 0x41, 0xe2, 0x10, 0x69, 0x78, 0x45, 0xd9, 0x6a, 0x52, 0x41, 0x91, 0xa0, 0x28, 0x6b, 0xa9,
	0x50, 0x50, 0xe8, 0xaf, 0x83, 0x5f, 0x87, 0x1c, 0xc2, 0xa8, 0x15, 0xd5, 0x34, 0xfe, 0x3f, 0x72,
	0xf1, 0x07, 0xbb, 0xc2, 0xef, 0x78, 0xc1, 0x07, 0x0e, 0xf1, 0x9f, 0x35, 0x9c, 0x27, 0x2b, 0x52,
	0x8c, 0xf4, 0x49, 0x67, 0xfb, 0x3e, 0x7a, 0x2d, 0xec, 0x5a, 0xa5, 0x8d, 0xd6, 0x81, 0x53, 0xfe,
	0xcd, 0xe2, 0x7f, 0xfb, 0xd5, 0xbc, 0x35, 0x00, 0xff, 0xd9, 0x02, 0xce, 0x93, 0xf5, 0x2b, 0xd3,
	0xb4, 0x33, 0xd6, 0x38, 0xa3, 0x19, 0x64, 0x9a, 0xe6, 0x5d, 0x75, 0x9d, 0x58, 0x6c, 0xe9, 0x09,
	0x02, 0xc7, 0x03, 0xf3, 0x3a, 0xcf, 0x85, 0x11, 0x52, 0x2a, 0x25, 0x7c, 0xd1, 0x75, 0x8d, 0xae,
	0x75, 0x9c, 0x87, 0xc6, 0x87, 0xfd, 0x0a, 0x98, 0x0c, 0x38, 0x4f, 0x18, 0x8c, 0x35, 0x65, 0x6c,
	0x9b, 0xde, 0xe7, 0x1e, 0x28, 0x59, 0xe9, 0x38, 0x77, 0xba, 0x48, 0x8a, 0xb1, 0x3e, 0x91, 0x8d,
	0xe4, 0x8c, 0xee, 0xeb, 0x5a, 0x6f, 0xf7, 0x75, 0x01, 0xff, 0xff, 0x3f, 0x22, 0xe1, 0x3f, 0x73,
	0xe0, 0x6c, 0x61, 0x87, 0x0f, 0x9c, 0xa7, 0xeb, 0xb2, 0xaa, 0xad, 0xba, 0x56, 0x2e, 0xff, 0x05,
	0x02, 0x4c, 0x19, 0x53, 0xe8, 0x76, 0xcf, 0xea, 0xae, 0xe4, 0x40, 0x55, 0x82, 0x8f, 0x46, 0x11,
	0x84, 0xde, 0x9c, 0x33, 0x42, 0xea, 0x60, 0x43, 0xd2, 0x94, 0x8f, 0x0c, 0x18, 0x00, 0x56, 0x15,
	0x08, 0x52, 0xd0, 0x00, 0x10, 0x06, 0xac, 0x2e, 0xd7, 0x32, 0x8a, 0xa4, 0x84, 0x0c, 0x48, 0x42,
	0x80, 0x44, 0x9a, 0xe5, 0x02, 0x37, 0x9b, 0x87, 0x24, 0x02, 0x01, 0x3d, 0x86, 0x50, 0x4d, 0x3e,
	0x91, 0x39, 0x40, 0x0d, 0xb0, 0xaf, 0xf0, 0x09, 0xfa, 0x9a, 0x1e, 0x43, 0xd4, 0x60, 0x82, 0x84,
	0x37, 0x81, 0x78, 0x55, 0xcd, 0x00, 0x0c, 0x27, 0x78, 0x10, 0x08, 0x0d, 0x06, 0x19, 0x80, 0x17,
	0x01, 0x00, 0x00,
}

func TestRecordedMySQL8CompressedTransaction(t *testing.T) {
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := dec.DecodeAll(payload80027, nil)
	dec.Close()
	if err != nil {
		t.Fatal(err)
	}
	body := transactionPayloadBody(payload80027, len(plain))
	w := newBinlogWriter()
	r := mysqlReader(t, "5ccc1033-44a8-11ea-bd59-0242ac190003:1-118", "binlog.000009")
	evs, err := feed(t, captureParser(t), r,
		w.event(evFormatDescription, formatDescriptionBody("8.0.27")),
		w.event(evGTID, gtid80019),
		w.event(evTransactionPay, body))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []Kind
	var rowsTypes []RowsType
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
		rowsTypes = append(rowsTypes, e.RowsType)
	}
	if d := cmp.Diff([]Kind{KindBegin, KindRows, KindRows, KindRows, KindCommit}, kinds); d != "" {
		t.Fatalf("event kinds (-want +got):\n%s", d)
	}
	if rowsTypes[1] != Insert || rowsTypes[2] != Update || rowsTypes[3] != Delete {
		t.Errorf("rows types %v", rowsTypes)
	}
	if p := evs[4].Position; p.GTIDSet != "5ccc1033-44a8-11ea-bd59-0242ac190003:1-119" || p.Pos != w.pos {
		t.Errorf("position after the payload %+v, want pos %d", p, w.pos)
	}
	// The server wrote binlog_row_metadata=MINIMAL (no column names), so
	// capture takes the definition from information_schema; this is it.
	tm := evs[1].Table
	if string(tm.Schema) != "compression_test" || string(tm.Table) != "large_data" || len(tm.ColumnNameString()) != 0 {
		t.Fatalf("table map %s.%s names %v", tm.Schema, tm.Table, tm.ColumnNameString())
	}
	conv, err := mysqltype.NewTable([]mysqltype.Column{
		{Name: "id", Type: "int"}, {Name: "data", Type: "longtext", Nullable: true}, {Name: "ts", Type: "timestamp", Nullable: true},
	}, mysqltype.Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := func(e Event, i int) debezium.Struct {
		s, err := conv.ConvertRow(nil, e.Rows[i])
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := row(evs[3], 0); !cmp.Equal(got, debezium.Struct{int32(1), "updated", "2025-03-28T09:53:58Z"}) {
		t.Errorf("deleted row %v", got)
	}
	if got := row(evs[2], 3); !cmp.Equal(got, debezium.Struct{int32(2), "updated", "2025-03-28T09:54:29Z"}) {
		t.Errorf("second update's after image %v", got)
	}
	if got := row(evs[1], 0); got[0] != int32(2) || len(got[1].(string)) != 640 || got[2] != "2025-03-28T09:54:29Z" {
		t.Errorf("inserted row id %v, %d bytes of data, ts %v", got[0], len(got[1].(string)), got[2])
	}
}

// types80TableMap is a TABLE_MAP_EVENT body written by MySQL 8.0 with
// binlog_row_metadata=FULL for a table of 42 columns, one per type (bit,
// signed and unsigned integers, decimal(65,30), float, double, year, date,
// time, time(6), datetime, datetime(6), timestamp, timestamp(6), char,
// varchar, binary, varbinary, the blobs and texts, enum, set, geometry,
// json), recorded in go-mysql's test suite (replication/row_event_test.go,
// TestTableMapOptMetaNames, "mysql 8.0").
var types80TableMap = []byte("j\x00\x00\x00\x00\x00\x01\x00\x04test\x00\x06_types\x00*\x10\x01\x01\x02\t\x03\b\xf6\x04\x05\x01\x02\t\x03\b\xf6\x04\x05\r\n\x13\x13\x12\x12\x11\x11\xfe\x0f\xfe\x0f\xfc\xfc\xfc\xfc\xfc\xfc\xfc\xfc\xfe\xfe\xff\xf5&\x00\bA\x1e\x04\bA\x1e\x04\b\x00\x06\x00\x06\x00\x06\xce\xfc\xfc\x03\xfe@@\x00\x01\x02\x03\x04\x01\x02\x03\x04\xf7\x01\xf8\x01\x04\x04\x00\x00\xfc\xc3\xff\x03\x01\x03\x00\u007f\x80\x03\f\xe0\xe0??????\xe0\xe0\xe0\xe0\a\x01\x00\x04\xfc\x94\x01\x05b_bit\tn_boolean\tn_tinyint\nn_smallint\vn_mediumint\x05n_int\bn_bigint\tn_decimal\an_float\bn_double\nnu_tinyint\vnu_smallint\fnu_mediumint\x06nu_int\tnu_bigint\nnu_decimal\bnu_float\tnu_double\x06t_year\x06t_date\x06t_time\at_ftime\nt_datetime\vt_fdatetime\vt_timestamp\ft_ftimestamp\x06c_char\tc_varchar\bc_binary\vc_varbinary\nc_tinyblob\x06c_blob\fc_mediumblob\nc_longblob\nc_tinytext\x06c_text\fc_mediumtext\nc_longtext\x06e_enum\x05s_set\ng_geometry\x06j_json\n\x01\xe0\x05\x05\x02\x011\x012\x06\x05\x02\x01a\x01b")

// TestRecordedMySQL8TableMapTypes derives the table definition from the
// recorded MySQL 8.0 table map and compiles it: every column type a MySQL 8
// table map can carry maps to a Debezium schema.
func TestRecordedMySQL8TableMapTypes(t *testing.T) {
	w := newBinlogWriter()
	p := captureParser(t)
	if _, err := p.Parse(w.event(evFormatDescription, formatDescriptionBody("8.0.36"))); err != nil {
		t.Fatal(err)
	}
	ev, err := p.Parse(w.event(evTableMap, types80TableMap))
	if err != nil {
		t.Fatal(err)
	}
	def, err := schemahist.FromTableMap(ev.Event.(*replication.TableMapEvent), schemahist.Definition{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bit(64)",
		"tinyint", "tinyint", "smallint", "mediumint", "int", "bigint", "decimal(65,30)", "float", "double",
		"tinyint unsigned", "smallint unsigned", "mediumint unsigned", "int unsigned", "bigint unsigned", "decimal(65,30) unsigned", "float unsigned", "double unsigned",
		"year", "date", "time", "time(6)", "datetime", "datetime(6)", "timestamp", "timestamp(6)",
		"char(1)", "varchar(255)", "binary(64)", "varbinary(64)", "tinyblob", "blob", "mediumblob", "longblob",
		"tinytext", "text", "mediumtext", "longtext", "enum('a','b')", "set('1','2')", "geometry", "json"}
	var got []string
	for _, c := range def.Columns {
		got = append(got, c.Type)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("column types (-want +got):\n%s", d)
	}
	if def.Columns[0].Nullable || !def.Columns[18].Nullable || def.Columns[0].Name != "b_bit" {
		t.Errorf("b_bit nullable %v, t_year nullable %v", def.Columns[0].Nullable, def.Columns[18].Nullable)
	}
	if _, err := schemahist.Compile(def, "dbserver1", debezium.FlavorMySQL, mysqltype.Options{}, schemahist.Naming{}, nil, nil); err != nil {
		t.Fatal(err)
	}
}
