package schemamap

import (
	"fmt"
	"unicode/utf8"
)

// Limits on what a schema may ask of the mapping. A record carries its
// schema (inline in JsonConverter JSON, by registry id in Avro), so every
// value here is the producer's to choose: a schema outside them is
// ErrUnsupported, an error of that record, never a panic or an unbounded
// amount of work.
const (
	// MaxDecimalScale is the largest decimal scale: what an Iceberg
	// decimal can hold (MySQL's largest is 30). It bounds decimals mapped
	// to strings too (precision above MaxDecimalPrecision).
	MaxDecimalScale = 38
	// MaxDecimalStringPrecision is the largest decimal precision mapped at
	// all (to a string column when above MaxDecimalPrecision; MySQL's
	// largest is 65, PostgreSQL's 1000).
	MaxDecimalStringPrecision = 1000
	// MaxDepth is how deeply structs, arrays and maps may nest in a row.
	MaxDepth = 64
	// MaxFields is the most fields a mapped schema may have, nested ones,
	// list elements and map keys and values included (MySQL allows 4,096
	// columns in a table). It also stops a schema whose named types
	// refer to each other from expanding without end.
	MaxFields = 10_000
	// MaxNameBytes is the longest field name (MySQL's is 64 characters).
	MaxNameBytes = 1024
)

// ErrLimit reports a schema outside the limits above.
var ErrLimit = fmt.Errorf("%w: schema exceeds a limit", ErrUnsupported)

// ErrPanic reports a schema that made the mapping fail unexpectedly: a bug
// in ingest (please report it with the schema), kept to the one record
// that carries the schema instead of stopping ingest for good.
var ErrPanic = fmt.Errorf("%w: the mapping failed unexpectedly", ErrUnsupported)

// recovered turns a panic of the calling mapping function into ErrPanic
// in *err. Deferred only in the exported functions of this package that
// map a record's schema, whose work is pure (no I/O, no shared state): the
// panic can only come from that schema.
func recovered(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %v", ErrPanic, r)
	}
}

// checkName validates a field name.
func checkName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: a field without a name", ErrLimit)
	case len(name) > MaxNameBytes:
		return fmt.Errorf("%w: a field name of %d bytes (at most %d)", ErrLimit, len(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: a field name that is not UTF-8", ErrLimit)
	}
	return nil
}
