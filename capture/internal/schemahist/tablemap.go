package schemahist

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/capture/internal/mysqltype"
)

// binaryCollation is MySQL's and MariaDB's "binary" collation id.
const binaryCollation = 63

// FromTableMap derives a table definition from a table map event written
// with binlog_row_metadata=FULL: column names, types with their
// precision, scale, fractional seconds and lengths, signedness, character
// sets, enum and set labels, nullability and the primary key. This is the
// structure the event's rows were written with, whatever happened to the
// table since. What the binlog does not carry (defaults, comments, and on
// MariaDB that a LONGTEXT column is JSON) is taken from hint, column by
// column, when hint has a column of that name and type.
func FromTableMap(tm *replication.TableMapEvent, hint Definition) (Definition, error) {
	return FromTableMapCharsets(tm, hint, nil)
}

// FromTableMapCharsets is [FromTableMap] with the server's collations: each
// string, ENUM and SET column then gets the character set its rows were
// written in from the event itself rather than from hint, and ENUM and SET
// labels (raw bytes in that character set) are decoded to UTF-8.
func FromTableMapCharsets(tm *replication.TableMapEvent, hint Definition, colls Collations) (Definition, error) {
	names := tm.ColumnNameString()
	if len(names) != int(tm.ColumnCount) {
		return Definition{}, fmt.Errorf("%w: %s.%s: the binlog has no column names (set binlog_row_metadata=FULL)",
			ErrSchemaMismatch, tm.Schema, tm.Table)
	}
	hinted := map[string]mysqltype.Column{}
	for _, c := range hint.Columns {
		hinted[strings.ToLower(c.Name)] = c
	}
	unsigned := tm.UnsignedMap()
	collations := tm.CollationMap()
	enums := tm.EnumStrValueMap()
	sets := tm.SetStrValueMap()
	geoms := tm.GeometryTypeMap()
	def := Definition{DB: string(tm.Schema), Table: string(tm.Table), Charset: hint.Charset}
	charsets := tableMapCharsets(tm, colls)
	for i := range int(tm.ColumnCount) {
		cs, known := charsets[i]
		if !known {
			if h, ok := hinted[strings.ToLower(names[i])]; ok {
				cs = h.Charset
			}
		}
		if err := decodeLabels(enums, sets, i, cs); err != nil {
			return Definition{}, fmt.Errorf("%s.%s column %s: %w", tm.Schema, tm.Table, names[i], err)
		}
		typ, err := columnType(tm, i, unsigned[i], collations, enums[i], sets[i], geoms)
		if err != nil {
			return Definition{}, fmt.Errorf("%s.%s column %s: %w", tm.Schema, tm.Table, names[i], err)
		}
		_, nullable := tm.Nullable(i)
		c := mysqltype.Column{Name: names[i], Type: typ, Nullable: nullable}
		if h, ok := hinted[strings.ToLower(names[i])]; ok {
			if h.Type == "json" && strings.HasSuffix(typ, "text") {
				c.Type = "json"
			}
			if sameType(h.Type, c.Type) {
				c.Default, c.DefaultGenerated, c.Comment = h.Default, h.DefaultGenerated, h.Comment
			}
			c.Charset = h.Charset
		}
		if known {
			c.Charset = cs
		}
		def.Columns = append(def.Columns, c)
	}
	for _, pk := range tm.PrimaryKey {
		if int(pk) >= len(names) {
			return Definition{}, fmt.Errorf("%w: %s.%s: primary key column %d out of range", ErrSchemaMismatch, tm.Schema, tm.Table, pk)
		}
		def.PrimaryKey = append(def.PrimaryKey, names[pk])
	}
	return def, nil
}

// decodeLabels decodes column i's ENUM or SET labels from charset cs.
func decodeLabels(enums, sets map[int][]string, i int, cs string) error {
	for _, m := range []map[int][]string{enums, sets} {
		labels, ok := m[i]
		if !ok {
			continue
		}
		out := make([]string, len(labels))
		for k, l := range labels {
			var err error
			if out[k], err = mysqltype.DecodeText(cs, []byte(l)); err != nil {
				return err
			}
		}
		m[i] = out
	}
	return nil
}

// sameType compares column types ignoring display widths ("int(11)" vs "int").
func sameType(a, b string) bool {
	strip := func(s string) string {
		s = strings.ToLower(s)
		for _, p := range []string{"tinyint", "smallint", "mediumint", "int", "bigint", "year"} {
			if strings.HasPrefix(s, p+"(") {
				if j := strings.IndexByte(s, ')'); j > 0 {
					return p + s[j+1:]
				}
			}
		}
		return s
	}
	return strip(a) == strip(b)
}

func columnType(tm *replication.TableMapEvent, i int, unsigned bool, collations map[int]uint64, enum, set []string, geoms map[int]uint64) (string, error) {
	meta := tm.ColumnMeta[i]
	sign := func(t string) string {
		if unsigned {
			return t + " unsigned"
		}
		return t
	}
	binary := func() bool { c, ok := collations[i]; return ok && c == binaryCollation }
	switch t := tm.ColumnType[i]; t {
	case mysql.MYSQL_TYPE_TINY:
		return sign("tinyint"), nil
	case mysql.MYSQL_TYPE_SHORT:
		return sign("smallint"), nil
	case mysql.MYSQL_TYPE_INT24:
		return sign("mediumint"), nil
	case mysql.MYSQL_TYPE_LONG:
		return sign("int"), nil
	case mysql.MYSQL_TYPE_LONGLONG:
		return sign("bigint"), nil
	case mysql.MYSQL_TYPE_FLOAT:
		return sign("float"), nil
	case mysql.MYSQL_TYPE_DOUBLE:
		return sign("double"), nil
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return sign(fmt.Sprintf("decimal(%d,%d)", meta>>8, meta&0xff)), nil
	case mysql.MYSQL_TYPE_YEAR:
		return "year", nil
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		return "date", nil
	case mysql.MYSQL_TYPE_TIME:
		return "time", nil
	case mysql.MYSQL_TYPE_TIME2:
		return fsp("time", meta), nil
	case mysql.MYSQL_TYPE_DATETIME:
		return "datetime", nil
	case mysql.MYSQL_TYPE_DATETIME2:
		return fsp("datetime", meta), nil
	case mysql.MYSQL_TYPE_TIMESTAMP:
		return "timestamp", nil
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		return fsp("timestamp", meta), nil
	case mysql.MYSQL_TYPE_BIT:
		return fmt.Sprintf("bit(%d)", int(meta>>8)*8+int(meta&0xff)), nil
	case mysql.MYSQL_TYPE_JSON:
		return "json", nil
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		if binary() {
			return fmt.Sprintf("varbinary(%d)", meta), nil
		}
		return "varchar(255)", nil // the length does not change the Debezium type
	case mysql.MYSQL_TYPE_STRING:
		real := byte(meta >> 8)
		switch real {
		case mysql.MYSQL_TYPE_ENUM:
			return "enum(" + quoteList(enum) + ")", nil
		case mysql.MYSQL_TYPE_SET:
			return "set(" + quoteList(set) + ")", nil
		}
		// Field length in bytes, with its high bits folded into the real type byte.
		length := int(((uint16(real)&0x30)^0x30)<<4) | int(meta&0xff)
		if binary() {
			return fmt.Sprintf("binary(%d)", length), nil
		}
		return "char(1)", nil
	case mysql.MYSQL_TYPE_BLOB:
		names := map[uint16][2]string{1: {"tinyblob", "tinytext"}, 2: {"blob", "text"}, 3: {"mediumblob", "mediumtext"}, 4: {"longblob", "longtext"}}
		n, ok := names[meta]
		if !ok {
			return "", fmt.Errorf("%w: blob with pack length %d", mysqltype.ErrUnsupportedType, meta)
		}
		if binary() {
			return n[0], nil
		}
		return n[1], nil
	case mysql.MYSQL_TYPE_GEOMETRY:
		switch geoms[i] {
		case 1:
			return "point", nil
		case 2:
			return "linestring", nil
		case 3:
			return "polygon", nil
		case 4:
			return "multipoint", nil
		case 5:
			return "multilinestring", nil
		case 6:
			return "multipolygon", nil
		case 7:
			return "geometrycollection", nil
		}
		return "geometry", nil
	default:
		return "", fmt.Errorf("%w: binlog column type %d", mysqltype.ErrUnsupportedType, t)
	}
}

func fsp(t string, meta uint16) string {
	if meta == 0 {
		return t
	}
	return fmt.Sprintf("%s(%d)", t, meta)
}

func quoteList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
	}
	return strings.Join(q, ",")
}

// typeClass reduces a column type to what decides its Debezium schema and
// value decoding, so that a definition and a table map can be compared:
// display widths and character lengths drop out, JSON and LONGTEXT (how
// MariaDB stores JSON) compare equal.
func typeClass(t string) string {
	t = strings.ToLower(strings.TrimSpace(t))
	unsigned := strings.Contains(t, "unsigned")
	t = strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(t, "unsigned", ""), "zerofill", ""))
	base, args := t, ""
	if i := strings.IndexByte(t, '('); i >= 0 {
		base, args = strings.TrimSpace(t[:i]), t[i:]
	}
	switch base {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year":
		args = ""
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json":
		return "string"
	case "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return "bytes"
	case "float", "real", "double":
		// FLOAT(M,D) changes the Debezium type but not the binlog's.
		args = ""
	case "numeric":
		base = "decimal"
	case "datetime", "time", "timestamp":
		if args == "(0)" {
			args = ""
		}
	}
	if unsigned {
		return base + args + " unsigned"
	}
	return base + args
}

// MatchesMap checks a table map event's column names and types against
// the definition.
func (t *Table) MatchesMap(tm *replication.TableMapEvent) error {
	if err := t.Matches(tm.ColumnNameString()); err != nil {
		return err
	}
	if len(tm.ColumnNameString()) == 0 {
		return nil // no metadata to compare types with
	}
	// The definition's charsets decode the event's ENUM/SET labels, so
	// that non-ASCII labels compare equal.
	derived, err := FromTableMap(tm, t.Def)
	if err != nil {
		return err
	}
	for i, c := range derived.Columns {
		have := t.Def.Columns[i].Type
		if typeClass(have) != typeClass(c.Type) {
			return fmt.Errorf("%w: %s.%s column %s is %s in the binlog, %s in the definition",
				ErrSchemaMismatch, t.Def.DB, t.Def.Table, c.Name, c.Type, have)
		}
	}
	return nil
}
