package pipeline

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/ingest/internal/decode"
)

// TestRecordFault: only a record's own faults are dead-lettered; a registry
// that did not answer (decode.ErrRegistryUnavailable, wrapped in the
// record's decode.Error like every decoding failure) is not one, or a
// registry restart would dead-letter good records.
func TestRecordFault(t *testing.T) {
	rec := func(err error) error {
		return &decode.Error{Topic: "t", Partition: 0, Offset: 1, Part: "value", Err: err}
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"malformed", rec(fmt.Errorf("%w: short", decode.ErrMalformed)), true},
		{"magic", rec(decode.ErrMagic), true},
		{"404", rec(fmt.Errorf("%w: id 9: %w", decode.ErrUnknownSchema, &sr.ResponseError{StatusCode: http.StatusNotFound})), true},
		{"registry down", rec(fmt.Errorf("%w: id 9: connection refused", decode.ErrRegistryUnavailable)), false},
		{"unknown schema without a 404", rec(fmt.Errorf("%w: id 9", decode.ErrUnknownSchema)), false},
		{"Glue EntityNotFoundException", rec(fmt.Errorf("Glue schema version 01: %w: EntityNotFoundException", decode.ErrGlueNotFound)), true},
		{"Glue refused", rec(fmt.Errorf("%w: AccessDeniedException", decode.ErrRegistryUnavailable)), false},
		{"no Glue registry configured", rec(fmt.Errorf("%w: Glue schema version 01 (no Glue registry configured)", decode.ErrUnknownSchema)), false},
	} {
		if got := recordFault(c.err); got != c.want {
			t.Errorf("%s: recordFault = %v, want %v (%v)", c.name, got, c.want, c.err)
		}
	}
}
