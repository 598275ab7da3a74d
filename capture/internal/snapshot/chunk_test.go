package snapshot

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// textDriver is a database/sql driver whose every query returns rows of
// text values, as MariaDB's text protocol gives them: the values are
// []byte in a buffer the next row overwrites (as go-sql-driver/mysql
// does), NULL is nil. Row i is rowText(i).
type textDriver struct{}

func init() { sql.Register("snapshot-text", textDriver{}) }

func (textDriver) Open(name string) (driver.Conn, error) {
	n, err := strconv.Atoi(name)
	return textConn{n}, err
}

type textConn struct{ rows int }

// textCache holds rowText's rows, built once so that the benchmark
// measures the reading.
var textCache [][]string

func cachedRow(i int) []string {
	for len(textCache) <= i {
		textCache = append(textCache, rowText(len(textCache)))
	}
	return textCache[i]
}

func (textConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (textConn) Close() error                        { return nil }
func (textConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }

func (c textConn) QueryContext(context.Context, string, []driver.NamedValue) (driver.Rows, error) {
	return &textRows{n: c.rows}, nil
}

var textColumns = []string{"id", "customer_id", "status", "amount", "currency", "note", "created_at", "updated_at", "flags", "attrs"}

// rowText is row i's values; note is NULL on every 7th row and ” on
// every 11th.
func rowText(i int) []string {
	id := strconv.Itoa(i + 1)
	note := "order " + id + " 0f3c5e2a9b1d4c7e8f6a5b4c3d2e1f00"
	switch {
	case i%7 == 0:
		note = "\x00NULL"
	case i%11 == 0:
		note = ""
	}
	return []string{id, "3975", "paid", "12345.67", "EUR", note, "2024-02-19 02:23:44.242424",
		"2024-07-20 02:23:44.000", "184", `{"k": ` + id + `, "tag": "9e107d9d372bb6826bd81d3542a419d6"}`}
}

type textRows struct {
	n, i int
	buf  []byte
}

func (r *textRows) Columns() []string { return textColumns }
func (r *textRows) Close() error      { return nil }

func (r *textRows) Next(dest []driver.Value) error {
	if r.i >= r.n {
		return io.EOF
	}
	r.buf = r.buf[:0] // overwriting the previous row's bytes, as the driver's reused buffer does
	vals := cachedRow(r.i)
	for i, v := range vals {
		if v == "\x00NULL" {
			dest[i] = nil
			continue
		}
		start := len(r.buf)
		r.buf = append(r.buf, v...)
		dest[i] = r.buf[start:len(r.buf):len(r.buf)]
	}
	r.i++
	return nil
}

func TestReadChunkCopiesRows(t *testing.T) {
	const n = 1000
	db, err := sql.Open("snapshot-text", strconv.Itoa(n))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := ReadChunk(t.Context(), db, "d", "orders", textColumns, []string{"id"}, nil, n+1)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Last || len(c.Rows) != n || len(c.Keys) != n {
		t.Fatalf("last %v, %d rows, %d keys", c.Last, len(c.Rows), len(c.Keys))
	}
	for i, row := range c.Rows {
		want := make([]any, len(textColumns))
		for j, v := range rowText(i) {
			if v != "\x00NULL" {
				want[j] = []byte(v)
			}
		}
		if d := cmp.Diff(want, row); d != "" {
			t.Fatalf("row %d (-want +got):\n%s", i, d)
		}
		if b, _ := row[5].([]byte); i%7 != 0 && i%11 == 0 && b == nil {
			t.Fatalf("row %d: '' read as NULL", i)
		}
		if d := cmp.Diff([][]byte{[]byte(strconv.Itoa(i + 1))}, c.Keys[i]); d != "" {
			t.Fatalf("key %d (-want +got):\n%s", i, d)
		}
		if cap(row) != len(row) {
			t.Fatalf("row %d: capacity %d beyond its %d values", i, cap(row), len(row))
		}
	}
}

// BenchmarkReadChunk reads chunks of 10,000 rows of test/bench's orders
// table from textDriver; per op is per row.
func BenchmarkReadChunk(b *testing.B) {
	const n = 10_000
	db, err := sql.Open("snapshot-text", strconv.Itoa(n))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadChunk(b.Context(), db, "d", "orders", textColumns, []string{"id"}, nil, n); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}
