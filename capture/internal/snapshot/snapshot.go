// Package snapshot reads the captured tables' existing rows for capture's
// initial snapshot, without locks and without writing to the source.
//
// It provides the SQL side of a DBLog-style snapshot: the list of tables,
// primary-key ordered chunks (SELECT ... WHERE pk > ? ORDER BY pk LIMIT n),
// watermarks (the executed GTID set and the binlog file and offset, read
// with SHOW MASTER STATUS and @@gtid_binlog_pos / @@gtid_executed), and,
// for tables without a primary key, one consistent-snapshot transaction
// whose binlog position MariaDB reports (binlog_snapshot_file/pos).
//
// The stream package drives it: it reconciles each chunk with the binlog
// read between the chunk's watermarks and stores Progress with capture's
// position, in the same Kafka transaction as the rows it covers.
package snapshot

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/filter"
	"github.com/binlake/binlake/capture/internal/schemahist"
)

// Mode is capture's snapshot.mode (Debezium's names).
type Mode string

// Snapshot modes.
const (
	// ModeInitial snapshots when no position is stored, then streams.
	ModeInitial Mode = "initial"
	// ModeInitialOnly snapshots when no position is stored, then stops.
	ModeInitialOnly Mode = "initial_only"
	// ModeNoData reads no rows and streams from the current position.
	ModeNoData Mode = "no_data"
	// ModeNever reads no rows and streams from the configured start position.
	ModeNever Mode = "never"
	// ModeWhenNeeded snapshots when no position is stored or the stored
	// position is no longer in the binlog.
	ModeWhenNeeded Mode = "when_needed"
)

// ErrUnsupported reports a table the snapshot cannot read consistently.
var ErrUnsupported = errors.New("snapshot: unsupported table")

// Validate checks the mode name.
func (m Mode) Validate() error {
	switch m {
	case ModeInitial, ModeInitialOnly, ModeNoData, ModeNever, ModeWhenNeeded:
		return nil
	}
	return fmt.Errorf("snapshot-mode %q: want initial, initial_only, no_data, never or when_needed", m)
}

// ReadsData reports whether the mode snapshots rows when no position is stored.
func (m Mode) ReadsData() bool {
	return m == ModeInitial || m == ModeInitialOnly || m == ModeWhenNeeded
}

// TableID names a table with its database and its name kept apart: either
// may hold a dot (`a.b`.`c` is not `a`.`b.c`). It is stored as
// {"db":…,"table":…}; a stored "db.table" string (what capture stored
// before) still reads, split at its first dot as it was then.
type TableID struct {
	DB    string `json:"db"`
	Table string `json:"table"`
}

// String is "db.table", for logs, metrics and regexes over whole names
// (Debezium's data-collections); it is not an identity.
func (t TableID) String() string { return t.DB + "." + t.Table }

// UnmarshalJSON reads an object or an older "db.table" string.
func (t *TableID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		t.DB, t.Table = SplitTable(s)
		return nil
	}
	type plain TableID
	return json.Unmarshal(b, (*plain)(t))
}

// Progress is how far a snapshot got. It is stored with capture's position
// (in the same Kafka transaction as the rows it covers), so a restarted
// capture resumes at the chunk after the last one emitted.
type Progress struct {
	// Tables are the tables to read, in order.
	Tables []TableID `json:"tables"`
	// Table is the index in Tables of the table being read.
	Table int `json:"table"`
	// After is the primary key of the last row emitted from Tables[Table]
	// (nil: none yet), as the source returned it.
	After [][]byte `json:"after,omitempty"`
	// Rows is the number of rows emitted by the whole snapshot so far and
	// TableRows the number emitted from Tables[Table].
	Rows      int64 `json:"rows"`
	TableRows int64 `json:"table_rows"`
}

// Done reports whether every table has been read.
func (p *Progress) Done() bool { return p == nil || p.Table >= len(p.Tables) }

// SplitTable splits "db.table" at its first dot: only for names that
// carry no identity of their own (user input, progress stored before
// TableID); a dot in a database name makes it wrong.
func SplitTable(s string) (db, table string) {
	i := strings.IndexByte(s, '.')
	if i < 0 {
		return "", s
	}
	return s[:i], s[i+1:]
}

// ListTables returns the base tables the filter captures, sorted,
// skipping the server's own databases (schemahist.ListTables).
func ListTables(ctx context.Context, db *sql.DB, f *filter.Filter) ([]TableID, error) {
	tables, err := schemahist.ListTables(ctx, db, f.Table)
	if err != nil {
		return nil, err
	}
	var out []TableID
	for _, t := range tables {
		out = append(out, TableID{DB: t[0], Table: t[1]})
	}
	return out, nil
}

// EstimateRows returns information_schema.TABLES.TABLE_ROWS (an estimate).
func EstimateRows(ctx context.Context, db *sql.DB, schema, table string) int64 {
	var n sql.NullInt64
	_ = db.QueryRowContext(ctx, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, table).Scan(&n)
	return n.Int64
}

// Watermark returns the server's binlog position now: the executed GTID
// set and SHOW MASTER STATUS. It needs only REPLICATION CLIENT / BINLOG
// MONITOR and writes nothing, so it works for a read-only user on a replica.
func Watermark(ctx context.Context, db *sql.DB, flavor binlog.Flavor) (binlog.Position, error) {
	p := binlog.Position{Flavor: flavor}
	q := "SELECT @@gtid_executed"
	if flavor == binlog.FlavorMariaDB {
		q = "SELECT @@gtid_binlog_pos"
	}
	if err := db.QueryRowContext(ctx, q).Scan(&p.GTIDSet); err != nil {
		return p, fmt.Errorf("reading the watermark: %w", err)
	}
	p.GTIDSet = strings.ReplaceAll(strings.TrimSpace(p.GTIDSet), "\n", "")
	rows, err := db.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		rows, err = db.QueryContext(ctx, "SHOW BINARY LOG STATUS")
		if err != nil {
			return p, fmt.Errorf("reading the watermark: %w", err)
		}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return p, err
	}
	if rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return p, err
		}
		p.File = string(vals[0])
		if _, err := fmt.Sscanf(string(vals[1]), "%d", &p.Pos); err != nil {
			return p, fmt.Errorf("parsing binlog offset %q: %w", vals[1], err)
		}
	}
	return p, rows.Err()
}

// Reached reports whether a reader at read has read everything up to
// mark: by GTID set when both have one, else by binlog file and offset.
func Reached(read, mark binlog.Position) bool {
	if mark.GTIDSet != "" {
		rs, err1 := binlog.ParseGTIDSet(read.Flavor, read.GTIDSet)
		ms, err2 := binlog.ParseGTIDSet(mark.Flavor, mark.GTIDSet)
		if err1 == nil && err2 == nil {
			return rs.Contain(ms)
		}
	}
	if mark.File == "" {
		return true
	}
	return ComparePos(read, mark) >= 0
}

// Same reports whether a and b are the same point of the binlog.
func Same(a, b binlog.Position) bool {
	if a.GTIDSet != "" || b.GTIDSet != "" {
		return Reached(a, b) && Reached(b, a)
	}
	return ComparePos(a, b) == 0
}

// ComparePos compares binlog file and offset (-1, 0, 1).
func ComparePos(a, b binlog.Position) int {
	return mysql.Position{Name: a.File, Pos: a.Pos}.Compare(mysql.Position{Name: b.File, Pos: b.Pos})
}

// Chunk is one primary-key ordered read of a table.
type Chunk struct {
	// Rows are the rows in column order, values as the text protocol
	// returns them ([]byte, nil for NULL).
	Rows [][]any
	// Keys are the primary-key values of each row.
	Keys [][][]byte
	// Last reports that the table has no rows after this chunk.
	Last bool
}

// ReadChunk reads up to n rows of db.table with a primary key greater than
// after (nil: from the first), in key order. columns are all the table's
// columns in order and pk the primary key columns. It takes no locks: a
// plain autocommit SELECT reads an InnoDB snapshot.
func ReadChunk(ctx context.Context, db *sql.DB, schema, table string, columns, pk []string, after [][]byte, n int) (Chunk, error) {
	var q strings.Builder
	q.WriteString("SELECT ")
	for i, c := range columns {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(quote(c))
	}
	q.WriteString(" FROM " + quote(schema) + "." + quote(table))
	var args []any
	if after != nil {
		// (a, b) > (x, y) spelled out so that the optimizer uses a range
		// on the primary key: a > x OR (a = x AND b > y).
		q.WriteString(" WHERE ")
		for i := range pk {
			if i > 0 {
				q.WriteString(" OR ")
			}
			q.WriteString("(")
			for j := 0; j < i; j++ {
				q.WriteString(quote(pk[j]) + " = ? AND ")
				args = append(args, after[j])
			}
			q.WriteString(quote(pk[i]) + " > ?)")
			args = append(args, after[i])
		}
	}
	q.WriteString(" ORDER BY ")
	for i, c := range pk {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(quote(c))
	}
	fmt.Fprintf(&q, " LIMIT %d", n)
	keyIdx := make([]int, len(pk))
	for i, k := range pk {
		keyIdx[i] = -1
		for j, c := range columns {
			if c == k {
				keyIdx[i] = j
			}
		}
		if keyIdx[i] < 0 {
			return Chunk{}, fmt.Errorf("reading %s.%s: primary key column %s not among the columns", schema, table, k)
		}
	}
	rows, err := db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return Chunk{}, fmt.Errorf("reading a chunk of %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	c := Chunk{Rows: make([][]any, 0, min(n, 1<<16)), Keys: make([][][]byte, 0, min(n, 1<<16))}
	sc := newScanner(len(columns))
	var keys [][]byte // the chunk's keys, handed out key by key
	for rows.Next() {
		row, err := sc.scan(rows)
		if err != nil {
			return Chunk{}, fmt.Errorf("reading a chunk of %s.%s: %w", schema, table, err)
		}
		if len(keys) < len(keyIdx) {
			keys = make([][]byte, len(keyIdx)*slabRows)
		}
		key := keys[:len(keyIdx):len(keyIdx)]
		keys = keys[len(keyIdx):]
		for i, j := range keyIdx {
			b, _ := row[j].([]byte)
			key[i] = b
		}
		c.Rows = append(c.Rows, row)
		c.Keys = append(c.Keys, key)
	}
	if err := rows.Err(); err != nil {
		return Chunk{}, fmt.Errorf("reading a chunk of %s.%s: %w", schema, table, err)
	}
	c.Last = len(c.Rows) < n
	return c, nil
}

// scanner copies the rows of a query out of the driver's buffer. The
// values of many rows share allocations (slabs of slabRows rows for the
// []any, of slabBytes for the bytes), and the Scan destinations are
// reused, so a row costs its values' boxes and little else: the snapshot
// reads every row of every table through it. A row's values are never
// written again once handed out; a slab lives as long as any of its rows.
type scanner struct {
	raw   []sql.RawBytes
	ptrs  []any
	vals  []any  // free part of the current []any slab
	bytes []byte // free part of the current byte slab
}

const (
	slabRows  = 256
	slabBytes = 64 << 10
)

func newScanner(n int) *scanner {
	sc := &scanner{raw: make([]sql.RawBytes, n), ptrs: make([]any, n)}
	for i := range sc.raw {
		sc.ptrs[i] = &sc.raw[i]
	}
	return sc
}

// scan reads the current row: values in column order, []byte or nil for
// NULL; the row's capacity is its length.
func (sc *scanner) scan(rows *sql.Rows) ([]any, error) {
	if err := rows.Scan(sc.ptrs...); err != nil {
		return nil, err
	}
	n := len(sc.raw)
	size := 0
	for _, b := range sc.raw {
		size += len(b)
	}
	if len(sc.bytes) < size || sc.bytes == nil {
		// Never nil, even for a row of empty values: an empty value is
		// []byte{}, NULL alone is nil.
		sc.bytes = make([]byte, max(size, slabBytes))
	}
	buf := sc.bytes[:size:size]
	sc.bytes = sc.bytes[size:]
	if len(sc.vals) < n {
		sc.vals = make([]any, n*slabRows)
	}
	row := sc.vals[:n:n]
	sc.vals = sc.vals[n:]
	off := 0
	for i, b := range sc.raw {
		if b != nil {
			end := off + copy(buf[off:], b)
			row[i] = buf[off:end:end]
			off = end
		}
	}
	return row, nil
}

func quote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// Consistent is an open consistent-snapshot transaction over one table
// without a primary key: its rows are exactly those of the binlog
// position At. Close it when done.
type Consistent struct {
	conn *sql.Conn
	tx   *sql.Tx
	// At is the binlog position the snapshot is consistent with.
	At binlog.Position
}

// OpenConsistent starts START TRANSACTION WITH CONSISTENT SNAPSHOT on
// MariaDB and reads the position it is consistent with from
// binlog_snapshot_file/pos (lock-free on MariaDB). MySQL reports no such
// position without FLUSH TABLES WITH READ LOCK: ErrUnsupported.
func OpenConsistent(ctx context.Context, db *sql.DB, flavor binlog.Flavor) (*Consistent, error) {
	if flavor != binlog.FlavorMariaDB {
		return nil, fmt.Errorf("%w: tables without a primary key are snapshotted only on MariaDB (MySQL has no lock-free consistent binlog position); add a primary key or exclude the table", ErrUnsupported)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	c := &Consistent{conn: conn, At: binlog.Position{Flavor: flavor}}
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		conn.Close()
		return nil, fmt.Errorf("starting a consistent snapshot: %w", err)
	}
	rows, err := conn.QueryContext(ctx, "SHOW STATUS LIKE 'binlog_snapshot_%'")
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("reading the snapshot position: %w", err)
	}
	for rows.Next() {
		var name, val string
		if err := rows.Scan(&name, &val); err != nil {
			rows.Close()
			c.Close()
			return nil, err
		}
		switch strings.ToLower(name) {
		case "binlog_snapshot_file":
			c.At.File = val
		case "binlog_snapshot_position":
			_, _ = fmt.Sscanf(val, "%d", &c.At.Pos)
		}
	}
	rows.Close()
	if c.At.File == "" {
		c.Close()
		return nil, fmt.Errorf("%w: the server reports no binlog_snapshot_file", ErrUnsupported)
	}
	var gtid sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", c.At.File, c.At.Pos).Scan(&gtid); err == nil {
		c.At.GTIDSet = gtid.String
	}
	return c, nil
}

// Rows reads the whole table in the snapshot; call fn for each row.
func (c *Consistent) Rows(ctx context.Context, schema, table string, columns []string, fn func(row []any) error) error {
	var q strings.Builder
	q.WriteString("SELECT ")
	for i, col := range columns {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(quote(col))
	}
	q.WriteString(" FROM " + quote(schema) + "." + quote(table))
	rows, err := c.conn.QueryContext(ctx, q.String())
	if err != nil {
		return fmt.Errorf("reading %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	sc := newScanner(len(columns))
	for rows.Next() {
		row, err := sc.scan(rows)
		if err != nil {
			return fmt.Errorf("reading %s.%s: %w", schema, table, err)
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Close ends the transaction and releases the connection.
func (c *Consistent) Close() {
	_, _ = c.conn.ExecContext(context.Background(), "COMMIT")
	_ = c.conn.Close()
}

// BinlogHas reports whether the server still has the binlog of p: its
// file is listed by SHOW BINARY LOGS and, on MySQL, no GTID it lacks has
// been purged.
func BinlogHas(ctx context.Context, db *sql.DB, p binlog.Position) (bool, error) {
	if p.Flavor == binlog.FlavorMySQL && p.GTIDSet != "" {
		var purged string
		if err := db.QueryRowContext(ctx, "SELECT @@gtid_purged").Scan(&purged); err != nil {
			return false, fmt.Errorf("reading gtid_purged: %w", err)
		}
		purged = strings.ReplaceAll(strings.TrimSpace(purged), "\n", "")
		if purged != "" {
			ps, err1 := binlog.ParseGTIDSet(p.Flavor, purged)
			ss, err2 := binlog.ParseGTIDSet(p.Flavor, p.GTIDSet)
			if err1 == nil && err2 == nil && !ss.Contain(ps) {
				return false, nil
			}
		}
	}
	if p.File == "" {
		return true, nil
	}
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return false, fmt.Errorf("listing binary logs: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return false, err
	}
	found := false
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return false, err
		}
		if string(vals[0]) == p.File {
			found = true
		}
	}
	return found, rows.Err()
}
