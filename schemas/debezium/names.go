package debezium

import "strings"

// maxTopicLength is Kafka's limit on topic names.
const maxTopicLength = 249

// TableID identifies a captured table: the connector's topic.prefix, the
// database (MySQL schema) and the table name.
type TableID struct {
	Prefix, DB, Table string
}

// Topic returns the Debezium data topic P.db.tbl: the non-blank parts joined
// by "." and sanitised with [SanitizeTopic].
func (t TableID) Topic() string { return TopicName(t.Prefix, t.DB, t.Table) }

// SchemaPrefix returns the prefix of the table's record schema names
// (Key, Value, Envelope): the data topic made into a valid Avro full name.
func (t TableID) SchemaPrefix() string { return AvroName(t.Topic()) }

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

// SanitizeTopic replaces every character outside [A-Za-z0-9._-] with "_",
// replaces the reserved names "." and ".." by underscores and truncates the
// result to Kafka's 249-character limit.
func SanitizeTopic(name string) string {
	b := make([]byte, 0, len(name))
	for _, r := range name {
		// One "_" per character (Java replaces per UTF-16 char; for
		// characters outside the BMP Java would write two).
		if r < 0x80 && validTopicChar(byte(r)) {
			b = append(b, byte(r))
		} else {
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

// AvroName makes a dotted full name valid for Avro, like Debezium's
// schema.name.adjustment.mode=avro: in every dot-separated component each
// character outside [A-Za-z0-9_] becomes "_", and a component starting with
// a digit gets a "_" prefix. Empty components become "_".
func AvroName(full string) string {
	parts := strings.Split(full, ".")
	for i, p := range parts {
		parts[i] = AvroFieldName(p)
	}
	return strings.Join(parts, ".")
}

// AvroFieldName makes a single name (no dots) valid for Avro with the rules
// of [AvroName].
func AvroFieldName(name string) string {
	if name == "" {
		return "_"
	}
	valid := true
	for i := 0; i < len(name); i++ {
		if !validAvroChar(name[i]) {
			valid = false
			break
		}
	}
	if valid && !(name[0] >= '0' && name[0] <= '9') {
		return name
	}
	var b strings.Builder
	b.Grow(len(name) + 1)
	for i, r := range name {
		if i == 0 && r >= '0' && r <= '9' {
			b.WriteByte('_')
		}
		if r < 0x80 && validAvroChar(byte(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func validAvroChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
