// Package workload parses the real-world workload files of
// test/compat/testdata/realworld (format in that folder's README.md): SQL
// statements ending with ';' at the end of a line, and header lines that
// set each harness's options. The Debezium comparison (test/compat) and the
// lake comparison (test/e2e) read the same files through it.
package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File is one parsed workload.
type File struct {
	// Stmts run after the connectors start; Before before they start
	// ("-- before-start" … "-- after-start").
	Stmts, Before []string
	// Debezium holds "-- debezium: <property>=<value>" lines.
	Debezium map[string]string
	// CaptureEnv and IngestEnv hold "-- capture-env:" / "-- ingest-env:"
	// lines ("VAR=value").
	CaptureEnv, IngestEnv []string
	// Allow maps table → event path → reason ("-- allow: <table> <path>
	// <reason>"): a field that may differ from Debezium's.
	Allow map[string]map[string]string
	// LakeAllow maps "<table> <column>" → reason ("-- lake-allow:"): a column
	// the lake may not equal MariaDB in, as TYPES.md documents.
	LakeAllow map[string]string
}

// Parse reads a workload file. A malformed header line is an error.
func Parse(text string) (File, error) {
	f := File{Debezium: map[string]string{}, Allow: map[string]map[string]string{}, LakeAllow: map[string]string{}}
	cur := &f.Stmts
	var stmt strings.Builder
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		header := func(prefix string) (string, bool) {
			v, ok := strings.CutPrefix(trimmed, prefix)
			return strings.TrimSpace(v), ok
		}
		if v, ok := header("-- debezium:"); ok {
			k, val, ok := strings.Cut(v, "=")
			if !ok {
				return File{}, fmt.Errorf("bad header %q: want '-- debezium: <property>=<value>'", line)
			}
			f.Debezium[k] = val
			continue
		}
		if v, ok := header("-- capture-env:"); ok {
			f.CaptureEnv = append(f.CaptureEnv, v)
			continue
		}
		if v, ok := header("-- ingest-env:"); ok {
			f.IngestEnv = append(f.IngestEnv, v)
			continue
		}
		if v, ok := header("-- allow:"); ok {
			p := strings.SplitN(v, " ", 3)
			if len(p) != 3 {
				return File{}, fmt.Errorf("bad header %q: want '-- allow: <table> <path> <reason>'", line)
			}
			if f.Allow[p[0]] == nil {
				f.Allow[p[0]] = map[string]string{}
			}
			f.Allow[p[0]][p[1]] = p[2]
			continue
		}
		if v, ok := header("-- lake-allow:"); ok {
			p := strings.SplitN(v, " ", 3)
			if len(p) != 3 {
				return File{}, fmt.Errorf("bad header %q: want '-- lake-allow: <table> <column> <reason>'", line)
			}
			f.LakeAllow[p[0]+" "+p[1]] = p[2]
			continue
		}
		switch {
		case trimmed == "-- before-start":
			cur = &f.Before
		case trimmed == "-- after-start":
			cur = &f.Stmts
		case trimmed == "" || strings.HasPrefix(trimmed, "--"):
		default:
			stmt.WriteString(line)
			stmt.WriteByte('\n')
			if strings.HasSuffix(trimmed, ";") {
				*cur = append(*cur, strings.TrimSuffix(strings.TrimSpace(stmt.String()), ";"))
				stmt.Reset()
			}
		}
	}
	if strings.TrimSpace(stmt.String()) != "" {
		return File{}, fmt.Errorf("statement without a closing ';': %q", stmt.String())
	}
	return f, nil
}

// Group is workload files that share settings, in file order: the harnesses
// run a group on one database and one pipeline.
type Group struct {
	Names []string // the files' base names without ".sql"
	Files []File
}

// Name joins the group's file names with "+" (the harnesses' subtest name).
func (g Group) Name() string { return strings.Join(g.Names, "+") }

// Settings selects the kinds of a file's settings a harness runs it with.
type Settings int

const (
	DebeziumSettings Settings = 1 << iota // "-- debezium:" properties
	CaptureSettings                       // "-- capture-env:"
	IngestSettings                        // "-- ingest-env:"
)

// SettingsKey renders the file's settings of the kinds in s as one string,
// independent of their order in the file: files with equal keys can share
// one run of a harness that uses only those kinds.
func (f File) SettingsKey(s Settings) string {
	var parts []string
	if s&DebeziumSettings != 0 {
		for k, v := range f.Debezium {
			parts = append(parts, "dbz:"+k+"="+v)
		}
	}
	if s&CaptureSettings != 0 {
		for _, e := range f.CaptureEnv {
			parts = append(parts, "cap:"+e)
		}
	}
	if s&IngestSettings != 0 {
		for _, e := range f.IngestEnv {
			parts = append(parts, "ing:"+e)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}

// GroupFiles reads and parses the workload files at paths and groups those
// with equal settings of the kinds in s (File.SettingsKey), the groups in
// the order of their first file.
func GroupFiles(paths []string, s Settings) ([]Group, error) {
	var out []Group
	index := map[string]int{}
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f, err := Parse(string(text))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		k := f.SettingsKey(s)
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, Group{})
		}
		out[i].Names = append(out[i].Names, strings.TrimSuffix(filepath.Base(p), ".sql"))
		out[i].Files = append(out[i].Files, f)
	}
	return out, nil
}
