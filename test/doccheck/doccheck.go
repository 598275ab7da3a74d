// Package doccheck keeps generated parts of the documentation true: the
// configuration tables of capture/README.md and ingest/README.md are
// rendered from the binaries' flag sets, and a test of each binary fails
// when the file and the flags differ. Regenerate with
//
//	BINLAKE_UPDATE_DOCS=1 go test ./capture ./ingest -run TestConfigurationTable
package doccheck

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// Secret is a setting read only from the environment or a file: it has no
// flag, so the flag set cannot list it.
type Secret struct {
	Env   string // the variable; <Env>_FILE names a file holding it
	Usage string
}

var (
	envSuffix  = regexp.MustCompile(` \(env ([A-Z0-9_]+)\)$`)
	defaultDoc = regexp.MustCompile(` \(default ([^()]*(?:\([^()]*\))?[^()]*)\)$`)
)

// Limits of the generated text, below the docs test's (test/docs: 300
// characters in a table cell, 400 on a line) whatever the usage texts say.
const (
	maxMeaning = 200 // characters of a usage text shown whole in the table
	wrapAt     = 100 // characters on a line of the notes under the table
)

// FlagTable renders every flag of fs as a Markdown table row (flag,
// environment variable, default, meaning), in flag order, then the
// secrets. A usage text ending in "(default X)" documents a default the
// flag cannot hold (one derived from another setting): X is shown as the
// default.
//
// A usage text longer than maxMeaning characters is shortened in the
// table to its first clause (up to the first ": ", "; " or ". " outside
// parentheses), or to its first words when that clause is still too long,
// with a link to a note under the table that holds the whole text,
// wrapped at wrapAt characters.
func FlagTable(fs *flag.FlagSet, secrets []Secret) string {
	var b, notes strings.Builder
	b.WriteString("| flag | environment | default | meaning |\n| --- | --- | --- | --- |\n")
	meaning := func(name, usage string) string {
		short, cut := summary(usage, maxMeaning)
		if !cut {
			return cell(usage)
		}
		id := "setting-" + strings.ToLower(strings.ReplaceAll(strings.TrimLeft(name, "-"), "_", "-"))
		fmt.Fprintf(&notes, "- %s\n", wrap("<a id=\""+id+"\"></a>`"+name+"`: "+cell(usage), wrapAt, "  "))
		return cell(short) + " … ([in full](#" + id + "))"
	}
	fs.VisitAll(func(f *flag.Flag) {
		usage, env := f.Usage, ""
		if m := envSuffix.FindStringSubmatch(usage); m != nil {
			usage, env = strings.TrimSuffix(usage, m[0]), m[1]
		}
		def := f.DefValue
		if m := defaultDoc.FindStringSubmatch(usage); m != nil && (def == "" || def == "0") {
			usage, def = strings.TrimSuffix(usage, m[0]), m[1]
		}
		if isZeroBool(f) {
			def = "false"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", f.Name, code(env), code(def), meaning("--"+f.Name, usage))
	})
	for _, s := range secrets {
		fmt.Fprintf(&b, "| (secret) | `%s`, `%s_FILE` | | %s |\n", s.Env, s.Env, meaning(s.Env, s.Usage))
	}
	if notes.Len() > 0 {
		b.WriteString("\nThe settings the table shortens, in full:\n\n")
		b.WriteString(notes.String())
	}
	return b.String()
}

// summary returns usage when it has at most limit characters, else its
// first clause (the text before the first ": ", "; " or ". " outside
// parentheses and brackets, an abbreviation such as "e.g." not ending
// one) when that clause fits, else its first words that fit; cut says
// whether it shortened usage.
func summary(usage string, limit int) (short string, cut bool) {
	if utf8.RuneCountInString(usage) <= limit {
		return usage, false
	}
	if c := firstClause(usage); c != "" && utf8.RuneCountInString(c) <= limit {
		return c, true
	}
	var b strings.Builder
	for _, w := range strings.Fields(usage) {
		if b.Len() > 0 && utf8.RuneCountInString(b.String())+1+utf8.RuneCountInString(w) > limit {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	if r := []rune(b.String()); len(r) > limit { // a first word longer than limit
		return string(r[:limit]), true
	}
	return b.String(), true
}

// firstClause returns the text of s before its first ": ", "; " or ". "
// outside parentheses and brackets, or "" when it has none.
func firstClause(s string) string {
	depth := 0
	for i, r := range s {
		switch r {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ':', ';', '.':
			if depth != 0 || !strings.HasPrefix(s[i+1:], " ") {
				continue
			}
			c := strings.TrimSpace(s[:i])
			if f := strings.Fields(c); r == '.' && len(f) > 0 && strings.Contains(f[len(f)-1], ".") {
				continue // e.g. i.e.
			}
			return c
		}
	}
	return ""
}

// wrap breaks s at spaces into lines of at most width characters (a word
// longer than width gets a line of its own, broken at width), the lines
// after the first starting with indent. A break inside a `code span` is
// harmless: Markdown reads it as a space.
func wrap(s string, width int, indent string) string {
	var lines []string
	line, n := "", 0
	flush := func() {
		lines = append(lines, line)
		line, n = indent, utf8.RuneCountInString(indent)
	}
	for _, w := range strings.Split(s, " ") {
		r := []rune(w)
		for len(r) > width-len(indent) {
			if n > len(indent) || len(lines) == 0 && n > 0 {
				flush()
			}
			line += string(r[:width-len(indent)])
			flush()
			r = r[width-len(indent):]
		}
		w = string(r)
		switch {
		case n == 0 && len(lines) == 0, n == len(indent) && len(lines) > 0:
		case n+1+len(r) > width:
			flush()
		default:
			line += " "
			n++
		}
		line += w
		n += len(r)
	}
	return strings.Join(append(lines, line), "\n")
}

func isZeroBool(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag() && f.DefValue == "false"
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

// cell escapes what would break a table cell: a pipe, and the < of a
// placeholder such as <prefix>, which Markdown would take for an HTML tag.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", `\<`).Replace(s)
}

// Section checks that the text between the lines "<!-- begin NAME -->"
// and "<!-- end NAME -->" of the file at path is want; with
// BINLAKE_UPDATE_DOCS=1 it writes want there instead.
func Section(t testing.TB, path, name, want string) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- begin "+name+" -->\n", "<!-- end "+name+" -->"
	i := strings.Index(string(text), begin)
	j := strings.Index(string(text), end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", path, strings.TrimSpace(begin), end)
	}
	got := string(text[i+len(begin) : j])
	if got == want {
		return
	}
	if os.Getenv("BINLAKE_UPDATE_DOCS") == "1" {
		out := string(text[:i+len(begin)]) + want + string(text[j:])
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote section %s of %s", name, path)
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := 0; k < max(len(gl), len(wl)); k++ {
		var g, w string
		if k < len(gl) {
			g = gl[k]
		}
		if k < len(wl) {
			w = wl[k]
		}
		if g != w {
			t.Fatalf("section %s of %s differs from the flags at its line %d:\n  file:  %s\n  flags: %s\n"+
				"regenerate it: BINLAKE_UPDATE_DOCS=1 go test ./capture ./ingest -run TestConfigurationTable", name, path, k+1, g, w)
		}
	}
}
