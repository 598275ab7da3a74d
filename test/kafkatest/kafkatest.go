// Package kafkatest reads change topics the way a downstream consumer
// does, for integration and end-to-end tests: read_committed, with keys and
// values decoded from the Confluent wire format through the real schema
// registry.
package kafkatest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/schemas/debezium"
)

// Record is one consumed record, decoded.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       map[string]any // nil for a null key
	Value     map[string]any // nil for a tombstone
	KeyID     int
	ValueID   int
	Headers   map[string]string
	RawKey    []byte
}

// Op returns the envelope's op ("" for a tombstone).
func (r Record) Op() string {
	if r.Value == nil {
		return ""
	}
	op, _ := r.Value["op"].(string)
	return op
}

// Decoder decodes Confluent-framed Avro through a registry, caching codecs.
type Decoder struct {
	cl     *sr.Client
	mu     sync.Mutex
	codecs map[int]*goavro.Codec
	texts  map[int]string
}

// NewDecoder returns a decoder for the registry at url.
func NewDecoder(url string) (*Decoder, error) {
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		return nil, err
	}
	return &Decoder{cl: cl, codecs: map[int]*goavro.Codec{}, texts: map[int]string{}}, nil
}

// Schema returns the registered schema text of id.
func (d *Decoder) Schema(ctx context.Context, id int) (string, error) {
	if _, err := d.codec(ctx, id); err != nil {
		return "", err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.texts[id], nil
}

func (d *Decoder) codec(ctx context.Context, id int) (*goavro.Codec, error) {
	d.mu.Lock()
	c := d.codecs[id]
	d.mu.Unlock()
	if c != nil {
		return c, nil
	}
	s, err := d.cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("fetching schema %d: %w", id, err)
	}
	c, err = goavro.NewCodec(GoavroSchema(s.Schema))
	if err != nil {
		// goavro rejects some valid field defaults (a decimal's default
		// written as Avro's bytes string, as Debezium and capture write
		// it). Defaults play no part in decoding: decode with a copy that
		// has none, and keep the registered text for comparisons.
		var doc any
		if jerr := json.Unmarshal([]byte(s.Schema), &doc); jerr == nil {
			if b, jerr := json.Marshal(withoutDefaults(doc)); jerr == nil {
				c, err = goavro.NewCodec(string(b))
			}
		}
		if err != nil {
			return nil, fmt.Errorf("parsing schema %d: %w", id, err)
		}
	}
	d.mu.Lock()
	d.codecs[id], d.texts[id] = c, s.Schema
	d.mu.Unlock()
	return c, nil
}

// GoavroSchema returns schema with its record, enum and fixed names and
// its field names made acceptable to goavro, which requires every name and
// namespace component to be [A-Za-z_][A-Za-z0-9_]* (decoded records are
// keyed by these names; the registered text is unchanged). Java Avro (the registry, the Kafka Connect
// converters) checks only the last component, so Debezium registers names
// such as "P.db.2024-sales.Value" (schema.name.adjustment.mode none, or
// avro, which fixes only the name's first character). The binary encoding
// does not depend on names, so decoding is unchanged; Java Avro also
// accepts non-ASCII letters in field names ("Café"), which goavro does not. A schema that is not
// JSON is returned as it is.
func GoavroSchema(schema string) string {
	var v any
	if err := json.Unmarshal([]byte(schema), &v); err != nil {
		return schema
	}
	b, err := json.Marshal(goavroNames(v))
	if err != nil {
		return schema
	}
	return string(b)
}

func goavroNames(v any) any {
	switch x := v.(type) {
	case map[string]any:
		named := false
		if t, ok := x["type"].(string); ok && (t == "record" || t == "enum" || t == "fixed") {
			named = true
		}
		for k, inner := range x {
			switch {
			case named && (k == "name" || k == "namespace"):
				if s, ok := inner.(string); ok {
					x[k] = goavroName(s)
				}
			case k == "fields":
				fields, _ := inner.([]any)
				for _, f := range fields {
					if fm, ok := f.(map[string]any); ok {
						if n, ok := fm["name"].(string); ok {
							fm["name"] = goavroName(n)
						}
						fm["type"] = goavroNames(fm["type"])
					}
				}
			case k == "type" || k == "items" || k == "values":
				x[k] = goavroNames(inner)
			}
		}
		return x
	case []any:
		for i := range x {
			x[i] = goavroNames(x[i])
		}
		return x
	case string: // a reference to a named type, or a primitive
		return goavroName(x)
	}
	return v
}

// goavroName fixes each dot-separated component: a leading digit gets a
// "_" before it, other invalid bytes become "_x" and their hex code.
func goavroName(full string) string {
	parts := strings.Split(full, ".")
	for i, p := range parts {
		var b strings.Builder
		for j := 0; j < len(p); j++ {
			c := p[j]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
				b.WriteByte(c)
			case c >= '0' && c <= '9':
				if j == 0 {
					b.WriteByte('_')
				}
				b.WriteByte(c)
			default:
				fmt.Fprintf(&b, "_x%02x", c)
			}
		}
		parts[i] = b.String()
	}
	return strings.Join(parts, ".")
}

// Decode decodes one framed datum into goavro's native form, with unions
// unwrapped to their value.
func (d *Decoder) Decode(ctx context.Context, b []byte) (map[string]any, int, error) {
	id, payload, err := debezium.ParseFrame(b)
	if err != nil {
		return nil, 0, err
	}
	c, err := d.codec(ctx, int(id))
	if err != nil {
		return nil, 0, err
	}
	native, rest, err := c.NativeFromBinary(payload)
	if err != nil {
		return nil, 0, fmt.Errorf("decoding with schema %d: %w", id, err)
	}
	if len(rest) != 0 {
		return nil, 0, fmt.Errorf("decoding with schema %d: %d trailing bytes", id, len(rest))
	}
	m, ok := Unwrap(native).(map[string]any)
	if !ok {
		return nil, 0, errors.New("datum is not a record")
	}
	return m, int(id), nil
}

// Unwrap replaces goavro's union maps ({"type": value}) by their value.
func Unwrap(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, inner := range x {
				if isUnionBranch(k) {
					return Unwrap(inner)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, inner := range x {
			out[k] = Unwrap(inner)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, inner := range x {
			out[i] = Unwrap(inner)
		}
		return out
	}
	return v
}

func isUnionBranch(k string) bool {
	switch k {
	case "string", "long", "int", "boolean", "bytes", "double", "float", "array", "map":
		return true
	}
	// named types: a dotted name
	for _, c := range k {
		if c == '.' {
			return true
		}
	}
	return false
}

// ReadAll reads topic from the start with read_committed until it has read
// at least want records, then on to the end offsets the topic's partitions
// had at that moment (see Consume), and returns every record it read. It
// fails the test if fewer than want records arrive within timeout, if the
// end offsets are not reached within timeout, or on any decoding error.
// want may be 0: the read then ends at the offsets listed when it starts.
func ReadAll(t testing.TB, brokers []string, dec *Decoder, topic string, want int, timeout time.Duration) []Record {
	t.Helper()
	ctx := t.Context()
	var out []Record
	Consume(t, brokers, topic, want, timeout, func(r *kgo.Record) {
		rec, err := dec.DecodeRecord(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	})
	if len(out) < want {
		t.Fatalf("read %d records from %s in %s, want at least %d", len(out), topic, timeout, want)
	}
	return out
}

// DecodeRecord decodes a Kafka record's key and value (Confluent-framed
// Avro) into a Record.
func (d *Decoder) DecodeRecord(ctx context.Context, r *kgo.Record) (Record, error) {
	rec := Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, RawKey: r.Key, Headers: map[string]string{}}
	for _, h := range r.Headers {
		rec.Headers[h.Key] = string(h.Value)
	}
	if r.Key != nil {
		k, id, err := d.Decode(ctx, r.Key)
		if err != nil {
			return Record{}, fmt.Errorf("decoding key at %s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		rec.Key, rec.KeyID = k, id
	}
	if r.Value != nil {
		v, id, err := d.Decode(ctx, r.Value)
		if err != nil {
			return Record{}, fmt.Errorf("decoding value at %s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		rec.Value, rec.ValueID = v, id
	}
	return rec, nil
}

// Consume reads topic from the start with read_committed, passing each
// record to fn, and returns how many it read. Once it has read at least
// want records, it lists the topic's last stable offsets (the end that
// read_committed can reach) and reads on until every partition's position
// reaches them: the read ends at a high watermark recorded after the
// wanted records, never after a quiet period, so a slow machine makes it
// slower, not shorter. With want 0 the offsets are listed before the first
// fetch; a topic that does not exist then reads as empty.
//
// Transaction markers are fetched (kgo.KeepControlRecords) so that a
// position advances past them and past aborted records, which a count of
// records could not show; fn never sees them. Reading fewer than want
// records within timeout returns what was read, for the caller to judge;
// reaching want but not the recorded offsets within timeout fails the test.
// It is ReadAll without the decoding and without keeping the records, for
// topics too large to hold (opts are added to the client's, e.g. larger
// fetches).
func Consume(t testing.TB, brokers []string, topic string, want int, timeout time.Duration, fn func(*kgo.Record), opts ...kgo.Opt) int {
	t.Helper()
	return ConsumeTopics(t, brokers, []string{topic}, want, timeout, fn, opts...)
}

// ConsumeTopics is Consume over several topics with one client: want
// counts the records of all of them, and the read ends when every
// partition of every topic has reached the offsets recorded once want
// records were read. A topic that does not exist when they are recorded
// reads as empty: with want 0, the caller must first know that every topic
// it needs exists (for example because it read a marker written after the
// records it needs).
func ConsumeTopics(t testing.TB, brokers []string, topics []string, want int, timeout time.Duration, fn func(*kgo.Record), opts ...kgo.Opt) int {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := t.Context()
	next := map[partition]int64{} // the offset after the last record read
	var ends map[partition]span   // nil until recorded
	if want == 0 {
		ends = stableEnds(t, kadm.NewClient(cl), topics)
	}
	n := 0
	deadline := time.Now().Add(timeout)
	for {
		if ends != nil {
			lag := behind(next, ends)
			if lag == "" {
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("reading %v: %d records read in %s, not yet at the last stable offsets recorded after %d: %s", topics, n, timeout, want, lag)
			}
		} else if time.Now().After(deadline) {
			return n
		}
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachError(func(tp string, p int32, err error) {
			// Deadlines end a poll; an unknown topic is one that the
			// producer has not created yet.
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, kerr.UnknownTopicOrPartition) {
				t.Fatalf("fetching %s[%d]: %v", tp, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			next[partition{r.Topic, r.Partition}] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			n++
			fn(r)
		})
		if ends == nil && n >= want {
			ends = stableEnds(t, kadm.NewClient(cl), topics)
		}
	}
}

type partition struct {
	topic string
	p     int32
}

// span is a partition's first offset and its last stable offset.
type span struct{ start, end int64 }

// stableEnds lists the log start and last stable offsets of every
// partition of topics: none for a topic that does not exist. A broker
// that has just come back (a restart, or SIGCONT after a freeze) answers
// LEADER_NOT_AVAILABLE and the like for a while: such answers are retried
// for up to a minute before the test fails.
func stableEnds(t testing.TB, adm *kadm.Client, topics []string) map[partition]span {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := listStableEnds(t.Context(), adm, topics)
		if err == nil {
			return out
		}
		if time.Now().After(deadline) || t.Context().Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func listStableEnds(ctx context.Context, adm *kadm.Client, topics []string) (map[partition]span, error) {
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing start offsets of %v: %w", topics, err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing last stable offsets of %v: %w", topics, err)
	}
	out := map[partition]span{}
	var ferr error
	ends.Each(func(o kadm.ListedOffset) {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			return
		}
		if o.Err != nil {
			ferr = fmt.Errorf("listing last stable offset of %s[%d]: %w", o.Topic, o.Partition, o.Err)
			return
		}
		s, _ := starts.Lookup(o.Topic, o.Partition)
		out[partition{o.Topic, o.Partition}] = span{start: s.Offset, end: o.Offset}
	})
	return out, ferr
}

// behind describes the partitions whose position has not reached its
// recorded end, or returns "" when all have.
func behind(next map[partition]int64, ends map[partition]span) string {
	var lag []string
	for p, e := range ends {
		at, ok := next[p]
		if !ok {
			at = e.start
		}
		if at < e.end {
			lag = append(lag, fmt.Sprintf("%s[%d] at %d of %d", p.topic, p.p, at, e.end))
		}
	}
	slices.Sort(lag)
	return strings.Join(lag, ", ")
}

// ListTopics returns the topics with the given prefix.
func ListTopics(t testing.TB, brokers []string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return td.Names()
}

// EndOffsets returns the end offset (uncommitted records and transaction
// markers included) of every partition of the topics match selects.
func EndOffsets(t testing.TB, brokers []string, match func(topic string) bool) map[string]map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range topics.Names() {
		if match(n) {
			names = append(names, n)
		}
	}
	out := map[string]map[int32]int64{}
	if len(names) == 0 {
		return out
	}
	ends, err := adm.ListEndOffsets(t.Context(), names...)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("%s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	return out
}

// JSON renders v for test failure messages.
func JSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// withoutDefaults returns an Avro schema document with the default of
// every record field removed.
func withoutDefaults(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = withoutDefaults(e)
		}
		if fields, ok := out["fields"].([]any); ok {
			for _, f := range fields {
				if fm, ok := f.(map[string]any); ok {
					delete(fm, "default")
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutDefaults(e)
		}
		return out
	}
	return v
}
