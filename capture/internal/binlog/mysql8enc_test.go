package binlog

// An encoder of MySQL 8 binlog events, written from MySQL's documented
// formats, so tests can feed capture the bytes a MySQL 8 server writes:
//   - the v4 event header and CRC32 trailer, FORMAT_DESCRIPTION, GTID,
//     QUERY, XID, TABLE_MAP (with binlog_row_metadata=FULL optional
//     metadata) and the v2 rows events: MySQL's libbinlogevents
//     (binlog_event.h, control_events.h, rows_event.h) and the
//     "MySQL Source Code Documentation: Replication > Binlog Event" pages;
//   - binary JSON: sql-common/json_binary.h (small and large objects and
//     arrays, inlined scalars, variable-length string lengths, opaque);
//   - column values: DECIMAL (decimal2bin), DATETIME2 (my_datetime_packed).

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"sort"
)

const (
	evFormatDescription = 15
	evQuery             = 2
	evXID               = 16
	evTableMap          = 19
	evWriteRowsV2       = 30
	evUpdateRowsV2      = 31
	evDeleteRowsV2      = 32
	evGTID              = 33
	evPartialUpdateRows = 39
	evTransactionPay    = 40
)

// mysql8PostHeaderLengths are the post-header lengths a MySQL 8.0.27
// server announces in its FORMAT_DESCRIPTION_EVENT, recorded from a real
// server in go-mysql's test suite (replication/transaction_payload_event_test.go,
// TestTransactionPayloadEventDecode).
var mysql8PostHeaderLengths = []byte{0x38, 0xd, 0x0, 0x8, 0x0, 0x12, 0x0, 0x4, 0x4, 0x4, 0x4, 0x12, 0x0, 0x0, 0x5c, 0x0, 0x4, 0x1a, 0x8, 0x0, 0x0, 0x0, 0x8, 0x8, 0x8, 0x2, 0x0, 0x0, 0x0, 0xa, 0xa, 0xa, 0x19, 0x19, 0x0, 0x12, 0x34, 0x0, 0xa, 0x28, 0x0}

// binlogWriter appends events with running log positions, as a binlog file.
type binlogWriter struct {
	serverID uint32
	pos      uint32 // end of the last event
}

func newBinlogWriter() *binlogWriter { return &binlogWriter{serverID: 1, pos: 4} }

// event frames a body: 19-byte v4 header, body, CRC32 of both.
func (w *binlogWriter) event(typ byte, body []byte) []byte {
	size := uint32(19 + len(body) + 4)
	w.pos += size
	h := make([]byte, 19, size)
	binary.LittleEndian.PutUint32(h[0:], 1700000000)
	h[4] = typ
	binary.LittleEndian.PutUint32(h[5:], w.serverID)
	binary.LittleEndian.PutUint32(h[9:], size)
	binary.LittleEndian.PutUint32(h[13:], w.pos)
	binary.LittleEndian.PutUint16(h[17:], 0)
	ev := append(h, body...)
	return binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))
}

func formatDescriptionBody(version string) []byte {
	b := binary.LittleEndian.AppendUint16(nil, 4)
	sv := make([]byte, 50)
	copy(sv, version)
	b = append(b, sv...)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = append(b, 19)
	b = append(b, mysql8PostHeaderLengths...)
	return append(b, 1) // checksum algorithm: CRC32
}

// gtidBody is a GTID_LOG_EVENT without the 8.0.1+ commit timestamps
// (optional at the end of the event).
func gtidBody(sid [16]byte, gno int64, lastCommitted, seq int64) []byte {
	b := []byte{1} // flags: may have been committed in parallel
	b = append(b, sid[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(gno))
	b = append(b, 2) // LOGICAL_TIMESTAMP_TYPECODE
	b = binary.LittleEndian.AppendUint64(b, uint64(lastCommitted))
	return binary.LittleEndian.AppendUint64(b, uint64(seq))
}

func queryBody(thread uint32, schema, query string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, thread)
	b = binary.LittleEndian.AppendUint32(b, 0) // exec time
	b = append(b, byte(len(schema)))
	b = binary.LittleEndian.AppendUint16(b, 0) // error code
	b = binary.LittleEndian.AppendUint16(b, 0) // status vars length
	b = append(b, schema...)
	b = append(b, 0)
	return append(b, query...)
}

// transactionPayloadBody is a TRANSACTION_PAYLOAD_EVENT body: header
// fields (type, length, value) then the end mark (0): 1 payload size,
// 2 compression type (0 = ZSTD), 3 uncompressed size; then the zstd frame.
func transactionPayloadBody(compressed []byte, plainLen int) []byte {
	body := append([]byte{1, 4}, le32(uint32(len(compressed)))...)
	body = append(body, 2, 1, 0, 3, 4)
	body = append(body, le32(uint32(plainLen))...)
	return append(append(body, 0), compressed...)
}

func xidBody(xid uint64) []byte { return binary.LittleEndian.AppendUint64(nil, xid) }

func lenenc(b []byte, n uint64) []byte {
	switch {
	case n < 251:
		return append(b, byte(n))
	case n < 1<<16:
		return binary.LittleEndian.AppendUint16(append(b, 0xfc), uint16(n))
	case n < 1<<24:
		return append(b, 0xfd, byte(n), byte(n>>8), byte(n>>16))
	}
	return binary.LittleEndian.AppendUint64(append(b, 0xfe), n)
}

func lenencStr(b []byte, s string) []byte { return append(lenenc(b, uint64(len(s))), s...) }

func bitmap(bits []bool) []byte {
	b := make([]byte, (len(bits)+7)/8)
	for i, on := range bits {
		if on {
			b[i/8] |= 1 << (i % 8)
		}
	}
	return b
}

// tmColumn is one column of a table map: its binlog type, metadata bytes
// as written in the table map, and what the optional metadata says of it.
type tmColumn struct {
	name     string
	typ      byte
	meta     []byte
	nullable bool
	unsigned bool     // numeric columns
	labels   []string // enum or set
}

// tableMapBody writes a TABLE_MAP_EVENT with binlog_row_metadata=FULL
// optional metadata: signedness, default charset (character columns and
// enum/set), column names, set and enum labels, simple primary key.
func tableMapBody(tableID uint64, db, table string, cols []tmColumn, pk []int) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(tableID))
	b = binary.LittleEndian.AppendUint16(b, uint16(tableID>>32))
	b = binary.LittleEndian.AppendUint16(b, 1) // flags
	b = append(b, byte(len(db)))
	b = append(append(b, db...), 0)
	b = append(b, byte(len(table)))
	b = append(append(b, table...), 0)
	b = lenenc(b, uint64(len(cols)))
	var meta []byte
	var nulls []bool
	for _, c := range cols {
		b = append(b, c.typ)
		meta = append(meta, c.meta...)
		nulls = append(nulls, c.nullable)
	}
	b = lenenc(b, uint64(len(meta)))
	b = append(b, meta...)
	b = append(b, bitmap(nulls)...)

	tlv := func(typ byte, v []byte) { b = lenenc(append(b, typ), uint64(len(v))); b = append(b, v...) }
	// 1 SIGNEDNESS: one bit per numeric column, most significant first.
	var sign []byte
	n := 0
	for _, c := range cols {
		if isNumeric(c.typ) {
			if n%8 == 0 {
				sign = append(sign, 0)
			}
			if c.unsigned {
				sign[n/8] |= 0x80 >> (n % 8)
			}
			n++
		}
	}
	tlv(1, sign)
	tlv(2, lenenc(nil, 255)) // DEFAULT_CHARSET: utf8mb4_0900_ai_ci, no exceptions
	var names []byte
	for _, c := range cols {
		names = lenencStr(names, c.name)
	}
	tlv(4, names)
	for _, want := range []byte{mysqlTypeSet, mysqlTypeEnum} {
		var v []byte
		for _, c := range cols {
			if c.typ == 254 && c.meta[0] == want {
				v = lenenc(v, uint64(len(c.labels)))
				for _, l := range c.labels {
					v = lenencStr(v, l)
				}
			}
		}
		if v != nil {
			tlv(map[byte]byte{mysqlTypeSet: 5, mysqlTypeEnum: 6}[want], v)
		}
	}
	var pkb []byte
	for _, i := range pk {
		pkb = lenenc(pkb, uint64(i))
	}
	tlv(8, pkb)
	tlv(10, lenenc(nil, 255)) // ENUM_AND_SET_DEFAULT_CHARSET
	return b
}

const (
	mysqlTypeEnum = 247
	mysqlTypeSet  = 248
)

func isNumeric(t byte) bool {
	switch t {
	case 1, 2, 3, 4, 5, 8, 9, 13, 246:
		return true
	}
	return false
}

// rowsBody writes a v2 rows event: every column present; each row is a
// null bitmap and the values (nil: NULL) already encoded. An update's
// after images (odd rows) may carry partial-JSON bits (PARTIAL_UPDATE).
func rowsBody(tableID uint64, ncols int, rows [][][]byte, update, partial bool, partialBits []bool, last bool) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(tableID))
	b = binary.LittleEndian.AppendUint16(b, uint16(tableID>>32))
	var flags uint16
	if last {
		flags = 1 // STMT_END_F
	}
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = binary.LittleEndian.AppendUint16(b, 2) // extra data length, itself included
	b = lenenc(b, uint64(ncols))
	all := make([]bool, ncols)
	for i := range all {
		all[i] = true
	}
	b = append(b, bitmap(all)...)
	if update {
		b = append(b, bitmap(all)...)
	}
	for i, row := range rows {
		if partial && i%2 == 1 {
			b = lenenc(b, 1) // binlog_row_value_options: PARTIAL_JSON
			b = append(b, bitmap(partialBits)...)
		}
		nulls := make([]bool, len(row))
		for j, v := range row {
			nulls[j] = v == nil
		}
		b = append(b, bitmap(nulls)...)
		for _, v := range row {
			b = append(b, v...)
		}
	}
	return b
}

// Column value encoders.

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func varchar2(s string) []byte {
	return append(binary.LittleEndian.AppendUint16(nil, uint16(len(s))), s...)
}

// jsonColumn is a JSON column value: 4-byte length and the binary document.
func jsonColumn(doc []byte) []byte { return append(le32(uint32(len(doc))), doc...) }

// decimalBin encodes a DECIMAL(precision,scale) value given as its
// integer and fraction digit strings (decimal2bin: 9 digits per 4 bytes,
// leftover digits in 1-4 bytes, sign in the top bit, negatives inverted).
func decimalBin(precision, scale int, neg bool, intDigits, fracDigits string) []byte {
	dig2bytes := []int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}
	pad := func(s string, n int, left bool) string {
		for len(s) < n {
			if left {
				s = "0" + s
			} else {
				s += "0"
			}
		}
		return s
	}
	intg := precision - scale
	ip, fp := pad(intDigits, intg, true), pad(fracDigits, scale, false)
	var out []byte
	put := func(digits string) {
		n := len(digits)
		v := uint32(0)
		for _, d := range digits {
			v = v*10 + uint32(d-'0')
		}
		size := 4
		if n < 9 {
			size = dig2bytes[n]
		}
		for i := size - 1; i >= 0; i-- {
			out = append(out, byte(v>>(8*i)))
		}
	}
	if lead := intg % 9; lead > 0 {
		put(ip[:lead])
	}
	for i := intg % 9; i < intg; i += 9 {
		put(ip[i : i+9])
	}
	for i := 0; i+9 <= scale; i += 9 {
		put(fp[i : i+9])
	}
	if rest := scale % 9; rest > 0 {
		put(fp[scale-rest:])
	}
	if neg {
		for i := range out {
			out[i] = ^out[i]
		}
	}
	out[0] ^= 0x80
	return out
}

// datetime2 encodes DATETIME(fsp) for fsp 6: 5 packed bytes + 3 of micros.
func datetime2(y, mo, d, h, mi, s, micros int) []byte {
	ymd := uint64((y*13+mo)<<5 | d)
	hms := uint64(h<<12 | mi<<6 | s)
	packed := (ymd<<17 | hms) + 0x8000000000
	b := []byte{byte(packed >> 32), byte(packed >> 24), byte(packed >> 16), byte(packed >> 8), byte(packed)}
	return append(b, byte(micros>>16), byte(micros>>8), byte(micros))
}

// Binary JSON (json_binary.h).

// jobj is a JSON object; the encoder orders its keys as MySQL does.
type jobj map[string]any

// jopaque is a MySQL value of another type stored in JSON (DECIMAL,
// DATETIME...): its column type and its binary form.
type jopaque struct {
	typ  byte
	data []byte
}

const (
	jsonSmallObj, jsonLargeObj, jsonSmallArr, jsonLargeArr = 0x00, 0x01, 0x02, 0x03
	jsonLiteral, jsonInt16, jsonUint16, jsonInt32          = 0x04, 0x05, 0x06, 0x07
	jsonUint32, jsonInt64, jsonUint64, jsonDouble          = 0x08, 0x09, 0x0a, 0x0b
	jsonString, jsonOpaque                                 = 0x0c, 0x0f
)

// jsonDoc encodes a document: its type byte and value.
func jsonDoc(v any, large bool) []byte {
	t, p := jsonValue(v, large)
	return append([]byte{t}, p...)
}

func varlen(b []byte, n int) []byte {
	for n >= 0x80 {
		b = append(b, byte(n&0x7f)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

func jsonValue(v any, large bool) (byte, []byte) {
	switch x := v.(type) {
	case nil:
		return jsonLiteral, []byte{0}
	case bool:
		if x {
			return jsonLiteral, []byte{1}
		}
		return jsonLiteral, []byte{2}
	case int16:
		return jsonInt16, binary.LittleEndian.AppendUint16(nil, uint16(x))
	case uint16:
		return jsonUint16, binary.LittleEndian.AppendUint16(nil, x)
	case int32:
		return jsonInt32, le32(uint32(x))
	case uint32:
		return jsonUint32, le32(x)
	case int64:
		return jsonInt64, le64(uint64(x))
	case uint64:
		return jsonUint64, le64(x)
	case float64:
		return jsonDouble, le64(math.Float64bits(x))
	case string:
		return jsonString, append(varlen(nil, len(x)), x...)
	case jopaque:
		return jsonOpaque, append(varlen([]byte{x.typ}, len(x.data)), x.data...)
	case []any:
		t := byte(jsonSmallArr)
		if large {
			t = jsonLargeArr
		}
		return t, jsonContainer(nil, x, large)
	case jobj:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// MySQL orders keys by length, then bytes.
		sort.Slice(keys, func(i, j int) bool {
			if len(keys[i]) != len(keys[j]) {
				return len(keys[i]) < len(keys[j])
			}
			return keys[i] < keys[j]
		})
		vals := make([]any, len(keys))
		for i, k := range keys {
			vals[i] = x[k]
		}
		t := byte(jsonSmallObj)
		if large {
			t = jsonLargeObj
		}
		return t, jsonContainer(keys, vals, large)
	}
	panic("jsonValue: unsupported value")
}

// jsonContainer lays out an object (keys != nil) or array: element count,
// total size, key entries (offset, 2-byte length), value entries (type,
// offset or inlined value), then keys and values. Offsets count from the
// container's first byte and are 2 bytes in the small format, 4 in the
// large one; int16/uint16 and literals are inlined, and int32/uint32 too
// in the large format.
func jsonContainer(keys []string, vals []any, large bool) []byte {
	osz := 2
	if large {
		osz = 4
	}
	put := func(b []byte, v int) []byte {
		if large {
			return binary.LittleEndian.AppendUint32(b, uint32(v))
		}
		return binary.LittleEndian.AppendUint16(b, uint16(v))
	}
	header := 2*osz + len(keys)*(osz+2) + len(vals)*(1+osz)
	offset := header
	var entries, data []byte
	keyEntries := []byte{}
	for _, k := range keys {
		keyEntries = put(keyEntries, offset)
		keyEntries = binary.LittleEndian.AppendUint16(keyEntries, uint16(len(k)))
		data = append(data, k...)
		offset += len(k)
	}
	for _, v := range vals {
		t, p := jsonValue(v, large)
		inline := t == jsonLiteral || t == jsonInt16 || t == jsonUint16 || (large && (t == jsonInt32 || t == jsonUint32))
		entries = append(entries, t)
		if inline {
			cell := make([]byte, osz)
			copy(cell, p)
			entries = append(entries, cell...)
			continue
		}
		entries = put(entries, offset)
		data = append(data, p...)
		offset += len(p)
	}
	var out []byte
	out = put(out, len(vals))
	out = put(out, offset)
	out = append(out, keyEntries...)
	out = append(out, entries...)
	return append(out, data...)
}

// jsonDiff encodes one partial-JSON diff (Json_diff_vector::write_binary):
// operation, path, and for replace/insert the new value.
func jsonDiff(op byte, path string, value []byte) []byte {
	b := lenencStr([]byte{op}, path)
	if op == 2 { // remove
		return b
	}
	return append(lenenc(b, uint64(len(value))), value...)
}
