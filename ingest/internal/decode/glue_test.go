package decode

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fakeGlue is a GlueRegistry holding schemas in memory.
type fakeGlue struct {
	mu      sync.Mutex
	schemas map[GlueID]GlueSchema
	err     error // returned by every lookup when set
	calls   int
}

func (f *fakeGlue) GlueSchemaVersion(ctx context.Context, id GlueID) (GlueSchema, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return GlueSchema{}, f.err
	}
	s, ok := f.schemas[id]
	if !ok {
		return GlueSchema{}, fmt.Errorf("%w: EntityNotFoundException", ErrGlueNotFound)
	}
	return s, nil
}

// add registers text under an id derived from it.
func (f *fakeGlue) add(text []byte) GlueID {
	sum := sha256.Sum256(text)
	var id GlueID
	copy(id[:], sum[:])
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.schemas == nil {
		f.schemas = map[GlueID]GlueSchema{}
	}
	f.schemas[id] = GlueSchema{Definition: string(text), DataFormat: "AVRO"}
	return id
}

// glueRecord frames an Avro body as AWS's serde does, deflated with zlib
// when zip is set.
func glueRecord(t testing.TB, id GlueID, body []byte, zip bool) []byte {
	t.Helper()
	out := []byte{glueHeaderVersion, glueCompressionNone}
	if zip {
		out[1] = glueCompressionZlib
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		body = b.Bytes()
	}
	return append(append(out, id[:]...), body...)
}

// TestGlueFramedGoldens decodes every record real Debezium wrote, framed
// the Glue way (with and without zlib) beside the Confluent way, by one
// decoder: both framings of a record decode to the same change.
func TestGlueFramedGoldens(t *testing.T) {
	reg := newRegistry(t)
	glue := &fakeGlue{}
	confluentOnly := New(reg)
	both := New(reg, WithGlue(glue))
	reframe := func(frame []byte, zip bool) []byte {
		if frame == nil {
			return nil
		}
		return glueRecord(t, glue.add(mustSchema(t, reg, frame)), frame[5:], zip)
	}
	opts := cmp.Options{
		cmp.Comparer(func(a, b decimal128.Num) bool { return a == b }),
		cmpopts.IgnoreFields(Change{}, "Schema"),
		cmpopts.IgnoreFields(Change{}, "Event.Size"),
	}
	n := 0
	for i, g := range loadGoldens(t, reg) {
		want, werr := confluentOnly.Decode(t.Context(), g.Topic, g.Partition, g.Offset, g.key, g.value)
		gkey, gvalue := reframe(g.key, i%2 == 0), reframe(g.value, i%3 == 0)
		for _, c := range []struct {
			name       string
			key, value []byte
		}{{"glue", gkey, gvalue}, {"confluent", g.key, g.value}, {"glue key", gkey, g.value}} {
			got, err := both.Decode(t.Context(), g.Topic, g.Partition, g.Offset, c.key, c.value)
			if (err == nil) != (werr == nil) {
				t.Fatalf("%s@%d %s: err %v, Confluent-framed err %v", g.Topic, g.Offset, c.name, err, werr)
			}
			if diff := cmp.Diff(want, got, opts); diff != "" {
				t.Errorf("%s@%d %s: (-confluent +glue):\n%s", g.Topic, g.Offset, c.name, diff)
			}
			if want.Schema != nil && (got.Schema == nil || !slices.Equal(want.Schema.Columns, got.Schema.Columns)) {
				t.Errorf("%s@%d %s: schema %+v, want %+v", g.Topic, g.Offset, c.name, got.Schema, want.Schema)
			}
			if c.name == "glue" && got.Schema != nil && !strings.HasPrefix(got.Schema.ID, "glue:") {
				t.Errorf("%s@%d: schema id %q, want glue:<uuid>", g.Topic, g.Offset, got.Schema.ID)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no goldens")
	}
}

// TestGlueFrameErrors checks that a Glue-framed record that is cut short,
// inflates too far, names an unknown version or a header this decoder
// does not know fails as that record's error, naming it.
func TestGlueFrameErrors(t *testing.T) {
	reg := newRegistry(t)
	glue := &fakeGlue{}
	d := New(reg, WithGlue(glue), WithLimits(Limits{MaxBytes: 1 << 20}))
	var good frames
	for _, g := range loadGoldens(t, reg) {
		if g.Topic == "dbzgolden.golden.ints" && g.Offset == 0 {
			good = g
		}
	}
	key := glueRecord(t, glue.add(mustSchema(t, reg, good.key)), good.key[5:], false)
	vid := glue.add(mustSchema(t, reg, good.value))
	value := glueRecord(t, vid, good.value[5:], true)
	if _, err := d.Decode(t.Context(), "tp", 3, 77, key, value); err != nil {
		t.Fatalf("the good record: %v", err)
	}
	// A body of 8 MiB of zeros deflates to a few KiB: past the 1 MiB
	// bound (and 16 times the record) it must stop inflating.
	bomb := glueRecord(t, vid, make([]byte, 8<<20), true)
	if len(bomb) > 64<<10 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	unknown := glueRecord(t, GlueID{1, 2, 3}, good.value[5:], false)
	notZlib := append(append([]byte{}, value[:glueHeaderLen]...), good.value[5:]...)
	cases := []struct {
		name       string
		key, value []byte
		want       error
		part       string
		says       string
	}{
		{"truncated header", key, value[:10], ErrMalformed, "value", "shorter than its 18-byte header"},
		{"truncated zlib", key, value[:len(value)-4], ErrMalformed, "value", "inflating"},
		{"truncated body", key, glueRecord(t, vid, good.value[5:len(good.value)-3], false), ErrMalformed, "value", ""},
		{"not zlib", key, notZlib, ErrMalformed, "value", "inflating"},
		{"unknown compression", key, append([]byte{3, 9}, value[2:]...), ErrMalformed, "value", "compression byte 9"},
		{"zlib bomb", key, bomb, ErrLimit, "value", "inflates beyond"},
		{"unknown version id", key, unknown, ErrUnknownSchema, "value", "01020300-0000-0000-0000-000000000000"},
		{"unknown header version", key, append([]byte{4}, value[1:]...), ErrMagic, "value", "got 0x04"},
		{"key truncated", key[:17], value, ErrMalformed, "key", "header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := d.Decode(t.Context(), "tp", 3, 77, c.key, c.value)
			var de *Error
			if !errors.Is(err, c.want) || !errors.As(err, &de) || de.Part != c.part {
				t.Fatalf("err = %v, want %v in the %s", err, c.want, c.part)
			}
			if !strings.Contains(err.Error(), "tp/3 at offset 77") || !strings.Contains(err.Error(), c.says) {
				t.Errorf("error does not name the record or say %q: %v", c.says, err)
			}
		})
	}
	// Without a Glue registry a Glue-framed record is an unknown schema
	// that says what to set.
	_, err := New(reg).Decode(t.Context(), "tp", 3, 77, key, value)
	if !errors.Is(err, ErrUnknownSchema) || !strings.Contains(err.Error(), "glue-registry-region") {
		t.Fatalf("without a Glue registry: %v", err)
	}
}

// TestGlueRegistryErrors checks the lookup's error semantics, as
// TestRegistryOutageIsNotAnUnknownSchema does for the Confluent registry:
// only the registry's own not-found is an unknown schema; a refusal is
// ErrRegistryUnavailable at once, and anything else is retried, then
// ErrRegistryUnavailable; each schema is looked up once.
func TestGlueRegistryErrors(t *testing.T) {
	defer func(d time.Duration) { RegistryRetry = d }(RegistryRetry)
	RegistryRetry = time.Second
	text := []byte(`{"type":"record","name":"k","fields":[{"name":"id","type":"long"}]}`)
	for _, c := range []struct {
		name string
		err  error
		want error
		many bool // retried
	}{
		{"not found", fmt.Errorf("%w: EntityNotFoundException", ErrGlueNotFound), ErrUnknownSchema, false},
		{"refused", fmt.Errorf("%w: AccessDeniedException", ErrRegistryUnavailable), ErrRegistryUnavailable, false},
		{"unreachable", errors.New("dial tcp: connection refused"), ErrRegistryUnavailable, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &fakeGlue{err: c.err}
			id := g.add(text)
			_, err := New(nil, WithGlue(g)).fetchGlue(t.Context(), id)
			if !errors.Is(err, c.want) || errors.Is(err, ErrUnknownSchema) && errors.Is(err, ErrRegistryUnavailable) {
				t.Fatalf("err = %v, want %v alone", err, c.want)
			}
			if (g.calls > 1) != c.many {
				t.Errorf("%d lookups", g.calls)
			}
		})
	}
	g := &fakeGlue{}
	id := g.add(text)
	g.schemas[id] = GlueSchema{Definition: `{"type":"object"}`, DataFormat: "JSON"}
	if _, err := New(nil, WithGlue(g)).fetchGlue(t.Context(), id); !errors.Is(err, ErrBadSchema) {
		t.Fatalf("a JSON Schema version: %v, want ErrBadSchema", err)
	}
}

func TestGlueIDRoundTrip(t *testing.T) {
	const s = "b7b4a7f0-0b4b-4c1a-9a3e-2f6d0c8e9a11"
	id, err := ParseGlueID(s)
	if err != nil || id.String() != s {
		t.Fatalf("ParseGlueID(%q) = %v, %v", s, id, err)
	}
	for _, bad := range []string{"", "b7b4a7f00b4b4c1a9a3e2f6d0c8e9a11", "x7b4a7f0-0b4b-4c1a-9a3e-2f6d0c8e9a11"} {
		if _, err := ParseGlueID(bad); err == nil {
			t.Errorf("ParseGlueID(%q) accepted", bad)
		}
	}
}
