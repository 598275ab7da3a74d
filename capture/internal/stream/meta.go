package stream

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/publish"
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

// metaWriter writes the records of the metadata topics: schema changes,
// transaction BEGIN/END records and heartbeats, registering each topic's
// schemas and creating it on first use.
//
// Rule: it writes only through produce, the loop's, which puts the record
// into the open Kafka transaction (opening one if needed) — the
// transaction of the binlog transaction the record belongs to — so
// exactly once holds for metadata records as for change events. It never
// commits.
type metaWriter struct {
	prefix        string
	flavor        debezium.Flavor
	schemaChanges bool // include.schema.changes
	txMetadata    bool // provide.transaction.metadata
	hbInterval    time.Duration
	hbTopic       string
	now           func() time.Time
	headers       []kgo.RecordHeader // on schema-change records, as Debezium writes them

	reg     Registry
	pub     *publish.Publisher // creates the topics
	produce func(ctx context.Context, r *kgo.Record) error

	schemaIDs, txIDs, hbIDs metaIDs
	tx                      txState
	nextHeartbeat           time.Time
}

func newMetaWriter(cfg Config, reg Registry, pub *publish.Publisher, headers []kgo.RecordHeader,
	produce func(context.Context, *kgo.Record) error,
) *metaWriter {
	return &metaWriter{
		prefix: cfg.Prefix, flavor: cfg.Flavor, schemaChanges: cfg.SchemaChanges, txMetadata: cfg.TxMetadata,
		hbInterval: cfg.HeartbeatInterval, hbTopic: cfg.HeartbeatPrefix + "." + cfg.Prefix, now: cfg.Now, headers: headers,
		reg: reg, pub: pub, produce: produce, nextHeartbeat: time.Now().Add(cfg.HeartbeatInterval),
	}
}

type metaIDs struct {
	ready        bool
	key, value   publish.Frame
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

func (w *metaWriter) topic(ctx context.Context, m *metaIDs, topic string, key, value *debezium.Schema) error {
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
	if m.key, err = w.reg.Frame(ctx, topic+"-key", ks); err != nil {
		return fmt.Errorf("registering the key schema of %s: %w", topic, err)
	}
	if m.value, err = w.reg.Frame(ctx, topic+"-value", vs); err != nil {
		return fmt.Errorf("registering the value schema of %s: %w", topic, err)
	}
	if err := w.pub.EnsureTopic(ctx, topic, nil, 0); err != nil {
		return err
	}
	m.topic, m.keyS, m.valueS, m.ready = topic, key, value, true
	return nil
}

// write encodes and produces one record of a metadata topic.
func (w *metaWriter) write(ctx context.Context, m *metaIDs, key, value debezium.Struct, headers []kgo.RecordHeader) error {
	k, err := debezium.AppendAvro(frame(m.key), m.keyS, key)
	if err == nil {
		k, err = m.key.Seal(k)
	}
	if err != nil {
		return fmt.Errorf("encoding a key of %s: %w", m.topic, err)
	}
	v, err := debezium.AppendAvro(frame(m.value), m.valueS, value)
	if err == nil {
		v, err = m.value.Seal(v)
	}
	if err != nil {
		return fmt.Errorf("encoding a record of %s: %w", m.topic, err)
	}
	return w.produce(ctx, &kgo.Record{Topic: m.topic, Key: k, Value: v, Headers: headers})
}

// schemaChange writes one schema-change event, if they are on
// (ddlEvents keeps the table models, which key change events, either
// way).
func (w *metaWriter) schemaChange(ctx context.Context, src debezium.Source, dbName, ddl string, changes []any) error {
	if !w.schemaChanges {
		return nil
	}
	if err := w.topic(ctx, &w.schemaIDs, w.prefix, debezium.SchemaChangeKeySchema(w.flavor), debezium.SchemaChangeValueSchema(w.flavor)); err != nil {
		return err
	}
	if changes == nil {
		changes = []any{}
	}
	now := w.now()
	value := debezium.Struct{src.Struct(), now.UnixMilli(), dbName, nil, ddl, changes}
	return w.write(ctx, &w.schemaIDs, debezium.Struct{dbName}, value, w.headers)
}

// txBegin starts a transaction as Debezium's TransactionMonitor does and
// writes its BEGIN record.
func (w *metaWriter) txBegin(ctx context.Context, ev binlog.Event) error {
	if !w.txMetadata {
		return nil
	}
	id := ev.GTID
	if id == "" {
		id = fmt.Sprintf("file=%s,pos=%d", ev.File, ev.Pos)
	}
	if w.tx.open && w.tx.id == id {
		return nil
	}
	w.tx = txState{open: true, id: id, counts: map[string]int64{}}
	if err := w.txTopic(ctx); err != nil {
		return err
	}
	value := debezium.Struct{"BEGIN", id, nil, nil, int64(ev.BeginTimestamp) * 1000}
	return w.write(ctx, &w.txIDs, debezium.Struct{id}, value, nil)
}

// txEnd writes the END record of the transaction in progress.
func (w *metaWriter) txEnd(ctx context.Context, ev binlog.Event) error {
	if !w.txMetadata || !w.tx.open {
		return nil
	}
	if err := w.txTopic(ctx); err != nil {
		return err
	}
	colls := make([]any, 0, len(w.tx.order))
	for _, dc := range javaHashMapOrder(w.tx.order) {
		colls = append(colls, debezium.Struct{dc, w.tx.counts[dc]})
	}
	value := debezium.Struct{"END", w.tx.id, w.tx.total, colls, int64(ev.PrevTimestamp) * 1000}
	id := w.tx.id
	w.tx = txState{}
	return w.write(ctx, &w.txIDs, debezium.Struct{id}, value, nil)
}

func (w *metaWriter) txTopic(ctx context.Context) error {
	return w.topic(ctx, &w.txIDs, w.prefix+".transaction", debezium.TransactionKeySchema(), debezium.TransactionValueSchema())
}

// txEvent counts a change event of t and returns its envelope block
// (nil when transaction metadata is off). A snapshot row (op r) is no
// change of the transaction being read: like Debezium's, it has no block
// and is not counted, even when it is emitted while one is open (on
// MariaDB every DDL opens one that no commit ends).
func (w *metaWriter) txEvent(t *table, op debezium.Op) *debezium.Block {
	if !w.txMetadata || !w.tx.open || op == debezium.OpRead {
		return nil
	}
	dc := t.Def.DB + "." + t.Def.Table
	if _, ok := w.tx.counts[dc]; !ok {
		w.tx.order = append(w.tx.order, dc)
	}
	w.tx.total++
	w.tx.counts[dc]++
	return &debezium.Block{ID: w.tx.id, TotalOrder: w.tx.total, DataCollectionOrder: w.tx.counts[dc]}
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
func (w *metaWriter) heartbeatDue() bool {
	return w.hbInterval > 0 && !time.Now().Before(w.nextHeartbeat)
}

// heartbeat writes a heartbeat record and schedules the next.
func (w *metaWriter) heartbeat(ctx context.Context) error {
	now := w.now()
	if err := w.topic(ctx, &w.hbIDs, w.hbTopic, debezium.HeartbeatKeySchema(), debezium.HeartbeatValueSchema()); err != nil {
		return err
	}
	if err := w.write(ctx, &w.hbIDs, debezium.Struct{w.prefix}, debezium.Struct{now.UnixMilli()}, nil); err != nil {
		return err
	}
	w.nextHeartbeat = time.Now().Add(w.hbInterval)
	return nil
}

// heartbeat writes a heartbeat record into the Kafka transaction and makes
// sure it commits with the position read so far, so that an idle capture
// still stores its position.
func (s *Stream) heartbeat(ctx context.Context) error {
	if err := s.meta.heartbeat(ctx); err != nil {
		return err
	}
	if s.pendingPos == nil {
		p := s.readPos
		s.pendingPos = &p
	}
	return nil
}
