package schemahist

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/binlake/binlake/schemas/debezium"
)

// The table model of Debezium's schema-change events.
//
// Debezium does not describe a table from information_schema: its DDL
// parser builds an io.debezium.relational.Table from the statements it
// reads (SHOW CREATE TABLE during the snapshot, the binlog's DDL text while
// streaming) and applies each ALTER to it. The schema-change topic carries
// that model after each change (ConnectTableChangeSerializer), so a column
// written `id INT` has no length while `id int(11)` from SHOW CREATE TABLE
// has length 11. Model reproduces that parser for the statements MariaDB
// and MySQL write (debezium-connector-mariadb antlr listeners
// ColumnDefinitionParserListener, CreateTableParserListener,
// AlterTableParserListener, DefaultValueParserListener, and the type
// table of MariaDbAntlrDdlParser), and is kept in the schema history so a
// restarted capture continues from the same model.

// ErrUnparsedDDL reports a statement the model parser does not understand.
var ErrUnparsedDDL = errors.New("schemahist: statement not understood by the table model parser")

// JDBC type codes (java.sql.Types) used by Debezium's MariaDB parser.
const (
	jdbcBit          = -7
	jdbcBigInt       = -5
	jdbcVarBinary    = -3
	jdbcBinary       = -2
	jdbcNChar        = -15
	jdbcNVarChar     = -9
	jdbcChar         = 1
	jdbcNumeric      = 2
	jdbcDecimal      = 3
	jdbcInteger      = 4
	jdbcSmallInt     = 5
	jdbcFloat        = 6
	jdbcReal         = 7
	jdbcDouble       = 8
	jdbcVarChar      = 12
	jdbcBoolean      = 16
	jdbcDate         = 91
	jdbcTime         = 92
	jdbcTimestamp    = 93
	jdbcOther        = 1111
	jdbcBlob         = 2004
	jdbcTimestampTZ  = 2014
	jdbcLongVarChar  = -1
	jdbcClob         = 2005
	jdbcNClob        = 2011
	jdbcLongNVarChar = -16
)

// ModelColumn is one column of a Model.
type ModelColumn struct {
	Name     string `json:"name"`
	JDBCType int32  `json:"jdbc_type"`
	TypeName string `json:"type_name"`
	// Charset is the column's character set, resolved against the table's
	// default when the column was added ("" for types without one).
	Charset         string   `json:"charset,omitempty"`
	Length          int32    `json:"length"` // -1: none
	Scale           *int32   `json:"scale,omitempty"`
	Optional        bool     `json:"optional"`
	AutoIncremented bool     `json:"auto_incremented,omitempty"`
	Generated       bool     `json:"generated,omitempty"`
	Comment         *string  `json:"comment,omitempty"`
	Default         *string  `json:"default,omitempty"` // defaultValueExpression
	EnumValues      []string `json:"enum_values,omitempty"`
}

// Model is a table as Debezium's DDL parser models it.
type Model struct {
	DefaultCharset string        `json:"default_charset,omitempty"`
	PrimaryKey     []string      `json:"primary_key"`
	Columns        []ModelColumn `json:"columns"`
	Comment        *string       `json:"comment,omitempty"`
}

// Clone returns a deep copy of m.
func (m *Model) Clone() *Model {
	if m == nil {
		return nil
	}
	c := *m
	c.PrimaryKey = slices.Clone(m.PrimaryKey)
	c.Columns = slices.Clone(m.Columns)
	for i := range c.Columns {
		c.Columns[i].EnumValues = slices.Clone(c.Columns[i].EnumValues)
	}
	return &c
}

func (m *Model) column(name string) int {
	return slices.IndexFunc(m.Columns, func(c ModelColumn) bool { return strings.EqualFold(c.Name, name) })
}

// typeUsesCharset is io.debezium.relational.ColumnImpl.typeUsesCharset.
func typeUsesCharset(jdbc int32) bool {
	switch jdbc {
	case jdbcChar, jdbcVarChar, jdbcLongVarChar, jdbcClob, jdbcNChar, jdbcNVarChar, jdbcLongNVarChar, jdbcNClob:
		return true
	}
	return false
}

// resolve gives a column the table's default charset, as ColumnImpl does
// when the table editor creates the column.
func (m *Model) resolve(c *ModelColumn) {
	if typeUsesCharset(c.JDBCType) && (c.Charset == "" || strings.EqualFold(c.Charset, "DEFAULT")) {
		c.Charset = m.DefaultCharset
	}
}

// setPrimaryKey sets the key and makes its columns non-optional
// (MariaDbAntlrDdlParser.parsePrimaryIndexColumnNames).
func (m *Model) setPrimaryKey(names []string) {
	pk := make([]string, 0, len(names))
	for _, n := range names {
		if i := m.column(n); i >= 0 {
			m.Columns[i].Optional = false
			n = m.Columns[i].Name
		}
		pk = append(pk, n)
	}
	m.PrimaryKey = pk
}

// ParseCreateTable builds the model of a CREATE TABLE statement (as
// written, or SHOW CREATE TABLE's output). dbCharset is the default
// character set of the table's database, used when the statement names
// none. For CREATE TABLE ... LIKE, like returns the model of the source
// table (nil if unknown).
func ParseCreateTable(query, defaultDB, dbCharset string, like func(TableRef) *Model) (TableRef, *Model, error) {
	p := &parser{toks: tokenize(query), db: defaultDB}
	if !p.kw("CREATE") {
		return TableRef{}, nil, fmt.Errorf("%w: not CREATE TABLE", ErrUnparsedDDL)
	}
	p.kw("OR", "REPLACE")
	if !p.kw("TABLE") {
		return TableRef{}, nil, fmt.Errorf("%w: not CREATE TABLE", ErrUnparsedDDL)
	}
	p.kw("IF", "NOT", "EXISTS")
	ref := p.name()
	if p.kw("LIKE") || (p.is("(") && p.peekKw(1, "LIKE")) {
		p.accept("(")
		p.kw("LIKE")
		src := p.name()
		if like != nil {
			if m := like(src); m != nil {
				return ref, m.Clone(), nil
			}
		}
		return ref, nil, fmt.Errorf("%w: CREATE TABLE LIKE an unknown table", ErrUnparsedDDL)
	}
	if !p.accept("(") {
		return ref, nil, fmt.Errorf("%w: CREATE TABLE without column list", ErrUnparsedDDL)
	}
	m := &Model{PrimaryKey: []string{}}
	for !p.done() && !p.is(")") {
		if p.isConstraint() {
			m.applyConstraint(p.constraint())
		} else {
			name := p.next().s
			c, flags, err := p.columnDefinition(name, nil)
			if err != nil {
				return ref, nil, err
			}
			m.Columns = append(m.Columns, c)
			m.applyColumnKey(c.Name, flags)
		}
		if !p.accept(",") {
			break
		}
	}
	if !p.accept(")") {
		return ref, nil, fmt.Errorf("%w: unbalanced column list", ErrUnparsedDDL)
	}
	m.DefaultCharset, m.Comment = p.tableOptions()
	if m.DefaultCharset == "" {
		m.DefaultCharset = dbCharset
	}
	for i := range m.Columns {
		m.resolve(&m.Columns[i])
	}
	return ref, m, nil
}

// The primary key of Debezium's table model, which keys a table's change
// events (MariaDbAntlrDdlParser and its listeners):
//
//   - PRIMARY KEY, as a column attribute or a table constraint (also added
//     by ALTER TABLE), is the key, and its columns become NOT NULL.
//   - Without one, the first column declared UNIQUE (or SERIAL, SERIAL
//     DEFAULT VALUE) is the key, nullable or not
//     (ColumnDefinitionParserListener.exitColumnDefinition).
//   - Without one, the first UNIQUE constraint (table constraint, ALTER
//     TABLE ... ADD UNIQUE, CREATE UNIQUE INDEX) whose columns all exist
//     and are all NOT NULL is the key (parseUniqueIndexColumnNames); one
//     with a nullable column is skipped.
//   - Dropping the unique index does not remove such a key; DROP PRIMARY
//     KEY removes any key.
//
// The rules apply in statement order, so SHOW CREATE TABLE (which MariaDB
// writes with unique keys of NOT NULL columns first, and column UNIQUE
// attributes as UNIQUE KEY constraints) can give another key than the
// statement the table was created with.

// applyColumnKey applies a column definition's PRIMARY KEY or UNIQUE.
func (m *Model) applyColumnKey(name string, f colFlags) {
	switch {
	case f.primary:
		m.setPrimaryKey([]string{name})
	case f.unique && len(m.PrimaryKey) == 0:
		m.PrimaryKey = []string{name}
	}
}

// applyConstraint applies a PRIMARY KEY or UNIQUE constraint.
func (m *Model) applyConstraint(k keyConstraint) {
	switch k.kind {
	case keyPrimary:
		m.setPrimaryKey(k.columns)
	case keyUnique:
		if len(m.PrimaryKey) > 0 {
			return
		}
		names := make([]string, len(k.columns))
		for n, c := range k.columns {
			i := m.column(c)
			if i < 0 || m.Columns[i].Optional {
				return // a missing or nullable column: not a key
			}
			names[n] = m.Columns[i].Name
		}
		m.PrimaryKey = names
	}
}

// CreateUniqueIndex applies CREATE UNIQUE INDEX ... ON t (cols) to a copy
// of m; it returns m itself for other statements.
func (m *Model) CreateUniqueIndex(query, defaultDB string) (*Model, bool) {
	p := &parser{toks: tokenize(query), db: defaultDB}
	if !p.kw("CREATE") {
		return m, false
	}
	p.kw("OR", "REPLACE")
	for p.kw("ONLINE") || p.kw("OFFLINE") {
	}
	if !p.kw("UNIQUE") {
		return m, false
	}
	p.kw("INDEX")
	p.kw("IF", "NOT", "EXISTS")
	for !p.done() && !p.is("ON") {
		p.next() // index name, USING BTREE
	}
	if !p.kw("ON") {
		return m, false
	}
	p.name()
	cols := p.indexColumns()
	out := m.Clone()
	out.applyConstraint(keyConstraint{kind: keyUnique, columns: cols})
	return out, true
}

// Alter applies an ALTER TABLE statement to a copy of m and returns it,
// with the new name if the statement renames the table.
func (m *Model) Alter(query, defaultDB string) (*Model, *TableRef, error) {
	p := &parser{toks: tokenize(query), db: defaultDB}
	if !p.kw("ALTER") {
		return nil, nil, fmt.Errorf("%w: not ALTER TABLE", ErrUnparsedDDL)
	}
	for p.kw("ONLINE") || p.kw("IGNORE") {
	}
	if !p.kw("TABLE") {
		return nil, nil, fmt.Errorf("%w: not ALTER TABLE", ErrUnparsedDDL)
	}
	p.kw("IF", "EXISTS")
	p.name()
	out := m.Clone()
	var rename *TableRef
	for !p.done() {
		if err := p.alterSpec(out, &rename); err != nil {
			return nil, nil, err
		}
		if !p.accept(",") {
			break
		}
	}
	return out, rename, nil
}

func (p *parser) alterSpec(m *Model, rename **TableRef) error {
	switch {
	case p.kw("ADD"):
		p.kw("COLUMN")
		p.kw("IF", "NOT", "EXISTS")
		if p.isConstraint() {
			m.applyConstraint(p.constraint())
			return nil
		}
		if p.accept("(") { // ADD (c1 def, c2 def)
			for !p.done() && !p.is(")") {
				name := p.next().s
				c, _, err := p.columnDefinition(name, nil)
				if err != nil {
					return err
				}
				m.resolve(&c)
				m.addColumn(c)
				if !p.accept(",") {
					break
				}
			}
			p.accept(")")
			return nil
		}
		name := p.next().s
		c, flags, err := p.columnDefinition(name, nil)
		if err != nil {
			return err
		}
		m.resolve(&c)
		m.addColumn(c)
		m.place(c.Name, flags)
		m.applyColumnKey(c.Name, flags)
	case p.kw("DROP"):
		switch {
		case p.kw("PRIMARY", "KEY"):
			m.PrimaryKey = []string{}
		case p.kw("INDEX"), p.kw("KEY"), p.kw("FOREIGN", "KEY"), p.kw("CONSTRAINT"), p.kw("CHECK"), p.kw("PARTITION"):
			p.skipSpec()
		default:
			p.kw("COLUMN")
			p.kw("IF", "EXISTS")
			name := p.next().s
			if i := m.column(name); i >= 0 {
				m.Columns = slices.Delete(m.Columns, i, i+1)
			}
			p.skipSpec() // RESTRICT | CASCADE
		}
	case p.kw("MODIFY"):
		p.kw("COLUMN")
		p.kw("IF", "EXISTS")
		name := p.next().s
		i := m.column(name)
		if i < 0 {
			return fmt.Errorf("%w: MODIFY of unknown column %s", ErrUnparsedDDL, name)
		}
		c, flags, err := p.columnDefinition(m.Columns[i].Name, nil)
		if err != nil {
			return err
		}
		m.resolve(&c)
		m.Columns[i] = c
		m.place(c.Name, flags)
		m.applyColumnKey(c.Name, flags)
	case p.kw("CHANGE"):
		p.kw("COLUMN")
		p.kw("IF", "EXISTS")
		old := p.next().s
		i := m.column(old)
		if i < 0 {
			return fmt.Errorf("%w: CHANGE of unknown column %s", ErrUnparsedDDL, old)
		}
		newName := p.next().s
		// The existing column is edited: its default, length and scale are
		// unset, everything the new definition does not mention is kept.
		base := m.Columns[i]
		base.Default, base.Length, base.Scale = nil, -1, nil
		c, flags, err := p.columnDefinition(base.Name, &base)
		if err != nil {
			return err
		}
		m.resolve(&c)
		m.Columns[i] = c
		if old != newName {
			m.renameColumn(m.Columns[i].Name, newName)
		}
		m.place(newName, flags)
		m.applyColumnKey(newName, flags)
	case p.kw("RENAME", "COLUMN"):
		old := p.next().s
		p.kw("TO")
		newName := p.next().s
		if m.column(old) < 0 {
			return fmt.Errorf("%w: RENAME of unknown column %s", ErrUnparsedDDL, old)
		}
		m.renameColumn(old, newName)
	case p.kw("RENAME", "INDEX"), p.kw("RENAME", "KEY"):
		p.skipSpec()
	case p.kw("RENAME"):
		if !p.kw("TO") {
			p.kw("AS")
		}
		ref := p.name()
		*rename = &ref
	case p.kw("ALTER"):
		p.kw("COLUMN")
		name := p.next().s
		i := m.column(name)
		switch {
		case p.kw("SET", "DEFAULT"):
			if i >= 0 {
				var c colFlags
				d, has := p.defaultValue(&c)
				if has {
					m.Columns[i].Default = d
				}
			}
		case p.kw("DROP", "DEFAULT"):
			if i >= 0 {
				m.Columns[i].Default = nil
			}
		}
		p.skipSpec()
	case p.kw("CONVERT", "TO"):
		// CONVERT TO CHARACTER SET cs: the table's default and every
		// character column's charset become cs, as Debezium's model does.
		if cs, _ := p.tableOptions(); cs != "" {
			m.DefaultCharset = cs
			for i := range m.Columns {
				if typeUsesCharset(m.Columns[i].JDBCType) {
					m.Columns[i].Charset = cs
				}
			}
		}
	case p.is("DEFAULT") || p.is("CHARACTER") || p.is("CHARSET") || p.is("COMMENT"):
		cs, comment := p.tableOptions()
		if cs != "" {
			m.DefaultCharset = cs
		}
		if comment != nil {
			m.Comment = comment
		}
	default:
		p.skipSpec()
	}
	return nil
}

func (m *Model) addColumn(c ModelColumn) {
	if i := m.column(c.Name); i >= 0 {
		m.Columns[i] = c
		return
	}
	m.Columns = append(m.Columns, c)
}

// place moves a column FIRST or AFTER another (TableEditor.reorderColumn).
func (m *Model) place(name string, f colFlags) {
	if !f.first && f.after == "" {
		return
	}
	i := m.column(name)
	if i < 0 {
		return
	}
	c := m.Columns[i]
	m.Columns = slices.Delete(m.Columns, i, i+1)
	at := 0
	if !f.first {
		j := m.column(f.after)
		if j < 0 {
			m.Columns = slices.Insert(m.Columns, i, c)
			return
		}
		at = j + 1
	}
	m.Columns = slices.Insert(m.Columns, at, c)
}

func (m *Model) renameColumn(old, newName string) {
	i := m.column(old)
	if i < 0 {
		return
	}
	oldName := m.Columns[i].Name
	m.Columns[i].Name = newName
	for k, pk := range m.PrimaryKey {
		if pk == oldName {
			m.PrimaryKey[k] = newName
		}
	}
}

// parser walks the tokens of one statement.
type parser struct {
	toks []token
	i    int
	db   string
}

func (p *parser) done() bool { return p.i >= len(p.toks) }

func (p *parser) next() token {
	if p.done() {
		return token{}
	}
	t := p.toks[p.i]
	p.i++
	return t
}

func (p *parser) is(s string) bool {
	return !p.done() && !p.toks[p.i].quoted && strings.EqualFold(p.toks[p.i].s, s)
}

func (p *parser) peekKw(off int, s string) bool {
	j := p.i + off
	return j < len(p.toks) && !p.toks[j].quoted && strings.EqualFold(p.toks[j].s, s)
}

// kw consumes the keywords if they all follow.
func (p *parser) kw(words ...string) bool {
	for j, w := range words {
		if !p.peekKw(j, w) {
			return false
		}
	}
	p.i += len(words)
	return true
}

func (p *parser) accept(s string) bool {
	if p.is(s) {
		p.i++
		return true
	}
	return false
}

func (p *parser) name() TableRef {
	first := p.next()
	if p.is(".") {
		p.i++
		return TableRef{DB: first.s, Table: p.next().s}
	}
	return TableRef{DB: p.db, Table: first.s}
}

// skipParens skips a balanced parenthesised group starting at "(".
func (p *parser) skipParens() {
	if !p.accept("(") {
		return
	}
	for depth := 1; !p.done() && depth > 0; {
		t := p.next()
		if t.quoted {
			continue
		}
		switch t.s {
		case "(":
			depth++
		case ")":
			depth--
		}
	}
}

// skipSpec skips to the next top-level "," or the closing ")".
func (p *parser) skipSpec() {
	for !p.done() && !p.is(",") && !p.is(")") {
		if p.is("(") {
			p.skipParens()
			continue
		}
		p.i++
	}
}

var constraintWords = []string{"PRIMARY", "KEY", "INDEX", "UNIQUE", "CONSTRAINT", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "PERIOD", "SYSTEM"}

func (p *parser) isConstraint() bool {
	if p.done() || p.toks[p.i].quoted {
		return false
	}
	for _, w := range constraintWords {
		if strings.EqualFold(p.toks[p.i].s, w) {
			return true
		}
	}
	return false
}

type keyKind uint8

const (
	keyNone keyKind = iota
	keyPrimary
	keyUnique
)

// keyConstraint is a PRIMARY KEY or UNIQUE constraint's columns.
type keyConstraint struct {
	kind    keyKind
	columns []string
}

// constraint reads a table constraint; it returns the columns of a
// PRIMARY KEY or UNIQUE one.
func (p *parser) constraint() keyConstraint {
	if p.kw("CONSTRAINT") {
		if !p.is("PRIMARY") && !p.is("UNIQUE") && !p.is("FOREIGN") && !p.is("CHECK") {
			p.next() // the constraint's name
		}
	}
	var k keyConstraint
	switch {
	case p.kw("PRIMARY", "KEY"):
		k.kind = keyPrimary
	case p.kw("UNIQUE"):
		k.kind = keyUnique
	default:
		p.skipSpec()
		return k
	}
	for !p.done() && !p.is("(") && !p.is(",") && !p.is(")") {
		p.next() // KEY | INDEX, index name, USING BTREE
	}
	k.columns = p.indexColumns()
	p.skipSpec()
	return k
}

// indexColumns reads a parenthesised index column list: names, without
// prefix lengths and ASC/DESC.
func (p *parser) indexColumns() []string {
	var names []string
	if p.accept("(") {
		for !p.done() && !p.is(")") {
			names = append(names, p.next().s)
			for !p.done() && !p.is(",") && !p.is(")") {
				if p.is("(") {
					p.skipParens()
					continue
				}
				p.i++ // prefix length, ASC/DESC
			}
			p.accept(",")
		}
		p.accept(")")
	}
	return names
}

// colFlags are what a column definition says beyond the column itself.
type colFlags struct {
	primary, unique bool
	first           bool
	after           string
	optionalSet     bool
}

type typeInfo struct {
	jdbc         int32
	kind         byte // 'd' dimension, 's' string, 'n' national string, 'p' simple, 'c' collection
	defLength    int32
	defScale     int32 // -1: none
	suffixTokens []string
}

var (
	numSuffix    = []string{"SIGNED", "UNSIGNED", "ZEROFILL"}
	doubleSuffix = []string{"PRECISION", "SIGNED", "UNSIGNED", "ZEROFILL"}
)

// ti is a type table entry with no default length or scale.
func ti(jdbc int32, kind byte, suffix ...string) typeInfo {
	return typeInfo{jdbc: jdbc, kind: kind, defLength: -1, defScale: -1, suffixTokens: suffix}
}

// withDefaults sets an entry's default length and scale (-1: none).
func (t typeInfo) withDefaults(length, scale int32) typeInfo {
	t.defLength, t.defScale = length, scale
	return t
}

// types is MariaDbAntlrDdlParser's data type table (jdbc type, default
// length and scale, optional suffix tokens).
var types = map[string]typeInfo{
	"CHAR": ti(jdbcChar, 's'), "CHARACTER": ti(jdbcChar, 's'), "VARCHAR": ti(jdbcVarChar, 's'),
	"TINYTEXT": ti(jdbcVarChar, 's'), "TEXT": ti(jdbcVarChar, 's'), "MEDIUMTEXT": ti(jdbcVarChar, 's'), "LONGTEXT": ti(jdbcVarChar, 's'),
	"NCHAR": ti(jdbcNChar, 'n'), "NVARCHAR": ti(jdbcNVarChar, 'n'),
	// TINYINT is SMALLINT's jdbc type in Debezium 3.5.0 (what its MariaDB
	// connector wrote in make compat; the same release emits TINYINT
	// values as INT16).
	"TINYINT": ti(jdbcSmallInt, 'd', numSuffix...), "INT1": ti(jdbcSmallInt, 'd', numSuffix...),
	"SMALLINT": ti(jdbcSmallInt, 'd', numSuffix...), "INT2": ti(jdbcSmallInt, 'd', numSuffix...),
	"MEDIUMINT": ti(jdbcInteger, 'd', numSuffix...), "INT3": ti(jdbcInteger, 'd', numSuffix...), "MIDDLEINT": ti(jdbcInteger, 'd', numSuffix...),
	"INT": ti(jdbcInteger, 'd', numSuffix...), "INTEGER": ti(jdbcInteger, 'd', numSuffix...), "INT4": ti(jdbcInteger, 'd', numSuffix...),
	"BIGINT": ti(jdbcBigInt, 'd', numSuffix...), "INT8": ti(jdbcBigInt, 'd', numSuffix...),
	"REAL":   ti(jdbcReal, 'd', numSuffix...),
	"DOUBLE": ti(jdbcDouble, 'd', doubleSuffix...), "FLOAT8": ti(jdbcDouble, 'd', doubleSuffix...),
	"FLOAT": ti(jdbcFloat, 'd', numSuffix...), "FLOAT4": ti(jdbcFloat, 'd', numSuffix...),
	"DECIMAL": ti(jdbcDecimal, 'd', numSuffix...).withDefaults(10, 0), "DEC": ti(jdbcDecimal, 'd', numSuffix...).withDefaults(10, 0),
	"FIXED": ti(jdbcDecimal, 'd', numSuffix...).withDefaults(10, 0), "NUMERIC": ti(jdbcNumeric, 'd', numSuffix...).withDefaults(10, 0),
	"BIT": ti(jdbcBit, 'd').withDefaults(1, -1), "VECTOR": ti(jdbcOther, 'd').withDefaults(2048, -1),
	"TIME": ti(jdbcTime, 'd'), "TIMESTAMP": ti(jdbcTimestampTZ, 'd'), "DATETIME": ti(jdbcTimestamp, 'd'), "YEAR": ti(jdbcInteger, 'd'),
	"BINARY": ti(jdbcBinary, 'd'), "VARBINARY": ti(jdbcVarBinary, 'd'), "BLOB": ti(jdbcBlob, 'd'),
	"DATE": ti(jdbcDate, 'p'), "TINYBLOB": ti(jdbcBlob, 'p'), "MEDIUMBLOB": ti(jdbcBlob, 'p'), "LONGBLOB": ti(jdbcBlob, 'p'),
	"BOOL": ti(jdbcBoolean, 'p'), "BOOLEAN": ti(jdbcBoolean, 'p'), "SERIAL": ti(jdbcBigInt, 'p'),
	"ENUM": ti(jdbcChar, 'c'), "SET": ti(jdbcChar, 'c'),
	"GEOMETRYCOLLECTION": ti(jdbcOther, 'p'), "GEOMCOLLECTION": ti(jdbcOther, 'p'), "LINESTRING": ti(jdbcOther, 'p'),
	"MULTILINESTRING": ti(jdbcOther, 'p'), "MULTIPOINT": ti(jdbcOther, 'p'), "MULTIPOLYGON": ti(jdbcOther, 'p'),
	"POINT": ti(jdbcOther, 'p'), "POLYGON": ti(jdbcOther, 'p'), "GEOMETRY": ti(jdbcOther, 'p'),
	"JSON": ti(jdbcOther, 'p'), "UUID": ti(jdbcOther, 'p'),
}

// dataType reads a data type into c (type name, jdbc type, length,
// scale, charset, enum values).
func (p *parser) dataType(c *ModelColumn) error {
	first := p.next()
	name := strings.ToUpper(first.s)
	// Multi-word names (the resolver prefers the longest match).
	switch {
	case (name == "CHAR" || name == "CHARACTER") && p.is("VARYING"):
		p.i++
		name += " VARYING"
	case name == "NATIONAL":
		w := strings.ToUpper(p.next().s)
		if p.is("VARYING") {
			p.i++
			w += " VARYING"
		}
		name = "NATIONAL " + w
	case name == "NCHAR" && p.is("VARCHAR"):
		p.i++
		name = "NCHAR VARCHAR"
	case name == "LONG" && (p.is("VARCHAR") || p.is("VARBINARY")):
		name = "LONG " + strings.ToUpper(p.next().s)
	}
	info, ok := types[name]
	switch {
	case ok:
	case name == "CHAR VARYING" || name == "CHARACTER VARYING" || name == "LONG VARCHAR" || name == "LONG":
		info = ti(jdbcVarChar, 's')
	case name == "LONG VARBINARY":
		info = ti(jdbcBlob, 'p')
	case strings.HasPrefix(name, "NATIONAL "):
		info = ti(jdbcNChar, 'n')
		if strings.Contains(name, "VARCHAR") || strings.Contains(name, "VARYING") {
			info.jdbc = jdbcNVarChar
		}
	case name == "NCHAR VARCHAR":
		info = ti(jdbcNVarChar, 'n')
	default:
		return fmt.Errorf("%w: unknown data type %s", ErrUnparsedDDL, first.s)
	}
	c.JDBCType = info.jdbc
	length, scale := int32(-1), int32(-1)
	var charset string
	if info.kind == 'c' {
		var opts []string
		if p.accept("(") {
			for !p.done() && !p.is(")") {
				t := p.next()
				if t.s == "," && !t.quoted {
					continue
				}
				opts = append(opts, "'"+strings.ReplaceAll(t.s, "'", "''")+"'")
			}
			p.accept(")")
		}
		if name == "SET" {
			length = int32(max(0, len(opts)*2-1))
		} else {
			length = 1
		}
		c.EnumValues = opts
	} else if p.is("(") {
		p.i++
		a := p.number()
		if p.accept(",") {
			b := p.number()
			scale = int32(b)
		}
		length = int32(min(a, 1<<31-1))
		p.accept(")")
	}
	if info.kind == 'p' {
		length, scale = -1, -1
	}
	// BINARY after a string type belongs to the name; suffixes in the
	// resolver's order, whatever order they were written in.
	var suffixes []string
	seen := map[string]bool{}
	for !p.done() && !p.toks[p.i].quoted {
		w := strings.ToUpper(p.toks[p.i].s)
		if slices.Contains(info.suffixTokens, w) || ((info.kind == 's' || info.kind == 'n') && w == "BINARY") {
			seen[w] = true
			p.i++
			continue
		}
		break
	}
	for _, s := range info.suffixTokens {
		if seen[s] {
			suffixes = append(suffixes, s)
		}
	}
	if seen["BINARY"] {
		suffixes = append(suffixes, "BINARY")
	}
	typeName := name
	if len(suffixes) > 0 {
		typeName += " " + strings.Join(suffixes, " ")
	}
	typeName = adjustSignedUnsignedZerofill(typeName)
	if name == "SERIAL" {
		typeName = "BIGINT UNSIGNED"
	}
	// CHARACTER SET / CHARSET / COLLATE
	for {
		switch {
		case p.kw("CHARACTER", "SET"), p.kw("CHARSET"), p.kw("CHAR", "SET"):
			charset = p.next().s
			continue
		case p.is("COLLATE"):
			p.i++
			coll := p.next().s
			if charset == "" && info.kind == 's' {
				charset, _, _ = strings.Cut(coll, "_")
			}
			continue
		}
		break
	}
	if length == -1 && info.defLength != -1 {
		length = info.defLength
	}
	if scale == -1 && info.defScale != -1 {
		scale = info.defScale
	}
	c.TypeName = typeName
	c.Length = length
	if scale >= 0 {
		c.Scale = &scale
	} else {
		c.Scale = nil
	}
	switch {
	case info.jdbc == jdbcNChar || info.jdbc == jdbcNVarChar:
		c.Charset = "utf8"
		if info.jdbc == jdbcNChar && c.Length == -1 {
			c.Length = 1
		}
	case info.kind == 's' || info.kind == 'c':
		c.Charset = charset
	default:
		c.Charset = ""
	}
	if info.kind != 'c' {
		c.EnumValues = nil
	}
	return nil
}

// adjustSignedUnsignedZerofill is DataTypeBuilder's normalisation.
func adjustSignedUnsignedZerofill(s string) string {
	u := strings.ToUpper(s)
	switch {
	case strings.HasSuffix(u, " SIGNED UNSIGNED ZEROFILL"):
		return s[:len(s)-len(" SIGNED UNSIGNED ZEROFILL")] + " UNSIGNED ZEROFILL"
	case strings.HasSuffix(u, " SIGNED ZEROFILL"):
		return s[:len(s)-len(" SIGNED ZEROFILL")] + " UNSIGNED ZEROFILL"
	case strings.HasSuffix(u, " SIGNED UNSIGNED"):
		return s[:len(s)-len(" SIGNED UNSIGNED")] + " UNSIGNED"
	}
	if strings.Contains(u, "ZEROFILL") && !strings.Contains(u, "UNSIGNED") {
		return strings.Replace(u, "ZEROFILL", "UNSIGNED ZEROFILL", 1)
	}
	return s
}

// number reads an integer, or the integer part of a decimal literal.
func (p *parser) number() int64 {
	t := p.next()
	n, _ := strconv.ParseInt(t.s, 10, 64)
	if p.is(".") { // FLOAT(7.4) style: digits were split by the tokenizer
		p.i++
		if !p.done() && !p.is(")") && !p.is(",") {
			p.i++
		}
		if n == 0 {
			n = 10
		}
	}
	return n
}

// columnDefinition reads a column's type and attributes. base, if set, is
// the existing column being changed (CHANGE keeps what is not restated).
func (p *parser) columnDefinition(name string, base *ModelColumn) (ModelColumn, colFlags, error) {
	c := ModelColumn{Name: name, Length: -1}
	if base != nil {
		c = *base
		c.Name = name
	}
	var f colFlags
	if err := p.dataType(&c); err != nil {
		return c, f, err
	}
	optional := true
	if strings.EqualFold(c.TypeName, "BIGINT UNSIGNED") && strings.EqualFold(p.toks[p.i-1].s, "SERIAL") {
		optional, f.optionalSet = false, true
		f.unique = true
		c.AutoIncremented, c.Generated = true, true
	}
	for !p.done() && !p.is(",") && !p.is(")") {
		switch {
		case p.kw("NOT", "NULL"):
			optional, f.optionalSet = false, true
		case p.kw("NULL"):
			optional, f.optionalSet = true, true
		case p.kw("DEFAULT"):
			d, has := p.defaultValue(&f)
			if has {
				c.Default = d
			}
		case p.kw("ON", "UPDATE"):
			p.next()
			if p.is("(") {
				p.skipParens()
			}
		case p.kw("AUTO_INCREMENT"):
			c.AutoIncremented, c.Generated = true, true
		case p.kw("SERIAL", "DEFAULT", "VALUE"):
			// NOT NULL AUTO_INCREMENT UNIQUE (serialColumn)
			if !f.optionalSet {
				optional, f.optionalSet = false, true
			}
			f.unique = true
			c.AutoIncremented, c.Generated = true, true
		case p.kw("PRIMARY", "KEY"), p.kw("KEY"):
			f.primary = true
			optional, f.optionalSet = false, true
		case p.kw("UNIQUE"):
			p.kw("KEY")
			f.unique = true
		case p.kw("COMMENT"):
			t := p.next()
			s := t.s
			c.Comment = &s
		case p.kw("COLLATE"), p.kw("COLUMN_FORMAT"), p.kw("STORAGE"):
			p.next()
		case p.kw("GENERATED", "ALWAYS"):
		case p.kw("AS"):
			p.skipParens()
		case p.kw("CHECK"):
			p.skipParens()
		case p.kw("REFERENCES"):
			p.name()
			p.skipParens()
			for !p.done() && !p.is(",") && !p.is(")") && (p.is("MATCH") || p.is("ON") || p.is("FULL") || p.is("PARTIAL") || p.is("SIMPLE") ||
				p.is("DELETE") || p.is("UPDATE") || p.is("RESTRICT") || p.is("CASCADE") || p.is("SET") || p.is("NO") || p.is("ACTION") || p.is("NULL") || p.is("DEFAULT")) {
				p.i++
			}
		case p.kw("FIRST"):
			f.first = true
		case p.kw("AFTER"):
			f.after = p.next().s
		case p.is("("):
			p.skipParens()
		default:
			p.i++ // VIRTUAL, STORED, PERSISTENT, INVISIBLE, COMPRESSED, ...
		}
	}
	c.Optional = optional
	return c, f, nil
}

// defaultValue reads the expression after DEFAULT as DefaultValueParserListener
// renders it; has is false for DEFAULT NULL.
func (p *parser) defaultValue(f *colFlags) (*string, bool) {
	sign := ""
	if p.is("-") || p.is("+") {
		sign = p.next().s
		if sign == "+" {
			sign = ""
		}
	}
	if p.done() {
		return nil, false
	}
	t := p.toks[p.i]
	str := func(s string) (*string, bool) { return &s, true }
	switch {
	case t.quoted && (t.q == '\'' || t.q == '"'):
		// DefaultValueParserListener.unquote drops the outer quotes only:
		// 'it''s' is the expression it''s.
		p.i++
		return str(sign + t.raw)
	case t.quoted:
		p.i++
		return nil, true
	case strings.EqualFold(t.s, "NULL"):
		p.i++
		return nil, false
	case t.s == "(":
		p.skipParens()
		return nil, true
	case strings.EqualFold(t.s, "CURRENT_TIMESTAMP") || strings.EqualFold(t.s, "NOW") || strings.EqualFold(t.s, "LOCALTIME") || strings.EqualFold(t.s, "LOCALTIMESTAMP"):
		p.i++
		if p.is("(") {
			p.skipParens()
		}
		if strings.EqualFold(t.s, "CURRENT_TIMESTAMP") || strings.EqualFold(t.s, "NOW") {
			return str("1970-01-01 00:00:00")
		}
		return str(strings.ToUpper(t.s))
	case (t.s == "b" || t.s == "B") && p.i+1 < len(p.toks) && p.toks[p.i+1].q == '\'':
		p.i += 2
		return str(p.toks[p.i-1].s)
	case strings.EqualFold(t.s, "TRUE") || strings.EqualFold(t.s, "FALSE"):
		p.i++
		return str(t.s)
	case len(t.s) > 1 && t.s[0] == '0' && (t.s[1] == 'x' || t.s[1] == 'X'):
		// A hexadecimal literal: DefaultValueParserListener keeps no
		// expression for it.
		p.i++
		return nil, true
	case len(t.s) > 0 && (t.s[0] >= '0' && t.s[0] <= '9' || t.s[0] == '.'):
		p.i++
		v := t.s
		if p.is(".") {
			p.i++
			v += "."
			if !p.done() && !p.toks[p.i].quoted && len(p.toks[p.i].s) > 0 && p.toks[p.i].s[0] >= '0' && p.toks[p.i].s[0] <= '9' {
				v += p.next().s
			}
		}
		return str(sign + v)
	}
	// Another expression (a function call): Debezium handles it as NULL.
	p.i++
	if p.is("(") {
		p.skipParens()
	}
	return nil, true
}

// tableOptions reads table options up to the end or a "," at top level:
// the default charset and the comment.
func (p *parser) tableOptions() (charset string, comment *string) {
	for !p.done() && !p.is(",") {
		switch {
		case p.kw("DEFAULT"):
		case p.kw("CHARACTER", "SET"), p.kw("CHARSET"):
			p.accept("=")
			charset = p.next().s
		case p.kw("COMMENT"):
			p.accept("=")
			s := p.next().s
			comment = &s
		case p.is("("):
			p.skipParens()
		case p.is(")"):
			return
		default:
			p.i++
		}
	}
	return
}

// TableChangeStruct renders m as the io.debezium.connector.schema.Table
// struct of a schema-change event (field order of
// debezium.SchemaChangeValueSchema).
func (m *Model) TableChangeStruct() debezium.Struct {
	cols := make([]any, len(m.Columns))
	for i, c := range m.Columns {
		var length, scale, comment, dflt, enums, charset any
		if c.Length != -1 {
			length = c.Length
		}
		if c.Scale != nil {
			scale = *c.Scale
		}
		if c.Comment != nil {
			comment = *c.Comment
		}
		if c.Default != nil {
			dflt = *c.Default
		}
		if len(c.EnumValues) > 0 {
			ev := make([]any, len(c.EnumValues))
			for k, v := range c.EnumValues {
				ev[k] = v
			}
			enums = ev
		}
		if c.Charset != "" {
			charset = c.Charset
		}
		cols[i] = debezium.Struct{c.Name, c.JDBCType, nil, c.TypeName, c.TypeName, charset, length, scale,
			int32(i + 1), c.Optional, c.AutoIncremented, c.Generated, comment, dflt, enums}
	}
	pk := make([]any, len(m.PrimaryKey))
	for i, n := range m.PrimaryKey {
		pk[i] = n
	}
	var charset, comment any
	if m.DefaultCharset != "" {
		charset = m.DefaultCharset
	}
	if m.Comment != nil {
		comment = *m.Comment
	}
	return debezium.Struct{charset, pk, cols, comment}
}

// ConvertType returns the column type Debezium's value converters give a
// column declared as mc when it differs from what infoType
// (information_schema's COLUMN_TYPE) gives: MariaDB keeps no trace of
// some declaration forms (BOOLEAN is tinyint(1), REAL double, FLOAT4
// float), while Debezium's converters go by the type name its parser read
// (BinlogValueConverters.schemaBuilder, JdbcValueConverters):
//
//   - BOOL, BOOLEAN (jdbc BOOLEAN): a Connect BOOLEAN, non-zero is true.
//   - REAL (jdbc REAL): FLOAT32, though MariaDB stores a DOUBLE.
//   - FLOAT (jdbc FLOAT): FLOAT32 only when the type name is FLOAT, FLOAT
//     UNSIGNED or FLOAT UNSIGNED ZEROFILL without a scale and with a
//     precision of at most 24; FLOAT4, FLOAT SIGNED and FLOAT(M,D) are
//     FLOAT64.
//
// A model read from SHOW CREATE TABLE (the schema snapshot, or a table
// first seen while streaming) has the normalised names, and changes
// nothing.
func (mc ModelColumn) ConvertType(infoType string) (string, bool) {
	base := strings.ToLower(strings.TrimSpace(infoType))
	if i := strings.IndexAny(base, "( "); i >= 0 {
		base = base[:i]
	}
	switch mc.JDBCType {
	case jdbcBoolean:
		if base == "tinyint" {
			return "boolean", true
		}
	case jdbcReal:
		if base == "double" || base == "float" {
			return "real", true
		}
	case jdbcFloat:
		switch strings.ToUpper(mc.TypeName) {
		case "FLOAT", "FLOAT UNSIGNED", "FLOAT UNSIGNED ZEROFILL":
			if mc.Scale == nil && mc.Length <= 24 {
				return "", false
			}
		}
		if base == "float" {
			return "double", true
		}
	}
	return "", false
}
