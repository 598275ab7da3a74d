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
// Debezium MariaDB connector and capture on one database each, and
// compares every event (keys, values, schemas, schema changes,
// transaction metadata). Each file is a subtest; a file's allowed
// differences are printed with their reasons (ALLOWED lines) beside its
// COMPAT line.
func TestCompatRealWorld(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(debezium.RepoRoot(), realWorldDir, "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no workloads in %s", realWorldDir)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".sql"), func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			w := parseWorkload(t, string(text))
			r := newRunWith(t, runOpts{dbz: w.dbz, capEnv: w.capEnv, before: w.before})
			r.allowTable = w.allow
			r.exec(w.stmts...)
			r.compare(1)
		})
	}
}
