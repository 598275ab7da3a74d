// Package startup retries what ingest needs at start-up while it is
// unreachable, bounded by startup-timeout, and gives up at once on a
// refusal. Both binaries hold this package, kept equal with the names
// changed (TestKafkaSecurityMatchesCapture).
package startup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"time"
)

// Start-up retries. A service that is down or restarting when ingest
// starts (a broker rolling, a redeploy, a network cut) is waited for, as
// it is once ingest runs, instead of ending the process: an orchestrator
// restarting a process that exits at once only adds its own back-off to
// the outage. A refusal (credentials, certificates, a
// setting the service rejects) is final at once, and the wait is bounded
// by startup-timeout, so that a wrong address still ends with its error.

// Bounds of the delay between two start-up attempts.
const (
	startupFirstDelay = 500 * time.Millisecond
	startupMaxDelay   = 10 * time.Second
)

// Retry runs try until it succeeds, returns an error final reports
// as final, ctx ends, or timeout has passed since the first attempt (0:
// one attempt). Each failed attempt is logged with the delay before the
// next, which doubles from startupFirstDelay up to startupMaxDelay. The
// error returned is the last attempt's, with the time waited when it was
// retried.
func Retry(ctx context.Context, logger *slog.Logger, what string, timeout time.Duration, final func(error) bool, try func(context.Context) error) error {
	start := time.Now()
	delay := startupFirstDelay
	for attempt := 1; ; attempt++ {
		err := try(ctx)
		if err == nil || final(err) || ctx.Err() != nil {
			return err
		}
		waited := time.Since(start)
		if waited+delay > timeout {
			if attempt == 1 {
				return err
			}
			return fmt.Errorf("%w (still failing after %d attempts in %s; startup-timeout is %s)", err, attempt, waited.Round(time.Second), timeout)
		}
		logger.Warn(what+" is not reachable yet; retrying", "attempt", attempt, "retry_in", delay, "startup_timeout", timeout, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, startupMaxDelay)
	}
}

// Unreachable reports whether err is a service not answering: refused or
// reset connections, timeouts, a connection closed mid-answer.
func Unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded)
}
