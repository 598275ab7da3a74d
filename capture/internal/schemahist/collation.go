package schemahist

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Collations maps a collation id, as table map events carry it, to its
// character set name.
type Collations map[uint64]string

// Charset returns the character set of a collation id ("" if unknown).
func (c Collations) Charset(id uint64) string { return c[id] }

// LoadCollations reads the server's collation ids. MariaDB 10.10+ lists
// the ids of its per-charset UCA 14 collations in
// COLLATION_CHARACTER_SET_APPLICABILITY only; MySQL and older MariaDB in
// COLLATIONS.
func LoadCollations(ctx context.Context, db *sql.DB) (Collations, error) {
	out := Collations{}
	read := func(q string) error {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id uint64
			var cs string
			if err := rows.Scan(&id, &cs); err != nil {
				return err
			}
			out[id] = strings.ToLower(cs)
		}
		return rows.Err()
	}
	if err := read(`SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATIONS WHERE ID IS NOT NULL`); err != nil {
		return nil, fmt.Errorf("reading the server's collations: %w", err)
	}
	// MariaDB only; MySQL has no ID column there.
	_ = read(`SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE ID IS NOT NULL`)
	return out, nil
}

// tableMapCharsets returns the character set of each string, ENUM and SET
// column of a table map event (binlog_row_metadata=FULL), by column index;
// nil without metadata or collations.
func tableMapCharsets(tm *replication.TableMapEvent, colls Collations) map[int]string {
	if len(colls) == 0 {
		return nil
	}
	out := map[int]string{}
	for _, m := range []map[int]uint64{tm.CollationMap(), tm.EnumSetCollationMap()} {
		for i, id := range m {
			if cs := colls.Charset(id); cs != "" {
				out[i] = cs
			}
		}
	}
	return out
}

// MatchesCharsets checks the character sets of a table map event's string,
// ENUM and SET columns against the definition, so that rows written before
// a charset-changing ALTER are never decoded with the charset of after it.
func (t *Table) MatchesCharsets(tm *replication.TableMapEvent, colls Collations) error {
	for i, cs := range tableMapCharsets(tm, colls) {
		if i >= len(t.Def.Columns) || cs == "binary" {
			continue // binary columns: the type (VARBINARY, BLOB) tells
		}
		have := normCharset(t.Def.Columns[i].Charset)
		if have != "" && have != normCharset(cs) {
			return fmt.Errorf("%w: %s.%s column %s is in character set %s in the binlog, %s in the definition",
				ErrSchemaMismatch, t.Def.DB, t.Def.Table, t.Def.Columns[i].Name, cs, have)
		}
	}
	return nil
}

func normCharset(cs string) string {
	cs = strings.ToLower(cs)
	if cs == "utf8" {
		return "utf8mb3"
	}
	return cs
}
