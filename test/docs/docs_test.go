// Package docs checks the repository's documentation as a reader meets it,
// with plain `go test` and no services: no tracked file is one .gitignore
// ignores (a stray log committed by accident), no line of a tracked
// Markdown file outside code blocks runs past maxLine characters and no
// table cell past maxCell (a reader cannot follow either in an editor or a
// diff), and every relative link of a tracked Markdown file names a file
// that exists and, after #, a section that file has (GitHub's anchors).
//
// The tests read the tracked files through git (git ls-files) and skip,
// saying so, where git or the repository is not at hand.
package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

const (
	maxLine = 400 // characters on a line outside fenced code blocks
	maxCell = 300 // characters in one table cell
)

// repo is the repository's root and its tracked files.
type repo struct {
	root  string
	files []string // slash-separated, relative to root
}

// gitRepo finds the repository holding this package, or skips t.
func gitRepo(t *testing.T) repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed; the docs checks read the tracked files through git")
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not inside a git work tree (%v); the docs checks read the tracked files through git", err)
	}
	root := strings.TrimSpace(string(out))
	ls := git(t, root, "ls-files", "-z")
	var files []string
	for _, f := range strings.Split(ls, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return repo{root: root, files: files}
}

// git runs git in dir and returns its standard output, failing t on error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// markdown returns the tracked Markdown files that exist in the work tree
// (a file deleted but not yet staged is not read).
func (r repo) markdown() []string {
	var md []string
	for _, f := range r.files {
		if strings.HasSuffix(f, ".md") {
			if _, err := os.Stat(filepath.Join(r.root, f)); err == nil {
				md = append(md, f)
			}
		}
	}
	return md
}

// TestNoTrackedFileIgnored fails on a tracked file that .gitignore
// ignores: it was added by force or before the rule, and it is usually an
// output (a log, a binary) nobody meant to commit.
func TestNoTrackedFileIgnored(t *testing.T) {
	r := gitRepo(t)
	out := git(t, r.root, "ls-files", "-ci", "--exclude-standard", "-z")
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			t.Errorf("%s is tracked but .gitignore ignores it: git rm --cached %s, or change .gitignore", f, f)
		}
	}
}

// docLine is one line of a Markdown file outside fenced code blocks.
type docLine struct {
	n    int // 1-based
	text string
}

// prose returns the lines of a Markdown file outside fenced code blocks
// (``` or ~~~, closed by a fence of the same character at least as long).
func prose(text string) []docLine {
	var out []docLine
	var fence string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		trimmed := strings.TrimLeft(l, " \t>")
		if f := fenceOf(trimmed); f != "" {
			switch {
			case fence == "":
				fence = f
				continue
			case f[0] == fence[0] && len(f) >= len(fence) && strings.TrimSpace(trimmed[len(f):]) == "":
				fence = ""
				continue
			}
		}
		if fence == "" {
			out = append(out, docLine{n, l})
		}
	}
	return out
}

// fenceOf returns the run of ``` or ~~~ (three or more) a line opens with.
func fenceOf(l string) string {
	for _, c := range []string{"`", "~"} {
		if run := len(l) - len(strings.TrimLeft(l, c)); run >= 3 {
			return l[:run]
		}
	}
	return ""
}

// cells splits a table row into its cells: at each | that is not escaped
// (\|), without the row's outer pipes.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, `\|`) {
		row = row[:len(row)-1]
	}
	var out []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteString(`\|`)
			i++
		case row[i] == '|':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

// TestDocLineLength fails on a line over maxLine characters outside code
// blocks, or a table cell over maxCell, in any tracked Markdown file.
func TestDocLineLength(t *testing.T) {
	r := gitRepo(t)
	for _, f := range r.markdown() {
		text, err := os.ReadFile(filepath.Join(r.root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range prose(string(text)) {
			if n := utf8.RuneCountInString(l.text); n > maxLine {
				t.Errorf("%s:%d: %d characters (at most %d outside code blocks): %.60s…", f, l.n, n, maxLine, l.text)
			}
			if strings.HasPrefix(strings.TrimSpace(l.text), "|") {
				for _, c := range cells(l.text) {
					if n := utf8.RuneCountInString(c); n > maxCell {
						t.Errorf("%s:%d: a table cell of %d characters (at most %d): %.60s…", f, l.n, n, maxCell, c)
					}
				}
			}
		}
	}
}

var (
	inlineCode = regexp.MustCompile("(`+)[^`]*?(`+)")
	// link is an inline link or image: [text](target "title").
	link = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef is a reference-style link's definition: [name]: target.
	refDef  = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	heading = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlID  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	scheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// links returns the targets of a Markdown file's links outside code
// blocks and code spans, with their line numbers.
func links(text string) []docLine {
	var out []docLine
	for _, l := range prose(text) {
		s := inlineCode.ReplaceAllString(l.text, "")
		for _, m := range link.FindAllStringSubmatch(s, -1) {
			out = append(out, docLine{l.n, m[1]})
		}
		if m := refDef.FindStringSubmatch(s); m != nil {
			out = append(out, docLine{l.n, m[1]})
		}
	}
	return out
}

// anchors returns the #fragments a Markdown file's headings (and <a
// name|id> tags) give it on GitHub: the heading's text lower-cased, its
// markup and punctuation dropped (letters, digits, spaces, hyphens and
// underscores kept), spaces turned into hyphens; the second heading of
// the same text gets -1, the third -2.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose(text) {
		for _, m := range htmlID.FindAllStringSubmatch(l.text, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		a := slug(m[2])
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

var linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor of a heading's text.
func slug(h string) string {
	h = linkText.ReplaceAllString(h, "$1")
	h = regexp.MustCompile(`<[^>]+>`).ReplaceAllString(h, "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocLinks fails on a relative link, in any tracked Markdown file, to
// a file or directory that does not exist, or to a #section the Markdown
// file it names does not have.
func TestDocLinks(t *testing.T) {
	r := gitRepo(t)
	cache := map[string]map[string]bool{}
	anchorsOf := func(f string) (map[string]bool, error) {
		if a, ok := cache[f]; ok {
			return a, nil
		}
		text, err := os.ReadFile(filepath.Join(r.root, f))
		if err != nil {
			return nil, err
		}
		cache[f] = anchors(string(text))
		return cache[f], nil
	}
	checked := 0
	for _, f := range r.markdown() {
		text, err := os.ReadFile(filepath.Join(r.root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(text)) {
			target := l.text
			if target == "" || scheme.MatchString(target) || strings.HasPrefix(target, "//") {
				continue // a web address or an e-mail: not checked here
			}
			checked++
			file, frag, _ := strings.Cut(target, "#")
			to := f
			if file != "" {
				to = path.Clean(path.Join(path.Dir(f), file))
				if strings.HasPrefix(file, "/") {
					to = path.Clean(strings.TrimPrefix(file, "/"))
				}
				if _, err := os.Stat(filepath.Join(r.root, filepath.FromSlash(to))); err != nil {
					t.Errorf("%s:%d: link to %s: %s does not exist", f, l.n, target, to)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(to, ".md") {
				continue
			}
			a, err := anchorsOf(to)
			if err != nil {
				t.Fatal(err)
			}
			if !a[frag] {
				t.Errorf("%s:%d: link to %s: %s has no section with anchor #%s", f, l.n, target, to, frag)
			}
		}
	}
	t.Logf("%d relative links checked", checked)
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Bad records: `--errors-tolerance` and the dead-letter topic": "bad-records---errors-tolerance-and-the-dead-letter-topic",
		"Kafka Connect sinks on capture's topics":                     "kafka-connect-sinks-on-captures-topics",
		"Trying it: the [embedded](x.md) catalog":                     "trying-it-the-embedded-catalog",
		"The latest `make bench` (2026-12-05)":                        "the-latest-make-bench-2026-12-05",
		"snake_case names":                                            "snake_case-names",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	a := anchors("# A\n```\n# Not a heading\n```\n## A\n<a name=\"here\"></a>\n")
	for _, want := range []string{"a", "a-1", "here"} {
		if !a[want] {
			t.Errorf("anchors lack %q: %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a heading inside a code block counted")
	}
}
