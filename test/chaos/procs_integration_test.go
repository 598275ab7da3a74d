//go:build integration

package chaos

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// build compiles capture and ingest into dir.
func build(t *testing.T, dir string) {
	t.Helper()
	for _, b := range []string{"capture", "ingest"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b), "github.com/binlake/binlake/"+b)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", b, err, out)
		}
	}
}

// member is one supervised binlake process: like a Kubernetes pod, it is
// started again whenever it exits (killed by the nemesis or on its own),
// unless held.
type member struct {
	name string
	bin  string
	env  []string
	dir  string // logs: <dir>/<name>-<n>.log

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	starts int
	held   bool
	exits  []string // exits the nemesis did not cause: the log's last line
	wanted bool     // the running process is being stopped by the nemesis
}

func (m *member) logPath(n int) string {
	return filepath.Join(m.dir, fmt.Sprintf("%s-%d.log", m.name, n))
}

// start runs the process; the caller holds m.mu.
func (m *member) startLocked(t *testing.T) {
	m.starts++
	f, err := os.Create(m.logPath(m.starts))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(m.bin)
	cmd.Env = append(os.Environ(), m.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", m.name, err)
	}
	done := make(chan struct{})
	m.cmd, m.done, m.wanted = cmd, done, false
	go func() {
		err := cmd.Wait()
		f.Close()
		m.mu.Lock()
		m.err = err
		m.mu.Unlock()
		close(done)
	}()
}

func (m *member) running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the running process and waits up to wait for it to
// exit (the supervisor starts it again unless it is held).
func (m *member) signal(sig syscall.Signal, wait time.Duration) error {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.wanted = true
	m.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return fmt.Errorf("%s is not running", m.name)
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
		return nil
	case <-time.After(wait):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("%s did not exit within %s of %s; killed", m.name, wait, sig)
	}
}

// hold stops the supervisor from restarting m until release.
func (m *member) hold(h bool) {
	m.mu.Lock()
	m.held = h
	m.mu.Unlock()
}

// tend restarts m if it exited and is not held, noting an exit the
// nemesis did not cause.
func (m *member) tend(t *testing.T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held || m.done == nil {
		return
	}
	select {
	case <-m.done:
	default:
		return
	}
	if !m.wanted {
		m.exits = append(m.exits, fmt.Sprintf("%s-%d: %v: %s", m.name, m.starts, m.err, lastLine(m.logPath(m.starts))))
	}
	m.startLocked(t)
}

// stop ends the process for good (SIGTERM, then SIGKILL).
func (m *member) stop() {
	m.hold(true)
	if m.running() {
		_ = m.signal(syscall.SIGTERM, 30*time.Second)
	}
}

// crashes lists log lines across every run of m that no process may ever
// print, whatever the fault: a Go panic or a fatal runtime error.
func (m *member) crashes() []string {
	m.mu.Lock()
	n := m.starts
	m.mu.Unlock()
	var out []string
	for i := 1; i <= n; i++ {
		b, _ := os.ReadFile(m.logPath(i))
		for _, l := range bytes.Split(b, []byte("\n")) {
			s := string(l)
			if strings.HasPrefix(s, "panic:") || strings.HasPrefix(s, "fatal error:") || strings.Contains(s, "DATA RACE") {
				out = append(out, fmt.Sprintf("%s-%d: %s", m.name, i, s))
			}
		}
	}
	return out
}

// logged reports whether any run's log contains s.
func (m *member) logged(s string) bool {
	m.mu.Lock()
	n := m.starts
	m.mu.Unlock()
	for i := 1; i <= n; i++ {
		if b, _ := os.ReadFile(m.logPath(i)); bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

func lastLine(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	l := lines[len(lines)-1]
	if len(l) > 400 {
		l = l[:400] + "…"
	}
	return l
}
