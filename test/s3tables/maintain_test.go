package s3tables

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestMaintenance: the tables clients create, load or commit to through
// the stand-in are maintained on its schedule, one after the other; what
// each call landed, its errors, and the writers' commits after the first
// compaction are counted per table; Close stops the schedule.
func TestMaintenance(t *testing.T) {
	be := &backend{}
	bs := httptest.NewServer(be)
	t.Cleanup(bs.Close)
	var (
		mu    sync.Mutex
		calls []string
	)
	maintain := func(ctx context.Context, ident []string) (MaintenanceRun, error) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, fmt.Sprint(ident))
		switch ident[1] {
		case "orders":
			return MaintenanceRun{Compactions: 1, ExpiredSnapshots: 2}, nil
		case "items":
			return MaintenanceRun{}, errors.New("conflicted ten times")
		}
		return MaintenanceRun{}, nil
	}
	h, uri := Start(t, Config{Backend: bs.URL, Region: "us-east-1", Credentials: testCreds,
		Maintain: maintain, MaintainEvery: 20 * time.Millisecond})
	base := uri + "/v1/" + url.QueryEscape(testARN) + "/namespaces/sales/tables"
	for _, req := range []signed{
		{method: "POST", url: base, body: `{"name":"orders"}`},          // created
		{method: "GET", url: base + "/items"},                           // loaded
		{method: "GET", url: base},                                      // a listing: no table
		{method: "POST", url: base + "/orders", body: `{"updates":[]}`}, // committed
	} {
		if resp, body := req.do(t); resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", req.method, req.url, resp.StatusCode, body["raw"])
		}
	}
	if got, want := h.Tables(), [][]string{{"sales", "orders"}, {"sales", "items"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("tables %v, want %v", got, want)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.Maintenance("sales", "items").Runs < 2 || h.Maintenance("sales", "orders").Runs < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("maintenance did not run twice on each table: %+v", h.Maintenance())
		}
		time.Sleep(10 * time.Millisecond) // polling
	}
	// A commit after orders' first compaction counts as one on top of it.
	if resp, body := (signed{method: "POST", url: base + "/orders", body: `{"updates":[]}`}).do(t); resp.StatusCode != 200 {
		t.Fatalf("commit: %d %s", resp.StatusCode, body["raw"])
	}
	h.Close()
	h.Close() // idempotent
	o := h.Maintenance("sales", "orders")
	if o.Compactions != o.Runs || o.Expiries != o.Runs || o.ExpiredSnapshots != 2*o.Runs || o.Errors != 0 {
		t.Errorf("orders: %+v, want every run counted as one compaction and one expiry of 2 snapshots", o)
	}
	if o.Commits != 2 || o.CommitsAfterCompaction != 1 {
		t.Errorf("orders: %d commits, %d after compaction; want 2 and 1", o.Commits, o.CommitsAfterCompaction)
	}
	i := h.Maintenance("sales", "items")
	if i.Errors != i.Runs || i.LastError == nil || i.Compactions != 0 || i.Expiries != 0 {
		t.Errorf("items: %+v, want every run counted as an error", i)
	}
	all := h.Maintenance()
	if all.Runs != o.Runs+i.Runs || all.Compactions != o.Compactions {
		t.Errorf("totals %+v do not add up orders %+v and items %+v", all, o, i)
	}
	mu.Lock()
	n := len(calls)
	mu.Unlock()
	time.Sleep(100 * time.Millisecond) // five schedule periods: none may run after Close
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != n {
		t.Errorf("maintenance ran %d times after Close", len(calls)-n)
	}
	for j := 1; j < len(calls); j++ {
		if calls[j] == calls[j-1] {
			t.Errorf("calls %v: a table maintained twice in a row; want each round over every table", calls)
			break
		}
	}
}
