// Package statedir keeps the key index in ingest's state directory: the
// index's own directory under state-dir (one moved from an earlier
// version's place at state-dir's root), a corrupt one moved aside, or,
// without state-dir, a temporary directory removed on exit (and those
// that killed processes left behind).
package statedir

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/binlake/binlake/ingest/internal/keyindex"
)

// tempIndexPrefix starts the name of the temporary key-index directory an
// ingest without state-dir uses: <prefix><pid>-<random>, under os.TempDir.
const tempIndexPrefix = "binlake-ingest-index-"

// indexDir returns the key index's directory: stateDir (the index's own
// directory, <state-dir>/keyindex), or, when it is
// empty, a new temporary directory that release removes (the index is a
// cache, rebuilt from the tables at the next start). Temporary directories
// that processes killed before they could remove theirs left behind are
// removed first, so that kill -9 loops do not fill the disk.
func indexDir(stateDir string, logger *slog.Logger) (dir string, release func(), err error) {
	if stateDir != "" {
		return stateDir, func() {}, nil
	}
	removeStaleIndexDirs(os.TempDir(), logger)
	dir, err = os.MkdirTemp("", tempIndexPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", nil, fmt.Errorf("creating a temporary directory for the key index (or set state-dir, INGEST_STATE_DIR): %w", err)
	}
	logger.Info("the key index lives in a temporary directory, removed on exit, and is rebuilt from the tables at every start "+
		"(state-dir is not set, or this is ingest replay beside the embedded catalog, whose key index the running ingest holds); "+
		"set state-dir (INGEST_STATE_DIR) to a kept directory to skip the rebuild", "dir", dir)
	return dir, func() {
		if err := os.RemoveAll(dir); err != nil {
			logger.Warn("removing the temporary key index", "dir", dir, "error", err.Error())
		}
	}, nil
}

// OpenIndex opens the key index in base (lake.CatalogConfig.IndexBase; "": a
// temporary directory, see indexDir). A store an earlier version kept in
// legacy (state-dir's root) is moved into base first. The release closes
// the index and removes a temporary directory.
func OpenIndex(base, legacy string, cacheBytes int64, logger *slog.Logger) (*keyindex.Store, func(), error) {
	if base != "" && legacy != "" {
		if err := keyindex.Adopt(legacy, base, logger); err != nil {
			return nil, nil, fmt.Errorf("moving the key index into %s: %w", base, err)
		}
	}
	dir, releaseDir, err := indexDir(base, logger)
	if err != nil {
		return nil, nil, err
	}
	idx, err := keyindex.Open(keyindex.Config{Dir: dir, CacheBytes: cacheBytes, Logger: logger})
	if err != nil {
		releaseDir()
		return nil, nil, fmt.Errorf("opening the key index (in %s): %w", dir, err)
	}
	return idx, func() { _ = idx.Close(); releaseDir() }, nil
}

// removeStaleIndexDirs removes the temporary key-index directories under
// tmp whose process no longer runs.
func removeStaleIndexDirs(tmp string, logger *slog.Logger) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), tempIndexPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() || processRuns(pid) {
			continue
		}
		path := filepath.Join(tmp, e.Name())
		if err := os.RemoveAll(path); err != nil {
			logger.Warn("removing a stale temporary key index", "dir", path, "error", err.Error())
			continue
		}
		logger.Info("removed the temporary key index of an ingest process that no longer runs", "dir", path, "pid", pid)
	}
}

// processRuns reports whether a process pid exists (one of another user
// counts: its directory is not ours to judge).
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
