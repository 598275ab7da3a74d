package schemahist

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrInvalidKeyColumns reports a message.key.columns setting that does not
// parse.
var ErrInvalidKeyColumns = errors.New("schemahist: invalid message key columns")

// KeyColumns is Debezium's message.key.columns: the columns that key the
// change events of the tables it names, in place of their primary key.
//
// The setting is a ';'-separated list of <table regex>:<column>,<column>
// entries, the table regex matching "db.table". As in Debezium's
// Key.CustomKeyMapper, each column becomes the case-insensitive regex
// "<table regex>.<column>" matched against the whole "db.table.column";
// a table's key is, for each of those regexes in the order written, the
// table's columns it matches in column order. A table none of them
// matches keeps its primary key (or the unique key Debezium takes for
// one).
type KeyColumns struct {
	spec     string
	patterns []*regexp.Regexp
}

// keyEntry is one entry of the setting as Debezium's
// MSG_KEY_COLUMNS_PATTERN accepts it.
var keyEntry = regexp.MustCompile(`^\s*([^:]+):([^:,]+(,[^:,]+)*)\s*$`)

// ParseKeyColumns parses a message.key.columns setting; "" gives nil (no
// custom keys).
func ParseKeyColumns(spec string) (*KeyColumns, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	k := &KeyColumns{spec: spec}
	entries := strings.Split(spec, ";")
	for len(entries) > 0 && entries[len(entries)-1] == "" {
		entries = entries[:len(entries)-1] // Java's String.split drops trailing empty strings
	}
	for _, entry := range entries {
		if !keyEntry.MatchString(entry) {
			return nil, fmt.Errorf("%w: %q is not <db>.<table>:<column>[,<column>...] (message-key-columns, CAPTURE_MESSAGE_KEY_COLUMNS)",
				ErrInvalidKeyColumns, entry)
		}
		table, cols, _ := strings.Cut(entry, ":")
		for _, c := range strings.Split(cols, ",") {
			// Debezium does not trim the table part: leading blanks are part
			// of its regex (and then match nothing), as here.
			expr := table + "." + strings.TrimSpace(c)
			re, err := regexp.Compile("(?i)^(?:" + expr + ")$")
			if err != nil {
				return nil, fmt.Errorf("%w: %q in message-key-columns (CAPTURE_MESSAGE_KEY_COLUMNS): %w", ErrInvalidKeyColumns, expr, err)
			}
			k.patterns = append(k.patterns, re)
		}
	}
	return k, nil
}

// String returns the setting as given.
func (k *KeyColumns) String() string {
	if k == nil {
		return ""
	}
	return k.spec
}

// Columns returns the key columns of db.table among columns (in table
// order), or nil when no entry names the table.
func (k *KeyColumns) Columns(db, table string, columns []string) []string {
	if k == nil {
		return nil
	}
	var out []string
	for _, re := range k.patterns {
		for _, c := range columns {
			if re.MatchString(db + "." + table + "." + c) {
				out = append(out, c)
			}
		}
	}
	return out
}
