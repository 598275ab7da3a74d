package pipeline

import (
	"fmt"
	"strings"

	"github.com/binlake/binlake/ingest/internal/commit"
)

// DeleteModes are the delete modes of the tables: one for every table and
// overrides by source table ("<db>.<table>", as in the topic name).
type DeleteModes struct {
	all    commit.DeleteMode
	tables map[string]commit.DeleteMode
}

// ParseDeleteModes reads the --delete-mode setting: a mode for every table
// ("auto", "position", "dv" or "equality"; none given is auto: position on
// format v2 tables, dv on v3), optionally followed by
// ';'-separated overrides "<db>.<table>=<mode>", e.g.
// "position; shop.audit=equality". The first entry may also be "*=<mode>".
func ParseDeleteModes(s string) (DeleteModes, error) {
	out := DeleteModes{all: commit.DeleteAuto, tables: map[string]commit.DeleteMode{}}
	allSet := false
	for i, entry := range strings.Split(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		target, mode, ok := strings.Cut(entry, "=")
		if !ok {
			if i != 0 {
				return out, fmt.Errorf("delete-mode entry %q: only the first entry may omit the table (<db>.<table>=<mode>)", entry)
			}
			target, mode = "*", entry
		}
		target, mode = strings.TrimSpace(target), strings.TrimSpace(mode)
		if mode == "" {
			return out, fmt.Errorf("delete-mode entry %q: no mode (want auto, position, dv or equality)", entry)
		}
		m, err := commit.ParseDeleteMode(mode)
		if err != nil {
			return out, err
		}
		if target == "*" {
			if allSet {
				return out, fmt.Errorf("delete-mode: the mode of every table is given twice")
			}
			out.all, allSet = m, true
			continue
		}
		if db, tbl, ok := strings.Cut(target, "."); !ok || db == "" || tbl == "" || strings.Contains(tbl, ".") {
			return out, fmt.Errorf("delete-mode entry %q: the table must be <db>.<table>", entry)
		}
		if _, dup := out.tables[target]; dup {
			return out, fmt.Errorf("delete-mode: %s given twice", target)
		}
		out.tables[target] = m
	}
	return out, nil
}

// For returns the delete mode of the source table db.table.
func (d DeleteModes) For(db, table string) commit.DeleteMode {
	if m, ok := d.tables[db+"."+table]; ok {
		return m
	}
	if d.all == "" {
		return commit.DeleteEquality
	}
	return d.all
}

// Modes returns every mode in use, the default first.
func (d DeleteModes) Modes() []commit.DeleteMode {
	out := []commit.DeleteMode{d.For("", "")}
	for _, m := range d.tables {
		out = append(out, m)
	}
	return out
}

// Positional reports whether some table finds its old rows through the key
// index (position, dv or auto), which then needs a state directory.
func (d DeleteModes) Positional() bool {
	for _, x := range d.Modes() {
		if x.Positional() {
			return true
		}
	}
	return false
}

// Uses reports whether some table uses mode m.
func (d DeleteModes) Uses(m commit.DeleteMode) bool {
	for _, x := range d.Modes() {
		if x == m {
			return true
		}
	}
	return false
}
