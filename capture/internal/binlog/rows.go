package binlog

import (
	"slices"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// rowsDecoder decodes rows events into the values go-mysql gives, without
// two costs go-mysql pays for every value or row, which made up about a
// sixth of capture's CPU when streaming a table with DATETIME(6) and
// TIMESTAMP(3) columns:
//
//   - DATETIME(n) and TIMESTAMP(n) (the binlog's DATETIME2 and TIMESTAMP2):
//     go-mysql renders them with fmt.Sprintf and time.Format through a
//     boxed value. They are decoded here as what go-mysql's BIT decoding
//     of the same width gives, the big-endian integer of their bytes, and
//     rendered into the very text go-mysql renders (formatDatetime2 and
//     formatTimestamp2 below; TestRowsDecoderEqualsGoMySQL compares them
//     on every fraction width, edge and random value).
//   - The signedness map go-mysql builds for every row image
//     (TableMapEvent.UnsignedMap): the table map the values are decoded
//     with carries no signedness, so integers come out as they do from a
//     server with binlog_row_metadata=MINIMAL, signed Go types, which
//     mysqltype's converters read as the same values (an unsigned
//     column's negative value has its bits reinterpreted).
//
// Events, tables and every other value are left as go-mysql decodes them.
// The decoding table map is derived once per table map event: the rows
// events of one statement share go-mysql's decoded table map.
type rowsDecoder struct {
	loc *time.Location // go-mysql's TimestampStringLocation

	mu       sync.Mutex
	tm       *replication.TableMapEvent // the table map raw was derived from
	raw      *replication.TableMapEvent // the decoding table map
	temporal []temporalColumn           // the columns raw reads as integers
}

type temporalColumn struct {
	idx   int
	typ   byte // mysql.MYSQL_TYPE_DATETIME2 or mysql.MYSQL_TYPE_TIMESTAMP2
	dec   int  // fraction digits (0-6)
	bytes int  // stored width
}

func newRowsDecoder(loc *time.Location) *rowsDecoder { return &rowsDecoder{loc: loc} }

// decode is a replication.BinlogSyncerConfig.RowsEventDecodeFunc.
func (d *rowsDecoder) decode(e *replication.RowsEvent, data []byte) error {
	pos, err := e.DecodeHeader(data)
	if err != nil {
		return err
	}
	if err := checkImages(e, pos, data); err != nil {
		return err
	}
	tm := e.Table
	if tm == nil {
		return e.DecodeData(pos, data) // no table map: go-mysql reports it
	}
	if e.ColumnBitmap2 != nil && e.Type() == replication.EnumRowsEventTypeUnknown || slices.Contains(tm.ColumnType, mysql.MYSQL_TYPE_JSON) {
		// A MySQL partial update, or MySQL's binary JSON (MariaDB logs
		// its JSON as LONGTEXT): never go-mysql's JSON decoding, which
		// has no depth bound (a document pointing into itself overflows
		// the stack, fatally: FuzzRowsDecode), but decodeRows, which reads
		// the documents with mysqljson.
		return decodeRows(e, data)
	}
	raw, temporal := d.decodingMap(tm)
	e.Table = raw
	err = e.DecodeData(pos, data)
	e.Table = tm
	if err != nil {
		return err
	}
	if len(temporal) == 0 {
		return nil
	}
	var buf [64]byte
	for _, row := range e.Rows {
		for _, c := range temporal {
			if c.idx >= len(row) {
				continue
			}
			v, ok := row[c.idx].(int64)
			if !ok {
				continue // NULL or not in the image
			}
			if c.typ == mysql.MYSQL_TYPE_DATETIME2 {
				row[c.idx] = string(formatDatetime2(buf[:0], uint64(v), c.bytes, c.dec))
			} else {
				row[c.idx] = string(formatTimestamp2(buf[:0], uint64(v), c.bytes, c.dec, d.loc))
			}
		}
	}
	return nil
}

// decodingMap returns the table map to decode tm's rows with, and the
// temporal columns it reads as integers.
func (d *rowsDecoder) decodingMap(tm *replication.TableMapEvent) (*replication.TableMapEvent, []temporalColumn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tm == tm {
		return d.raw, d.temporal
	}
	raw := *tm
	raw.SignednessBitmap = nil
	raw.ColumnType = append([]byte(nil), tm.ColumnType...)
	raw.ColumnMeta = append([]uint16(nil), tm.ColumnMeta...)
	var temporal []temporalColumn
	for i, t := range tm.ColumnType {
		if i >= len(tm.ColumnMeta) || tm.ColumnMeta[i] > 6 {
			continue
		}
		dec := int(tm.ColumnMeta[i])
		var n int
		switch t {
		case mysql.MYSQL_TYPE_DATETIME2:
			n = 5 + (dec+1)/2
		case mysql.MYSQL_TYPE_TIMESTAMP2:
			n = 4 + (dec+1)/2
		default:
			continue
		}
		// BIT of n whole bytes: go-mysql reads n bytes as a big-endian
		// integer (decodeBit), exactly the width of the stored value.
		raw.ColumnType[i] = mysql.MYSQL_TYPE_BIT
		raw.ColumnMeta[i] = uint16(n) << 8
		temporal = append(temporal, temporalColumn{idx: i, typ: t, dec: dec, bytes: n})
	}
	d.tm, d.raw, d.temporal = tm, &raw, temporal
	return d.raw, d.temporal
}

// datetimefIntOfs is MySQL's DATETIMEF_INT_OFS: the offset of the packed
// integer part of a DATETIME2.
const datetimefIntOfs = 0x8000000000

// fraction returns the microseconds of a temporal value's fraction bytes
// (the low fb bytes of v), as go-mysql scales them for dec digits.
func fraction(v uint64, fb, dec int) int64 {
	f := int64(v & (1<<(8*fb) - 1))
	switch dec {
	case 1, 2:
		return f * 10000
	case 3, 4:
		return f * 100
	case 5, 6:
		return f
	}
	return 0
}

// formatDatetime2 appends the text go-mysql's decodeDatetime2 gives (with
// ParseTime off) for the n-byte DATETIME2 value v of dec digits.
func formatDatetime2(dst []byte, v uint64, n, dec int) []byte {
	fb := n - 5
	intPart := int64(v>>(8*fb)) - datetimefIntOfs
	frac := fraction(v, fb, dec)
	if intPart == 0 {
		return appendZeroTime(dst, frac, dec)
	}
	tmp := intPart<<24 + frac
	if tmp < 0 {
		tmp = -tmp
	}
	ymdhms := tmp >> 24
	ymd := ymdhms >> 17
	ym := ymd >> 5
	hms := ymdhms % (1 << 17)
	dst = appendDigits(dst, ym/13, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, ym%13, 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, ymd%(1<<5), 2)
	dst = append(dst, ' ')
	dst = appendDigits(dst, hms>>12, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, (hms>>6)%(1<<6), 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, hms%(1<<6), 2)
	return appendFraction(dst, frac, dec)
}

// formatTimestamp2 appends the text go-mysql's decodeTimestamp2 and
// fracTime.String give for the n-byte TIMESTAMP2 value v of dec digits,
// rendered in loc.
func formatTimestamp2(dst []byte, v uint64, n, dec int, loc *time.Location) []byte {
	fb := n - 4
	sec := int64(v >> (8 * fb))
	usec := fraction(v, fb, dec)
	if sec == 0 {
		return appendZeroTime(dst, usec, dec)
	}
	t := time.Unix(sec, usec*1000)
	if loc != time.UTC {
		if loc != nil {
			t = t.In(loc)
		}
		return t.AppendFormat(dst, timestampLayouts[dec])
	}
	// UTC (capture's setting): the layout's fields written directly,
	// cheaper than AppendFormat. A TIMESTAMP2's seconds are a uint32, so
	// the year has 4 digits, as the layout's 2006 writes it.
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, sc := t.Clock()
	dst = appendDigits(dst, int64(y), 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, int64(mo), 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, int64(d), 2)
	dst = append(dst, ' ')
	dst = appendDigits(dst, int64(h), 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, int64(mi), 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, int64(sc), 2)
	if dec == 0 {
		return dst
	}
	// The layout's .000… is the first dec of the nanoseconds' 9 digits.
	dst = appendDigits(append(dst, '.'), int64(t.Nanosecond()), 9)
	return dst[:len(dst)-(9-dec)]
}

// timestampLayouts are go-mysql's fracTimeFormat.
var timestampLayouts = [7]string{
	"2006-01-02 15:04:05",
	"2006-01-02 15:04:05.0",
	"2006-01-02 15:04:05.00",
	"2006-01-02 15:04:05.000",
	"2006-01-02 15:04:05.0000",
	"2006-01-02 15:04:05.00000",
	"2006-01-02 15:04:05.000000",
}

// appendZeroTime is go-mysql's formatZeroTime.
func appendZeroTime(dst []byte, frac int64, dec int) []byte {
	return appendFraction(append(dst, "0000-00-00 00:00:00"...), frac, dec)
}

// appendFraction appends fmt's ".%06d" of frac without its last 6-dec
// characters, nothing for dec 0: go-mysql's rendering of fractions.
func appendFraction(dst []byte, frac int64, dec int) []byte {
	if dec == 0 {
		return dst
	}
	dst = appendDigits(append(dst, '.'), frac, 6)
	return dst[:len(dst)-(6-dec)]
}

// appendDigits appends fmt's %0<width>d of n: zeros after the sign up to
// width characters. (A DATETIME2 whose stored integer part is out of
// range renders with negative fields in go-mysql, and so here.)
func appendDigits(dst []byte, n int64, width int) []byte {
	u := uint64(n)
	if n < 0 {
		dst = append(dst, '-')
		u = uint64(-n)
		width--
	}
	var b [20]byte
	i := len(b)
	for u >= 10 {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
	}
	i--
	b[i] = byte('0' + u)
	for w := len(b) - i; w < width; w++ {
		dst = append(dst, '0')
	}
	return append(dst, b[i:]...)
}
