//go:build integration

package smoke

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/binlake/binlake/test/testenv"
)

// TestStackFromPrivateDirectory starts the stack's MariaDB with its data
// under a mode-0700 directory (as a clone under /root, or in a mktemp -d,
// has it), on a port of its own, and checks that it runs with the settings
// capture needs and the users the stack creates. The stack's server once
// dropped to the mysql user, which cannot enter such a directory, and
// `make test` stopped at its first step.
func TestStackFromPrivateDirectory(t *testing.T) {
	main := testenv.MariaDBEnv(t) // skips without the stack; its users are the script's
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "deploy", "local", "stack.sh")
	stack := func(ctx context.Context, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "BINLAKE_STACK_DIR="+filepath.Join(dir, "stack"), fmt.Sprintf("BINLAKE_MARIADB_PORT=%d", port))
		return cmd.CombinedOutput()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := stack(ctx, "down"); err != nil {
			t.Errorf("stack.sh down: %v\n%s", err, out)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if out, err := stack(ctx, "up", "mariadb"); err != nil {
		t.Fatalf("stack.sh up mariadb with its data under a mode-0700 directory: %v\n%s", err, out)
	}

	m := main
	m.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	var logBin int
	var format, image, metadata string
	if err := m.AdminDB(t, "").QueryRowContext(t.Context(), "SELECT @@log_bin, @@binlog_format, @@binlog_row_image, @@binlog_row_metadata").
		Scan(&logBin, &format, &image, &metadata); err != nil {
		t.Fatal(err)
	}
	if logBin != 1 || format != "ROW" || image != "FULL" || metadata != "FULL" {
		t.Errorf("log_bin=%d binlog_format=%s binlog_row_image=%s binlog_row_metadata=%s; want 1, ROW, FULL, FULL", logBin, format, image, metadata)
	}
	var grants int
	if err := m.AdminDB(t, "").QueryRowContext(t.Context(), "SELECT COUNT(*) FROM mysql.user WHERE user = ?", m.CaptureUser).Scan(&grants); err != nil {
		t.Fatal(err)
	}
	if grants != 1 {
		t.Errorf("the capture user %s exists %d times, want once", m.CaptureUser, grants)
	}
}
