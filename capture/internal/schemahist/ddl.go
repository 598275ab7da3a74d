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
	// DDLCreateIndex is CREATE [UNIQUE|FULLTEXT|SPATIAL] INDEX ... ON t;
	// Unique is set for CREATE UNIQUE INDEX.
	DDLCreateIndex
	// DDLDropIndex is DROP INDEX ... ON t.
	DDLDropIndex
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
	Unique bool   // CREATE UNIQUE INDEX
}

// ParseDDL classifies a statement and extracts the tables it touches. It
// does not validate SQL: the server already executed it.
func ParseDDL(defaultDB, query string) DDL {
	p := &parser{toks: tokenize(query), db: defaultDB}
	switch {
	case p.kw("CREATE"):
		for p.kw("OR", "REPLACE") {
		}
		if p.is("TEMPORARY") {
			return DDL{} // temporary tables are not in the binlog's row events
		}
		for p.kw("ONLINE") || p.kw("OFFLINE") {
		}
		unique := p.kw("UNIQUE")
		if !unique {
			_ = p.kw("FULLTEXT") || p.kw("SPATIAL")
		}
		switch {
		case p.kw("INDEX"):
			if t, ok := p.indexTable(); ok {
				return DDL{Kind: DDLCreateIndex, Tables: []TableRef{t}, Unique: unique}
			}
		case p.kw("TABLE"):
			p.kw("IF", "NOT", "EXISTS")
			return DDL{Kind: DDLCreateTable, Tables: []TableRef{p.name()}}
		case p.kw("DATABASE"), p.kw("SCHEMA"):
			p.kw("IF", "NOT", "EXISTS")
			if !p.done() {
				return DDL{Kind: DDLCreateDatabase, DB: p.next().s}
			}
		}
	case p.kw("ALTER"):
		for p.kw("ONLINE") || p.kw("IGNORE") {
		}
		if !p.kw("TABLE") {
			break
		}
		p.kw("IF", "EXISTS")
		d := DDL{Kind: DDLAlterTable, Tables: []TableRef{p.name()}}
		// ALTER TABLE a RENAME [TO|AS] b
		for ; !p.done(); p.i++ {
			if p.is("RENAME") && !p.peekKw(1, "COLUMN") && !p.peekKw(1, "INDEX") && !p.peekKw(1, "KEY") {
				p.i++
				if !p.kw("TO") {
					p.kw("AS")
				}
				d.Kind = DDLRenameTable
				d.Tables = append(d.Tables, p.name())
				break
			}
		}
		return d
	case p.kw("DROP"):
		if p.is("TEMPORARY") {
			return DDL{}
		}
		p.kw("ONLINE")
		switch {
		case p.kw("INDEX"):
			if t, ok := p.indexTable(); ok {
				return DDL{Kind: DDLDropIndex, Tables: []TableRef{t}}
			}
		case p.kw("TABLE"):
			p.kw("IF", "EXISTS")
			d := DDL{Kind: DDLDropTable}
			for !p.done() {
				d.Tables = append(d.Tables, p.name())
				if !p.accept(",") {
					break
				}
			}
			return d
		case p.kw("DATABASE"), p.kw("SCHEMA"):
			p.kw("IF", "EXISTS")
			if !p.done() {
				return DDL{Kind: DDLDropDatabase, DB: p.next().s}
			}
		}
	case p.kw("RENAME", "TABLE"):
		d := DDL{Kind: DDLRenameTable}
		for !p.done() {
			from := p.name()
			if !p.kw("TO") {
				break
			}
			d.Tables = append(d.Tables, from, p.name())
			if !p.accept(",") {
				break
			}
		}
		return d
	case p.kw("TRUNCATE"):
		p.kw("TABLE")
		return DDL{Kind: DDLTruncate, Tables: []TableRef{p.name()}}
	}
	return DDL{}
}

// indexTable reads "[IF [NOT] EXISTS] name ... ON table" of CREATE INDEX
// and DROP INDEX.
func (p *parser) indexTable() (TableRef, bool) {
	for !p.done() && !p.is("ON") {
		p.next()
	}
	if !p.kw("ON") || p.done() {
		return TableRef{}, false
	}
	return p.name(), true
}

type token struct {
	s      string
	quoted bool
	q      rune   // the quote: '`', '"' or '\'' when quoted
	raw    string // a quoted token's text between its quotes, escapes as written
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
			out = append(out, token{s: b.String(), quoted: true, q: c, raw: string(r[i+1 : min(j, len(r))])})
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
