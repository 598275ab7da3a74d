// Package filter decides which databases, tables and columns are captured,
// with Debezium's include/exclude list semantics: each list is a
// comma-separated set of regular expressions that must match the whole
// name (db, db.table or db.table.column); an include list, when set,
// admits only what it matches, and an exclude list removes what it
// matches. Setting both the include and the exclude list of one level is
// an error, as in Debezium.
package filter

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrInvalid reports a bad list.
var ErrInvalid = errors.New("filter: invalid list")

// Lists are the raw settings.
type Lists struct {
	DatabaseInclude, DatabaseExclude string
	TableInclude, TableExclude       string
	ColumnInclude, ColumnExclude     string
}

// Filter answers inclusion questions.
type Filter struct {
	dbIn, dbEx, tIn, tEx, cIn, cEx []*regexp.Regexp
}

func compile(name, list string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		re, err := regexp.Compile("(?i)^(?:" + p + ")$")
		if err != nil {
			return nil, fmt.Errorf("%w: %s entry %q: %v", ErrInvalid, name, p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// New compiles the lists.
func New(l Lists) (*Filter, error) {
	var f Filter
	var errs []error
	for _, x := range []struct {
		name, list string
		dst        *[]*regexp.Regexp
	}{
		{"database.include.list", l.DatabaseInclude, &f.dbIn},
		{"database.exclude.list", l.DatabaseExclude, &f.dbEx},
		{"table.include.list", l.TableInclude, &f.tIn},
		{"table.exclude.list", l.TableExclude, &f.tEx},
		{"column.include.list", l.ColumnInclude, &f.cIn},
		{"column.exclude.list", l.ColumnExclude, &f.cEx},
	} {
		res, err := compile(x.name, x.list)
		errs = append(errs, err)
		*x.dst = res
	}
	if len(f.dbIn) > 0 && len(f.dbEx) > 0 {
		errs = append(errs, fmt.Errorf("%w: set database.include.list or database.exclude.list, not both", ErrInvalid))
	}
	if len(f.tIn) > 0 && len(f.tEx) > 0 {
		errs = append(errs, fmt.Errorf("%w: set table.include.list or table.exclude.list, not both", ErrInvalid))
	}
	if len(f.cIn) > 0 && len(f.cEx) > 0 {
		errs = append(errs, fmt.Errorf("%w: set column.include.list or column.exclude.list, not both", ErrInvalid))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &f, nil
}

func any(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

var systemDBs = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true, "sys": true}

// Database reports whether a database is captured. System databases never are.
func (f *Filter) Database(db string) bool {
	if systemDBs[strings.ToLower(db)] {
		return false
	}
	if len(f.dbIn) > 0 && !any(f.dbIn, db) {
		return false
	}
	return !any(f.dbEx, db)
}

// Table reports whether a table is captured.
func (f *Filter) Table(db, table string) bool {
	if !f.Database(db) {
		return false
	}
	id := db + "." + table
	if len(f.tIn) > 0 && !any(f.tIn, id) {
		return false
	}
	return !any(f.tEx, id)
}

// Column reports whether a column of a captured table is captured.
func (f *Filter) Column(db, table, column string) bool {
	id := db + "." + table + "." + column
	if len(f.cIn) > 0 && !any(f.cIn, id) {
		return false
	}
	return !any(f.cEx, id)
}

// HasColumnLists reports whether any column list is set.
func (f *Filter) HasColumnLists() bool { return len(f.cIn) > 0 || len(f.cEx) > 0 }
