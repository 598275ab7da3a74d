// Package mysqltype is the one place that maps a MySQL/MariaDB column type to
// its Debezium Connect schema and converts the column's values, whether they
// come from the binlog (go-mysql v1.16 replication row values) or from a SQL
// snapshot read (string or []byte text-protocol values), into the Debezium
// value model of package debezium.
//
// The mapping follows the Debezium 3.1 MySQL/MariaDB connectors
// (BinlogValueConverters) for the modes in [Options]; schemas/TYPES.md is the
// user-facing table and must change together with this package.
//
// Guarantees: every column type either maps to a schema or fails with
// [ErrUnsupportedType]; a value that does not fit its column fails with
// [ErrInvalidValue]; no value is silently changed except where Debezium does
// the same (documented per type in TYPES.md: zero dates, BIGINT UNSIGNED in
// long mode, TIME outside 00:00–24:00). String, ENUM and SET values are
// decoded from the column's character set to UTF-8 as the server's
// CONVERT(... USING utf8mb4) does (charset.go); a character set capture
// cannot decode fails [New] with a [*CharsetError], bytes that are not text
// of the charset fail with [ErrInvalidValue], and neither is ever passed
// through as a string. Converted []byte values may alias
// the input (go-mysql row buffers): encode them before the input is reused.
package mysqltype

import (
	"errors"
	"fmt"
	"time"
)

// Errors returned by this package.
var (
	// ErrUnsupportedType reports a column type with no Debezium mapping.
	ErrUnsupportedType = errors.New("mysqltype: unsupported column type")
	// ErrInvalidValue reports a value whose Go type or content does not fit
	// its column.
	ErrInvalidValue = errors.New("mysqltype: invalid value")
	// ErrInvalidDefault reports a column default that cannot be converted.
	ErrInvalidDefault = errors.New("mysqltype: invalid column default")
	// ErrInvalidOptions reports an unknown mode in [Options].
	ErrInvalidOptions = errors.New("mysqltype: invalid options")
)

// TimePrecisionMode is Debezium's time.precision.mode.
type TimePrecisionMode string

// Supported time precision modes.
const (
	// TimeAdaptiveMicroseconds (the default): DATE io.debezium.time.Date,
	// TIME io.debezium.time.MicroTime, DATETIME(0-3) io.debezium.time.Timestamp,
	// DATETIME(4-6) io.debezium.time.MicroTimestamp.
	TimeAdaptiveMicroseconds TimePrecisionMode = "adaptive_time_microseconds"
	// TimeConnect: Connect's Date (days), Time (INT32 ms) and Timestamp
	// (INT64 ms; sub-millisecond digits are dropped).
	TimeConnect TimePrecisionMode = "connect"
)

// DecimalMode is Debezium's decimal.handling.mode.
type DecimalMode string

// Supported decimal handling modes.
const (
	DecimalPrecise DecimalMode = "precise" // default: Connect Decimal bytes
	DecimalString  DecimalMode = "string"  // plain string with the column scale
	DecimalDouble  DecimalMode = "double"  // FLOAT64, lossy
)

// BigintUnsignedMode is Debezium's bigint.unsigned.handling.mode.
type BigintUnsignedMode string

// Supported BIGINT UNSIGNED modes.
const (
	// BigintLong (the default): INT64; values above 2^63-1 wrap to negative
	// numbers exactly as Java's long conversion does.
	BigintLong BigintUnsignedMode = "long"
	// BigintPrecise: Connect Decimal(20,0).
	BigintPrecise BigintUnsignedMode = "precise"
)

// BinaryMode is Debezium's binary.handling.mode.
type BinaryMode string

// Supported binary handling modes.
const (
	BinaryBytes         BinaryMode = "bytes" // default
	BinaryBase64        BinaryMode = "base64"
	BinaryBase64URLSafe BinaryMode = "base64-url-safe"
	BinaryHex           BinaryMode = "hex"
)

// Options select the Debezium conversion modes. The zero value is
// Debezium's defaults.
type Options struct {
	// TimePrecision defaults to TimeAdaptiveMicroseconds.
	TimePrecision TimePrecisionMode
	// Decimal defaults to DecimalPrecise.
	Decimal DecimalMode
	// BigintUnsigned defaults to BigintLong.
	BigintUnsigned BigintUnsignedMode
	// Binary defaults to BinaryBytes.
	Binary BinaryMode
	// ServerTimeZone is the zone in which TIMESTAMP values given as text
	// are expressed: the snapshot session's time_zone, and the binlog
	// reader's go-mysql TimestampStringLocation (which is time.Local when
	// left nil there — set it). time.Time values are absolute and are not
	// affected. Defaults to UTC.
	ServerTimeZone *time.Location
}

func (o Options) withDefaults() Options {
	if o.TimePrecision == "" {
		o.TimePrecision = TimeAdaptiveMicroseconds
	}
	if o.Decimal == "" {
		o.Decimal = DecimalPrecise
	}
	if o.BigintUnsigned == "" {
		o.BigintUnsigned = BigintLong
	}
	if o.Binary == "" {
		o.Binary = BinaryBytes
	}
	if o.ServerTimeZone == nil {
		o.ServerTimeZone = time.UTC
	}
	return o
}

// Validate reports unknown modes.
func (o Options) Validate() error {
	o = o.withDefaults()
	switch o.TimePrecision {
	case TimeAdaptiveMicroseconds, TimeConnect:
	default:
		return fmt.Errorf("%w: time precision mode %q", ErrInvalidOptions, o.TimePrecision)
	}
	switch o.Decimal {
	case DecimalPrecise, DecimalString, DecimalDouble:
	default:
		return fmt.Errorf("%w: decimal handling mode %q", ErrInvalidOptions, o.Decimal)
	}
	switch o.BigintUnsigned {
	case BigintLong, BigintPrecise:
	default:
		return fmt.Errorf("%w: bigint unsigned handling mode %q", ErrInvalidOptions, o.BigintUnsigned)
	}
	switch o.Binary {
	case BinaryBytes, BinaryBase64, BinaryBase64URLSafe, BinaryHex:
	default:
		return fmt.Errorf("%w: binary handling mode %q", ErrInvalidOptions, o.Binary)
	}
	return nil
}
