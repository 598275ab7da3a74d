package startup

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestStartupRetry(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:9: connect: connection refused")
	refused := errors.New("access denied")
	final := func(err error) bool { return errors.Is(err, refused) }
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	t.Run("waits for a service that comes up", func(t *testing.T) {
		n := 0
		err := Retry(t.Context(), logger, "svc", time.Minute, final, func(context.Context) error {
			if n++; n < 3 {
				return down
			}
			return nil
		})
		if err != nil || n != 3 {
			t.Fatalf("got %v after %d attempts, want success at the third", err, n)
		}
	})
	t.Run("a refusal is final at once", func(t *testing.T) {
		n := 0
		err := Retry(t.Context(), logger, "svc", time.Hour, final, func(context.Context) error { n++; return refused })
		if !errors.Is(err, refused) || n != 1 {
			t.Fatalf("got %v after %d attempts, want the refusal after one", err, n)
		}
	})
	t.Run("bounded by the timeout", func(t *testing.T) {
		n := 0
		began := time.Now()
		err := Retry(t.Context(), logger, "svc", 2*time.Second, final, func(context.Context) error { n++; return down })
		if !errors.Is(err, down) || !strings.Contains(err.Error(), "startup-timeout is 2s") || n < 2 {
			t.Fatalf("got %v after %d attempts, want the last error naming startup-timeout", err, n)
		}
		if d := time.Since(began); d > 2*time.Second {
			t.Errorf("took %s, more than startup-timeout", d)
		}
	})
	t.Run("0 is one attempt", func(t *testing.T) {
		n := 0
		err := Retry(t.Context(), logger, "svc", 0, final, func(context.Context) error { n++; return down })
		if err != down || n != 1 {
			t.Fatalf("got %v after %d attempts, want the error unchanged after one", err, n)
		}
	})
	t.Run("ends with the context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		n := 0
		err := Retry(ctx, logger, "svc", time.Hour, final, func(context.Context) error {
			if n++; n == 2 {
				cancel()
			}
			return down
		})
		if !errors.Is(err, down) || n != 2 {
			t.Fatalf("got %v after %d attempts, want the error of the attempt the cancel came in", err, n)
		}
	})
}
