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

// FlagTable renders every flag of fs as a Markdown table row (flag,
// environment variable, default, meaning), in flag order, then the
// secrets. A usage text ending in "(default X)" documents a default the
// flag cannot hold (one derived from another setting): X is shown as the
// default.
func FlagTable(fs *flag.FlagSet, secrets []Secret) string {
	var b strings.Builder
	b.WriteString("| flag | environment | default | meaning |\n| --- | --- | --- | --- |\n")
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
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", f.Name, code(env), code(def), cell(usage))
	})
	for _, s := range secrets {
		fmt.Fprintf(&b, "| (secret) | `%s`, `%s_FILE` | | %s |\n", s.Env, s.Env, cell(s.Usage))
	}
	return b.String()
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
