//go:build integration

package compat

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/binlake/binlake/test/debezium"
)

// realWorldDir holds the real-world compatibility workloads: one SQL file
// per class of schema (character sets, type declaration forms, temporal
// limits, keys and names, defaults and DDL), written from the MySQL 8.4
// and MariaDB 10.11 reference manuals rather than from capture's code. See
// README.md there for the file format.
const realWorldDir = "test/compat/testdata/realworld"

// workloadFile is one parsed real-world workload.
type workloadFile struct {
	stmts []string
	// before runs before both connectors start (tables whose snapshot or
	// schema snapshot the file compares).
	before []string
	dbz    map[string]string
	capEnv []string
	// allow maps table → event path → reason.
	allow map[string]map[string]string
}

// parseWorkload reads a workload's header lines:
//
//	-- debezium: <property>=<value>
//	-- capture-env: <VAR>=<value>
//	-- allow: <table> <path> <reason…>
//
// and its statements; statements after a "-- before-start" line and up to
// a "-- after-start" line run before the connectors start.
func parseWorkload(t *testing.T, text string) workloadFile {
	t.Helper()
	w := workloadFile{dbz: map[string]string{}, allow: map[string]map[string]string{}}
	var body, before strings.Builder
	cur := &body
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "-- debezium:"):
			k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(trimmed, "-- debezium:")), "=")
			if !ok {
				t.Fatalf("bad header %q", line)
			}
			w.dbz[k] = v
		case strings.HasPrefix(trimmed, "-- capture-env:"):
			w.capEnv = append(w.capEnv, strings.TrimSpace(strings.TrimPrefix(trimmed, "-- capture-env:")))
		case strings.HasPrefix(trimmed, "-- allow:"):
			f := strings.SplitN(strings.TrimSpace(strings.TrimPrefix(trimmed, "-- allow:")), " ", 3)
			if len(f) != 3 {
				t.Fatalf("bad header %q: want '-- allow: <table> <path> <reason>'", line)
			}
			if w.allow[f[0]] == nil {
				w.allow[f[0]] = map[string]string{}
			}
			w.allow[f[0]][f[1]] = f[2]
		case trimmed == "-- before-start":
			cur = &before
		case trimmed == "-- after-start":
			cur = &body
		default:
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	w.stmts = statements(body.String())
	w.before = statements(before.String())
	return w
}

// TestCompatRealWorld runs every workload of realWorldDir through the
// Debezium MariaDB connector and capture, and compares every event (keys,
// values, schemas, schema changes, transaction metadata). Files with the
// same connector settings share one database and one pair of connectors
// (a subtest named after its files, joined by "+"); each file's statements
// run on a connection of their own, so session settings do not leak from
// one file into the next. A file's allowed differences are printed with
// their reasons (ALLOWED lines) before its group's COMPAT line.
//
// One file: -run 'TestCompatRealWorld/.*10_charsets'.
func TestCompatRealWorld(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(debezium.RepoRoot(), realWorldDir, "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no workloads in %s", realWorldDir)
	}
	type group struct {
		names []string
		files []workloadFile
	}
	var order []string
	groups := map[string]*group{}
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		w := parseWorkload(t, string(text))
		key := settingsKey(w)
		g := groups[key]
		if g == nil {
			g = &group{}
			groups[key] = g
			order = append(order, key)
		}
		g.names = append(g.names, strings.TrimSuffix(filepath.Base(file), ".sql"))
		g.files = append(g.files, w)
	}
	for _, key := range order {
		g := groups[key]
		t.Run(strings.Join(g.names, "+"), func(t *testing.T) {
			o := runOpts{dbz: g.files[0].dbz, capEnv: g.files[0].capEnv}
			allow := map[string]map[string]string{}
			for _, w := range g.files {
				o.before = append(o.before, w.before...)
				for tbl, paths := range w.allow {
					if allow[tbl] != nil {
						t.Fatalf("table %s has -- allow: lines in two files: give each file its own tables", tbl)
					}
					allow[tbl] = paths
				}
			}
			r := newRunWith(t, o)
			r.allowTable = allow
			for _, w := range g.files {
				r.exec(w.stmts...)
			}
			r.compare(1)
		})
	}
}

// settingsKey identifies a workload's connector settings.
func settingsKey(w workloadFile) string {
	var parts []string
	for k, v := range w.dbz {
		parts = append(parts, "dbz:"+k+"="+v)
	}
	for _, e := range w.capEnv {
		parts = append(parts, "cap:"+e)
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}
