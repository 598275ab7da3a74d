package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
)

func TestStartupRetry(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:9: connect: connection refused")
	refused := errors.New("access denied")
	final := func(err error) bool { return errors.Is(err, refused) }
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	t.Run("waits for a service that comes up", func(t *testing.T) {
		n := 0
		err := startupRetry(t.Context(), logger, "svc", time.Minute, final, func(context.Context) error {
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
		err := startupRetry(t.Context(), logger, "svc", time.Hour, final, func(context.Context) error { n++; return refused })
		if !errors.Is(err, refused) || n != 1 {
			t.Fatalf("got %v after %d attempts, want the refusal after one", err, n)
		}
	})
	t.Run("bounded by the timeout", func(t *testing.T) {
		n := 0
		began := time.Now()
		err := startupRetry(t.Context(), logger, "svc", 2*time.Second, final, func(context.Context) error { n++; return down })
		if !errors.Is(err, down) || !strings.Contains(err.Error(), "startup-timeout is 2s") || n < 2 {
			t.Fatalf("got %v after %d attempts, want the last error naming startup-timeout", err, n)
		}
		if d := time.Since(began); d > 2*time.Second {
			t.Errorf("took %s, more than startup-timeout", d)
		}
	})
	t.Run("0 is one attempt", func(t *testing.T) {
		n := 0
		err := startupRetry(t.Context(), logger, "svc", 0, final, func(context.Context) error { n++; return down })
		if err != down || n != 1 {
			t.Fatalf("got %v after %d attempts, want the error unchanged after one", err, n)
		}
	})
	t.Run("ends with the context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		n := 0
		err := startupRetry(ctx, logger, "svc", time.Hour, final, func(context.Context) error {
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

func TestCatalogRefusal(t *testing.T) {
	for _, c := range []struct {
		err   error
		final bool
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
		{fmt.Errorf("connecting: %w", rest.ErrServiceUnavailable), false},
		{fmt.Errorf("connecting: %w", rest.ErrServerError), false},
		{fmt.Errorf("%w: connecting: %w", errCatalogRefused, rest.ErrForbidden), true},
		{fmt.Errorf("connecting: %w", rest.ErrBadRequest), true},
		{errors.New("loading the AWS configuration for SigV4: no such profile"), true},
	} {
		if got := catalogRefusal(c.err); got != c.final {
			t.Errorf("catalogRefusal(%v) = %v, want %v", c.err, got, c.final)
		}
	}
}
