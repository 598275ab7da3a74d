package pprofsrv

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestPprofOnItsOwnListener: the profiles answer on the pprof listener,
// which serves nothing else (no /metrics).
func TestPprofOnItsOwnListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := ServeOn(ln)
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/debug/pprof/cmdline"); code != http.StatusOK || !strings.Contains(body, ".test") {
		t.Errorf("/debug/pprof/cmdline: %d %q", code, body)
	}
	if code, _ := get("/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics on the pprof listener: %d, want 404", code)
	}
}
