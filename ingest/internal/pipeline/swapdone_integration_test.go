//go:build integration

package pipeline

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/test/testenv"
)

// TestSwapFoundDone is the race TestRenames met once with three processes:
// RENAME TABLE s1 TO s2, s3 TO s1 carried out by another process while
// this one's commit of old s1 changes was in flight. Its follower then
// finds both renames done, and its commit, answered 503 after it landed,
// reloads the table under s1: old s3 now. Before, the retry committed the
// old s1 changes into it (the table took the name; it holds no offsets of
// topic s1 to skip them by). The batch must be dropped (the old table,
// s2 now, holds it), the process must keep running, and the changes after
// the swap must reach the new s1.
func TestSwapFoundDone(t *testing.T) {
	ctx := t.Context()
	g := newRenameRig(t, "sw", "s1", "s2", "s3")
	s1, s2, s3 := g.ident("s1"), g.ident("s2"), g.ident("s3")

	// The catalog, behind a proxy that can let one commit to s1 land and
	// then hold its answer until released, answering 503.
	var armed atomic.Bool
	landed, release := make(chan struct{}), make(chan struct{})
	proxy := proxied(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/tables/"+s1[1]) || !armed.CompareAndSwap(true, false) {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			close(landed)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			_, _ = io.Copy(io.Discard, r.Body)
			http.Error(w, `{"error":{"message":"gateway timeout","type":"ServiceUnavailableException","code":503}}`, http.StatusServiceUnavailable)
		})
	})
	g.start(proxy.URL, "s1", "s2", "s3")

	g.produce("s1", 100, 1, 2)
	g.produce("s3", 110, 30)
	g.waitIDs("s1", 1, 2)
	g.waitIDs("s3", 30)

	// Old s1's last changes: their commit lands, its answer waits.
	armed.Store(true)
	g.produce("s1", 120, 3, 4)
	select {
	case <-landed:
	case <-time.After(60 * time.Second):
		t.Fatalf("no commit of s1 reached the catalog; log:\n%s", g.r.log.String())
	}

	// Another process carries out the swap (renameLake, setSource).
	const pos = 200
	if _, err := g.direct.RenameTable(ctx, s1, s2); err != nil {
		t.Fatal(err)
	}
	if _, err := g.direct.RenameTable(ctx, s3, s1); err != nil {
		t.Fatal(err)
	}
	mark := func(off int64) string { return fmt.Sprintf("mysql-bin.000001:%d:%d:0", pos, off) }
	source := func(tb string, off int64) iceberg.Properties {
		return iceberg.Properties{schemamap.SourceProperty: g.namer.Source(g.db, tb), schemamap.SourcePrefixProperty: g.prefix, NameSinceProperty: mark(off)}
	}
	setTableProps(t, g.direct, s2, source("s2", 0))
	setTableProps(t, g.direct, s1, source("s1", 1))
	// Its schema-change records, one per new name, as capture and
	// Debezium write a statement that renames two tables.
	g.schemaChange("s2", "RENAME TABLE s1 TO s2, s3 TO s1", pos)
	g.schemaChange("s1", "RENAME TABLE s1 TO s2, s3 TO s1", pos)
	testenv.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		g.alive()
		if n := strings.Count(g.r.log.String(), "rename already done"); n < 2 {
			return fmt.Errorf("the follower found %d of the 2 renames done", n)
		}
		return nil
	})
	close(release)
	g.produce("s1", 300, 5)

	g.waitIDs("s1", 5, 30)
	g.waitIDs("s2", 1, 2, 3, 4)
	time.Sleep(2 * time.Second) // a late commit of 3 and 4 would land by now
	g.waitIDs("s1", 5, 30)
	if !strings.Contains(g.r.log.String(), "dropping the batch") {
		t.Errorf("no batch was dropped; log:\n%s", g.r.log.String())
	}
}

// setTableProps sets table properties, as another ingest process would.
func setTableProps(t *testing.T, cat *rest.Catalog, ident table.Identifier, props iceberg.Properties) {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(props); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatalf("setting properties of %v: %v", ident, err)
	}
}
