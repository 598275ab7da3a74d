package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tool returns the path of a command-line tool the stack installs into
// $BINLAKE_STACK_DIR/bin (deploy/local/stack.sh up tools: helm, promtool),
// or else the one on PATH. While `stack.sh up` still compiles the tools in
// the background it waits for that, up to 30 minutes. Without the tool it
// skips the test, and fails it under BINLAKE_REQUIRE_STACK=1.
func Tool(t testing.TB, name string) string {
	t.Helper()
	if dir := os.Getenv("BINLAKE_STACK_DIR"); dir != "" {
		waitForToolInstall(t, dir)
		p := filepath.Join(dir, "bin", name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := name + " not found in $BINLAKE_STACK_DIR/bin or on PATH: run deploy/local/stack.sh up tools"
	if os.Getenv("BINLAKE_REQUIRE_STACK") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// waitForToolInstall waits while the install stack.sh started in the
// background (pid in run/tools.pid) is alive.
func waitForToolInstall(t testing.TB, stackDir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stackDir, "run", "tools.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return
	}
	alive := func() bool { return syscall.Kill(pid, 0) == nil }
	if !alive() {
		return
	}
	t.Logf("waiting for the background tool install (pid %d, log %s)", pid, filepath.Join(stackDir, "logs", "tools.log"))
	deadline := time.Now().Add(30 * time.Minute)
	for alive() && time.Now().Before(deadline) {
		time.Sleep(2 * time.Second)
	}
}

// MavenLockPath is the file every Maven run of the tests (and of
// deploy/local/debezium.sh's installs) holds an exclusive flock on: two
// runs side by side (test/integration.sh's lanes) would otherwise write
// the same local repository and target directories at once.
func MavenLockPath() string { return filepath.Join(os.TempDir(), "binlake-maven.lock") }

// WithMavenLock runs fn holding the lock of MavenLockPath.
func WithMavenLock(fn func() error) error {
	f, err := os.OpenFile(MavenLockPath(), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it too
	return fn()
}
