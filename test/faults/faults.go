// Package faults injects the faults of the chaos test (test/chaos) and of
// the end-to-end tests that need one at a known moment: a client of
// toxiproxy's HTTP API (Shopify's TCP proxy, which the stack installs as
// toxiproxy-server) for the network faults, and [CommitFaults], an HTTP
// proxy in front of the Iceberg REST catalog that fails table commits the
// ways a catalog does.
package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sync"
	"time"
)

// Toxiproxy is a client of a toxiproxy-server's HTTP API.
type Toxiproxy struct {
	API string // e.g. http://127.0.0.1:8474
	hc  http.Client
}

// NewToxiproxy returns a client of the server at api.
func NewToxiproxy(api string) *Toxiproxy {
	return &Toxiproxy{API: api, hc: http.Client{Timeout: 10 * time.Second}}
}

func (x *Toxiproxy) do(ctx context.Context, method, path string, body any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, x.API+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := x.hc.Do(req)
	if err != nil {
		return fmt.Errorf("toxiproxy %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("toxiproxy %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// Proxy creates (or replaces) a proxy listening on listen and forwarding
// to upstream.
func (x *Toxiproxy) Proxy(ctx context.Context, name, listen, upstream string) error {
	_ = x.do(ctx, http.MethodDelete, "/proxies/"+name, nil)
	return x.do(ctx, http.MethodPost, "/proxies", map[string]any{"name": name, "listen": listen, "upstream": upstream, "enabled": true})
}

// Enable opens (true) or cuts (false) a proxy: cut, it closes its
// connections and refuses new ones.
func (x *Toxiproxy) Enable(ctx context.Context, name string, on bool) error {
	return x.do(ctx, http.MethodPost, "/proxies/"+name, map[string]any{"enabled": on})
}

// Toxic adds a toxic (latency, bandwidth, timeout, reset_peer, ...) to a
// proxy's stream ("downstream": server to client, "upstream": client to
// server) with toxiproxy's attributes for its type.
func (x *Toxiproxy) Toxic(ctx context.Context, proxy, name, typ, stream string, attrs map[string]any) error {
	return x.do(ctx, http.MethodPost, "/proxies/"+proxy+"/toxics",
		map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
}

// RemoveToxic removes a toxic from a proxy.
func (x *Toxiproxy) RemoveToxic(ctx context.Context, proxy, name string) error {
	return x.do(ctx, http.MethodDelete, "/proxies/"+proxy+"/toxics/"+name, nil)
}

// CommitFault is how [CommitFaults] fails one table commit.
type CommitFault string

// The commit faults. Only Lost lets the commit reach the catalog: the
// catalog applies it and the client never hears so.
const (
	Conflict    CommitFault = "409"     // 409 CommitFailedException: the client must rebase and retry
	ServerError CommitFault = "500"     // 500, commit not applied: outcome unknown to the client
	Unavailable CommitFault = "503"     // 503, commit not applied
	Timeout     CommitFault = "timeout" // no answer for a while, then the connection drops; not applied
	Lost        CommitFault = "lost"    // applied by the catalog, then the connection drops before the answer
	// Held holds a commit until Release (or until its client gives up),
	// then passes it to the catalog: a slow catalog or object store.
	Held CommitFault = "held"
)

// commitPath matches the REST catalog's table commit (UpdateTable), with
// or without a prefix: POST /v1[/prefix]/namespaces/{ns}/tables/{table}.
var commitPath = regexp.MustCompile(`^/v1/(.+/)?namespaces/[^/]+/tables/[^/]+$`)

// CommitFaults is a reverse proxy in front of an Iceberg REST catalog that
// passes everything through except the table commits it was armed to
// fail.
type CommitFaults struct {
	proxy *httputil.ReverseProxy
	// hold is how long Timeout holds a commit before dropping it.
	hold time.Duration

	mu       sync.Mutex
	armed    CommitFault
	left     int
	injected map[CommitFault]int
	commits  int
	released chan struct{} // closed by Release: Held commits go on
}

// NewCommitFaults returns a proxy to the catalog at backend; Timeout
// holds a commit for hold.
func NewCommitFaults(backend string, hold time.Duration) (*CommitFaults, error) {
	u, err := url.Parse(backend)
	if err != nil {
		return nil, err
	}
	return &CommitFaults{proxy: httputil.NewSingleHostReverseProxy(u), hold: hold, injected: map[CommitFault]int{}, released: make(chan struct{})}, nil
}

// Release lets every commit Held so far, and every one Held later, go on
// to the catalog.
func (c *CommitFaults) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.released:
	default:
		close(c.released)
	}
}

// Arm makes the next n commits fail with f (replacing what was armed).
func (c *CommitFaults) Arm(f CommitFault, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.left = f, n
}

// Disarm stops failing commits and returns how many the last Arm failed.
func (c *CommitFaults) Disarm() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.left = 0
	return c.injected[c.armed]
}

// Injected returns how many commits were failed with each fault so far,
// and how many commits passed through.
func (c *CommitFaults) Injected() (map[CommitFault]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[CommitFault]int, len(c.injected))
	for k, v := range c.injected {
		out[k] = v
	}
	return out, c.commits
}

func (c *CommitFaults) take(r *http.Request) CommitFault {
	if r.Method != http.MethodPost || !commitPath.MatchString(r.URL.Path) {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commits++
	if c.left <= 0 {
		return ""
	}
	c.left--
	c.injected[c.armed]++
	return c.armed
}

// ServeHTTP implements http.Handler.
func (c *CommitFaults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := c.take(r)
	errBody := func(code int, typ, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
	}
	switch f {
	case "":
		c.proxy.ServeHTTP(w, r)
	case Conflict:
		errBody(http.StatusConflict, "CommitFailedException", "chaos: injected conflict, the commit was not applied")
	case ServerError:
		errBody(http.StatusInternalServerError, "ServerError", "chaos: injected server error, the commit was not applied")
	case Unavailable:
		errBody(http.StatusServiceUnavailable, "ServiceUnavailableException", "chaos: injected 503, the commit was not applied")
	case Timeout:
		select {
		case <-time.After(c.hold):
		case <-r.Context().Done():
		}
		drop(w)
	case Held:
		c.mu.Lock()
		released := c.released
		c.mu.Unlock()
		select {
		case <-released:
			c.proxy.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	case Lost:
		// Apply the commit, throw the answer away, then drop the connection.
		rec := &discard{h: http.Header{}}
		c.proxy.ServeHTTP(rec, r)
		drop(w)
	}
}

// drop closes the client's connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, as a dead load balancer gives
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// discard is a ResponseWriter that keeps nothing.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(code int)        { d.code = code }
