package debezium

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/kafkatest"
)

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one Kafka record as read from a topic.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte // nil for a null key
	Value     []byte // nil for a null value (a tombstone)
	Headers   []Header
	Timestamp time.Time
}

// ReadTopic reads the first n records of topic from the earliest offset with
// read_committed isolation, failing the test if fewer than n arrive within
// timeout. It returns exactly n records, in offset order per partition.
func ReadTopic(t testing.TB, brokers []string, topic string, n int, timeout time.Duration) []Record {
	t.Helper()
	recs, err := readTopic(t.Context(), brokers, topic, n, timeout)
	if err != nil {
		t.Fatalf("reading %s: %v (got %d of %d records)", topic, err, len(recs), n)
	}
	return recs
}

func newReader(brokers []string, topic string) (*kgo.Client, error) {
	return kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Debezium's topics appear only with the first event.
		kgo.AllowAutoTopicCreation(),
		kgo.MetadataMinAge(250*time.Millisecond),
	)
}

func readTopic(ctx context.Context, brokers []string, topic string, n int, timeout time.Duration) ([]Record, error) {
	cl, err := newReader(brokers, topic)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out []Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		fs.EachRecord(func(r *kgo.Record) {
			if len(out) < n {
				out = append(out, toRecord(r))
			}
		})
		// Unknown topic errors are expected until Debezium's first event.
		fs.EachError(func(string, int32, error) {})
	}
	return out, nil
}

func toRecord(r *kgo.Record) Record {
	rec := Record{
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		Key: r.Key, Value: r.Value, Timestamp: r.Timestamp,
	}
	for _, h := range r.Headers {
		rec.Headers = append(rec.Headers, Header{Key: h.Key, Value: h.Value})
	}
	return rec
}

// Frame splits a Confluent-framed payload: magic byte 0, a 4-byte big-endian
// schema id, then the Avro binary body.
func Frame(b []byte) (id uint32, body []byte, err error) {
	if len(b) < 5 || b[0] != 0 {
		return 0, nil, fmt.Errorf("not a Confluent-framed payload (%d bytes, first %x)", len(b), b[:min(len(b), 5)])
	}
	return binary.BigEndian.Uint32(b[1:5]), b[5:], nil
}

// Registry fetches schemas by id from the Confluent-compatible API of a
// registry and caches them (ids are immutable).
type Registry struct {
	URL string // e.g. http://127.0.0.1:18081/apis/ccompat/v7
	// RawLogical makes Decode ignore Avro logical types, so that a decimal
	// decodes to its raw bytes (big-endian two's-complement unscaled value)
	// instead of a *big.Rat.
	RawLogical bool

	mu      sync.Mutex
	schemas map[uint32]string
	codecs  map[uint32]*goavro.Codec
}

// NewRegistry returns a Registry client for the Confluent-compatible URL.
func NewRegistry(url string) *Registry {
	return &Registry{URL: strings.TrimRight(url, "/"), schemas: map[uint32]string{}, codecs: map[uint32]*goavro.Codec{}}
}

// SchemaByID returns the schema text registered under id, verbatim
// (GET /schemas/ids/<id>).
func (r *Registry) SchemaByID(ctx context.Context, id uint32) (string, error) {
	r.mu.Lock()
	s, ok := r.schemas[id]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	var resp struct {
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
	}
	if err := r.get(ctx, fmt.Sprintf("/schemas/ids/%d", id), &resp); err != nil {
		return "", err
	}
	if resp.SchemaType != "" && resp.SchemaType != "AVRO" {
		return "", fmt.Errorf("schema %d is %s, not AVRO", id, resp.SchemaType)
	}
	r.mu.Lock()
	r.schemas[id] = resp.Schema
	r.mu.Unlock()
	return resp.Schema, nil
}

// Subject is one registered version of a subject.
type Subject struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      uint32 `json:"id"`
	Schema  string `json:"schema"`
}

// LatestVersion returns the latest version registered under subject.
func (r *Registry) LatestVersion(ctx context.Context, subject string) (Subject, error) {
	var s Subject
	err := r.get(ctx, "/subjects/"+url.PathEscape(subject)+"/versions/latest", &s)
	return s, err
}

func (r *Registry) get(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", r.URL+path, resp.Status, body)
	}
	return json.Unmarshal(body, into)
}

// Decoded is one decoded Avro payload.
type Decoded struct {
	SchemaID uint32
	Schema   string // the registered schema, verbatim
	Native   any    // goavro's native form (maps, unions as single-key maps)
}

// Decode decodes a Confluent-framed Avro payload with the schema registered
// under its id. A nil payload (null key, tombstone) decodes to the zero value.
func (r *Registry) Decode(ctx context.Context, b []byte) (Decoded, error) {
	if b == nil {
		return Decoded{}, nil
	}
	id, body, err := Frame(b)
	if err != nil {
		return Decoded{}, err
	}
	schema, err := r.SchemaByID(ctx, id)
	if err != nil {
		return Decoded{}, err
	}
	r.mu.Lock()
	codec, ok := r.codecs[id]
	r.mu.Unlock()
	if !ok {
		text := schema
		if r.RawLogical {
			if text, err = stripLogicalTypes(schema); err != nil {
				return Decoded{}, fmt.Errorf("schema %d: %w", id, err)
			}
		}
		if codec, err = goavro.NewCodec(text); err != nil {
			return Decoded{}, fmt.Errorf("schema %d: %w", id, err)
		}
		r.mu.Lock()
		r.codecs[id] = codec
		r.mu.Unlock()
	}
	native, rest, err := codec.NativeFromBinary(body)
	if err != nil {
		return Decoded{}, fmt.Errorf("decoding with schema %d: %w", id, err)
	}
	if len(rest) != 0 {
		return Decoded{}, fmt.Errorf("decoding with schema %d: %d bytes left over", id, len(rest))
	}
	return Decoded{SchemaID: id, Schema: schema, Native: native}, nil
}

// stripLogicalTypes removes every "logicalType" attribute from a schema.
func stripLogicalTypes(schema string) (string, error) {
	var v any
	if err := json.Unmarshal([]byte(schema), &v); err != nil {
		return "", err
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "logicalType")
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	b, err := json.Marshal(v)
	return string(b), err
}

// ReadPrefix reads every topic whose name starts with prefix from the
// earliest offset (read_committed) up to the last stable offsets its
// partitions have when it starts, and returns the records grouped by
// topic; it fails the test if they are not reached within timeout.
//
// The topics are listed once, and Connect creates a topic only with its
// first record: the caller must first wait for a condition proving that
// every record it needs is on its topic, typically a marker written after
// them and read back.
func ReadPrefix(t testing.TB, brokers []string, prefix string, timeout time.Duration) map[string][]Record {
	t.Helper()
	var topics []string
	for _, n := range kafkatest.ListTopics(t, brokers) {
		if strings.HasPrefix(n, prefix) {
			topics = append(topics, n)
		}
	}
	out := map[string][]Record{}
	if len(topics) == 0 {
		return out
	}
	kafkatest.ConsumeTopics(t, brokers, topics, 0, timeout, func(r *kgo.Record) {
		out[r.Topic] = append(out[r.Topic], toRecord(r))
	})
	return out
}
