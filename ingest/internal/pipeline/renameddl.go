package pipeline

import (
	"strings"
	"unicode"
)

// tableName is a source table: database and table.
type tableName struct{ DB, Table string }

// renamePair is one rename of a statement, in the order the server applies
// them (RENAME TABLE a TO b, c TO a renames a first).
type renamePair struct {
	From, To tableName
	// FromQualified says the old name named its database; an unqualified
	// one is in the session's database, which the event does not carry.
	FromQualified bool
	// ToQualified says the new name named its database.
	ToQualified bool
	// Idx is the pair's place in its statement (renamesOf): renames of one
	// statement share its binlog position.
	Idx int
}

// parseRenames returns the table renames of a DDL statement: RENAME
// TABLE[S] [IF EXISTS] a [WAIT n|NOWAIT] TO b [, c TO d ...] and ALTER
// [ONLINE] [IGNORE] TABLE [IF EXISTS] a [WAIT n|NOWAIT] ... RENAME [TO|AS]
// b ... (with other clauses before or after). Unqualified names are in db.
// Any other statement returns nil.
func parseRenames(ddl, db string) []renamePair {
	toks := ddlTokens(ddl)
	t := &tokens{toks: toks}
	qualified := false
	name := func() (tableName, bool) {
		qualified = false
		first, ok := t.ident()
		if !ok {
			return tableName{}, false
		}
		if t.peek() == "." {
			qualified = true
			t.i++
			second, ok := t.ident()
			if !ok {
				return tableName{}, false
			}
			return tableName{first, second}, true
		}
		return tableName{db, first}, true
	}
	skipWait := func() {
		switch {
		case t.kw("WAIT"):
			t.i++ // the seconds
		case t.kw("NOWAIT"):
		}
	}
	switch {
	case t.kw("RENAME"):
		if !t.kw("TABLE") && !t.kw("TABLES") {
			return nil
		}
		if t.kw("IF") && !t.kw("EXISTS") {
			return nil
		}
		var out []renamePair
		for {
			from, ok := name()
			if !ok {
				return nil
			}
			fromQ := qualified
			skipWait()
			if !t.kw("TO") {
				return nil
			}
			to, ok := name()
			if !ok {
				return nil
			}
			out = append(out, renamePair{From: from, To: to, FromQualified: fromQ, ToQualified: qualified})
			if t.peek() != "," {
				return out
			}
			t.i++
		}
	case t.kw("ALTER"):
		t.kw("ONLINE")
		t.kw("IGNORE")
		if !t.kw("TABLE") {
			return nil
		}
		if t.kw("IF") && !t.kw("EXISTS") {
			return nil
		}
		from, ok := name()
		if !ok {
			return nil
		}
		fromQ := qualified
		skipWait()
		clauseStart := t.i
		// Find RENAME [TO|AS] name among the top-level clauses; RENAME
		// COLUMN/INDEX/KEY rename something else.
		depth := 0
		for t.i < len(t.toks) {
			tok := t.toks[t.i]
			switch tok {
			case "(":
				depth++
			case ")":
				depth--
			}
			if depth == 0 && strings.EqualFold(tok, "RENAME") && (t.i == clauseStart || t.toks[t.i-1] == ",") {
				t.i++
				next := strings.ToUpper(t.peek())
				if next == "COLUMN" || next == "INDEX" || next == "KEY" {
					continue
				}
				if !t.kw("TO") {
					t.kw("AS")
				}
				to, ok := name()
				if !ok {
					return nil
				}
				return []renamePair{{From: from, To: to, FromQualified: fromQ, ToQualified: qualified}}
			}
			t.i++
		}
	}
	return nil
}

type tokens struct {
	toks []string
	i    int
}

func (t *tokens) peek() string {
	if t.i < len(t.toks) {
		return t.toks[t.i]
	}
	return ""
}

// kw consumes the keyword w if it is next.
func (t *tokens) kw(w string) bool {
	if t.i < len(t.toks) && strings.EqualFold(t.toks[t.i], w) {
		t.i++
		return true
	}
	return false
}

// ident consumes a name: a backquoted token (quotes removed, doubled
// backquotes undone) or a bare word.
func (t *tokens) ident() (string, bool) {
	tok := t.peek()
	if tok == "" || tok == "." || tok == "," || tok == "(" || tok == ")" || tok == ";" {
		return "", false
	}
	t.i++
	if strings.HasPrefix(tok, "`") {
		return strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(tok, "`"), "`"), "``", "`"), true
	}
	return tok, true
}

// ddlTokens splits a statement into words, backquoted names, quoted
// strings and single punctuation characters, dropping comments.
func ddlTokens(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || (c == '-' && strings.HasPrefix(s[i:], "-- ")):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 4
		case c == '`' || c == '\'' || c == '"':
			j := i + 1
			for j < len(s) {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c { // doubled quote
						j += 2
						continue
					}
					break
				}
				if s[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			out = append(out, s[i:min(j+1, len(s))])
			i = j + 1
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		default:
			out = append(out, s[i:i+1])
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}
