package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/schemas/debezium"
)

// The topics beside the change topics, as Debezium writes them:
//
//   - schema changes on <prefix> (include.schema.changes): one event per
//     DDL statement touching a captured table or database, with the table
//     structure after the change (schemahist.Model), and at the start of a
//     new capture the schema snapshot Debezium writes (SET, DROP TABLE,
//     DROP/CREATE DATABASE, USE, CREATE TABLE). Capture behaves as Debezium
//     with schema.history.internal.store.only.captured.tables.ddl=true and
//     ...captured.databases.ddl=true: other databases' DDL is not written.
//   - transaction metadata on <prefix>.transaction
//     (provide.transaction.metadata): BEGIN at every binlog transaction's
//     GTID event, END at its commit (DDL and TRUNCATE have none, as in
//     Debezium), and the envelope's transaction block.
//   - heartbeats on <heartbeat prefix>.<prefix> (heartbeat.interval.ms).
//
// All of them go into the Kafka transaction of the binlog transaction they
// belong to, so exactly once holds for them as for change events.

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

type metaIDs struct {
	ready        bool
	key, value   int
	topic        string
	keyS, valueS *debezium.Schema
}

// txState is Debezium's TransactionContext: the transaction in progress
// and its per-table event counts.
type txState struct {
	open   bool
	id     string
	total  int64
	order  []string // data collections in first-seen order
	counts map[string]int64
}

func (s *Stream) metaTopic(ctx context.Context, m *metaIDs, topic string, key, value *debezium.Schema) error {
	if m.ready {
		return nil
	}
	ks, err := debezium.AvroSchema(key)
	if err != nil {
		return err
	}
	vs, err := debezium.AvroSchema(value)
	if err != nil {
		return err
	}
	if m.key, err = s.reg.Register(ctx, topic+"-key", ks); err != nil {
		return fmt.Errorf("registering the key schema of %s: %w", topic, err)
	}
	if m.value, err = s.reg.Register(ctx, topic+"-value", vs); err != nil {
		return fmt.Errorf("registering the value schema of %s: %w", topic, err)
	}
	if err := s.pub.EnsureTopic(ctx, topic, nil, 0); err != nil {
		return err
	}
	m.topic, m.keyS, m.valueS, m.ready = topic, key, value, true
	return nil
}

// produceMeta encodes and produces one record of a metadata topic.
func (s *Stream) produceMeta(ctx context.Context, m *metaIDs, key, value debezium.Struct, headers []kgo.RecordHeader) error {
	k, err := debezium.AppendAvro(s.frame(m.key), m.keyS, key)
	if err != nil {
		return fmt.Errorf("encoding a key of %s: %w", m.topic, err)
	}
	v, err := debezium.AppendAvro(s.frame(m.value), m.valueS, value)
	if err != nil {
		return fmt.Errorf("encoding a record of %s: %w", m.topic, err)
	}
	if err := s.begin(); err != nil {
		return err
	}
	s.pub.Produce(ctx, &kgo.Record{Topic: m.topic, Key: k, Value: v, Headers: headers})
	s.txnRecords++
	return nil
}

// schemaChange writes one schema-change event, if they are on
// (ddlEvents keeps the table models, which key change events, either
// way).
func (s *Stream) schemaChange(ctx context.Context, src debezium.Source, dbName, ddl string, changes []any) error {
	if !s.cfg.SchemaChanges {
		return nil
	}
	if err := s.metaTopic(ctx, &s.schemaIDs, s.cfg.Prefix, debezium.SchemaChangeKeySchema(s.cfg.Flavor), debezium.SchemaChangeValueSchema(s.cfg.Flavor)); err != nil {
		return err
	}
	if changes == nil {
		changes = []any{}
	}
	now := s.cfg.Now()
	value := debezium.Struct{src.Struct(), now.UnixMilli(), dbName, nil, ddl, changes}
	return s.produceMeta(ctx, &s.schemaIDs, debezium.Struct{dbName}, value, s.contextHeaders)
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
		return s.schemaChange(ctx, src, ddl.DB, ev.Query, nil)
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
		return s.schemaChange(ctx, src, ref.DB, ev.Query, []any{tableChange("CREATE", ref.DB, ref.Table, m)})
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
		return s.schemaChange(ctx, src, ref.DB, ev.Query, []any{tableChange("ALTER", ref.DB, ref.Table, m)})
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
			if err := s.schemaChange(ctx, src, to.DB, text, []any{tableChange("ALTER", to.DB, to.Table, m)}); err != nil {
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
			if err := s.schemaChange(ctx, src, ref.DB, stmt, []any{tableChange("DROP", ref.DB, ref.Table, nil)}); err != nil {
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
		if err := s.schemaChange(ctx, source, e.db, e.ddl, e.changes); err != nil {
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

// txBegin starts a transaction as Debezium's TransactionMonitor does and
// writes its BEGIN record.
func (s *Stream) txBegin(ctx context.Context, ev binlog.Event) error {
	if !s.cfg.TxMetadata {
		return nil
	}
	id := ev.GTID
	if id == "" {
		id = fmt.Sprintf("file=%s,pos=%d", ev.File, ev.Pos)
	}
	if s.tx.open && s.tx.id == id {
		return nil
	}
	s.tx = txState{open: true, id: id, counts: map[string]int64{}}
	if err := s.txTopic(ctx); err != nil {
		return err
	}
	value := debezium.Struct{"BEGIN", id, nil, nil, int64(ev.BeginTimestamp) * 1000}
	return s.produceMeta(ctx, &s.txIDs, debezium.Struct{id}, value, nil)
}

// txEnd writes the END record of the transaction in progress.
func (s *Stream) txEnd(ctx context.Context, ev binlog.Event) error {
	if !s.cfg.TxMetadata || !s.tx.open {
		return nil
	}
	if err := s.txTopic(ctx); err != nil {
		return err
	}
	colls := make([]any, 0, len(s.tx.order))
	for _, dc := range javaHashMapOrder(s.tx.order) {
		colls = append(colls, debezium.Struct{dc, s.tx.counts[dc]})
	}
	value := debezium.Struct{"END", s.tx.id, s.tx.total, colls, int64(ev.PrevTimestamp) * 1000}
	id := s.tx.id
	s.tx = txState{}
	return s.produceMeta(ctx, &s.txIDs, debezium.Struct{id}, value, nil)
}

func (s *Stream) txTopic(ctx context.Context) error {
	return s.metaTopic(ctx, &s.txIDs, s.cfg.Prefix+".transaction", debezium.TransactionKeySchema(), debezium.TransactionValueSchema())
}

// txEvent counts a change event of t and returns its envelope block
// (nil when transaction metadata is off). A snapshot row (op r) is no
// change of the transaction being read: like Debezium's, it has no block
// and is not counted, even when it is emitted while one is open (on
// MariaDB every DDL opens one that no commit ends).
func (s *Stream) txEvent(t *table, op debezium.Op) *debezium.Block {
	if !s.cfg.TxMetadata || !s.tx.open || op == debezium.OpRead {
		return nil
	}
	dc := t.Def.DB + "." + t.Def.Table
	if _, ok := s.tx.counts[dc]; !ok {
		s.tx.order = append(s.tx.order, dc)
	}
	s.tx.total++
	s.tx.counts[dc]++
	return &debezium.Block{ID: s.tx.id, TotalOrder: s.tx.total, DataCollectionOrder: s.tx.counts[dc]}
}

// javaHashMapOrder returns keys in the iteration order of a
// java.util.HashMap<String, Long> they were put into in the given order:
// Debezium's END record lists data collections that way.
func javaHashMapOrder(keys []string) []string {
	n := 16 // default capacity, doubled when size exceeds 0.75 of it
	for len(keys) > n*3/4 {
		n *= 2
	}
	bucket := func(k string) int {
		var h int32
		for _, r := range k { // String.hashCode over UTF-16 code units
			if r >= 0x10000 {
				r -= 0x10000
				h = 31*h + int32(0xD800+(r>>10))
				h = 31*h + int32(0xDC00+(r&0x3FF))
				continue
			}
			h = 31*h + int32(r)
		}
		u := uint32(h)
		return int((u ^ (u >> 16)) & uint32(n-1))
	}
	out := slices.Clone(keys)
	slices.SortStableFunc(out, func(a, b string) int { return bucket(a) - bucket(b) })
	return out
}

// heartbeatDue reports whether a heartbeat record is due. It reads the
// clock only when heartbeats are on.
func (s *Stream) heartbeatDue() bool {
	return s.cfg.HeartbeatInterval > 0 && !time.Now().Before(s.nextHeartbeat)
}

// heartbeat writes a heartbeat record into the Kafka transaction and makes
// sure it commits with the position read so far, so that an idle capture
// still stores its position.
func (s *Stream) heartbeat(ctx context.Context) error {
	now := s.cfg.Now()
	if err := s.metaTopic(ctx, &s.hbIDs, s.cfg.HeartbeatPrefix+"."+s.cfg.Prefix, debezium.HeartbeatKeySchema(), debezium.HeartbeatValueSchema()); err != nil {
		return err
	}
	if err := s.produceMeta(ctx, &s.hbIDs, debezium.Struct{s.cfg.Prefix}, debezium.Struct{now.UnixMilli()}, nil); err != nil {
		return err
	}
	if s.pendingPos == nil {
		p := s.readPos
		s.pendingPos = &p
	}
	s.nextHeartbeat = time.Now().Add(s.cfg.HeartbeatInterval)
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
