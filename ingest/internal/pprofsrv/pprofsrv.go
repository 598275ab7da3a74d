// Package pprofsrv serves Go's profiles (net/http/pprof) on a listener
// of their own, apart from the metrics port. Both binaries hold this
// package, kept equal with the names changed
// (TestKafkaSecurityMatchesCapture).
package pprofsrv

import (
	"fmt"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"time"
)

// Serve serves Go's profiles (net/http/pprof) under /debug/pprof/ on
// addr (pprof-addr), a listener of their own: the metrics port, which a
// network policy opens to the scraper, never serves them. They are
// registered on this server's mux only, never on http.DefaultServeMux.
func Serve(addr string) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on pprof-addr %s: %w", addr, err)
	}
	return ServeOn(ln), nil
}

// ServeOn serves the profiles on ln.
func ServeOn(ln net.Listener) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", httppprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", httppprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends with Shutdown, owned by run
	return srv
}
