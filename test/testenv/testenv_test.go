package testenv

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeTB records a failure instead of ending the goroutine, so that the
// test can inspect what CheckFor reported.
type fakeTB struct {
	testing.TB // nil: any method not overridden below panics
	failures   []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}

func TestCheckForReturnsOnSuccess(t *testing.T) {
	var f fakeTB
	calls := 0
	CheckFor(&f, time.Minute, time.Millisecond, func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if len(f.failures) != 0 {
		t.Fatalf("CheckFor failed on a condition that became true: %q", f.failures)
	}
	if calls != 3 {
		t.Fatalf("check called %d times, want 3 (return on the first nil)", calls)
	}
}

func TestCheckForReportsLastReason(t *testing.T) {
	var f fakeTB
	calls := 0
	start := time.Now()
	CheckFor(&f, 50*time.Millisecond, 5*time.Millisecond, func() error {
		calls++
		return fmt.Errorf("still waiting, call %d", calls)
	})
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("CheckFor gave up after %s, before its 50ms timeout", took)
	}
	if len(f.failures) != 1 {
		t.Fatalf("got %d failures %q, want exactly 1", len(f.failures), f.failures)
	}
	if calls < 2 {
		t.Fatalf("check called %d times in 50ms at a 5ms interval", calls)
	}
	want := fmt.Sprintf("still waiting, call %d", calls)
	if !strings.HasSuffix(f.failures[0], want) || !strings.Contains(f.failures[0], "50ms") {
		t.Fatalf("failure %q, want it to name the timeout and end with the last reason %q", f.failures[0], want)
	}
}

func TestEventuallyReportsMsg(t *testing.T) {
	var f fakeTB
	Eventually(&f, 10*time.Millisecond, time.Millisecond, func() bool { return false }, "the moon to rise")
	if len(f.failures) != 1 || !strings.HasSuffix(f.failures[0], "the moon to rise") {
		t.Fatalf("failures %q, want one ending with the message", f.failures)
	}
	f.failures = nil
	Eventually(&f, 10*time.Millisecond, time.Millisecond, func() bool { return true }, "never")
	if len(f.failures) != 0 {
		t.Fatalf("Eventually failed on a true condition: %q", f.failures)
	}
}
