package main

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestIndexDirTemporary: without state-dir the index gets a new temporary
// directory that release removes; directories left by processes that no
// longer run are removed at the next start, those of running processes
// kept.
func TestIndexDirTemporary(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	// A pid that no longer runs: a finished child's.
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(tmp, tempIndexPrefix+strconv.Itoa(child.Process.Pid)+"-1")
	alive := filepath.Join(tmp, tempIndexPrefix+strconv.Itoa(os.Getppid())+"-2")
	other := filepath.Join(tmp, "binlake-ingest-index-notapid")
	for _, d := range []string{dead, alive, other} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	dir, release, err := indexDir("", logger)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != tmp {
		t.Errorf("temporary index %s is not under TMPDIR %s", dir, tmp)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the directory of a process that no longer runs is still there (%v)", err)
	}
	for _, d := range []string{alive, other, dir} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v, want it kept", d, err)
		}
	}
	release()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("release left %s (%v)", dir, err)
	}

	// A state-dir given is used as it is and never removed.
	given := t.TempDir()
	d, release, err := indexDir(given, logger)
	if err != nil || d != given {
		t.Fatalf("indexDir(%q) = %q, %v", given, d, err)
	}
	release()
	if _, err := os.Stat(given); err != nil {
		t.Errorf("release removed the state-dir given: %v", err)
	}
}
