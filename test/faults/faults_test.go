package faults

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestCommitFaults checks each fault against a backend that counts the
// commits it applied: only Lost applies one, every fault fails the client,
// other requests and commits after the armed count pass through.
func TestCommitFaults(t *testing.T) {
	var applied, other atomic.Int32
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/tables/") {
			applied.Add(1)
		} else {
			other.Add(1)
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer backend.Close()
	cf, err := NewCommitFaults(backend.URL, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(cf)
	defer front.Close()
	commit := func() (int, error) {
		resp, err := http.Post(front.URL+"/v1/namespaces/db/tables/t", "application/json", strings.NewReader(`{}`))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, c := range []struct {
		f       CommitFault
		code    int // 0: the connection drops
		applied int32
	}{{Conflict, 409, 0}, {ServerError, 500, 0}, {Unavailable, 503, 0}, {Timeout, 0, 0}, {Lost, 0, 1}} {
		applied.Store(0)
		cf.Arm(c.f, 1)
		code, err := commit()
		if c.code == 0 && err == nil {
			t.Errorf("%s: answered %d, want a dropped connection", c.f, code)
		}
		if c.code != 0 && (err != nil || code != c.code) {
			t.Errorf("%s: got %d, %v; want %d", c.f, code, err, c.code)
		}
		if got := applied.Load(); got != c.applied {
			t.Errorf("%s: the backend applied %d commits, want %d", c.f, got, c.applied)
		}
		if n := cf.Disarm(); n != 1 {
			t.Errorf("%s: injected %d times, want 1", c.f, n)
		}
		// Disarmed, a commit passes.
		if code, err := commit(); err != nil || code != 200 || applied.Load() != c.applied+1 {
			t.Errorf("%s: after disarm got %d, %v, applied %d", c.f, code, err, applied.Load())
		}
	}
	// A load of a table is never failed.
	cf.Arm(Conflict, 5)
	resp, err := http.Get(front.URL + "/v1/namespaces/db/tables/t")
	if err != nil || resp.StatusCode != 200 || other.Load() != 1 {
		t.Fatalf("a load through an armed proxy: %v %v (backend saw %d)", resp, err, other.Load())
	}
	resp.Body.Close()
	if inj, commits := cf.Injected(); inj[Conflict] != 1 || inj[Lost] != 1 || commits != 10 {
		t.Fatalf("injected %v over %d commits", inj, commits)
	}
}

// TestCommitHeld: a Held commit reaches the catalog only after Release,
// and then once; a load is not held.
func TestCommitHeld(t *testing.T) {
	var applied atomic.Int32
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			applied.Add(1)
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer backend.Close()
	cf, err := NewCommitFaults(backend.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(cf)
	defer front.Close()
	cf.Arm(Held, 1)
	done := make(chan int, 1)
	go func() {
		resp, err := http.Post(front.URL+"/v1/namespaces/db/tables/t", "application/json", strings.NewReader(`{}`))
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	resp, err := http.Get(front.URL + "/v1/namespaces/db/tables/t")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a load while a commit is held: %v %v", resp, err)
	}
	resp.Body.Close()
	for inj, _ := cf.Injected(); inj[Held] == 0; inj, _ = cf.Injected() {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case code := <-done:
		t.Fatalf("the held commit answered %d before Release", code)
	case <-time.After(100 * time.Millisecond):
	}
	if n := applied.Load(); n != 0 {
		t.Fatalf("the catalog saw %d commits before Release", n)
	}
	cf.Release()
	if code := <-done; code != 200 || applied.Load() != 1 {
		t.Fatalf("after Release: answer %d, catalog saw %d commits", code, applied.Load())
	}
}
