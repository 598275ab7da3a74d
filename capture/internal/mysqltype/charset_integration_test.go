//go:build integration

package mysqltype

import (
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/binlake/binlake/test/testenv"
)

// TestCharsetsAgainstServer decodes, for every character set the server
// offers, every byte sequence of one and two bytes (and the three-byte
// JIS X 0212 sequences of ujis/eucjpms), and compares the result with the
// server's CONVERT(... USING utf8mb4). The server is the oracle: a
// sequence it converts to a character must decode to the same character;
// one it cannot convert (it gives '?') must not decode to anything else
// than an error. The Unicode sets are checked on a sample of every plane.
func TestCharsetsAgainstServer(t *testing.T) {
	env := testenv.MariaDBEnv(t)
	db := env.AdminDB(t, env.CreateDatabase(t, "cs")) // the SEQUENCE engine's seq_* tables need a database
	rows, err := db.QueryContext(t.Context(), "SELECT CHARACTER_SET_NAME, MAXLEN FROM information_schema.CHARACTER_SETS ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	type set struct {
		name   string
		maxlen int
	}
	var sets []set
	for rows.Next() {
		var s set
		if err := rows.Scan(&s.name, &s.maxlen); err != nil {
			t.Fatal(err)
		}
		sets = append(sets, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, s := range sets {
		t.Run(s.name, func(t *testing.T) {
			cs, ok := lookupCharset(s.name)
			if !ok {
				t.Skipf("%s: not decodable (ErrUnsupportedCharset, tested by TestUnsupportedCharset)", s.name)
			}
			checked++
			switch s.name {
			case "ucs2", "utf16", "utf16le", "utf32":
				checkUnicodeSet(t, db, cs)
				return
			case "binary":
				return // no conversion: only UTF-8 is accepted (unit-tested)
			}
			n := 0
			n += compareRange(t, db, cs, "seq_0_to_255", "LPAD(HEX(seq),2,'0')")
			if s.maxlen > 1 {
				n += compareRange(t, db, cs, "seq_32768_to_65535", "LPAD(HEX(seq),4,'0')")
			}
			if s.name == "ujis" || s.name == "eucjpms" {
				n += compareRange(t, db, cs, "seq_41377_to_65278", "CONCAT('8F',HEX(seq))")
			}
			t.Logf("%s: %d sequences agree with the server", s.name, n)
		})
	}
	t.Logf("CHARSETS checked=%d of %d offered", checked, len(sets))
}

// compareRange compares the decoding of the sequences hexExpr(seq) over a
// sequence table with the server's conversion.
func compareRange(t *testing.T, db *sql.DB, cs *charset, seqTable, hexExpr string) int {
	t.Helper()
	q := fmt.Sprintf("SELECT %[1]s, HEX(CONVERT(CONVERT(UNHEX(%[1]s) USING %[2]s) USING utf8mb4)) FROM %[3]s", hexExpr, cs.name, seqTable)
	rows, err := db.QueryContext(t.Context(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	agree, bad, refused := 0, 0, 0
	for rows.Next() {
		var in, want string
		if err := rows.Scan(&in, &want); err != nil {
			t.Fatal(err)
		}
		b, _ := hex.DecodeString(in)
		w, _ := hex.DecodeString(want)
		got, err := cs.decode(b)
		serverRejects := strings.Count(string(w), "?") > strings.Count(string(b), "?")
		switch {
		case serverRejects && err != nil:
			agree++
		case serverRejects:
			// The server cannot store such bytes in the column; decoding
			// them is harmless but noted.
		case errors.Is(err, errNotExact):
			refused++ // documented: capture stops on these rather than guess
		case err != nil:
			bad++
			if bad <= 20 {
				t.Errorf("%s %s: server gives %q (%X), capture fails: %v", cs.name, in, w, w, err)
			}
		case got != string(w):
			bad++
			if bad <= 20 {
				t.Errorf("%s %s: server gives %q (%X), capture %q (%X)", cs.name, in, w, w, got, got)
			}
		default:
			agree++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if refused > 0 {
		t.Logf("%s: %d sequences of %s refused (errNotExact)", cs.name, refused, seqTable)
	}
	if bad > 0 {
		t.Errorf("%s: %d sequences of %s differ from the server", cs.name, bad, seqTable)
	}
	return agree
}

// checkUnicodeSet has the server encode sample code points of every plane
// in the set and decodes them back.
func checkUnicodeSet(t *testing.T, db *sql.DB, cs *charset) {
	t.Helper()
	var b strings.Builder
	var cps []rune
	for r := rune(0x20); r <= 0x10FFFF; r += 0x3F1 {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		if cs.name == "ucs2" && r > 0xFFFF {
			break
		}
		cps = append(cps, r)
	}
	cps = append(cps, 0xFFFD, 0xE9, 0x20AC)
	if cs.name != "ucs2" {
		cps = append(cps, 0x1F600, 0x10FFFF)
	}
	for _, r := range cps {
		b.WriteRune(r)
	}
	var enc string
	q := fmt.Sprintf("SELECT HEX(CONVERT(_utf8mb4 X'%X' USING %s))", []byte(b.String()), cs.name)
	if err := db.QueryRowContext(t.Context(), q).Scan(&enc); err != nil {
		t.Fatal(err)
	}
	raw, _ := hex.DecodeString(enc)
	got, err := cs.decode(raw)
	if err != nil {
		t.Fatalf("%s: %v", cs.name, err)
	}
	if got != b.String() {
		t.Errorf("%s: %d code points do not round-trip through the server", cs.name, len(cps))
	}
	t.Logf("%s: %d code points agree with the server", cs.name, len(cps))
}
