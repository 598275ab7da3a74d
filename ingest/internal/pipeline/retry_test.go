package pipeline

import (
	"context"
	"errors"
	"testing"
)

// TestRetryCatalogStopsWithContext: a retry ended by cancellation returns
// the context's error, not its last attempt's (errLookAgain made ingest
// exit 1 on SIGTERM in TestScaleOutRenames).
func TestRetryCatalogStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	err := retryCatalog(ctx, func() error {
		calls++
		cancel()
		return errLookAgain
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("retryCatalog after cancel: %v after %d calls; want context.Canceled after 1", err, calls)
	}
	if err := retryCatalog(t.Context(), func() error { return nil }); err != nil {
		t.Fatalf("retryCatalog: %v", err)
	}
}
