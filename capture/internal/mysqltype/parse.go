package mysqltype

import (
	"fmt"
	"strconv"
	"strings"
)

// columnType is a parsed information_schema COLUMN_TYPE.
type columnType struct {
	name     string   // lower-case base name, e.g. "bigint", "double precision"
	args     []string // numeric arguments, e.g. ["65","30"]
	labels   []string // ENUM/SET members in definition order
	unsigned bool
}

// parseColumnType parses strings like "bigint(20) unsigned zerofill",
// "decimal(65,30)", "enum('a','b')" or "double precision". Quotes inside ENUM
// and SET members may be doubled or backslash-escaped.
func parseColumnType(s string) (columnType, error) {
	var ct columnType
	s = strings.TrimSpace(s)
	head, rest := s, ""
	if i := strings.IndexByte(s, '('); i >= 0 {
		j, err := closingParen(s, i)
		if err != nil {
			return ct, err
		}
		head, rest = s[:i], s[j+1:]
		inner := s[i+1 : j]
		base := strings.ToLower(strings.TrimSpace(head))
		if base == "enum" || base == "set" {
			if ct.labels, err = parseLabels(inner); err != nil {
				return ct, err
			}
		} else {
			for _, a := range strings.Split(inner, ",") {
				a = strings.TrimSpace(a)
				if _, err := strconv.Atoi(a); err != nil {
					return ct, fmt.Errorf("parsing type argument %q: %w", a, ErrUnsupportedType)
				}
				ct.args = append(ct.args, a)
			}
		}
	}
	var words []string
	for _, w := range strings.Fields(strings.ToLower(head + " " + rest)) {
		switch w {
		case "unsigned", "zerofill":
			ct.unsigned = true
		case "signed":
		default:
			words = append(words, w)
		}
	}
	ct.name = strings.Join(words, " ")
	if ct.name == "" {
		return ct, fmt.Errorf("%w: empty type %q", ErrUnsupportedType, s)
	}
	return ct, nil
}

// closingParen returns the index of the ')' matching s[open], skipping
// quoted ENUM/SET labels.
func closingParen(s string, open int) (int, error) {
	inQuote := false
	for i := open + 1; i < len(s); i++ {
		switch c := s[i]; {
		case inQuote && c == '\\':
			i++
		case c == '\'':
			inQuote = !inQuote // '' toggles twice
		case c == ')' && !inQuote:
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: unbalanced parentheses in %q", ErrUnsupportedType, s)
}

// parseLabels parses a quoted ENUM/SET member list such as 'a','b'.
func parseLabels(s string) ([]string, error) {
	var labels []string
	var b strings.Builder
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		if i >= len(s) {
			return labels, nil
		}
		if s[i] != '\'' {
			return nil, fmt.Errorf("%w: bad member list %q", ErrUnsupportedType, s)
		}
		i++
		b.Reset()
		for {
			if i >= len(s) {
				return nil, fmt.Errorf("%w: unterminated member in %q", ErrUnsupportedType, s)
			}
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				b.WriteByte(s[i+1])
				i += 2
				continue
			}
			if c == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i += 2
					continue
				}
				i++
				break
			}
			b.WriteByte(c)
			i++
		}
		labels = append(labels, b.String())
	}
}

// arg returns the i-th numeric argument or def when absent.
func (ct columnType) arg(i, def int) int {
	if i < len(ct.args) {
		n, _ := strconv.Atoi(ct.args[i])
		return n
	}
	return def
}
