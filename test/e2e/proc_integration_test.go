//go:build integration

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// TestMain removes the binaries the tests built (about 160 MB a run) once
// every test has finished: a test's own directory goes with the test, these
// are shared by all of them.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	for _, p := range taggedBins {
		_ = os.RemoveAll(filepath.Dir(p))
	}
	os.Exit(code)
}

// binary builds capture and ingest once per test run and returns the path of name.
func binary(t *testing.T, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "binlake-e2e-bin")
		if buildErr != nil {
			return
		}
		for _, b := range []string{"capture", "ingest"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, b), "github.com/binlake/binlake/"+b)
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("building %s: %v\n%s", b, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, name)
}

var (
	taggedMu   sync.Mutex
	taggedBins = map[string]string{}
)

// taggedBinary builds the package name with the build tags (e.g. a
// deliberately broken test variant) once per test run and returns its path.
func taggedBinary(t *testing.T, name, tags string) string {
	t.Helper()
	taggedMu.Lock()
	defer taggedMu.Unlock()
	key := name + " " + tags
	if p, ok := taggedBins[key]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "binlake-e2e-tagged")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-tags", tags, "-o", p, "github.com/binlake/binlake/"+name)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s with tags %s: %v\n%s", name, tags, err, out)
	}
	taggedBins[key] = p
	return p
}

// proc is a running binary whose output goes to a file in the test's dir.
type proc struct {
	cmd     *exec.Cmd
	log     string
	started time.Time
	done    chan struct{}
	err     error
}

func start(t *testing.T, bin string, env []string, logName string) *proc {
	t.Helper()
	return startArgs(t, bin, nil, env, logName)
}

// startArgs is start with command-line arguments.
func startArgs(t *testing.T, bin string, args, env []string, logName string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), logName)
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, log: logPath, started: time.Now(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

func (p *proc) stop(t *testing.T, timeout time.Duration) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("process exited with %v after SIGTERM; log:\n%s", p.err, p.output())
		}
	case <-time.After(timeout):
		p.kill()
		t.Fatalf("process did not stop within %s of SIGTERM; log:\n%s", timeout, p.output())
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// output is the tail of the process's log, for failure messages.
func (p *proc) output() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// fullLog is the process's whole log, for searching: a line logged at
// start scrolls out of output's tail.
func (p *proc) fullLog(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// freePort is a local address no one listens on, for a process's metrics.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// metric is the value of the first sample on the /metrics page at addr
// whose name and labels match series (a regular expression), 0 when there
// is none yet, -1 when the page cannot be read.
func metric(addr, series string) int {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + series + ` ([0-9.e+]+)$`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return int(v)
}

// metricSum is the sum of the samples on the /metrics page at addr whose
// name and labels match series (a regular expression), 0 when there is
// none yet, -1 when the page cannot be read.
func metricSum(addr, series string) int {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, m := range regexp.MustCompile(`(?m)^`+series+` ([0-9.e+]+)$`).FindAllSubmatch(b, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		sum += v
	}
	return int(sum)
}

// streamedEvents is the change events (op c, u, d) a capture process
// published (its /metrics at addr), -1 if they cannot be read.
func streamedEvents(addr string) int {
	return metricSum(addr, `capture_events_total\{op="[cud]",[^}]*\}`)
}

// emittedReads is the op=r events a capture process published (its
// /metrics at addr), -1 if they cannot be read.
func emittedReads(addr string) int { return metric(addr, `capture_events_total\{op="r",[^}]*\}`) }
