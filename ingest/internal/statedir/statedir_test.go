package statedir

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/binlake/binlake/ingest/internal/keyindex"
	"github.com/binlake/binlake/ingest/internal/lake"
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

// corruptStore makes the Pebble store in dir unreadable: its manifest
// overwritten with garbage.
func corruptStore(t *testing.T, dir string) {
	t.Helper()
	manifests, err := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if err != nil || len(manifests) == 0 {
		t.Fatalf("no manifest in %s: %v", dir, err)
	}
	for _, m := range manifests {
		if err := os.WriteFile(m, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 64), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCorruptIndexKeepsStateDir: a corrupt key index is moved aside and
// rebuilt, and nothing else in the state dir is touched, whether the index
// is in its own directory or at the state dir's root where earlier
// versions kept it with a REST catalog (a state dir set to /var/lib or
// $HOME by mistake was emptied: the corrupt index was RemoveAll'd with
// the directory it was in).
func TestCorruptIndexKeepsStateDir(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		t.Run(fmt.Sprintf("at-root=%v", legacy), func(t *testing.T) {
			stateDir := t.TempDir()
			unrelated := []string{filepath.Join(stateDir, "unrelated.txt"), filepath.Join(stateDir, "sub", "notes.txt"), filepath.Join(stateDir, "000001.log.bak")}
			for _, f := range unrelated {
				if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, []byte("not ingest's"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg := lake.CatalogConfig{CatalogURI: "http://127.0.0.1:1", StateDir: stateDir}
			base, err := cfg.IndexBase()
			if err != nil {
				t.Fatal(err)
			}
			if base != filepath.Join(stateDir, "keyindex") {
				t.Fatalf("index directory %s, want the state dir's keyindex/", base)
			}
			at := base
			if legacy {
				at = stateDir
			}
			st, err := keyindex.Open(keyindex.Config{Dir: at})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			corruptStore(t, at)

			var log bytes.Buffer
			idx, release, err := OpenIndex(base, cfg.LegacyIndexDir(), 0, slog.New(slog.NewTextHandler(&log, nil)))
			if err != nil {
				t.Fatalf("opening the corrupt index: %v\n%s", err, log.String())
			}
			if _, err := idx.Table("00000000-0000-0000-0000-000000000001", []string{"ns", "t"}); err != nil {
				t.Errorf("the rebuilt index is not usable: %v", err)
			}
			release()
			for _, f := range unrelated {
				if b, err := os.ReadFile(f); err != nil || string(b) != "not ingest's" {
					t.Errorf("%s after a corrupt index: %q, %v", f, b, err)
				}
			}
			aside, _ := filepath.Glob(filepath.Join(stateDir, "keyindex.corrupt-*"))
			if len(aside) != 1 {
				t.Errorf("the corrupt index was not moved aside: %v", aside)
			}
			if !strings.Contains(log.String(), "the key index is corrupt; moved it aside") {
				t.Errorf("no log line for the corrupt index:\n%s", log.String())
			}
			if legacy {
				if !strings.Contains(log.String(), "moved the key index an earlier version kept") {
					t.Errorf("no log line for the move out of the state dir's root:\n%s", log.String())
				}
				if left, _ := filepath.Glob(filepath.Join(stateDir, "MANIFEST-*")); len(left) != 0 {
					t.Errorf("index files left at the state dir's root: %v", left)
				}
			}
		})
	}
}
