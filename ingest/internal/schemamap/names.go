package schemamap

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// maxNameLength is the S3 Tables limit on namespace and table names.
const maxNameLength = 255

// hashSuffixLen is the length of "_x" plus 10 hex digits (40 bits of
// SHA-256) appended to names that had to be changed.
const hashSuffixLen = 12

var hashSuffix = regexp.MustCompile(`_x[0-9a-f]{10}$`)

// reservedNames cannot be used as namespaces in S3 Tables.
var reservedNames = map[string]bool{"aws_s3_metadata": true}

// Namer turns Debezium table identities into Iceberg table identifiers that
// S3 Tables accepts: one namespace level, names of 1–255 characters from
// [a-z0-9_] that begin and end with a letter or digit.
//
// Scheme (collision-free for distinct inputs, up to a 40-bit hash):
//   - A name that is already valid, is not reserved and does not end like a
//     hash suffix ("_x" + 10 hex digits) is used unchanged.
//   - Any other name is lower-cased, every byte outside [a-z0-9_] becomes
//     "_", leading and trailing "_" are trimmed (empty becomes "t"), it is
//     cut to leave room, and "_x" + the first 10 hex digits of the SHA-256
//     of the original name is appended. So "Orders" → "orders_x<hash>" and
//     never collides with a table really named "orders".
//
// Namespace = Name(db), or Name(prefix) + "_" + Name(db) when
// NamespaceWithPrefix is set; table = Name(table).
type Namer struct {
	// Prefix is the Debezium topic.prefix (the logical server name).
	Prefix string
	// NamespaceWithPrefix puts the prefix in front of the namespace, for
	// several sources sharing one table bucket. Default false.
	NamespaceWithPrefix bool
}

// Ident returns the Iceberg identifier {namespace, table} of db.tbl.
func (n Namer) Ident(db, tbl string) table.Identifier {
	ns := Name(db)
	if n.NamespaceWithPrefix && n.Prefix != "" {
		ns = Name(n.Prefix) + "_" + ns
		if len(ns) > maxNameLength {
			ns = Name(n.Prefix + "." + db + "\x00") // hashed, always short enough
		}
	}
	return table.Identifier{ns, Name(tbl)}
}

// Name maps one source name to a valid S3 Tables name with the scheme
// described on [Namer].
func Name(s string) string {
	if valid(s) {
		return s
	}
	b := make([]byte, 0, len(s)+hashSuffixLen)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
			b = append(b, c)
		default:
			b = append(b, '_')
		}
	}
	base := strings.Trim(string(b), "_")
	if base == "" {
		base = "t"
	}
	if len(base) > maxNameLength-hashSuffixLen {
		base = strings.TrimRight(base[:maxNameLength-hashSuffixLen], "_")
	}
	sum := sha256.Sum256([]byte(s))
	return base + "_x" + hex.EncodeToString(sum[:5])
}

func valid(s string) bool {
	if s == "" || len(s) > maxNameLength || reservedNames[s] || hashSuffix.MatchString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return s[0] != '_' && s[len(s)-1] != '_'
}
