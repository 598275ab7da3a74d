package batch

import (
	"fmt"
	"strconv"
	"strings"
)

// OrderColumn is the table column that holds each row's source order
// ([SourceOrder]): a nullable long in every table ingest writes, keyed
// tables and change logs alike. Rows written before the column existed,
// and events without a binlog position, hold null.
const OrderColumn = "_binlake_source_order"

// Limits of the source-order encoding: epoch (8 bits) | file seq (22
// bits) | pos + row (33 bits).
const (
	orderPosBits = 33      // pos + row: a binlog position is below 2^32
	maxFileSeq   = 1 << 22 // binlog file sequence numbers below 2^22
	epochBits    = 8
	epochShift   = orderPosBits + 22
)

// SourceOrder returns the position of a change in the source's binlog as one
// sortable int64, from Debezium's source block: file (the binlog file name,
// "<base>.<number>"), pos (the start of the binlog event) and row (the row's
// index within that event). snapshot is true for op=r events, which carry
// the binlog position their state is consistent with (the next event to be
// streamed): they sort just before the event at that position.
//
// The encoding is seq<<33 + pos + row, where seq is the number after the
// file name's last dot (rotation increments it, so files sort by it even
// past 999999, where the names stop sorting as text). pos + row increases
// within a file, and the rows of one event sort below the next event's,
// because row < size of the event at pos, so pos + row < pos + size, the
// next event's start. A snapshot row is pos - 1, below every row of the
// event at pos and above every row of the event before (events are at least
// 19 bytes). A truncate (a query event, no rows) sorts at its own event:
// its caller passes row 0 whatever source.row says (Debezium gives it the
// previous rows event's last row).
//
// row < size holds of a plain rows event (every row takes at least one byte
// of it), but not of a compressed one, which capture bounds instead
// (capture/internal/binlog Event.RowIndex): the events inside a MySQL 8
// transaction payload all carry the payload's pos, so capture numbers their
// rows consecutively across the payload (Debezium numbers each inner event
// from 0, so its rows collide); and a compressed event (payload, MariaDB
// *_ROWS_COMPRESSED_EVENT) can hold more rows than bytes, so capture caps
// row at size - 1. With more rows than bytes no numbering can give each row
// its own value below the next event: the rows past the cap share the last
// order of their event. That is safe here, since an order only decides
// against another event (a truncate, a history change), and all rows of one
// event lie on the same side of it; within an event, rows of one key keep
// their Kafka order. Orders of different events never collide.
// Debezium's own topics keep its numbering: its rows of a compressed event
// of more rows than bytes can still reach past the next event's pos.
//
// The order is that of one binlog history (one server's binlog, up to a
// RESET MASTER): after a failover to another server, positions start from
// that server's files. The commit therefore places every order in the
// table's histories ([Buffer.Place], [Epochs]), which adds the history's
// epoch in the top bits ([EpochOrder]); an order of epoch 0 is the value
// SourceOrder returns (tables written before epochs hold those). See
// ingest/README.md, "Source order across failover". ok is false when file
// or pos is missing or out of range.
func SourceOrder(file string, pos int64, row int32, snapshot bool) (int64, bool) {
	seq, ok := fileSeq(file)
	if !ok || pos <= 0 || row < 0 || pos >= 1<<32 {
		return 0, false
	}
	off := pos + int64(row)
	if snapshot {
		off = pos - 1
	}
	return seq<<orderPosBits | off, true
}

// FormatOrder renders an order value as "<seq>:<offset>" for logs and
// errors, "<epoch>/<seq>:<offset>" from epoch 1 on.
func FormatOrder(o int64) string {
	s := fmt.Sprintf("%d:%d", o>>orderPosBits&(maxFileSeq-1), o&(1<<orderPosBits-1))
	if e := o >> epochShift; e > 0 {
		s = fmt.Sprintf("%d/%s", e, s)
	}
	return s
}

func fileSeq(file string) (int64, bool) {
	i := strings.LastIndexByte(file, '.')
	if i < 0 || i == len(file)-1 {
		return 0, false
	}
	n, err := strconv.ParseInt(file[i+1:], 10, 64)
	if err != nil || n < 0 || n >= maxFileSeq {
		return 0, false
	}
	return n, true
}
