//go:build integration

package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/testenv"
)

// TestCaptureStatus checks what capture status prints against values
// known from the server itself, on a MariaDB of the test's own (on the
// shared one other tests move the binlog's end all the time): no lag when
// capture has committed everything, the bytes and the wait of a change
// made while it is stopped, and exit code 3 beyond --max-lag.
func TestCaptureStatus(t *testing.T) {
	m := testenv.PrivateMariaDB(t, testenv.PrivateMariaDBConfig{})
	db := m.CreateDatabase(t, "status")
	c := newCaptureEnvOn(t, m, db, "CAPTURE_LOG_LEVEL=info")
	exec1(t, c, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO t VALUES (1, 'a')")
	bin := binary(t, "capture")

	type position struct {
		File string `json:"file"`
		Pos  int64  `json:"pos"`
	}
	type report struct {
		Stored, Server position
		LagBytes       int64   `json:"lag_bytes"`
		LagSeconds     float64 `json:"lag_seconds"`
		Snapshot       *struct {
			Tables     int `json:"tables"`
			TableIndex int `json:"table_index"`
		} `json:"snapshot"`
		Stale bool `json:"stale"`
	}
	status := func(args ...string) (report, string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"status", "--format=json"}, args...)...)
		cmd.Env = append(os.Environ(), c.env...)
		out, err := cmd.Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var r report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("capture status (exit %d) printed no JSON: %v\n%s", code, err, out)
		}
		return r, string(out), code
	}
	serverPos := func() position {
		var p position
		var rest1, rest2 any
		if err := m.AdminDB(t, "").QueryRowContext(t.Context(), "SHOW MASTER STATUS").Scan(&p.File, &p.Pos, &rest1, &rest2); err != nil {
			t.Fatal(err)
		}
		return p
	}

	p := start(t, bin, c.env, "capture-0.log")
	waitLog(t, p, "snapshot: done", 2*time.Minute)
	c.caughtUp(t, 2*time.Minute)
	r, out, code := status()
	if code != 0 || r.LagBytes != 0 || r.LagSeconds != 0 || r.Stored != serverPos() {
		t.Errorf("caught up: exit %d, lag %d bytes %.1f s, stored %v, server %v; want 0, no lag, the server's position:\n%s", code, r.LagBytes, r.LagSeconds, r.Stored, serverPos(), out)
	}
	if r.Snapshot != nil && r.Snapshot.TableIndex < r.Snapshot.Tables {
		t.Errorf("the snapshot is done but status says table %d of %d", r.Snapshot.TableIndex, r.Snapshot.Tables)
	}
	p.stop(t, 30*time.Second)

	// A change while capture is stopped: its bytes and how long it waits.
	made := time.Now()
	exec1(t, c, "INSERT INTO t VALUES (2, 'while stopped')")
	time.Sleep(2 * time.Second) // the wait status must measure
	end := serverPos()
	r, out, code = status("--max-lag=1h")
	if code != 0 || r.Server != end || r.LagBytes != end.Pos-r.Stored.Pos || r.LagBytes <= 0 {
		t.Errorf("one change behind: exit %d, server %v, stored %v, lag %d bytes; want 0, %v, and the bytes between them:\n%s", code, r.Server, r.Stored, r.LagBytes, end, out)
	}
	if waited := time.Since(made).Seconds(); r.LagSeconds < 1 || r.LagSeconds > waited+1.5 {
		t.Errorf("the change waits %.1f s by status, %.1f s by the clock", r.LagSeconds, waited)
	}
	if r, out, code := status("--max-lag=1s"); code != 3 || !r.Stale {
		t.Errorf("--max-lag=1s with a change waiting 2 s: exit %d, stale %v, want 3 and stale:\n%s", code, r.Stale, out)
	}
	if _, _, code := status("--max-lag-bytes=1"); code != 3 {
		t.Errorf("--max-lag-bytes=1: exit %d, want 3", code)
	}

	p = start(t, bin, c.env, "capture-1.log")
	c.caughtUp(t, 2*time.Minute)
	p.stop(t, 30*time.Second)
	if r, out, code := status("--max-lag=1s", "--max-lag-bytes=1"); code != 0 || r.LagBytes != 0 || !strings.Contains(out, `"lag_bytes": 0`) {
		t.Errorf("after the restart caught up: exit %d, lag %d bytes:\n%s", code, r.LagBytes, out)
	}
}
