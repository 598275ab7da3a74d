//go:build integration

package pipeline

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/test/testenv"
)

// TestRenameThroughCatalogOutage: a table rename read while the catalog
// answers 503 is done once the catalog is back, and the process keeps
// running. Before, the follower's first failed catalog call stopped the
// process (the chaos run's catalog restart took ingest2 down this way:
// "following the rename of …: finding the table of …: REST error: server
// error").
func TestRenameThroughCatalogOutage(t *testing.T) {
	g := newRenameRig(t, "ro", "a", "b")

	// The catalog, behind a switch: down, every request gets a 503.
	var down atomic.Bool
	var refused atomic.Int64
	proxy := proxied(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() {
				refused.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				http.Error(w, `{"error":{"message":"catalog restarting","type":"ServiceUnavailableException","code":503}}`, http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	g.start(proxy.URL, "a", "b")

	g.produce("a", 100, 1, 2, 3)
	g.waitIDs("a", 1, 2, 3)

	down.Store(true)
	g.schemaChange("b", "RENAME TABLE a TO b", 200)
	g.produce("b", 300, 4, 5)
	// The follower meets the outage: several refused calls, and ingest
	// still running.
	testenv.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		g.alive()
		if n := refused.Load(); n < 3 {
			return fmt.Errorf("the catalog refused %d calls, want 3 or more", n)
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	g.alive()
	down.Store(false)

	g.waitIDs("b", 1, 2, 3, 4, 5)
	if _, err := g.direct.LoadTable(t.Context(), g.ident("a")); err == nil {
		t.Errorf("table %v still exists after the rename", g.ident("a"))
	}
	t.Logf("the catalog refused %d calls during the outage", refused.Load())
}
