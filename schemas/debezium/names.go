package debezium

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
)

// maxTopicLength is Kafka's limit on topic names.
const maxTopicLength = 249

// NameAdjustment is one of Debezium's name-adjustment modes, the values of
// schema.name.adjustment.mode and field.name.adjustment.mode. The zero
// value means [AdjustNone], Debezium's default for both settings.
type NameAdjustment string

// Name-adjustment modes (Debezium's SchemaNameAdjustmentMode and
// FieldNameAdjustmentMode).
const (
	// AdjustNone leaves names as they are.
	AdjustNone NameAdjustment = "none"
	// AdjustAvro replaces every character outside Avro's ASCII alphabet
	// with "_"; a leading digit becomes "_" followed by the digit.
	AdjustAvro NameAdjustment = "avro"
	// AdjustAvroUnicode replaces every character outside the alphabet, "_"
	// included, with "_u" and its UTF-16 code in lower-case hex (at least
	// four digits only for codes below 0x100, as Debezium writes them).
	AdjustAvroUnicode NameAdjustment = "avro_unicode"
)

// ParseNameAdjustment parses a mode as Debezium does: trimmed and
// case-insensitive. The empty string is [AdjustNone].
func ParseNameAdjustment(s string) (NameAdjustment, error) {
	switch m := NameAdjustment(strings.ToLower(strings.TrimSpace(s))); m {
	case "", AdjustNone:
		return AdjustNone, nil
	case AdjustAvro, AdjustAvroUnicode:
		return m, nil
	}
	return "", fmt.Errorf("name adjustment mode %q: want none, avro or avro_unicode", s)
}

// TableID identifies a captured table: the connector's topic.prefix, the
// database (MySQL schema) and the table name, and how the names of its
// record schemas are adjusted.
type TableID struct {
	Prefix, DB, Table string
	// SchemaNames is schema.name.adjustment.mode for the table's Key, Value
	// and Envelope schema names (zero value: none).
	SchemaNames NameAdjustment
}

// Topic returns the Debezium data topic P.db.tbl: the non-blank parts joined
// by "." and sanitised with [SanitizeTopic].
func (t TableID) Topic() string { return TopicName(t.Prefix, t.DB, t.Table) }

// SchemaPrefix returns the prefix of the table's record schema names (Key,
// Value, Envelope): like Debezium, the data topic adjusted with
// [AdjustSchemaName] (adjusting "<topic>.Value" as a whole gives the same
// result as adjusting the topic and appending ".Value").
//
// With avro and avro_unicode one more rule applies, where binlake departs
// from Debezium: a dot-separated part that still does not start with a
// letter or "_" (a table named "2024-sales" gives "P.db.2024_sales") gets
// the mode's first-character treatment too ("_2024_sales", or
// "_u0032024_u002dsales"). Debezium keeps such a part; its Apicurio
// converter registers it through Apicurio's own API, but Avro 1.12's parser
// (the registry's Confluent-compatible API, Avro 1.12 readers) rejects a
// namespace part that starts with a digit, so the name could not be
// registered or read back. With none the name is left as it is; see
// [ValidAvroFullName].
func (t TableID) SchemaPrefix() string {
	name := AdjustSchemaName(t.SchemaNames, t.Topic())
	if t.SchemaNames != AdjustAvro && t.SchemaNames != AdjustAvroUnicode || ValidAvroFullName(name) {
		return name
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		switch {
		case p == "":
			parts[i] = "_"
		case p[0] >= '0' && p[0] <= '9':
			// After adjustment only a leading digit can be wrong.
			if t.SchemaNames == AdjustAvro {
				parts[i] = "_" + p
			} else {
				parts[i] = fmt.Sprintf("_u%04x", p[0]) + p[1:]
			}
		}
	}
	return strings.Join(parts, ".")
}

// TopicName joins the non-blank parts with "." and sanitises the result like
// Debezium's AbstractTopicNamingStrategy.
func TopicName(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return SanitizeTopic(b.String())
}

// TransactionTopic returns the transaction-metadata topic P.transaction.
func TransactionTopic(prefix string) string { return TopicName(prefix, "transaction") }

// HeartbeatTopic returns the heartbeat topic __debezium-heartbeat.P.
func HeartbeatTopic(prefix string) string { return TopicName("__debezium-heartbeat", prefix) }

// SanitizeTopic replaces every character outside [A-Za-z0-9._-] with "_"
// (one per UTF-16 code unit, as Debezium's Java does: a character outside
// the Basic Multilingual Plane becomes "__"), replaces the reserved names
// "." and ".." by underscores and truncates the result to Kafka's
// 249-character limit.
func SanitizeTopic(name string) string {
	b := make([]byte, 0, len(name))
	for _, r := range name {
		switch {
		case r < 0x80 && validTopicChar(byte(r)):
			b = append(b, byte(r))
		case utf16.RuneLen(r) == 2:
			b = append(b, '_', '_')
		default:
			b = append(b, '_')
		}
	}
	s := string(b)
	if s == "." || s == ".." {
		s = strings.Repeat("_", len(s))
	}
	if len(s) > maxTopicLength {
		s = s[:maxTopicLength]
	}
	return s
}

func validTopicChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// AdjustSchemaName adjusts a dotted schema full name as Debezium's
// SchemaNameAdjuster does for schema.name.adjustment.mode:
//   - none: unchanged;
//   - avro: the first character must be [A-Za-z_] and the others
//     [A-Za-z0-9_.]; any other becomes "_" (a leading digit "_" plus the
//     digit);
//   - avro_unicode: the first character must be [A-Za-z] and the others
//     [A-Za-z0-9.]; any other, "_" included, becomes "_uXXXX".
//
// Only the first character of the whole name is treated as a first
// character: a later component that starts with a digit ("p.db.1t") is
// kept, as Debezium keeps it.
func AdjustSchemaName(mode NameAdjustment, name string) string {
	return adjust(mode, name, true)
}

// AdjustFieldName adjusts a field (column) name as Debezium's field namer
// does for field.name.adjustment.mode: the rules of [AdjustSchemaName]
// without "." among the valid characters.
func AdjustFieldName(mode NameAdjustment, name string) string {
	return adjust(mode, name, false)
}

func adjust(mode NameAdjustment, name string, dots bool) string {
	unicodeMode := mode == AdjustAvroUnicode
	if (mode != AdjustAvro && !unicodeMode) || name == "" {
		return name
	}
	first := func(c uint16) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' && !unicodeMode
	}
	other := func(c uint16) bool {
		return first(c) || c >= '0' && c <= '9' || c == '.' && dots
	}
	units := utf16.Encode([]rune(name))
	changed := false
	var b strings.Builder
	b.Grow(len(name) + 8)
	replace := func(c uint16) {
		changed = true
		if !unicodeMode {
			b.WriteByte('_')
			return
		}
		hex := fmt.Sprintf("%x", c)
		if len(hex) <= 2 {
			hex = "00" + hex
		}
		b.WriteString("_u")
		b.WriteString(hex)
	}
	for i, c := range units {
		switch {
		case i == 0 && first(c), i > 0 && other(c):
			b.WriteByte(byte(c))
		default:
			replace(c)
			if i == 0 && !unicodeMode && c >= '0' && c <= '9' {
				b.WriteByte(byte(c))
			}
		}
	}
	if !changed {
		return name
	}
	return b.String()
}

// ValidAvroFullName reports whether every dot-separated part of a record
// full name is a [ValidAvroName], as Avro 1.12's schema parser (the
// registry's) requires of a namespace and a name.
func ValidAvroFullName(full string) bool {
	for _, p := range strings.Split(full, ".") {
		if !ValidAvroName(p) {
			return false
		}
	}
	return true
}

// ValidAvroName reports whether name is a valid Avro name for the Java
// Avro library the registry and the Kafka Connect converters use (its
// default NameValidator.UTF_VALIDATOR): a letter or "_" first, then
// letters, digits or "_", judged per UTF-16 code unit, so non-ASCII letters
// are valid and characters outside the Basic Multilingual Plane are not.
// With the adjustment mode none, a field name that is not valid stops the
// Avro converter.
func ValidAvroName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if r > 0xFFFF {
			return false
		}
		ok := unicode.IsLetter(r) || r == '_' || i > 0 && unicode.IsDigit(r)
		if !ok {
			return false
		}
	}
	return true
}
