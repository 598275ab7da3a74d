package decode

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// AWS Glue Schema Registry's wire format, as AWS's serde library
// (aws-glue-schema-registry, AWSSchemaRegistryConstants) writes it: a
// header version byte (3), a compression byte (0: none, 5: zlib), the
// 16-byte schema version id (a UUID), then the Avro binary body, deflated
// with zlib when the compression byte says so.
const (
	glueHeaderVersion   = 3
	glueCompressionNone = 0
	glueCompressionZlib = 5
	glueHeaderLen       = 2 + 16
)

// GlueID is a Glue Schema Registry schema version id (a UUID).
type GlueID [16]byte

// String is the id in the UUID form Glue's API takes.
func (id GlueID) String() string {
	h := hex.EncodeToString(id[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// ParseGlueID parses a schema version id in UUID form.
func ParseGlueID(s string) (GlueID, error) {
	var id GlueID
	h := strings.ReplaceAll(s, "-", "")
	if len(s) != 36 || len(h) != 32 {
		return id, fmt.Errorf("schema version id %q is not a UUID", s)
	}
	if _, err := hex.Decode(id[:], []byte(h)); err != nil {
		return id, fmt.Errorf("schema version id %q is not a UUID", s)
	}
	return id, nil
}

// ErrGlueNotFound is what a GlueRegistry's error wraps when AWS Glue
// Schema Registry itself answers that a schema version does not exist
// (EntityNotFoundException): as a Confluent registry's 404, a fact about
// the record, which follows errors-tolerance.
var ErrGlueNotFound = fmt.Errorf("%w: AWS Glue Schema Registry has no such schema version", ErrUnknownSchema)

// GlueSchema is a schema version of AWS Glue Schema Registry.
type GlueSchema struct {
	// Definition is the schema's text.
	Definition string
	// DataFormat is Glue's data format: AVRO, JSON or PROTOBUF.
	DataFormat string
}

// GlueRegistry is where the schemas of Glue-framed records are looked up
// by schema version id. Its errors tell the decoder what they mean: one
// wrapping ErrGlueNotFound is the registry's own "no such version" (the
// record follows errors-tolerance), one wrapping ErrRegistryUnavailable a
// refusal that waiting will not mend (credentials, permissions: returned
// at once); any other is taken as the registry not answering and retried
// for RegistryRetry.
type GlueRegistry interface {
	GlueSchemaVersion(ctx context.Context, id GlueID) (GlueSchema, error)
}

// WithGlue makes the decoder read Glue-framed records (first byte 3),
// looking their schemas up in reg. Confluent-framed records (first byte
// 0) are read as before, from the registry given to New: the two can
// share a topic, as during a migration between registries.
func WithGlue(reg GlueRegistry) Option { return func(d *Decoder) { d.glue = reg } }

// glueFrame splits a Glue-framed record into its schema version id and
// Avro body, inflating a zlib body within what is left of bud's decoded
// bytes: a record that inflates beyond them is ErrLimit, read no further.
func glueFrame(b []byte, bud *budget) (GlueID, []byte, error) {
	var id GlueID
	if len(b) < glueHeaderLen {
		return id, nil, fmt.Errorf("%w: Glue-framed record of %d bytes, shorter than its %d-byte header", ErrMalformed, len(b), glueHeaderLen)
	}
	if b[0] != glueHeaderVersion {
		return id, nil, fmt.Errorf("%w: Glue header version %d (want %d)", ErrMagic, b[0], glueHeaderVersion)
	}
	copy(id[:], b[2:glueHeaderLen])
	body := b[glueHeaderLen:]
	switch b[1] {
	case glueCompressionNone:
		return id, body, nil
	case glueCompressionZlib:
		zr, err := zlib.NewReader(bytes.NewReader(body))
		if err != nil {
			return id, nil, fmt.Errorf("%w: inflating the zlib body of schema version %s: %w", ErrMalformed, id, err)
		}
		limit := bud.bytes
		out, err := io.ReadAll(io.LimitReader(zr, limit+1))
		if err != nil {
			return id, nil, fmt.Errorf("%w: inflating the zlib body of schema version %s: %w", ErrMalformed, id, err)
		}
		if int64(len(out)) > limit {
			return id, nil, fmt.Errorf("%w: the zlib body of schema version %s inflates beyond %d bytes", ErrLimit, id, limit)
		}
		return id, out, nil
	default:
		return id, nil, fmt.Errorf("%w: Glue compression byte %d (want 0, none, or 5, zlib)", ErrMalformed, b[1])
	}
}

// fetchGlue returns the Avro text of Glue schema version id, with the
// error semantics of schemaByID.
func (d *Decoder) fetchGlue(ctx context.Context, id GlueID) ([]byte, error) {
	if d.glue == nil {
		return nil, fmt.Errorf("%w: Glue schema version %s (no Glue registry configured: set glue-registry-region)", ErrUnknownSchema, id)
	}
	deadline := time.Now().Add(RegistryRetry)
	wait := 100 * time.Millisecond
	for {
		s, err := d.glue.GlueSchemaVersion(ctx, id)
		switch {
		case err == nil:
			if !strings.EqualFold(s.DataFormat, "AVRO") {
				return nil, fmt.Errorf("%w: Glue schema version %s is %s, not Avro", ErrBadSchema, id, s.DataFormat)
			}
			return []byte(s.Definition), nil
		case errors.Is(err, ErrUnknownSchema), errors.Is(err, ErrRegistryUnavailable):
			return nil, fmt.Errorf("Glue schema version %s: %w", id, err)
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: Glue schema version %s, retried for %s (check glue-registry-region, glue-registry-endpoint and the AWS credentials): %w", ErrRegistryUnavailable, id, RegistryRetry, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
