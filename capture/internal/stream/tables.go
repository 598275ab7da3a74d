package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/schemas/debezium"
)

// The compiled tables the loop encodes change events with: each table's
// definition as of the binlog position being read (loaded on first sight,
// checked against every table map event, reloaded after DDL), its
// registered schemas and its topic, and the schema history records that
// let a restarted capture decode older events.

// Definitions loads table definitions from the source (information_schema).
type Definitions interface {
	Load(ctx context.Context, db, table string) (schemahist.Definition, error)
}

// CollationSource is implemented by Definitions that can list the
// server's collation ids; with it, the character set of each column is
// taken from the table map event its rows come with
// (binlog_row_metadata=FULL), so a charset-changing ALTER never makes rows
// decode with the wrong character set.
type CollationSource interface {
	Collations(ctx context.Context) (schemahist.Collations, error)
}

type table struct {
	*schemahist.Table
	keyFrame, valueFrame publish.Frame
	topic                string
	ready                bool
	// mapChecked is the last table map event found to match the
	// definition. go-mysql decodes each table map event into a new
	// value that the rows events after it share (one per statement, for
	// hundreds of rows events of a large one), so a pointer equal to it
	// needs no second check: comparing columns and charsets for every
	// rows event cost 4 % of capture's CPU.
	mapChecked *replication.TableMapEvent
	// events caches capture_events_total{table=topic,op} by op:
	// WithLabelValues hashes the labels and takes a lock, per event.
	events map[debezium.Op]prometheus.Counter
}

// eventCounter returns the capture_events_total counter of t's events of op.
func (t *table) eventCounter(m *Metrics, op debezium.Op) prometheus.Counter {
	c, ok := t.events[op]
	if !ok {
		if t.events == nil {
			t.events = map[debezium.Op]prometheus.Counter{}
		}
		c = m.Events.WithLabelValues(t.topic, string(op))
		t.events[op] = c
	}
	return c
}

func tableKey(db, tbl string) string { return db + "." + tbl }

// compile compiles a definition with the table model known for it (the
// model decides the key and the types of aliased columns, as Debezium's
// does).
func (s *Stream) compile(def schemahist.Definition) (*table, error) {
	if def.Model == nil {
		def.Model = s.models[tableKey(def.DB, def.Table)]
	}
	var include func(string) bool
	if s.cfg.Filter.HasColumnLists() {
		include = func(col string) bool { return s.cfg.Filter.Column(def.DB, def.Table, col) }
	}
	t, err := schemahist.Compile(def, s.cfg.Prefix, s.cfg.Flavor, s.cfg.Types, s.cfg.Naming, include, s.cfg.KeyColumns)
	if err != nil {
		return nil, err
	}
	return &table{Table: t, topic: t.ID.Topic()}, nil
}

// lookup returns the compiled table for a rows event (tm) or a TRUNCATE
// (tm nil), loading its definition on first sight and checking it against
// the table map. When the definition held does not match the table map,
// the one in information_schema is tried, and if the table changed again
// since the event was written, the definition is derived from the table
// map itself (binlog_row_metadata=FULL), so rows are always decoded with
// the structure they were written with.
func (s *Stream) lookup(ctx context.Context, db, tbl string, tm *replication.TableMapEvent) (*table, error) {
	key := tableKey(db, tbl)
	t := s.tables[key]
	if tm != nil && s.colls == nil {
		if src, ok := s.defs.(CollationSource); ok {
			colls, err := src.Collations(ctx)
			if err != nil {
				return nil, err
			}
			s.colls = colls
		}
	}
	matches := func(t *schemahist.Table, tm *replication.TableMapEvent) error {
		if err := matches(t, tm); err != nil {
			return err
		}
		return t.MatchesCharsets(tm, s.colls)
	}
	if t != nil && (tm == nil || tm == t.mapChecked || matches(t.Table, tm) == nil) {
		if tm != nil {
			t.mapChecked = tm
		}
		if !t.ready {
			if err := s.prepare(ctx, t); err != nil {
				return nil, err
			}
		}
		return t, nil
	}
	s.model(ctx, db, tbl) // Debezium's model of a table first seen: SHOW CREATE TABLE
	def, err := s.defs.Load(ctx, db, tbl)
	if err != nil && !(errors.Is(err, schemahist.ErrNoTable) && tm != nil) {
		return nil, err
	}
	nt, cerr := s.compile(def)
	if err != nil || cerr != nil || (tm != nil && matches(nt.Table, tm) != nil) {
		if tm == nil {
			return nil, errors.Join(err, cerr)
		}
		hint := def
		if t != nil && len(def.Columns) == 0 {
			hint = t.Def
		}
		derived, derr := schemahist.FromTableMapCharsets(tm, hint, s.colls)
		if derr != nil {
			return nil, derr
		}
		if nt, err = s.compile(derived); err != nil {
			return nil, err
		}
		def = derived
		s.log.Warn("table definition taken from the binlog: the table changed after this event was written; defaults and comments come from its current definition where the column still exists",
			"table", key)
	}
	if err := s.recordHistory(ctx, def); err != nil {
		return nil, err
	}
	s.tables[key] = nt
	if err := s.prepare(ctx, nt); err != nil {
		return nil, err
	}
	return nt, nil
}

// matches checks a compiled table against a table map event.
func matches(t *schemahist.Table, tm *replication.TableMapEvent) error {
	names := tm.ColumnNameString()
	if len(names) == 0 {
		if int(tm.ColumnCount) != len(t.Def.Columns) {
			return fmt.Errorf("%w: %s.%s has %d columns in the binlog and %d in the definition",
				schemahist.ErrSchemaMismatch, t.Def.DB, t.Def.Table, tm.ColumnCount, len(t.Def.Columns))
		}
		return nil
	}
	return t.MatchesMap(tm)
}

// prepare registers a table's schemas and creates its topic.
func (s *Stream) prepare(ctx context.Context, t *table) error {
	if t.Key != nil {
		ks, err := debezium.AvroSchema(t.Key)
		if err != nil {
			return err
		}
		if t.keyFrame, err = s.reg.Frame(ctx, t.topic+"-key", ks); err != nil {
			return fmt.Errorf("registering the key schema of %s: %w", t.topic, err)
		}
	}
	vs, err := debezium.AvroSchema(t.Envelope)
	if err != nil {
		return err
	}
	if t.valueFrame, err = s.reg.Frame(ctx, t.topic+"-value", vs); err != nil {
		return fmt.Errorf("registering the value schema of %s: %w", t.topic, err)
	}
	if err := s.pub.EnsureTopic(ctx, t.topic, nil, 0); err != nil {
		return err
	}
	t.ready = true
	return nil
}

func (s *Stream) recordHistory(ctx context.Context, def schemahist.Definition) error {
	if m := s.models[tableKey(def.DB, def.Table)]; m != nil {
		def.Model = m
	}
	return s.writeHistory(ctx, schemahist.HistoryRecord{Definition: def})
}

func (s *Stream) writeHistory(ctx context.Context, rec schemahist.HistoryRecord) error {
	if s.cfg.HistoryTopic == "" {
		return nil
	}
	if err := s.begin(); err != nil {
		return err
	}
	b, err := schemahist.MarshalHistoryRecord(rec)
	if err != nil {
		return err
	}
	s.pub.Produce(ctx, &kgo.Record{Topic: s.cfg.HistoryTopic, Key: rec.Key(), Value: b, Partition: 0})
	return nil
}

// LoadHistory reads the schema history topic: the latest definition of
// every table recorded before the committed position.
func LoadHistory(ctx context.Context, pub *publish.Publisher, topic string) (schemahist.History, error) {
	out := schemahist.History{}
	var bad error
	err := pub.ReadCommitted(ctx, topic, func(r *kgo.Record) {
		rec, err := schemahist.UnmarshalHistoryRecord(r.Value)
		if err != nil {
			bad = fmt.Errorf("decoding schema history record at %s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err)
			return
		}
		out.Apply(rec)
	})
	if err != nil {
		return nil, err
	}
	return out, bad
}
