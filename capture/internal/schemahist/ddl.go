package schemahist

import (
	"strings"
	"unicode"
)

// DDLKind classifies a statement found in the binlog.
type DDLKind uint8

// DDL kinds.
const (
	DDLOther DDLKind = iota
	DDLCreateTable
	DDLAlterTable
	DDLDropTable
	DDLRenameTable
	DDLTruncate
	DDLCreateDatabase
	DDLDropDatabase
)

// TableRef names a table; DB is filled from the session's database when
// the statement does not qualify the name.
type TableRef struct{ DB, Table string }

// DDL is what capture needs to know about a statement: which tables it
// touches. For renames, Tables holds old, new pairs.
type DDL struct {
	Kind   DDLKind
	Tables []TableRef
	DB     string // for database statements
}

// ParseDDL classifies a statement and extracts the tables it touches. It
// does not validate SQL: the server already executed it.
func ParseDDL(defaultDB, query string) DDL {
	toks := tokenize(query)
	kw := func(i int, words ...string) bool {
		for j, w := range words {
			if i+j >= len(toks) || toks[i+j].quoted || !strings.EqualFold(toks[i+j].s, w) {
				return false
			}
		}
		return true
	}
	// name reads [db.]table at i and returns the index after it.
	name := func(i int) (TableRef, int) {
		if i >= len(toks) {
			return TableRef{}, i
		}
		ref := TableRef{DB: defaultDB, Table: toks[i].s}
		if i+2 < len(toks) && toks[i+1].s == "." && !toks[i+1].quoted {
			ref = TableRef{DB: toks[i].s, Table: toks[i+2].s}
			return ref, i + 3
		}
		return ref, i + 1
	}
	i := 0
	switch {
	case kw(0, "CREATE"):
		i = 1
		for kw(i, "OR", "REPLACE") {
			i += 2
		}
		for kw(i, "TEMPORARY") {
			return DDL{} // temporary tables are not in the binlog's row events
		}
		switch {
		case kw(i, "TABLE"):
			i++
			if kw(i, "IF", "NOT", "EXISTS") {
				i += 3
			}
			ref, _ := name(i)
			return DDL{Kind: DDLCreateTable, Tables: []TableRef{ref}}
		case kw(i, "DATABASE"), kw(i, "SCHEMA"):
			i++
			if kw(i, "IF", "NOT", "EXISTS") {
				i += 3
			}
			if i < len(toks) {
				return DDL{Kind: DDLCreateDatabase, DB: toks[i].s}
			}
		}
	case kw(0, "ALTER"):
		i = 1
		for kw(i, "ONLINE") || kw(i, "IGNORE") {
			i++
		}
		if kw(i, "TABLE") {
			i++
			if kw(i, "IF", "EXISTS") {
				i += 2
			}
			ref, j := name(i)
			d := DDL{Kind: DDLAlterTable, Tables: []TableRef{ref}}
			// ALTER TABLE a RENAME [TO|AS] b
			for k := j; k < len(toks); k++ {
				if kw(k, "RENAME") && !kw(k+1, "COLUMN") && !kw(k+1, "INDEX") && !kw(k+1, "KEY") {
					k++
					if kw(k, "TO") || kw(k, "AS") {
						k++
					}
					to, _ := name(k)
					d.Kind = DDLRenameTable
					d.Tables = append(d.Tables, to)
					break
				}
			}
			return d
		}
	case kw(0, "DROP"):
		i = 1
		if kw(i, "TEMPORARY") {
			return DDL{}
		}
		switch {
		case kw(i, "TABLE"):
			i++
			if kw(i, "IF", "EXISTS") {
				i += 2
			}
			d := DDL{Kind: DDLDropTable}
			for i < len(toks) {
				ref, j := name(i)
				d.Tables = append(d.Tables, ref)
				if j < len(toks) && toks[j].s == "," {
					i = j + 1
					continue
				}
				break
			}
			return d
		case kw(i, "DATABASE"), kw(i, "SCHEMA"):
			i++
			if kw(i, "IF", "EXISTS") {
				i += 2
			}
			if i < len(toks) {
				return DDL{Kind: DDLDropDatabase, DB: toks[i].s}
			}
		}
	case kw(0, "RENAME", "TABLE"):
		i = 2
		d := DDL{Kind: DDLRenameTable}
		for i < len(toks) {
			from, j := name(i)
			if !kw(j, "TO") {
				break
			}
			to, k := name(j + 1)
			d.Tables = append(d.Tables, from, to)
			if k < len(toks) && toks[k].s == "," {
				i = k + 1
				continue
			}
			break
		}
		return d
	case kw(0, "TRUNCATE"):
		i = 1
		if kw(i, "TABLE") {
			i++
		}
		ref, _ := name(i)
		return DDL{Kind: DDLTruncate, Tables: []TableRef{ref}}
	}
	return DDL{}
}

type token struct {
	s      string
	quoted bool
	q      rune // the quote: '`', '"' or '\'' when quoted
}

// tokenize splits SQL into identifiers, quoted names and punctuation,
// dropping comments (but keeping MySQL's /*! ... */ executable comments'
// contents) and string literals' quotes.
func tokenize(q string) []token {
	var out []token
	r := []rune(q)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '#' || (c == '-' && i+2 < len(r) && r[i+1] == '-' && unicode.IsSpace(r[i+2])):
			for i < len(r) && r[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(r) && r[i+1] == '*':
			if i+2 < len(r) && r[i+2] == '!' { // executable comment: keep its body
				i += 3
				for i < len(r) && unicode.IsDigit(r[i]) {
					i++
				}
				continue
			}
			end := strings.Index(string(r[i+2:]), "*/")
			if end < 0 {
				return out
			}
			i += 2 + len([]rune(string(r[i+2:])[:end])) + 2
		case c == '*' && i+1 < len(r) && r[i+1] == '/':
			i += 2
		case c == '`' || c == '"' || c == '\'':
			j := i + 1
			var b strings.Builder
			for j < len(r) {
				if r[j] == c {
					if j+1 < len(r) && r[j+1] == c { // doubled quote
						b.WriteRune(c)
						j += 2
						continue
					}
					break
				}
				if r[j] == '\\' && c != '`' && j+1 < len(r) {
					j++
				}
				b.WriteRune(r[j])
				j++
			}
			out = append(out, token{s: b.String(), quoted: true, q: c})
			i = j + 1
		case unicode.IsLetter(c) || unicode.IsDigit(c) || c == '_' || c == '$':
			j := i
			for j < len(r) && (unicode.IsLetter(r[j]) || unicode.IsDigit(r[j]) || r[j] == '_' || r[j] == '$') {
				j++
			}
			out = append(out, token{s: string(r[i:j])})
			i = j
		default:
			out = append(out, token{s: string(c)})
			i++
		}
	}
	return out
}
