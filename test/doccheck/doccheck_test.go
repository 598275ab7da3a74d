package doccheck

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFlagTable(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("topic", "", "topic of <prefix> changes, a|b (default <prefix>.t) (env X_TOPIC)")
	fs.Bool("check", false, "validate and exit")
	fs.Int("n", 4, "count (env X_N)")
	got := FlagTable(fs, []Secret{{Env: "X_PASSWORD", Usage: "the password"}})
	for _, want := range []string{
		"| `--check` |  | `false` | validate and exit |\n",
		"| `--n` | `X_N` | `4` | count |\n",
		"| `--topic` | `X_TOPIC` | `<prefix>.t` | topic of \\<prefix> changes, a\\|b |\n",
		"| (secret) | `X_PASSWORD`, `X_PASSWORD_FILE` | | the password |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks row %q:\n%s", want, got)
		}
	}
}

// fatalTB records a failure instead of ending the test.
type fatalTB struct {
	testing.TB
	failed string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(f)
}

func TestSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, []byte("intro\n<!-- begin s -->\nold row\n<!-- end s -->\nrest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(want string) (failed string) {
		tb := &fatalTB{TB: t}
		defer func() {
			if r := recover(); r != nil && r != any(tb) {
				panic(r)
			}
			failed = tb.failed
		}()
		Section(tb, path, "s", want)
		return ""
	}
	if msg := check("old row\n"); msg != "" {
		t.Errorf("an equal section failed: %s", msg)
	}
	if msg := check("new row\n"); !strings.Contains(msg, "line 1") || !strings.Contains(msg, "new row") {
		t.Errorf("a differing section: %q, want a failure naming line 1 and the flags' row", msg)
	}
	t.Setenv("BINLAKE_UPDATE_DOCS", "1")
	if msg := check("new row\n"); msg != "" {
		t.Fatal(msg)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "intro\n<!-- begin s -->\nnew row\n<!-- end s -->\nrest\n" {
		t.Errorf("after the update the file is %q", b)
	}
}

// TestFlagTableLongUsage: whatever a usage text holds, no generated line
// runs past 400 characters nor a table cell past 300 (the docs test's
// limits, test/docs), and the text the table shortens is kept whole in the
// notes under it, linked from its row.
func TestFlagTableLongUsage(t *testing.T) {
	long := strings.Repeat("a clause that goes on, and on (with: a colon; inside) ", 12)
	cases := map[string]string{
		"clause":   "how a key's old row is removed: " + long,
		"noclause": long,
		"word":     strings.Repeat("x", 450) + " then words",
		"short":    "fits in its cell: nothing moves",
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	for name, usage := range cases {
		fs.String(name, "", usage+" (env X_"+strings.ToUpper(name)+")")
	}
	got := FlagTable(fs, []Secret{{Env: "X_SECRET", Usage: "the secret; " + long}})
	for i, l := range strings.Split(got, "\n") {
		if n := utf8.RuneCountInString(l); n > 400 {
			t.Errorf("line %d has %d characters: %.80s…", i+1, n, l)
		}
		if strings.HasPrefix(l, "|") {
			for _, c := range strings.Split(l, " | ") {
				if n := utf8.RuneCountInString(c); n > 300 {
					t.Errorf("line %d has a cell of %d characters: %.80s…", i+1, n, c)
				}
			}
		}
	}
	for _, want := range []string{
		"| `--clause` | `X_CLAUSE` |  | how a key's old row is removed … ([in full](#setting-clause)) |\n",
		"| `--short` | `X_SHORT` |  | fits in its cell: nothing moves |\n",
		"| (secret) | `X_SECRET`, `X_SECRET_FILE` | | the secret … ([in full](#setting-x-secret)) |\n",
		"- <a id=\"setting-clause\"></a>`--clause`: how a key's old row is removed:",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	// Every shortened text is in the notes, whole once the lines are joined.
	notes := strings.Join(strings.Fields(got[strings.Index(got, "in full:"):]), " ")
	for name, usage := range cases {
		if name == "short" {
			if strings.Contains(notes, "`--short`") {
				t.Error("a usage that fits its cell has a note too")
			}
			continue
		}
		if w := strings.Join(strings.Fields(usage), " "); !strings.Contains(strings.ReplaceAll(notes, " ", ""), strings.ReplaceAll(w, " ", "")) {
			t.Errorf("the notes lack the whole usage of --%s", name)
		}
	}
}
