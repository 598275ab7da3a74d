package lake

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
)

func TestCatalogRefusal(t *testing.T) {
	for _, c := range []struct {
		err   error
		final bool
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
		{fmt.Errorf("connecting: %w", rest.ErrServiceUnavailable), false},
		{fmt.Errorf("connecting: %w", rest.ErrServerError), false},
		{fmt.Errorf("%w: connecting: %w", ErrCatalogRefused, rest.ErrForbidden), true},
		{fmt.Errorf("connecting: %w", rest.ErrBadRequest), true},
		{errors.New("loading the AWS configuration for SigV4: no such profile"), true},
	} {
		if got := Refusal(c.err); got != c.final {
			t.Errorf("Refusal(%v) = %v, want %v", c.err, got, c.final)
		}
	}
}
