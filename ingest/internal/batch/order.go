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

// Limits of the source-order encoding.
const (
	orderPosBits = 33      // pos + row: a binlog position is below 2^32
	maxFileSeq   = 1 << 30 // binlog file sequence numbers below 2^30
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
// past 999999, where the names stop sorting as text). pos + row is unique
// and increasing within a file because every row takes at least one byte of
// its event: the next event starts at pos + size > pos + row. A snapshot
// row is pos - 1, below every row of the event at pos and above every row
// of the event before (events are at least 19 bytes). A truncate (a query
// event, no rows) sorts at its own event: its caller passes row 0 whatever
// source.row says (Debezium gives it the previous rows event's last row).
//
// The order is that of one server's binlog: after a failover to another
// server, positions start from that server's files (see ingest/README.md, source
// order). ok is false when file or pos is missing or out of range.
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
// errors.
func FormatOrder(o int64) string {
	return fmt.Sprintf("%d:%d", o>>orderPosBits, o&(1<<orderPosBits-1))
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
