package decode

import (
	"errors"
	"fmt"
)

// ErrLimit reports a record whose decoding would exceed a limit of
// [Limits]: too many values, too many decoded bytes, or a value whose
// size the schema leaves unbounded (a decimal exponent, an array of items
// that take no bytes). Like every decoding error of a record it follows
// errors-tolerance.
var ErrLimit = errors.New("decode: record exceeds a decoding limit")

// ErrPanic reports a record that made the decoder fail unexpectedly: a bug
// in ingest (please report it), kept to that one record, which follows
// errors-tolerance, instead of a crash that the restart would repeat on
// the same record.
var ErrPanic = errors.New("decode: decoding failed unexpectedly")

// Defaults of [Limits].
const (
	// DefaultMaxElements is the default Limits.MaxElements.
	DefaultMaxElements = 1_000_000
	// DefaultMaxBytes is the default Limits.MaxBytes: 64 MiB.
	DefaultMaxBytes = 64 << 20
	// DefaultJSONSchemaCacheBytes is the default
	// Limits.JSONSchemaCacheBytes: 16 MiB.
	DefaultJSONSchemaCacheBytes = 16 << 20
	// BytesPerByte is how many decoded bytes each byte of a record may
	// stand for beyond Limits.MaxBytes: every value takes a byte at least
	// in Avro (two in JSON) and counts 16.
	BytesPerByte = 16
	// valueCost is what one decoded value counts against MaxBytes beyond
	// its content: an interface value in its row, slice or map.
	valueCost = 16
)

// Limits bound the work and memory of decoding one record, whatever its
// schema and payload ask for. Zero fields take their defaults.
type Limits struct {
	// MaxElements is the most values decoding one record may read or
	// skip: columns, struct fields, array and map items, union branches,
	// in the key and the value together (a Debezium row has at most a few
	// thousand). Default DefaultMaxElements.
	MaxElements int
	// MaxBytes bounds the decoded size of one record: the bytes of its
	// decoded strings and byte values plus 16 per value (read or skipped),
	// in the key and the value together. The bound is MaxBytes or
	// BytesPerByte times the record's own size, whichever is larger: a
	// large record is no bad record (a value over every buffer bound of
	// ingest is committed alone), but a small one must not decode into a
	// large one. Default DefaultMaxBytes.
	MaxBytes int64
	// JSONSchemaCacheBytes bounds the JsonConverter schemas kept compiled,
	// by the size of their text (each JSON record carries its schema: the
	// cache saves compiling it again for every record). When a new schema
	// does not fit, others are dropped; a dropped schema is compiled
	// again when met. Default DefaultJSONSchemaCacheBytes.
	JSONSchemaCacheBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxElements <= 0 {
		l.MaxElements = DefaultMaxElements
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.JSONSchemaCacheBytes <= 0 {
		l.JSONSchemaCacheBytes = DefaultJSONSchemaCacheBytes
	}
	return l
}

// Option configures a Decoder.
type Option func(*Decoder)

// WithLimits sets the decoder's limits (default: Limits{}, every field its
// default).
func WithLimits(l Limits) Option { return func(d *Decoder) { d.limits = l.withDefaults() } }

// budget is what is left of one record's limits as it is decoded.
type budget struct {
	elems int
	bytes int64
	err   error
}

// budget is the budget of a record of size bytes.
func (l Limits) budget(size int) *budget {
	return &budget{elems: l.MaxElements, bytes: max(l.MaxBytes, BytesPerByte*int64(size))}
}

// spend takes one value and n bytes of content from the budget and
// reports whether it is still within it.
func (b *budget) spend(n int) bool {
	if b.err != nil {
		return false
	}
	b.elems--
	b.bytes -= int64(n) + valueCost
	switch {
	case b.elems < 0:
		b.err = fmt.Errorf("%w: more values than the limit", ErrLimit)
	case b.bytes < 0:
		b.err = fmt.Errorf("%w: more decoded bytes than the limit", ErrLimit)
	}
	return b.err == nil
}

// spendBytes takes n bytes of content, of a value already counted, from
// the budget.
func (b *budget) spendBytes(n int) bool {
	if b.err != nil {
		return false
	}
	if b.bytes -= int64(n); b.bytes < 0 {
		b.err = fmt.Errorf("%w: more decoded bytes than the limit", ErrLimit)
	}
	return b.err == nil
}
