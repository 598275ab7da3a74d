//go:build integration

package compat

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/workload"
)

// realWorldDir holds the real-world compatibility workloads: one SQL file
// per class of schema (character sets, type declaration forms, temporal
// limits, keys and names, defaults and DDL), written from the MySQL 8.4
// and MariaDB 10.11 reference manuals rather than from capture's code. See
// README.md there for the file format.
const realWorldDir = "test/compat/testdata/realworld"

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
	groups, err := workload.GroupFiles(files, workload.DebeziumSettings|workload.CaptureSettings)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		t.Run(g.Name(), func(t *testing.T) {
			o := runOpts{dbz: g.Files[0].Debezium, capEnv: g.Files[0].CaptureEnv}
			allow := map[string]map[string]string{}
			for _, w := range g.Files {
				o.before = append(o.before, w.Before...)
				for tbl, paths := range w.Allow {
					if allow[tbl] != nil {
						t.Fatalf("table %s has -- allow: lines in two files: give each file its own tables", tbl)
					}
					allow[tbl] = paths
				}
			}
			r := newRunWith(t, o)
			r.allowTable = allow
			for _, w := range g.Files {
				r.exec(w.Stmts...)
			}
			r.compare(1)
		})
	}
}
