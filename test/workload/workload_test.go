package workload

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	f, err := Parse(`-- a comment
-- debezium: a.b=c=d
-- capture-env: CAPTURE_X=1
-- ingest-env: INGEST_Y=2
-- allow: t1 value.after.y Debezium writes 1900
-- lake-allow: t1 c no producer carries it
-- before-start
CREATE TABLE t0 (id INT);
-- after-start
INSERT INTO t1
VALUES (1);
`)
	if err != nil {
		t.Fatal(err)
	}
	if f.Debezium["a.b"] != "c=d" || !slices.Equal(f.CaptureEnv, []string{"CAPTURE_X=1"}) || !slices.Equal(f.IngestEnv, []string{"INGEST_Y=2"}) {
		t.Errorf("headers: %+v", f)
	}
	if f.Allow["t1"]["value.after.y"] != "Debezium writes 1900" || f.LakeAllow["t1 c"] != "no producer carries it" {
		t.Errorf("allow: %v %v", f.Allow, f.LakeAllow)
	}
	if !slices.Equal(f.Before, []string{"CREATE TABLE t0 (id INT)"}) || !slices.Equal(f.Stmts, []string{"INSERT INTO t1\nVALUES (1)"}) {
		t.Errorf("statements: before %q, after %q", f.Before, f.Stmts)
	}
	for _, bad := range []string{"-- debezium: novalue\n", "-- allow: t path\n", "-- lake-allow: t\n", "INSERT INTO t VALUES (1)\n"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted a malformed file", bad)
		}
	}
}

// TestParseRepoWorkloads parses every workload the harnesses run: a
// malformed header or an unclosed statement fails here, without a stack.
func TestParseRepoWorkloads(t *testing.T) {
	var files []string
	for _, pat := range []string{"../compat/testdata/realworld/*.sql", "../compat/testdata/*.sql", "../e2e/testdata/lake/*.sql", "../../schemas/testdata/debezium/workload.sql"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found %d workload files, want the real-world set", len(files))
	}
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		w, err := Parse(string(text))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if len(w.Stmts)+len(w.Before) == 0 {
			t.Errorf("%s: no statements", file)
		}
	}
}

func TestGroupFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	paths := []string{
		write("00_a.sql", "CREATE TABLE a (id INT PRIMARY KEY);\n"),
		write("10_b.sql", "-- capture-env: X=1\nCREATE TABLE b (id INT PRIMARY KEY);\n"),
		write("20_c.sql", "-- ingest-env: Y=2\nCREATE TABLE c (id INT PRIMARY KEY);\n"),
	}
	groups, err := GroupFiles(paths, CaptureSettings)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range groups {
		got = append(got, g.Name())
		if len(g.Files) != len(g.Names) {
			t.Errorf("group %s: %d files for %d names", g.Name(), len(g.Files), len(g.Names))
		}
	}
	if want := []string{"00_a+20_c", "10_b"}; !slices.Equal(got, want) {
		t.Errorf("groups %q, want %q", got, want)
	}
	if s := groups[0].Files[1].Stmts; len(s) != 1 || !strings.Contains(s[0], "TABLE c") {
		t.Errorf("group 00_a+20_c's second file holds %q, want 20_c's statement", s)
	}
	if _, err := GroupFiles([]string{write("30_bad.sql", "-- debezium: novalue\n")}, CaptureSettings); err == nil || !strings.Contains(err.Error(), "30_bad.sql") {
		t.Errorf("a malformed file: err %v, want one naming the file", err)
	}
}

// TestSettingsKey checks that a key holds the kinds asked for, and only
// those, whatever the order of the lines.
func TestSettingsKey(t *testing.T) {
	a, err := Parse("-- debezium: d=1\n-- capture-env: B=2\n-- capture-env: A=1\n-- ingest-env: I=1\nSELECT 1;\n")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse("-- capture-env: A=1\n-- capture-env: B=2\nSELECT 1;\n")
	if err != nil {
		t.Fatal(err)
	}
	if a.SettingsKey(CaptureSettings) != b.SettingsKey(CaptureSettings) {
		t.Errorf("equal capture settings in another order: keys %q and %q", a.SettingsKey(CaptureSettings), b.SettingsKey(CaptureSettings))
	}
	for _, s := range []Settings{DebeziumSettings | CaptureSettings, CaptureSettings | IngestSettings} {
		if a.SettingsKey(s) == b.SettingsKey(s) {
			t.Errorf("settings %b: files differing in them share key %q", s, a.SettingsKey(s))
		}
	}
}
