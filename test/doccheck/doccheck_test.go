package doccheck

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
