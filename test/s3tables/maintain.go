package s3tables

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// MaintenanceRun is what one Config.Maintain call committed to a table.
type MaintenanceRun struct {
	// Compactions is the compaction snapshots committed (0 when there was
	// nothing to compact, or every attempt lost to a writer).
	Compactions int
	// ExpiredSnapshots is the snapshots the expiry removed.
	ExpiredSnapshots int
}

// MaintenanceStats counts the managed maintenance of a Handler, for one
// table or for all of them.
type MaintenanceStats struct {
	// Runs is the Config.Maintain calls, Errors those that failed (a
	// failed call may still have committed what it reports).
	Runs, Errors int
	// Compactions is the compaction snapshots committed; Expiries the
	// calls whose expiry removed at least one snapshot, ExpiredSnapshots
	// the snapshots removed.
	Compactions, Expiries, ExpiredSnapshots int
	// Commits is the table commits of the clients (the writers) that the
	// backend accepted through the Handler; CommitsAfterCompaction those
	// accepted after the first compaction landed: a writer that committed
	// on top of the maintenance.
	Commits, CommitsAfterCompaction int
	// LastError is the last failed call's error.
	LastError error
}

func (s *MaintenanceStats) add(o MaintenanceStats) {
	s.Runs += o.Runs
	s.Errors += o.Errors
	s.Compactions += o.Compactions
	s.Expiries += o.Expiries
	s.ExpiredSnapshots += o.ExpiredSnapshots
	s.Commits += o.Commits
	s.CommitsAfterCompaction += o.CommitsAfterCompaction
	if o.LastError != nil {
		s.LastError = o.LastError
	}
}

// tables is what the Handler knows of the tables its clients created,
// loaded or committed to, in the order it first saw them, and their
// maintenance.
type tables struct {
	mu    sync.Mutex
	order []string // keys of stats: namespace + "\x1f" + table
	stats map[string]*MaintenanceStats
}

func (ts *tables) entry(key string) *MaintenanceStats {
	if ts.stats == nil {
		ts.stats = map[string]*MaintenanceStats{}
	}
	s, ok := ts.stats[key]
	if !ok {
		s = &MaintenanceStats{}
		ts.stats[key] = s
		ts.order = append(ts.order, key)
	}
	return s
}

// note records a request to rest (after /v1/<prefix>) the backend
// answered with status: a table created, loaded or committed to.
func (ts *tables) note(r *http.Request, rest []string, body []byte, status int) {
	if status/100 != 2 || len(rest) < 3 || rest[0] != "namespaces" || rest[2] != "tables" {
		return
	}
	var name string
	switch {
	case len(rest) == 3 && r.Method == http.MethodPost:
		name = createdName(body)
	case len(rest) == 4 && (r.Method == http.MethodGet || r.Method == http.MethodPost):
		name = rest[3]
	}
	if name == "" {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s := ts.entry(rest[1] + "\x1f" + name)
	if len(rest) == 4 && r.Method == http.MethodPost {
		s.Commits++
		if s.Compactions > 0 {
			s.CommitsAfterCompaction++
		}
	}
}

func (ts *tables) idents() [][]string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([][]string, len(ts.order))
	for i, k := range ts.order {
		out[i] = strings.Split(k, "\x1f")
	}
	return out
}

func (ts *tables) record(ident []string, run MaintenanceRun, err error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s := ts.entry(strings.Join(ident, "\x1f"))
	s.Runs++
	s.Compactions += run.Compactions
	s.ExpiredSnapshots += run.ExpiredSnapshots
	if run.ExpiredSnapshots > 0 {
		s.Expiries++
	}
	if err != nil {
		s.Errors++
		s.LastError = err
	}
}

// Maintenance returns the maintenance counts of the table ident (namespace,
// name), or with no ident the sum over every table.
func (h *Handler) Maintenance(ident ...string) MaintenanceStats {
	h.tables.mu.Lock()
	defer h.tables.mu.Unlock()
	var out MaintenanceStats
	for _, k := range h.tables.order {
		if len(ident) == 0 || slices.Equal(strings.Split(k, "\x1f"), ident) {
			out.add(*h.tables.stats[k])
		}
	}
	return out
}

// Tables returns the tables (namespace, name) the clients created, loaded
// or committed to, in the order the Handler first saw them: those its
// managed maintenance runs on.
func (h *Handler) Tables() [][]string { return h.tables.idents() }

// maintainLoop calls Config.Maintain for every table seen, one after the
// other, every Config.MaintainEvery, until ctx is done.
func (h *Handler) maintainLoop(ctx context.Context) {
	t := time.NewTicker(h.cfg.MaintainEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, ident := range h.tables.idents() {
			if ctx.Err() != nil {
				return
			}
			run, err := h.cfg.Maintain(ctx, ident)
			if ctx.Err() != nil {
				// Stopped with the Handler: what landed counts, the
				// error is the stop's, not a maintenance failure.
				h.tables.record(ident, run, nil)
				return
			}
			h.tables.record(ident, run, err)
		}
	}
}

// Close stops the managed maintenance and waits for the call in progress
// to return. It is idempotent; Start calls it when the test ends.
func (h *Handler) Close() {
	h.closeOnce.Do(func() {
		if h.stop != nil {
			h.stop()
			<-h.stopped
		}
	})
}
