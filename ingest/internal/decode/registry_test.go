package decode

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// flakyRegistry fails its first lookups with err, then answers.
type flakyRegistry struct {
	fails int
	err   error
	calls int
}

func (f *flakyRegistry) SchemaByID(ctx context.Context, id int) (sr.Schema, error) {
	f.calls++
	if f.calls <= f.fails {
		return sr.Schema{}, f.err
	}
	return sr.Schema{Schema: `{"type":"record","name":"k","fields":[{"name":"id","type":"long"}]}`}, nil
}

// TestRegistryOutageIsNotAnUnknownSchema is a defect the chaos test found:
// while the registry restarted, every lookup's "connection refused" was
// reported as "schema not found in the registry", a verdict on the
// record, and ingest stopped. A registry that cannot answer is retried;
// only its 404 is an unknown schema.
func TestRegistryOutageIsNotAnUnknownSchema(t *testing.T) {
	defer func(d time.Duration) { RegistryRetry = d }(RegistryRetry)
	RegistryRetry = 2 * time.Second
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	for _, c := range []struct {
		name string
		reg  *flakyRegistry
		want error // nil: the schema is fetched
	}{
		{"refused, then up", &flakyRegistry{fails: 3, err: refused}, nil},
		{"503, then up", &flakyRegistry{fails: 2, err: &sr.ResponseError{StatusCode: http.StatusServiceUnavailable}}, nil},
		{"down throughout", &flakyRegistry{fails: 1 << 30, err: refused}, ErrRegistryUnavailable},
		{"401", &flakyRegistry{fails: 1 << 30, err: &sr.ResponseError{StatusCode: http.StatusUnauthorized}}, ErrRegistryUnavailable},
		{"404", &flakyRegistry{fails: 1 << 30, err: &sr.ResponseError{StatusCode: http.StatusNotFound, ErrorCode: 40403}}, ErrUnknownSchema},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.reg).fetch(t.Context(), 7)
			if c.want == nil && err != nil {
				t.Fatalf("got %v after %d calls, want the schema", err, c.reg.calls)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if errors.Is(err, ErrRegistryUnavailable) && errors.Is(err, ErrUnknownSchema) {
				t.Fatalf("%v is both", err)
			}
		})
	}
}
