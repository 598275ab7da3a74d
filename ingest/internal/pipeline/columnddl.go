package pipeline

import "strings"

// columnRename is one column rename of a statement: Old is the column's
// name before the statement, New its name after it.
type columnRename struct{ Old, New string }

// parseColumnRenames returns the table an ALTER statement changes and the
// column renames it makes, in statement order: CHANGE [COLUMN] [IF EXISTS]
// old new <definition> (a rename when new differs from old; CHANGE c c INT
// only changes c's type) and RENAME COLUMN old TO new, among any other
// clauses. The server applies the clauses of one statement at once, each
// naming a column as it was before the statement, so RENAME COLUMN a TO
// b, RENAME COLUMN b TO a swaps a and b. An unqualified table is in db.
// A statement that renames no column returns ok false.
func parseColumnRenames(ddl, db string) (tableName, []columnRename, bool) {
	t := &tokens{toks: ddlTokens(ddl)}
	if !t.kw("ALTER") {
		return tableName{}, nil, false
	}
	t.kw("ONLINE")
	t.kw("IGNORE")
	if !t.kw("TABLE") {
		return tableName{}, nil, false
	}
	if t.kw("IF") && !t.kw("EXISTS") {
		return tableName{}, nil, false
	}
	first, ok := columnIdent(t)
	if !ok {
		return tableName{}, nil, false
	}
	tn := tableName{db, first}
	if t.peek() == "." {
		t.i++
		second, ok := columnIdent(t)
		if !ok {
			return tableName{}, nil, false
		}
		tn = tableName{first, second}
	}
	switch {
	case t.kw("WAIT"):
		t.i++ // the seconds
	case t.kw("NOWAIT"):
	}
	var out []columnRename
	clauseStart := true
	depth := 0
	for t.i < len(t.toks) {
		if depth == 0 && clauseStart {
			clauseStart = false
			if pr, ok := columnClause(t); ok {
				out = append(out, pr)
				continue
			}
		}
		switch t.toks[t.i] {
		case "(":
			depth++
		case ")":
			depth--
		case ",":
			clauseStart = depth == 0
		}
		t.i++
	}
	if len(out) == 0 {
		return tableName{}, nil, false
	}
	return tn, out, true
}

// columnClause reads a clause that renames a column at t, leaving t after
// the names; otherwise it reports false with t where it was.
func columnClause(t *tokens) (columnRename, bool) {
	start := t.i
	fail := func() (columnRename, bool) {
		t.i = start
		return columnRename{}, false
	}
	switch {
	case t.kw("CHANGE"):
		t.kw("COLUMN")
		if t.kw("IF") && !t.kw("EXISTS") {
			return fail()
		}
		old, ok := columnIdent(t)
		if !ok {
			return fail()
		}
		nw, ok := columnIdent(t)
		if !ok || nw == old {
			return fail()
		}
		return columnRename{old, nw}, true
	case t.kw("RENAME"):
		if !t.kw("COLUMN") {
			return fail()
		}
		if t.kw("IF") && !t.kw("EXISTS") {
			return fail()
		}
		old, ok := columnIdent(t)
		if !ok || !t.kw("TO") {
			return fail()
		}
		nw, ok := columnIdent(t)
		if !ok || nw == old {
			return fail()
		}
		return columnRename{old, nw}, true
	}
	return fail()
}

// columnIdent consumes a name as tokens.ident does, also taking a
// double-quoted one (sql_mode ANSI_QUOTES: where a name must be, a
// double-quoted token is one).
func columnIdent(t *tokens) (string, bool) {
	tok := t.peek()
	if strings.HasPrefix(tok, `"`) && len(tok) >= 2 && strings.HasSuffix(tok, `"`) {
		t.i++
		return strings.ReplaceAll(tok[1:len(tok)-1], `""`, `"`), true
	}
	if strings.HasPrefix(tok, "'") {
		return "", false
	}
	return t.ident()
}
