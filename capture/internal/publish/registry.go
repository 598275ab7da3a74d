package publish

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/sr"
)

// Registry registers Avro schemas through the Confluent schema registry API
// (Confluent, Apicurio's /apis/ccompat/v7, Karapace) under TopicNameStrategy
// subjects, caching ids so a schema is registered once per process.
type Registry struct {
	cl    *sr.Client
	mu    sync.Mutex
	cache map[string]int // subject + "\x00" + schema → id
}

// NewRegistry returns a client for the registry at url.
func NewRegistry(url string, opts ...sr.ClientOpt) (*Registry, error) {
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(url)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("creating schema registry client: %w", err)
	}
	return &Registry{cl: cl, cache: map[string]int{}}, nil
}

// Ping checks that the registry answers.
func (r *Registry) Ping(ctx context.Context) error {
	if _, err := r.cl.Subjects(ctx); err != nil {
		return fmt.Errorf("reaching the schema registry: %w", err)
	}
	return nil
}

// Register registers schema under subject (idempotent) and returns its id.
func (r *Registry) Register(ctx context.Context, subject string, schema []byte) (int, error) {
	k := subject + "\x00" + string(schema)
	r.mu.Lock()
	id, ok := r.cache[k]
	r.mu.Unlock()
	if ok {
		return id, nil
	}
	ss, err := r.cl.CreateSchema(ctx, subject, sr.Schema{Schema: string(schema), Type: sr.TypeAvro})
	if err != nil {
		return 0, fmt.Errorf("registering subject %s: %w", subject, err)
	}
	r.mu.Lock()
	r.cache[k] = ss.ID
	r.mu.Unlock()
	return ss.ID, nil
}

// Frame registers schema under subject and returns the Confluent framing
// of its records.
func (r *Registry) Frame(ctx context.Context, subject string, schema []byte) (Frame, error) {
	id, err := r.Register(ctx, subject, schema)
	if err != nil {
		return Frame{}, err
	}
	return ConfluentFrame(id), nil
}
