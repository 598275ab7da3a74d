// Package schemahist knows the definition of each captured table as of the
// binlog position being read, and keeps the history of those definitions
// in a Kafka topic so that a restarted capture decodes old binlog events
// with the schema they were written under.
//
// A definition is read from information_schema when a table is first seen
// and again after each DDL statement that touches it, and is checked
// against every table map event: a row event whose columns do not match
// the definition stops capture rather than being decoded with the wrong
// schema.
package schemahist

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/binlake/binlake/capture/internal/mysqltype"
	"github.com/binlake/binlake/schemas/debezium"
)

// ErrSchemaMismatch reports a row event whose columns differ from the
// table definition capture holds.
var ErrSchemaMismatch = errors.New("schemahist: row event does not match the table definition")

// ErrNoTable reports a table that does not exist (any more).
var ErrNoTable = errors.New("schemahist: table not found")

// ErrInvalidName reports a column or table whose name the Avro converter
// and the registry cannot carry under the configured adjustment (none).
var ErrInvalidName = errors.New("schemahist: column name is not a valid Avro field name")

// ErrNameCollision reports two columns of one table whose field names are
// equal after adjustment.
var ErrNameCollision = errors.New("schemahist: column names collide after adjustment")

// Naming says how the names derived from a table are adjusted, as
// Debezium's schema.name.adjustment.mode (Schema: the Key, Value and
// Envelope record names) and field.name.adjustment.mode (Field: the
// column fields of the key and row structs) do. The zero value is none
// for both (capture's configuration defaults Field to avro, what Debezium
// does with an Avro converter). Topic names are always sanitised.
type Naming struct {
	Schema, Field debezium.NameAdjustment
}

// fieldNames returns the field name of each column with n.Field, or an
// error naming the table, the column and the setting to change when a
// name cannot be carried (mode none) or two names collide.
func (n Naming) fieldNames(db, table string, cols []mysqltype.Column) ([]string, error) {
	const setting = "field-name-adjustment-mode (CAPTURE_FIELD_NAME_ADJUSTMENT_MODE)"
	mode := n.Field
	if mode == "" {
		mode = debezium.AdjustNone
	}
	names := make([]string, len(cols))
	seen := make(map[string]string, len(cols))
	for i, c := range cols {
		name := debezium.AdjustFieldName(mode, c.Name)
		if mode == debezium.AdjustNone && !debezium.ValidAvroName(name) {
			return nil, fmt.Errorf("%w: table %s.%s, column %q: with %s=none the Avro converter cannot carry this name; set it to avro (%q) or avro_unicode (%q), or rename the column",
				ErrInvalidName, db, table, c.Name, setting,
				debezium.AdjustFieldName(debezium.AdjustAvro, c.Name), debezium.AdjustFieldName(debezium.AdjustAvroUnicode, c.Name))
		}
		if other, dup := seen[name]; dup {
			fix := "set it to avro_unicode or rename one of the columns"
			if mode == debezium.AdjustAvroUnicode {
				fix = "rename one of the columns"
			}
			return nil, fmt.Errorf("%w: table %s.%s, columns %q and %q both become field %q with %s=%s; %s",
				ErrNameCollision, db, table, other, c.Name, name, setting, mode, fix)
		}
		seen[name] = c.Name
		names[i] = name
	}
	return names, nil
}

// Definition is a table's structure as information_schema reports it.
type Definition struct {
	DB         string             `json:"db"`
	Table      string             `json:"table"`
	Columns    []mysqltype.Column `json:"columns"`
	PrimaryKey []string           `json:"primary_key,omitempty"`
	Charset    string             `json:"charset,omitempty"`
	// Model is the table as Debezium's DDL parser models it, for
	// schema-change events (nil when not known).
	Model *Model `json:"model,omitempty"`
}

// Table is a definition compiled for conversion: converters and the
// Debezium key, value and envelope schemas.
type Table struct {
	Def      Definition
	ID       debezium.TableID
	Conv     *mysqltype.Table
	KeyIdx   []int            // positions of the key columns in a row
	Key      *debezium.Schema // nil when the table has no primary key
	Value    *debezium.Schema
	Envelope *debezium.Schema
	// Columns and ColumnIdx restrict a row to the included columns
	// (nil: all columns).
	ColumnIdx []int
}

// Compile builds the converters and schemas of a definition, with the
// schema and field names adjusted as naming says. include, if set,
// selects the columns captured (key columns always are); keys is
// message.key.columns (nil: none). It fails, naming the table, the column
// and the setting, when a column name cannot be carried or two field
// names collide, so that such a table stops capture before any of its
// events is written.
//
// Where the definition carries Debezium's table model, the model decides
// what Debezium's parser decides: the key (see [Definition.KeyColumns]),
// the Connect type of columns declared with an alias information_schema
// does not keep (BOOLEAN, REAL, FLOAT4; see [ModelColumn.ConvertType]),
// the column defaults (defaultValueExpression) and which columns are
// optional.
// CheckNames reports, as Compile would, a table whose record name or
// column names cannot be carried with naming, or whose field names
// collide. It needs no table model and converts nothing, so it can run
// before a DDL statement's model is known (capture checks a DDL's tables
// before writing its schema-change event, and every captured table at
// start-up).
func CheckNames(def Definition, prefix string, naming Naming, include func(col string) bool, keys *KeyColumns) error {
	keyNames, err := def.KeyColumns(keys)
	if err != nil {
		return err
	}
	var cols []mysqltype.Column
	for _, c := range def.Columns {
		if include == nil || include(c.Name) || slices.Contains(keyNames, c.Name) {
			cols = append(cols, mysqltype.Column{Name: c.Name})
		}
	}
	if _, err := naming.fieldNames(def.DB, def.Table, cols); err != nil {
		return err
	}
	return checkRecordName(debezium.TableID{Prefix: prefix, DB: def.DB, Table: def.Table, SchemaNames: naming.Schema}, naming)
}

func checkRecordName(id debezium.TableID, naming Naming) error {
	if full := id.SchemaPrefix() + ".Value"; !debezium.ValidAvroFullName(full) {
		return fmt.Errorf("%w: table %s.%s: its record name %s is not a valid Avro name (a part with a dash or starting with a digit, which the registry rejects) with schema-name-adjustment-mode (CAPTURE_SCHEMA_NAME_ADJUSTMENT_MODE)=%s; set it to avro or avro_unicode, or rename the table (or the topic prefix)",
			ErrInvalidName, id.DB, id.Table, full, cmp.Or(naming.Schema, debezium.AdjustNone))
	}
	return nil
}

func Compile(def Definition, prefix string, flavor debezium.Flavor, opts mysqltype.Options, naming Naming, include func(col string) bool, keys *KeyColumns) (*Table, error) {
	keyNames, err := def.KeyColumns(keys)
	if err != nil {
		return nil, err
	}
	var cols []mysqltype.Column
	var idx []int
	for i, c := range def.Columns {
		if include == nil || include(c.Name) || slices.Contains(keyNames, c.Name) {
			cols = append(cols, def.modelled(c))
			idx = append(idx, i)
		}
	}
	if len(idx) == len(def.Columns) {
		idx = nil
	}
	conv, err := mysqltype.NewTable(cols, opts)
	if err != nil {
		return nil, fmt.Errorf("compiling %s.%s: %w", def.DB, def.Table, err)
	}
	names, err := naming.fieldNames(def.DB, def.Table, cols)
	if err != nil {
		return nil, err
	}
	t := &Table{Def: def, ID: debezium.TableID{Prefix: prefix, DB: def.DB, Table: def.Table, SchemaNames: naming.Schema}, Conv: conv, ColumnIdx: idx}
	if err := checkRecordName(t.ID, naming); err != nil {
		return nil, err
	}
	fields := slices.Clone(conv.Fields())
	for i := range fields {
		fields[i].Name = names[i]
	}
	var keyFields []debezium.Field
	for _, k := range keyNames {
		i := slices.IndexFunc(cols, func(c mysqltype.Column) bool { return c.Name == k })
		if i < 0 {
			return nil, fmt.Errorf("compiling %s.%s: key column %s not found", def.DB, def.Table, k)
		}
		t.KeyIdx = append(t.KeyIdx, i)
		keyFields = append(keyFields, fields[i])
	}
	if len(keyFields) > 0 {
		t.Key = debezium.KeySchema(t.ID, keyFields)
	}
	t.Value = debezium.ValueSchema(t.ID, fields)
	t.Envelope = debezium.EnvelopeSchema(t.ID, flavor, t.Value)
	return t, nil
}

// KeyColumns returns the columns that key the table's change events, as
// Debezium chooses them: the columns keys names for the table
// (message.key.columns), else the primary key of the table model (a
// unique key when the table has no primary key, see [Model]), else the
// primary key. A model key naming a column the definition lacks (a
// definition taken from an older table map) falls back to the primary
// key.
func (def Definition) KeyColumns(keys *KeyColumns) ([]string, error) {
	names := make([]string, len(def.Columns))
	for i, c := range def.Columns {
		names[i] = c.Name
	}
	if custom := keys.Columns(def.DB, def.Table, names); len(custom) > 0 {
		for i, c := range custom {
			if slices.Contains(custom[:i], c) {
				return nil, fmt.Errorf("%w: column %s of %s.%s is matched by two entries of message-key-columns (CAPTURE_MESSAGE_KEY_COLUMNS) %q",
					ErrInvalidKeyColumns, c, def.DB, def.Table, keys.String())
			}
		}
		return custom, nil
	}
	if def.Model == nil {
		return def.PrimaryKey, nil
	}
	out := make([]string, 0, len(def.Model.PrimaryKey))
	for _, k := range def.Model.PrimaryKey {
		i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, k) })
		if i < 0 {
			return def.PrimaryKey, nil
		}
		out = append(out, names[i])
	}
	return out, nil
}

// modelled returns column c with what the table model says of it: its
// Connect type where the declaration form decides it, and its default.
func (def Definition) modelled(c mysqltype.Column) mysqltype.Column {
	if def.Model == nil {
		return c
	}
	i := def.Model.column(c.Name)
	if i < 0 || !mc(def.Model.Columns[i]).sameFamily(c.Type) {
		// The model and the definition are at different points of the
		// table's history (a definition read after later DDL, or taken from
		// an older table map): the column's default is the model's once
		// the stream reaches the DDL that made it so. information_schema's
		// own form cannot stand in: MariaDB writes expression defaults
		// there unquoted ("(2 * 3)"), like numbers.
		c.Default, c.DefaultGenerated = nil, false
		return c
	}
	col := def.Model.Columns[i]
	if t, ok := col.ConvertType(c.Type); ok {
		c.Type = t
	}
	infoDefault := c.Default
	c.Default, c.DefaultGenerated = col.columnDefault(), false
	if timestampLiteral(c.Type, infoDefault) && c.Default != nil {
		// A TIMESTAMP literal default is read in the session zone of the
		// DDL that wrote it, which the binlog does not carry; MariaDB
		// stores the instant, and information_schema renders it in
		// capture's session zone (UTC): that is the value rows taking the
		// default get (TestCompatTemporalZones; Debezium reads the DDL's
		// text as UTC, an allowed difference).
		c.Default = infoDefault
	}
	// Optional as in the model: information_schema may already be past a
	// MODIFY ... NOT NULL the stream has not reached.
	c.Nullable = col.Optional
	return c
}

// timestampLiteral reports whether information_schema gives a TIMESTAMP
// column a literal default (a date, not CURRENT_TIMESTAMP or NULL).
func timestampLiteral(infoType string, dflt *string) bool {
	if dflt == nil || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(infoType)), "timestamp") {
		return false
	}
	v := strings.Trim(*dflt, "'")
	return len(v) >= 10 && v[0] >= '0' && v[0] <= '9' && v[4] == '-'
}

type mc ModelColumn

// sameFamily reports whether the model column and information_schema's
// column type are of one type family (a DDL changing the type between
// them makes the model's default meaningless for the other).
func (m mc) sameFamily(infoType string) bool {
	base := strings.ToLower(strings.TrimSpace(infoType))
	if i := strings.IndexAny(base, "( "); i >= 0 {
		base = base[:i]
	}
	family := func(jdbc int32, name string) string {
		switch jdbc {
		case jdbcBoolean, jdbcSmallInt, jdbcInteger, jdbcBigInt, -6:
			if strings.HasPrefix(name, "YEAR") {
				return "year"
			}
			return "int"
		case jdbcReal, jdbcFloat, jdbcDouble:
			return "float"
		case jdbcDecimal, jdbcNumeric:
			return "decimal"
		case jdbcBit:
			return "bit"
		case jdbcChar, jdbcVarChar, jdbcNChar, jdbcNVarChar, jdbcLongVarChar, jdbcClob, jdbcNClob, jdbcLongNVarChar:
			if strings.HasPrefix(name, "ENUM") || strings.HasPrefix(name, "SET") {
				return strings.ToLower(name)
			}
			return "string"
		case jdbcBinary, jdbcVarBinary, jdbcBlob:
			return "binary"
		case jdbcDate:
			return "date"
		case jdbcTime:
			return "time"
		case jdbcTimestamp:
			return "datetime"
		case jdbcTimestampTZ:
			return "timestamp"
		}
		return "other"
	}
	var info string
	switch base {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		info = "int"
	case "year":
		info = "year"
	case "float", "double", "real":
		info = "float"
	case "decimal", "numeric":
		info = "decimal"
	case "bit":
		info = "bit"
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		info = "string"
	case "enum", "set":
		info = base
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		info = "binary"
	case "date", "time", "datetime", "timestamp":
		info = base
	default:
		info = "other"
	}
	return family(m.JDBCType, strings.ToUpper(m.TypeName)) == info
}

// columnDefault renders the model's defaultValueExpression as a
// mysqltype.Column default (information_schema's quoted form), so that
// the Connect default is what Debezium converts: the expression its
// parser read from the DDL, not the server's COLUMN_DEFAULT. They differ
// for expression defaults, which Debezium has as none (MariaDB reports
// "(1 + 1)" or "lcase('AB')"), for CURRENT_TIMESTAMP and NOW(), which
// Debezium has as 1970-01-01 00:00:00, for TRUE and FALSE on numeric
// columns (1 and 0, BinlogDefaultValueConverter), and for hexadecimal
// literals, which its parser drops.
func (mc ModelColumn) columnDefault() *string {
	if mc.Default == nil {
		return nil
	}
	v := *mc.Default
	var out string
	switch {
	case mc.JDBCType == jdbcBit:
		out = "b'" + v + "'"
	case mc.JDBCType == jdbcTimestampTZ && (v == "1970-01-01 00:00:00" || v == "0" || strings.HasPrefix(v, "0000-00-00")):
		// BinlogDefaultValueConverter.convertToTimestamp: the epoch (what
		// CURRENT_TIMESTAMP became) or a zero timestamp is no default for
		// a nullable column, the epoch for a NOT NULL one.
		if mc.Optional {
			return nil
		}
		out = "current_timestamp()" // mysqltype's epoch default of a TIMESTAMP
	case !typeUsesCharset(mc.JDBCType) && strings.EqualFold(v, "true"):
		out = "1"
	case !typeUsesCharset(mc.JDBCType) && strings.EqualFold(v, "false"):
		out = "0"
	default:
		// v is a literal's text as written between its quotes (doubled
		// quotes and backslash escapes included), or a number: quoting it
		// again gives information_schema's form, which mysqltype unquotes
		// into the value MariaDB stores.
		out = "'" + v + "'"
	}
	return &out
}

// Matches checks a table map event's column names against the definition.
func (t *Table) Matches(names []string) error {
	if len(names) == 0 {
		return nil // no metadata: only the count can be checked, by the caller
	}
	if len(names) != len(t.Def.Columns) {
		return fmt.Errorf("%w: %s.%s has %d columns in the binlog, %d in the definition",
			ErrSchemaMismatch, t.Def.DB, t.Def.Table, len(names), len(t.Def.Columns))
	}
	for i, n := range names {
		if !strings.EqualFold(n, t.Def.Columns[i].Name) {
			return fmt.Errorf("%w: %s.%s column %d is %q in the binlog, %q in the definition",
				ErrSchemaMismatch, t.Def.DB, t.Def.Table, i+1, n, t.Def.Columns[i].Name)
		}
	}
	return nil
}

var jsonCheck = regexp.MustCompile("(?i)json_valid\\(`?([^`)]+)`?\\)")

// Load reads a table's definition from information_schema.
func Load(ctx context.Context, db *sql.DB, schema, table string) (Definition, error) {
	def := Definition{DB: schema, Table: table}
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, EXTRA,
		COLUMN_COMMENT, COALESCE(CHARACTER_SET_NAME, '')
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, schema, table)
	if err != nil {
		return def, fmt.Errorf("reading columns of %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var c mysqltype.Column
		var nullable, extra string
		var dflt sql.NullString
		if err := rows.Scan(&c.Name, &c.Type, &nullable, &dflt, &extra, &c.Comment, &c.Charset); err != nil {
			return def, fmt.Errorf("reading columns of %s.%s: %w", schema, table, err)
		}
		c.Nullable = nullable == "YES"
		if dflt.Valid {
			d := dflt.String
			c.Default = &d
		}
		c.DefaultGenerated = strings.Contains(strings.ToUpper(extra), "DEFAULT_GENERATED")
		def.Columns = append(def.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return def, fmt.Errorf("reading columns of %s.%s: %w", schema, table, err)
	}
	if len(def.Columns) == 0 {
		return def, fmt.Errorf("%w: %s.%s", ErrNoTable, schema, table)
	}

	pk, err := db.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION`, schema, table)
	if err != nil {
		return def, fmt.Errorf("reading the primary key of %s.%s: %w", schema, table, err)
	}
	defer pk.Close()
	for pk.Next() {
		var n string
		if err := pk.Scan(&n); err != nil {
			return def, err
		}
		def.PrimaryKey = append(def.PrimaryKey, n)
	}
	if err := pk.Err(); err != nil {
		return def, err
	}

	// MariaDB stores JSON as LONGTEXT with a json_valid() check constraint.
	checks, err := db.QueryContext(ctx, `SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS
		WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?`, schema, table)
	if err == nil {
		defer checks.Close()
		for checks.Next() {
			var clause string
			if err := checks.Scan(&clause); err != nil {
				return def, err
			}
			for _, m := range jsonCheck.FindAllStringSubmatch(clause, -1) {
				for i := range def.Columns {
					if strings.EqualFold(def.Columns[i].Name, m[1]) && strings.Contains(strings.ToLower(def.Columns[i].Type), "text") {
						def.Columns[i].Type = "json"
					}
				}
			}
		}
		if err := checks.Err(); err != nil {
			return def, err
		}
	}
	return def, nil
}

// ListTables lists the base tables of the given databases.
func ListTables(ctx context.Context, db *sql.DB, include func(db, table string) bool) ([][2]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN ('mysql','information_schema','performance_schema','sys')
		ORDER BY TABLE_SCHEMA, TABLE_NAME`)
	if err != nil {
		return nil, fmt.Errorf("listing tables: %w", err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var s, t string
		if err := rows.Scan(&s, &t); err != nil {
			return nil, err
		}
		if include(s, t) {
			out = append(out, [2]string{s, t})
		}
	}
	return out, rows.Err()
}

// ShowCreateTable returns SHOW CREATE TABLE's statement for a table.
func ShowCreateTable(ctx context.Context, db *sql.DB, schema, table string) (string, error) {
	var name, stmt string
	q := "SHOW CREATE TABLE `" + strings.ReplaceAll(schema, "`", "``") + "`.`" + strings.ReplaceAll(table, "`", "``") + "`"
	if err := db.QueryRowContext(ctx, q).Scan(&name, &stmt); err != nil {
		return "", fmt.Errorf("reading the definition of %s.%s: %w", schema, table, err)
	}
	return stmt, nil
}

// DatabaseCharset returns a database's default character set and
// collation (information_schema.SCHEMATA).
func DatabaseCharset(ctx context.Context, db *sql.DB, schema string) (charset, collation string, err error) {
	err = db.QueryRowContext(ctx, `SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME
		FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?`, schema).Scan(&charset, &collation)
	if err != nil {
		return "", "", fmt.Errorf("reading the character set of database %s: %w", schema, err)
	}
	return charset, collation, nil
}

// ServerCharset returns character_set_server and collation_server.
func ServerCharset(ctx context.Context, db *sql.DB) (charset, collation string, err error) {
	err = db.QueryRowContext(ctx, `SELECT @@character_set_server, @@collation_server`).Scan(&charset, &collation)
	if err != nil {
		return "", "", fmt.Errorf("reading the server character set: %w", err)
	}
	return charset, collation, nil
}
