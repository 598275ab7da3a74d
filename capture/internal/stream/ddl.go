package stream

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/schemas/debezium"
)

// What a DDL statement does to the loop: the names of the tables it
// touches are checked before anything of it is produced, its
// schema-change events are written (meta.go's writer) with the table
// models brought up to date, and then the definitions of its tables are
// read again and compiled, and recorded in the schema history.

// query handles a statement outside row transactions: DDL and TRUNCATE.
// The names of the tables a DDL changes are checked before its
// schema-change event is written, so that a table capture cannot carry
// (a column name Avro rejects) stops capture before anything of the DDL
// is produced; their definitions are compiled after it, with the table
// model the event brought up to date.
func (s *Stream) query(ctx context.Context, ev binlog.Event) error {
	ddl := schemahist.ParseDDL(ev.Schema, ev.Query)
	tableDDL := false
	var defs map[string]*schemahist.Definition // the DDL's captured tables, nil: gone
	switch ddl.Kind {
	case schemahist.DDLCreateTable, schemahist.DDLAlterTable, schemahist.DDLRenameTable, schemahist.DDLDropTable:
		// Names first, so that a table capture cannot carry stops it
		// before anything of the DDL is produced; the tables are compiled
		// after the schema-change event, which brings their table model
		// (key, alias types, defaults) up to date.
		tableDDL = true
		var err error
		if defs, err = s.checkNames(ctx, ddl); err != nil {
			return err
		}
	}
	if err := s.ddlEvents(ctx, ev, ddl); err != nil {
		return err
	}
	if tableDDL {
		if err := s.reload(ctx, ddl, defs); err != nil {
			return fmt.Errorf("schema change at binlog %s:%d (gtid %s): %w%s", ev.Position.File, ev.Position.Pos, ev.GTID, err, unpublishableHint(err))
		}
		return nil
	}
	if ddl.Kind != schemahist.DDLTruncate {
		return nil
	}
	ref := ddl.Tables[0]
	s.snap.trackTable(ref.DB, ref.Table)
	if !s.cfg.Filter.Table(ref.DB, ref.Table) || s.cfg.SkipTruncate {
		return nil
	}
	t, err := s.lookup(ctx, ref.DB, ref.Table, nil)
	if errors.Is(err, schemahist.ErrNoTable) {
		// A table capture never knew and that is gone by the time the
		// binlog is read (an ETL staging table created, truncated and
		// dropped while capture lagged): no definition to encode its
		// event with, and no row of it can be on its topic. Stopping
		// here would stop at the same event after every restart.
		s.log.Warn("truncate of a table that no longer exists and whose definition capture does not know: skipped",
			"table", tableKey(ref.DB, ref.Table), "binlog_file", ev.Position.File, "binlog_pos", ev.Position.Pos)
		return nil
	}
	if err != nil {
		return err
	}
	// source.row is Debezium's value (the last row of the previous rows
	// event, of any table), kept so that test/compat's event-by-event
	// comparison with Debezium holds; it means nothing for a truncate, and
	// ingest orders a truncate at its own event (row 0) whatever it says.
	src := s.source(ev, ref.DB, ref.Table, int(s.lastRow))
	now := s.cfg.Now()
	env := debezium.Envelope{Source: src, Op: debezium.OpTruncate, TsMs: now.UnixMilli(), TsUs: now.UnixMicro(), TsNs: now.UnixNano(),
		Transaction: s.meta.txEvent(t, debezium.OpTruncate)}
	val, err := env.AppendAvro(frame(t.valueFrame), t.Envelope)
	if err == nil {
		val, err = t.valueFrame.Seal(val)
	}
	if err != nil {
		return err
	}
	s.pub.Produce(ctx, &kgo.Record{Topic: t.topic, Value: val, Headers: s.contextHeaders})
	s.txnRecords++
	s.cfg.Metrics.event(t, debezium.OpTruncate, len(val))
	return nil
}

// reload reads and compiles the definitions of the tables a DDL statement
// creates, alters, renames or drops.
// defs holds the definitions checkNames read (nil for a table that is
// gone).
func (s *Stream) reload(ctx context.Context, ddl schemahist.DDL, defs map[string]*schemahist.Definition) error {
	if err := s.snapshotRenamedIn(ddl); err != nil {
		return err
	}
	for _, ref := range ddl.Tables {
		s.snap.trackTable(ref.DB, ref.Table)
		if !s.cfg.Filter.Table(ref.DB, ref.Table) {
			continue
		}
		key := tableKey(ref.DB, ref.Table)
		d, ok := defs[key]
		if !ok {
			return fmt.Errorf("reloading %s: the definition was not read before the schema change", key)
		}
		if d == nil {
			if _, known := s.tables[key]; known {
				delete(s.tables, key)
				if err := s.writeHistory(ctx, schemahist.HistoryRecord{Definition: schemahist.Definition{DB: ref.DB, Table: ref.Table}, Dropped: true}); err != nil {
					return err
				}
			}
			continue
		}
		def := *d
		t, err := s.compile(def)
		if err != nil {
			return err
		}
		s.tables[key] = t
		if err := s.recordHistory(ctx, def); err != nil {
			return err
		}
		s.log.Info("table definition changed", "table", key, "columns", len(def.Columns))
	}
	return nil
}

// Check loads the definitions of tables (db, table pairs) and checks their names
// without writing anything, so that a table capture cannot carry (see
// schemahist.CheckNames) stops it at start-up.
func (s *Stream) Check(ctx context.Context, tables [][2]string) error {
	for _, ref := range tables {
		def, err := s.defs.Load(ctx, ref[0], ref[1])
		if errors.Is(err, schemahist.ErrNoTable) {
			continue // dropped since it was listed
		}
		if err != nil {
			return err
		}
		if err := s.checkDef(def); err != nil {
			return err
		}
	}
	return nil
}

// checkNames reads the definitions of the captured tables a DDL statement
// creates, alters, renames or drops, and checks their names
// (schemahist.CheckNames). It returns them by db.table (nil: the table is
// gone) for reload, so that each is read once.
func (s *Stream) checkNames(ctx context.Context, ddl schemahist.DDL) (map[string]*schemahist.Definition, error) {
	defs := map[string]*schemahist.Definition{}
	for _, ref := range ddl.Tables {
		if !s.cfg.Filter.Table(ref.DB, ref.Table) {
			continue
		}
		key := tableKey(ref.DB, ref.Table)
		def, err := s.defs.Load(ctx, ref.DB, ref.Table)
		if errors.Is(err, schemahist.ErrNoTable) {
			defs[key] = nil
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := s.checkDef(def); err != nil {
			return nil, err
		}
		defs[key] = &def
	}
	return defs, nil
}

func (s *Stream) checkDef(def schemahist.Definition) error {
	var include func(string) bool
	if s.cfg.Filter.HasColumnLists() {
		include = func(col string) bool { return s.cfg.Filter.Column(def.DB, def.Table, col) }
	}
	return schemahist.CheckNames(def, s.cfg.Prefix, s.cfg.Naming, include, s.cfg.KeyColumns)
}

// snapshotRenamedIn queues an incremental snapshot of each table a rename
// moves into the include lists: its rows were never captured, and no
// change event will bring them. The queued snapshot is stored with the
// position in the transaction of this statement, so it runs once, after a
// crash too.
func (s *Stream) snapshotRenamedIn(ddl schemahist.DDL) error {
	if ddl.Kind != schemahist.DDLRenameTable || s.incr == nil {
		return nil
	}
	for i := 0; i+1 < len(ddl.Tables); i += 2 {
		from, to := ddl.Tables[i], ddl.Tables[i+1]
		if s.cfg.Filter.Table(from.DB, from.Table) || !s.cfg.Filter.Table(to.DB, to.Table) {
			continue
		}
		s.log.Info("table renamed into the include lists, snapshotting it", "table", tableKey(to.DB, to.Table), "from", tableKey(from.DB, from.Table))
		s.incr.add([]snapshot.TableID{{DB: to.DB, Table: to.Table}})
		if err := s.markDirty(); err != nil {
			return err
		}
	}
	return nil
}

// DDLSource reads what schema-change events need from the source. The
// Definitions given to New may implement it; without it, schema-change
// events are written without the table structure of tables first seen
// while streaming.
type DDLSource interface {
	// ShowCreateTable returns SHOW CREATE TABLE's statement.
	ShowCreateTable(ctx context.Context, db, table string) (string, error)
	// DatabaseCharset returns a database's default character set and
	// collation.
	DatabaseCharset(ctx context.Context, db string) (charset, collation string, err error)
}

// SchemaSnapshot describes the schema snapshot a new capture writes
// before anything else.
type SchemaSnapshot struct {
	Position binlog.Position // where streaming starts (source file and pos)
	// ServerCharset and ServerCollation are character_set_server and
	// collation_server.
	ServerCharset, ServerCollation string
	// Databases are the databases of the captured tables, Tables those tables
	// ([db, table]), both sorted.
	Databases []string
	Tables    [][2]string
	// DataFollows is set when a data snapshot follows: its last row, not
	// the last schema event, then carries snapshot=last.
	DataFollows bool
}

func tableChange(typ string, db, table string, m *schemahist.Model) debezium.Struct {
	var t any
	if m != nil {
		t = m.TableChangeStruct()
	}
	return debezium.Struct{typ, `"` + db + `"."` + table + `"`, t}
}

// ddlSource returns the DDLSource, or nil.
func (s *Stream) ddlSource() DDLSource {
	d, _ := s.defs.(DDLSource)
	return d
}

func (s *Stream) dbCharset(ctx context.Context, db string) string {
	if cs, ok := s.charsets[db]; ok {
		return cs
	}
	src := s.ddlSource()
	if src == nil {
		return ""
	}
	cs, _, err := src.DatabaseCharset(ctx, db)
	if err != nil {
		return ""
	}
	s.charsets[db] = cs
	return cs
}

// model returns the table model of db.table, reading SHOW CREATE TABLE
// when none is known.
func (s *Stream) model(ctx context.Context, db, table string) *schemahist.Model {
	key := tableKey(db, table)
	if m := s.models[key]; m != nil {
		return m
	}
	src := s.ddlSource()
	if src == nil {
		return nil
	}
	stmt, err := src.ShowCreateTable(ctx, db, table)
	if err != nil {
		return nil
	}
	_, m, err := schemahist.ParseCreateTable(stmt, db, s.dbCharset(ctx, db), nil)
	if err != nil {
		s.log.Warn("table structure of schema-change events not understood", "table", key, "error", err)
		return nil
	}
	s.models[key] = m
	return m
}

// ddlEvents writes the schema-change events of a DDL statement and keeps
// the table models up to date. It runs before the definitions are
// reloaded from information_schema.
func (s *Stream) ddlEvents(ctx context.Context, ev binlog.Event, ddl schemahist.DDL) error {
	src := s.source(ev, "", "", int(s.lastRow))
	switch ddl.Kind {
	case schemahist.DDLCreateDatabase, schemahist.DDLDropDatabase:
		if !s.cfg.Filter.Database(ddl.DB) {
			return nil
		}
		if ddl.Kind == schemahist.DDLDropDatabase {
			delete(s.charsets, ddl.DB)
		}
		src.DB = ddl.DB
		return s.meta.schemaChange(ctx, src, ddl.DB, ev.Query, nil)
	case schemahist.DDLCreateTable:
		ref := ddl.Tables[0]
		if !s.cfg.Filter.Table(ref.DB, ref.Table) {
			return nil
		}
		_, m, err := schemahist.ParseCreateTable(ev.Query, ev.Schema, s.dbCharset(ctx, ref.DB), func(r schemahist.TableRef) *schemahist.Model {
			return s.model(ctx, r.DB, r.Table)
		})
		if err != nil {
			s.log.Warn("table structure of a schema-change event read from the server", "table", tableKey(ref.DB, ref.Table), "error", err)
			delete(s.models, tableKey(ref.DB, ref.Table))
			m = s.model(ctx, ref.DB, ref.Table)
		}
		s.models[tableKey(ref.DB, ref.Table)] = m
		src.DB, src.Table = ref.DB, ref.Table
		return s.meta.schemaChange(ctx, src, ref.DB, ev.Query, []any{tableChange("CREATE", ref.DB, ref.Table, m)})
	case schemahist.DDLAlterTable:
		ref := ddl.Tables[0]
		if !s.cfg.Filter.Table(ref.DB, ref.Table) {
			return nil
		}
		key := tableKey(ref.DB, ref.Table)
		var m *schemahist.Model
		if old := s.models[key]; old != nil {
			var err error
			if m, _, err = old.Alter(ev.Query, ev.Schema); err != nil {
				s.log.Warn("table structure of a schema-change event read from the server", "table", key, "error", err)
				m = nil
			}
		}
		if m == nil {
			delete(s.models, key)
			m = s.model(ctx, ref.DB, ref.Table)
		}
		s.models[key] = m
		src.DB, src.Table = ref.DB, ref.Table
		return s.meta.schemaChange(ctx, src, ref.DB, ev.Query, []any{tableChange("ALTER", ref.DB, ref.Table, m)})
	case schemahist.DDLCreateIndex, schemahist.DDLDropIndex:
		// Debezium 3.5 with schema.history.internal.store.only.captured.
		// tables.ddl (how capture writes schema changes) writes no event for
		// an index statement: its parser reports none, or for CREATE UNIQUE
		// INDEX a table index event, which DdlChanges.anyMatch does not count
		// as a change of a captured table. CREATE UNIQUE INDEX still gives a
		// table without a key one in its table model
		// (CreateUniqueIndexParserListener), which keys the table's events
		// from the next DDL statement that rebuilds its schema: so here.
		ref := ddl.Tables[0]
		key := tableKey(ref.DB, ref.Table)
		if m := s.models[key]; m != nil && ddl.Unique && s.cfg.Filter.Table(ref.DB, ref.Table) {
			if altered, ok := m.CreateUniqueIndex(ev.Query, ev.Schema); ok {
				s.models[key] = altered
			}
		}
		return nil
	case schemahist.DDLRenameTable:
		// Pairs of old, new. Debezium writes an ALTER of the new name with
		// the renamed table, one event per pair. A RENAME TABLE of several
		// pairs gets, as in Debezium's RenameTableParserListener, each
		// pair's clause as its ddl ("RENAME TABLE a TO b"), and as
		// source.table the statement's captured new names in the order of
		// Debezium's HashSet of them (javaSetOrder).
		clauses := renameClauses(ev.Query, len(ddl.Tables)/2)
		var newNames []string
		for i := 1; i < len(ddl.Tables); i += 2 {
			if to := ddl.Tables[i]; s.cfg.Filter.Table(to.DB, to.Table) {
				newNames = append(newNames, to.DB+"."+to.Table)
			}
		}
		for i := 0; i+1 < len(ddl.Tables); i += 2 {
			from, to := ddl.Tables[i], ddl.Tables[i+1]
			fromKey := tableKey(from.DB, from.Table)
			m := s.models[fromKey]
			if m != nil && len(ddl.Tables) == 2 && strings.HasPrefix(strings.ToUpper(strings.TrimSpace(ev.Query)), "ALTER") {
				if altered, _, err := m.Alter(ev.Query, ev.Schema); err == nil {
					m = altered
				}
			}
			delete(s.models, fromKey)
			if !s.cfg.Filter.Table(to.DB, to.Table) {
				continue
			}
			if m == nil {
				m = s.model(ctx, to.DB, to.Table)
			}
			s.models[tableKey(to.DB, to.Table)] = m
			src.DB, src.Table = to.DB, to.Table
			text := ev.Query
			if clauses != nil {
				text = "RENAME TABLE " + clauses[i/2]
				src.Table = javaSetOrder(newNames)
			}
			if err := s.meta.schemaChange(ctx, src, to.DB, text, []any{tableChange("ALTER", to.DB, to.Table, m)}); err != nil {
				return err
			}
		}
	case schemahist.DDLDropTable:
		// One event per table, its DDL rewritten as Debezium's
		// DropTableParserListener does: the statement's words before the
		// table list, then the quoted qualified name.
		prefix := dropPrefix(ev.Query)
		var names []string
		for _, ref := range ddl.Tables {
			if s.cfg.Filter.Table(ref.DB, ref.Table) {
				names = append(names, ref.Table)
			}
		}
		for _, ref := range ddl.Tables {
			delete(s.models, tableKey(ref.DB, ref.Table))
			if !s.cfg.Filter.Table(ref.DB, ref.Table) {
				continue
			}
			src.DB, src.Table = ref.DB, strings.Join(names, ",")
			stmt := prefix + "`" + ref.DB + "`.`" + ref.Table + "`"
			if err := s.meta.schemaChange(ctx, src, ref.DB, stmt, []any{tableChange("DROP", ref.DB, ref.Table, nil)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropPrefix returns "DROP TABLE " or "DROP TABLE IF EXISTS " as written.
func dropPrefix(q string) string {
	fields := strings.Fields(q)
	n := 0
	for _, w := range []string{"DROP", "TEMPORARY", "TABLE", "IF", "EXISTS"} {
		if n < len(fields) && strings.EqualFold(fields[n], w) {
			n++
		}
	}
	if n < 2 {
		return "DROP TABLE "
	}
	return strings.Join(fields[:n], " ") + " "
}

// WriteSchemaSnapshot writes the schema snapshot of a new capture into
// the open Kafka transaction (the one storing its start position), and
// records the table models in the schema history.
func (s *Stream) WriteSchemaSnapshot(ctx context.Context, snap SchemaSnapshot) error {
	if !s.cfg.SchemaChanges {
		return nil
	}
	src := s.ddlSource()
	if src == nil {
		return errors.New("stream: schema snapshot needs a DDLSource")
	}
	type event struct {
		db, table, ddl string
		changes        []any
	}
	events := []event{{ddl: "SET character_set_server=" + snap.ServerCharset + ", collation_server=" + snap.ServerCollation}}
	for _, t := range snap.Tables {
		events = append(events, event{db: t[0], table: t[1], ddl: "DROP TABLE IF EXISTS `" + t[0] + "`.`" + t[1] + "`",
			changes: []any{tableChange("DROP", t[0], t[1], nil)}})
	}
	for _, db := range snap.Databases {
		cs, coll, err := src.DatabaseCharset(ctx, db)
		if err != nil {
			return err
		}
		s.charsets[db] = cs
		events = append(events,
			event{db: db, ddl: "DROP DATABASE IF EXISTS `" + db + "`"},
			event{db: db, ddl: "CREATE DATABASE `" + db + "` CHARSET " + cs + " COLLATE " + coll},
			event{db: db, ddl: "USE `" + db + "`"})
		for _, t := range snap.Tables {
			if t[0] != db {
				continue
			}
			stmt, err := src.ShowCreateTable(ctx, t[0], t[1])
			if err != nil {
				return err
			}
			_, m, err := schemahist.ParseCreateTable(stmt, db, cs, nil)
			if err != nil {
				return fmt.Errorf("reading the structure of %s.%s: %w", t[0], t[1], err)
			}
			s.models[tableKey(t[0], t[1])] = m
			events = append(events, event{db: db, table: t[1], ddl: stmt, changes: []any{tableChange("CREATE", t[0], t[1], m)}})
		}
	}
	for i, e := range events {
		now := s.cfg.Now()
		marker := debezium.SnapshotTrue
		if i == len(events)-1 && !snap.DataFollows {
			marker = debezium.SnapshotLast
		}
		source := debezium.Source{
			Version: s.cfg.Version, Connector: s.cfg.Flavor, Name: s.cfg.Prefix,
			TsMs: now.UnixMilli(), TsUs: now.UnixMicro(), TsNs: now.UnixNano(), Snapshot: marker,
			DB: e.db, Table: e.table, File: snap.Position.File, Pos: int64(snap.Position.Pos),
		}
		if err := s.meta.schemaChange(ctx, source, e.db, e.ddl, e.changes); err != nil {
			return err
		}
	}
	for _, t := range snap.Tables {
		def, err := s.defs.Load(ctx, t[0], t[1])
		if err != nil {
			return err
		}
		if err := s.recordHistory(ctx, def); err != nil {
			return err
		}
	}
	return nil
}

// renameClauses splits a RENAME TABLE statement of n > 1 pairs into its
// "a TO b" clauses as written (commas inside quotes do not split). It
// returns nil for one pair, for ALTER TABLE … RENAME, and when the
// statement does not split into n clauses.
func renameClauses(query string, n int) []string {
	if n < 2 {
		return nil
	}
	q := strings.TrimSpace(query)
	upper := strings.ToUpper(q)
	var rest string
	switch {
	case strings.HasPrefix(upper, "RENAME TABLES "):
		rest = q[len("RENAME TABLES "):]
	case strings.HasPrefix(upper, "RENAME TABLE "):
		rest = q[len("RENAME TABLE "):]
	default:
		return nil
	}
	var out []string
	var quote byte
	start := 0
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '`' || c == '"' || c == '\'':
			quote = c
		case c == ',':
			out = append(out, strings.TrimSpace(rest[start:i]))
			start = i + 1
		}
	}
	out = append(out, strings.TrimSpace(rest[start:]))
	if len(out) != n {
		return nil
	}
	return out
}

// javaSetOrder joins the table names of "db.table" ids as Debezium's
// source block does for a statement that changes several tables: the
// tables of a java.util.HashSet of TableIds (whose hash is that of the
// "db.table" string), in its iteration order — buckets in ascending
// order of the spread hash, insertion order within a bucket.
func javaSetOrder(ids []string) string {
	capacity := 16
	for float64(len(ids)) > 0.75*float64(capacity) {
		capacity *= 2
	}
	type entry struct {
		bucket, seq int
		table       string
	}
	var es []entry
	seen := map[string]bool{}
	for i, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		var h uint32
		for _, u := range utf16.Encode([]rune(id)) {
			h = 31*h + uint32(u)
		}
		h ^= h >> 16
		_, tbl, _ := strings.Cut(id, ".")
		es = append(es, entry{int(h & uint32(capacity-1)), i, tbl})
	}
	sort.SliceStable(es, func(a, b int) bool { return es[a].bucket < es[b].bucket })
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.table
	}
	return strings.Join(names, ",")
}
