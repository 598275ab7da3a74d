package binlog

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/capture/internal/mysqljson"
)

// decodeRows decodes a rows event as go-mysql does, except that MySQL
// binary JSON columns come out as the text Debezium emits for them
// (package mysqljson) rather than go-mysql's rendering (keys sorted
// bytewise, DECIMAL as a string, Go's float format).
//
// go-mysql has no per-column hook, so the JSON columns are decoded as
// BLOBs of the same length-prefix size (a JSON value is laid out exactly
// as a BLOB: a little-endian length of meta bytes, then the document),
// which hands over the raw document, and rendered here. MariaDB stores
// JSON as LONGTEXT (a BLOB in table maps): its values are untouched.
//
// A PARTIAL_UPDATE_ROWS_EVENT (binlog_row_value_options=PARTIAL_JSON) is
// first decoded as go-mysql does, so a column logged as a diff stays a
// *replication.JsonDiff (the reader refuses it, see ErrPartialJSON). When
// there is none, it is decoded again with the JSON columns as BLOBs; the
// table map copy then keeps one JSON type per JSON column after the real
// columns, because go-mysql sizes the partial-update bitmap by counting
// the table map's JSON columns.
func decodeRows(e *replication.RowsEvent, data []byte) error {
	jsonCols, err := decodeRowsRawJSON(e, data)
	if err != nil || jsonCols == nil {
		return err
	}
	tm := e.Table
	var buf []byte // one render buffer for the event; each value is copied out of it once
	for _, row := range e.Rows {
		for _, i := range jsonCols {
			if i >= len(row) {
				continue
			}
			doc, ok := row[i].([]byte)
			if !ok {
				continue // NULL, not in the image, or a partial-update diff
			}
			if len(doc) == 0 {
				row[i] = "" // an empty (invalid) document, as go-mysql returns it; see mysqltype
				continue
			}
			buf, err = mysqljson.AppendText(buf[:0], doc)
			if err != nil {
				return fmt.Errorf("decoding JSON column %d of %s.%s: %w", i+1, tm.Schema, tm.Table, err)
			}
			row[i] = string(buf)
		}
	}
	return nil
}

// decodeRowsRawJSON decodes a rows event leaving MySQL JSON documents as
// raw binary ([]byte) and returns the JSON columns' indexes (nil: none, or
// a partial update holding a diff, decoded as go-mysql does).
func decodeRowsRawJSON(e *replication.RowsEvent, data []byte) ([]int, error) {
	pos, err := e.DecodeHeader(data)
	if err != nil {
		return nil, err
	}
	if err := checkImages(e, pos, data); err != nil {
		return nil, err
	}
	tm := e.Table
	var jsonCols []int
	for i, t := range tm.ColumnType {
		if t == mysql.MYSQL_TYPE_JSON {
			jsonCols = append(jsonCols, i)
		}
	}
	if len(jsonCols) == 0 {
		return nil, e.DecodeData(pos, data)
	}
	// A partial update is the one update kind go-mysql's Type() does not
	// name; it has an after-image bitmap like every update.
	partial := e.ColumnBitmap2 != nil && e.Type() == replication.EnumRowsEventTypeUnknown
	if partial {
		// go-mysql's JSON decoding has no depth bound: a document whose
		// offsets point back into its own container recurses until the
		// stack overflows, which no recover catches (FuzzRowsDecode found
		// it). So every JSON value is read raw first and checked by
		// mysqljson, which bounds depth and offsets; only then may
		// go-mysql decode the event to find the diffs.
		if ok, err := checkPartialJSON(e, pos, data, jsonCols); err != nil || !ok {
			return nil, err
		}
		if err := e.DecodeData(pos, data); err != nil {
			return nil, err
		}
		for _, row := range e.Rows {
			for _, v := range row {
				if _, ok := v.(*replication.JsonDiff); ok {
					return nil, nil
				}
			}
		}
	}
	return jsonCols, decodeRaw(e, pos, data, jsonCols, partial)
}

// decodeRaw decodes the rows of e with its JSON columns (jsonCols) read as
// BLOBs: their values come out as the raw binary documents ([]byte).
func decodeRaw(e *replication.RowsEvent, pos int, data []byte, jsonCols []int, partial bool) error {
	tm := e.Table
	raw := *tm
	raw.ColumnType = append([]byte(nil), tm.ColumnType...)
	for _, i := range jsonCols {
		raw.ColumnType[i] = mysql.MYSQL_TYPE_BLOB
		if partial {
			raw.ColumnType = append(raw.ColumnType, mysql.MYSQL_TYPE_JSON)
		}
	}
	e.Table = &raw
	err := e.DecodeData(pos, data)
	e.Table = tm
	return err
}

// checkPartialJSON decodes the partial update e raw and reports whether
// every JSON value in it is a document mysqljson can read. A value that is
// not is a diff (binlog_row_value_options=PARTIAL_JSON) or a malformed
// document: it is left in e.Rows as an empty *replication.JsonDiff, so the
// reader refuses the event as ErrPartialJSON (naming the table, the column
// and the fix) before go-mysql's unbounded decoder sees it.
func checkPartialJSON(e *replication.RowsEvent, pos int, data []byte, jsonCols []int) (bool, error) {
	if err := decodeRaw(e, pos, data, jsonCols, true); err != nil {
		return false, err
	}
	ok := true
	var buf []byte
	for _, row := range e.Rows {
		for _, i := range jsonCols {
			if i >= len(row) {
				continue
			}
			doc, isDoc := row[i].([]byte)
			if !isDoc || len(doc) == 0 {
				continue
			}
			var err error
			if buf, err = mysqljson.AppendText(buf[:0], doc); err != nil {
				row[i], ok = &replication.JsonDiff{}, false
			}
		}
	}
	return ok, nil
}
