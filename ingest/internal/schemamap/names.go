package schemamap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// maxNameLength is the S3 Tables limit on namespace and table names.
const maxNameLength = 255

// hashSuffixLen is the length of "_x" plus 10 hex digits (40 bits of
// SHA-256) appended to a name that two source tables would share.
const hashSuffixLen = 12

// SourceProperty is the table property ingest sets on every table it
// creates: the source table the lake table holds, as Namer.Source spells
// it. It is how a name taken by another source table is recognised.
const SourceProperty = "binlake.source"

// SourcePrefixProperty is the table property that names the source whose
// changes the table holds: the topic prefix of its change topics
// (Debezium's topic.prefix, the first part of the topic name). ingest sets
// it with SourceProperty at creation, and on an older table that has none
// the first source that writes it adopts it. Without
// NamespaceWithPrefix, SourceProperty does not name the prefix, so two
// sources' db.tbl would resolve to one table: this property tells them
// apart (ErrOtherSource), unless Namer.MergeSources says to merge them.
const SourcePrefixProperty = "binlake.source-prefix"

// offsetsPrefix is commit.OffsetsKeyPrefix (not imported: commit imports
// this package's callers' types, and the key is part of the table format).
const offsetsPrefix = "binlake.offsets."

// ErrNameTaken reports a table name that belongs to another source table
// and cannot be given to this one.
var ErrNameTaken = errors.New("schemamap: the table name belongs to another source table")

// ErrOtherSource reports a table that holds the same source table (db.tbl)
// of another source (topic prefix, SourcePrefixProperty): two sources are
// never merged into one table unless Namer.MergeSources is set.
var ErrOtherSource = fmt.Errorf("%w: it holds another source's table of the same name", ErrNameTaken)

// Namer turns Debezium table identities into Iceberg table identifiers that
// S3 Tables accepts: one namespace level, names of 1–255 characters from
// [a-z0-9_] that begin and end with a letter or digit, and namespaces that
// do not begin with "aws".
//
// A source table's name is, in order (Resolve):
//   - the name Map gives it (--table-name-map);
//   - its natural name (NaturalName of the database and of the table:
//     "Order Items" → "order_items"), unless another source table holds a
//     table of that name (its SourceProperty names another source, or it
//     has none and nothing shows it is this source's);
//   - then the hashed name: the natural table name + "_x" + 10 hex digits
//     of the SHA-256 of Source, deterministic, so the second source table
//     finds its table again after a restart;
//   - a table under the name the scheme before natural names gave (Legacy)
//     is used when it exists and is not another source's: tables created
//     by earlier versions keep being written.
//
// Namespace = NaturalNamespace(db), or NaturalName(prefix) + "_" + db's
// natural name when NamespaceWithPrefix is set.
type Namer struct {
	// Prefix is the Debezium topic.prefix (the logical server name).
	Prefix string
	// NamespaceWithPrefix puts the prefix in front of the namespace, for
	// several sources sharing one table bucket. Default false.
	NamespaceWithPrefix bool
	// Map gives source tables explicit names (ParseNameMap). Default: none.
	Map NameMap
	// MergeSources lets sources with different prefixes write one table
	// when their tables resolve to one name (shards merged on purpose);
	// default false: such a table stops ingest with ErrOtherSource.
	MergeSources bool
}

// SourceTable is a source table: its database and its name.
type SourceTable struct{ DB, Table string }

// NameMap is the explicit name of source tables (--table-name-map).
type NameMap map[SourceTable]table.Identifier

// Ident returns the Iceberg identifier {namespace, table} db.tbl gets when
// no other source table holds it: its mapped name, else its natural name.
func (n Namer) Ident(db, tbl string) table.Identifier {
	if id, ok := n.Map[SourceTable{db, tbl}]; ok {
		return slices.Clone(id)
	}
	return n.Natural(db, tbl)
}

// Natural returns the natural identifier of db.tbl.
func (n Namer) Natural(db, tbl string) table.Identifier {
	return table.Identifier{n.namespace(db), NaturalName(tbl)}
}

// Hashed returns the identifier db.tbl gets when its natural name belongs
// to another source table: the natural table name cut to leave room, then
// "_x" and 10 hex digits of the SHA-256 of Source(db, tbl).
func (n Namer) Hashed(db, tbl string) table.Identifier {
	base := NaturalName(tbl)
	if len(base) > maxNameLength-hashSuffixLen {
		base = strings.TrimRight(base[:maxNameLength-hashSuffixLen], "_")
	}
	sum := sha256.Sum256([]byte(n.Source(db, tbl)))
	return table.Identifier{n.namespace(db), base + "_x" + hex.EncodeToString(sum[:5])}
}

// Legacy returns the identifier the naming before natural names gave
// db.tbl: a name that was already valid unchanged, any other one
// lower-cased with a hash suffix (LegacyName).
func (n Namer) Legacy(db, tbl string) table.Identifier {
	ns := LegacyName(db)
	if n.NamespaceWithPrefix && n.Prefix != "" {
		ns = LegacyName(n.Prefix) + "_" + ns
		if len(ns) > maxNameLength {
			ns = LegacyName(n.Prefix + "." + db + "\x00") // hashed, always short enough
		}
	}
	return table.Identifier{ns, LegacyName(tbl)}
}

// Source is the value of SourceProperty for db.tbl: "db.tbl", with
// NamespaceWithPrefix "prefix.db.tbl" (two prefixes' tables are then two
// tables), each part in backquotes (doubled inside) when it holds a dot
// or a backquote, so that distinct tables never share a value.
func (n Namer) Source(db, tbl string) string {
	parts := []string{db, tbl}
	if n.NamespaceWithPrefix && n.Prefix != "" {
		parts = []string{n.Prefix, db, tbl}
	}
	for i, s := range parts {
		parts[i] = quotePart(s)
	}
	return strings.Join(parts, ".")
}

// Placed reports whether the lake table ident, whose SourceProperty is
// source, is one this Namer placed: source is a value Source gives (with
// this Namer's prefix setting) and ident is one of the candidates for the
// source table it names. Another ingest deployment writing the same
// catalog with other naming settings (a namespace with the prefix, say)
// owns tables this one does not.
func (n Namer) Placed(ident table.Identifier, source string) bool {
	parts, ok := splitSource(source)
	if !ok || len(parts) < 2 {
		return false
	}
	db, tbl := parts[len(parts)-2], parts[len(parts)-1]
	if n.Source(db, tbl) != source {
		return false
	}
	for _, c := range n.Candidates(db, tbl) {
		if slices.Equal(c, ident) {
			return true
		}
	}
	return false
}

// splitSource splits a Source value into its parts, undoing quotePart.
func splitSource(s string) ([]string, bool) {
	var parts []string
	for len(s) > 0 {
		var part string
		if s[0] == '`' {
			var b strings.Builder
			i := 1
			for {
				if i >= len(s) {
					return nil, false // unterminated quote
				}
				if s[i] == '`' {
					if i+1 < len(s) && s[i+1] == '`' {
						b.WriteByte('`')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			part, s = b.String(), s[i:]
		} else {
			i := strings.IndexAny(s, ".`")
			if i < 0 {
				i = len(s)
			} else if s[i] == '`' {
				return nil, false // a quote inside an unquoted part
			}
			part, s = s[:i], s[i:]
		}
		parts = append(parts, part)
		switch {
		case s == "":
		case s[0] == '.' && len(s) > 1:
			s = s[1:]
		default:
			return nil, false // a trailing dot, or text after a quoted part
		}
	}
	return parts, len(parts) > 0
}

func quotePart(s string) string {
	if !strings.ContainsAny(s, ".`") {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// Candidates are every identifier db.tbl's table may have, in the order
// Resolve tries them: mapped, natural, hashed, legacy.
func (n Namer) Candidates(db, tbl string) []table.Identifier {
	if id, ok := n.Map[SourceTable{db, tbl}]; ok {
		return []table.Identifier{slices.Clone(id)}
	}
	var out []table.Identifier
	for _, id := range []table.Identifier{n.Natural(db, tbl), n.Hashed(db, tbl), n.Legacy(db, tbl)} {
		if !slices.ContainsFunc(out, func(o table.Identifier) bool { return slices.Equal(o, id) }) {
			out = append(out, id)
		}
	}
	return out
}

func (n Namer) namespace(db string) string {
	if n.NamespaceWithPrefix && n.Prefix != "" {
		ns := NaturalName(n.Prefix) + "_" + NaturalName(db)
		if len(ns) > maxNameLength {
			ns = strings.TrimRight(ns[:maxNameLength], "_")
		}
		return NaturalNamespace(ns)
	}
	return NaturalNamespace(NaturalName(db))
}

// Lookup reports the properties of table ident, or ok false when it does
// not exist (nor its namespace).
type Lookup func(ctx context.Context, ident table.Identifier) (props map[string]string, ok bool, err error)

// NameKind says which of Namer's names a table has.
type NameKind string

// The kinds of names.
const (
	NameMapped  NameKind = "mapped"
	NameNatural NameKind = "natural"
	NameHashed  NameKind = "hashed"
	NameLegacy  NameKind = "legacy"
)

// Resolved is the table of a source table.
type Resolved struct {
	Ident table.Identifier
	// Exists is false when the table is still to be created under Ident.
	Exists bool
	Kind   NameKind
}

// owner is what a table's properties say of whose it is.
type owner uint8

const (
	ownerThis    owner = iota + 1 // SourceProperty names this source, or (none set) the table holds its topic's offsets or has its legacy name
	ownerOther                    // SourceProperty names another source
	ownerUnknown                  // no SourceProperty, and nothing shows it is this source's
	ownerPrefix                   // this source table's, but SourcePrefixProperty names another source
)

func (n Namer) owner(props map[string]string, db, tbl, topic string, ident table.Identifier) owner {
	if p, ok := props[SourcePrefixProperty]; ok && p != n.Prefix && n.Prefix != "" && !n.MergeSources {
		if src, ok := props[SourceProperty]; !ok || src == n.Source(db, tbl) {
			return ownerPrefix
		}
	}
	if src, ok := props[SourceProperty]; ok {
		if src == n.Source(db, tbl) {
			return ownerThis
		}
		return ownerOther
	}
	if topic != "" {
		if _, ok := props[offsetsPrefix+topic]; ok {
			return ownerThis
		}
	}
	if slices.Equal(ident, n.Legacy(db, tbl)) {
		return ownerThis
	}
	return ownerUnknown
}

// Resolve finds the table of source table db.tbl (whose change topic is
// topic, "" when not known) through look, as described on Namer: the
// first candidate that exists and is this source's, else the name to
// create it under. A mapped name that another source's table holds, and a
// hashed name another source's table holds, are ErrNameTaken.
//
// Resolve only reads: two callers may get the same name for a new table.
// The creator checks, after creating it (or finding it created), that
// SourceProperty names its source, and resolves again when it does not.
func (n Namer) Resolve(ctx context.Context, db, tbl, topic string, look Lookup) (Resolved, error) {
	src := SourceTable{db, tbl}
	if id, ok := n.Map[src]; ok {
		props, exists, err := look(ctx, id)
		if err != nil {
			return Resolved{}, err
		}
		if exists {
			switch n.owner(props, db, tbl, topic, id) {
			case ownerOther:
				return Resolved{}, fmt.Errorf("%w: table-name-map names %v for %s.%s, but that table holds %s (its %s property): map one of them elsewhere",
					ErrNameTaken, id, db, tbl, props[SourceProperty], SourceProperty)
			case ownerPrefix:
				return Resolved{}, n.OtherSource(props, db, tbl, id)
			}
		}
		return Resolved{Ident: slices.Clone(id), Exists: exists, Kind: NameMapped}, nil
	}
	natural, hashed, legacy := n.Natural(db, tbl), n.Hashed(db, tbl), n.Legacy(db, tbl)
	props, naturalExists, err := look(ctx, natural)
	if err != nil {
		return Resolved{}, err
	}
	if naturalExists {
		switch n.owner(props, db, tbl, topic, natural) {
		case ownerThis:
			return Resolved{Ident: natural, Exists: true, Kind: NameNatural}, nil
		case ownerPrefix:
			return Resolved{}, n.OtherSource(props, db, tbl, natural)
		}
	}
	props, exists, err := look(ctx, hashed)
	if err != nil {
		return Resolved{}, err
	}
	if exists {
		switch n.owner(props, db, tbl, topic, hashed) {
		case ownerPrefix:
			return Resolved{}, n.OtherSource(props, db, tbl, hashed)
		case ownerOther:
			return Resolved{}, fmt.Errorf("%w: %s.%s would be named %v, but that table holds %s (its %s property): name one of them with table-name-map",
				ErrNameTaken, db, tbl, hashed, props[SourceProperty], SourceProperty)
		}
		return Resolved{Ident: hashed, Exists: true, Kind: NameHashed}, nil
	}
	if !slices.Equal(legacy, natural) {
		props, exists, err := look(ctx, legacy)
		if err != nil {
			return Resolved{}, err
		}
		if exists {
			switch n.owner(props, db, tbl, topic, legacy) {
			case ownerThis:
				return Resolved{Ident: legacy, Exists: true, Kind: NameLegacy}, nil
			case ownerPrefix:
				return Resolved{}, n.OtherSource(props, db, tbl, legacy)
			}
		}
	}
	if naturalExists {
		return Resolved{Ident: hashed, Kind: NameHashed}, nil
	}
	return Resolved{Ident: natural, Kind: NameNatural}, nil
}

// OtherSource is the ErrOtherSource of source table db.tbl resolving to
// table ident, whose properties props name another source.
func (n Namer) OtherSource(props map[string]string, db, tbl string, ident table.Identifier) error {
	return fmt.Errorf("%w: %s.%s of source %q resolves to table %s, which holds %s.%s of source %q (its %s property): "+
		"two sources are never merged into one table by accident. Give each source its own tables with --namespace-with-prefix "+
		"(namespace <prefix>_<db>), or run one ingest per source, each with a --table-name-map of its own; "+
		"or, to merge the sources' rows into one table on purpose, set --merge-sources (ingest/README.md, Two sources, one name)",
		ErrOtherSource, db, tbl, n.Prefix, strings.Join(ident, "."), db, tbl, props[SourcePrefixProperty], SourcePrefixProperty)
}

// Holds reports whether a table with properties props, named ident, is
// db.tbl's (topic as for Resolve): what the creator of a table checks
// after a race.
func (n Namer) Holds(props map[string]string, db, tbl, topic string, ident table.Identifier) bool {
	return n.owner(props, db, tbl, topic, ident) == ownerThis
}

// NaturalName maps one source name to a valid S3 Tables table name: ASCII
// letters lower-cased, every other character outside [a-z0-9_] (by
// Unicode character) becomes "_", leading and trailing "_" are trimmed
// (S3 Tables wants a letter or digit at both ends), a name left empty
// becomes "t", and a name longer than 255 bytes is cut to 255 (and
// trimmed again). Distinct names can map to one: Resolve tells them
// apart.
func NaturalName(s string) string {
	b := make([]byte, 0, len(s))
	for _, c := range s {
		switch {
		case c >= 'A' && c <= 'Z':
			b = append(b, byte(c)+'a'-'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
			b = append(b, byte(c))
		default:
			b = append(b, '_')
		}
	}
	base := strings.Trim(string(b), "_")
	if len(base) > maxNameLength {
		base = strings.TrimRight(base[:maxNameLength], "_")
	}
	if base == "" {
		base = "t"
	}
	return base
}

// NaturalNamespace makes a valid table name a valid namespace: S3 Tables
// refuses namespaces that begin with "aws", which get "db_" in front
// ("aws_logs" → "db_aws_logs"), cut to 255 bytes.
func NaturalNamespace(s string) string {
	if strings.HasPrefix(s, "aws") {
		s = "db_" + s
		if len(s) > maxNameLength {
			s = strings.TrimRight(s[:maxNameLength], "_")
		}
	}
	return s
}

// ValidName reports whether s is a valid S3 Tables table name.
func ValidName(s string) bool {
	if s == "" || len(s) > maxNameLength {
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

// ValidNamespace reports whether s is a valid S3 Tables namespace.
func ValidNamespace(s string) bool { return ValidName(s) && !strings.HasPrefix(s, "aws") }

// ParseNameMap parses table-name-map entries "db.table=namespace.table"
// (a name holding a dot in backquotes: "`my.db`.t=ns.t"). The target must
// be a valid S3 Tables namespace and table name; a source mapped twice and
// two sources mapped to one table are refused.
func ParseNameMap(entries []string) (NameMap, error) {
	out := NameMap{}
	by := map[string]SourceTable{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		from, to, ok := strings.Cut(e, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want <db>.<table>=<namespace>.<table>", e)
		}
		parts, err := splitQualified(strings.TrimSpace(from))
		if err != nil || len(parts) != 2 {
			return nil, fmt.Errorf("%q: source %q is not <db>.<table> (a name holding a dot goes in backquotes)", e, from)
		}
		src := SourceTable{parts[0], parts[1]}
		ns, tbl, ok := strings.Cut(strings.TrimSpace(to), ".")
		if !ok || !ValidNamespace(ns) || !ValidName(tbl) {
			return nil, fmt.Errorf("%q: target %q is not <namespace>.<table> of 1–255 characters [a-z0-9_] each, beginning and ending with a letter or digit, the namespace not beginning with aws (as S3 Tables requires)", e, to)
		}
		if _, dup := out[src]; dup {
			return nil, fmt.Errorf("%q: %s.%s is mapped twice", e, src.DB, src.Table)
		}
		if prev, dup := by[ns+"."+tbl]; dup {
			return nil, fmt.Errorf("%q: %s.%s and %s.%s are both mapped to %s.%s", e, prev.DB, prev.Table, src.DB, src.Table, ns, tbl)
		}
		out[src] = table.Identifier{ns, tbl}
		by[ns+"."+tbl] = src
	}
	return out, nil
}

// splitQualified splits a dot-separated name whose parts may be in
// backquotes (doubled inside).
func splitQualified(s string) ([]string, error) {
	var parts []string
	for {
		if s == "" {
			return nil, errors.New("empty name")
		}
		var part string
		if s[0] == '`' {
			var b strings.Builder
			i := 1
			for ; ; i++ {
				if i >= len(s) {
					return nil, errors.New("unclosed backquote")
				}
				if s[i] == '`' {
					if i+1 < len(s) && s[i+1] == '`' {
						b.WriteByte('`')
						i++
						continue
					}
					break
				}
				b.WriteByte(s[i])
			}
			part, s = b.String(), s[i+1:]
			if s != "" && s[0] != '.' {
				return nil, errors.New("text after a closing backquote")
			}
		} else {
			i := strings.IndexByte(s, '.')
			if i < 0 {
				i = len(s)
			}
			part, s = s[:i], s[i:]
		}
		if part == "" {
			return nil, errors.New("empty name")
		}
		parts = append(parts, part)
		if s == "" {
			return parts, nil
		}
		s = s[1:] // the dot
	}
}

var legacyHashSuffix = regexp.MustCompile(`_x[0-9a-f]{10}$`)

// LegacyName is how names were mapped before natural names, kept to find
// the tables created then: a name that is already valid, is not
// "aws_s3_metadata" and does not end like a hash suffix is unchanged; any
// other is lower-cased, every byte outside [a-z0-9_] becomes "_", the ends
// are trimmed (empty becomes "t"), it is cut to leave room, and "_x" + the
// first 10 hex digits of the SHA-256 of the original name is appended.
func LegacyName(s string) string {
	if ValidName(s) && s != "aws_s3_metadata" && !legacyHashSuffix.MatchString(s) {
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
