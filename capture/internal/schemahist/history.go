package schemahist

import "encoding/json"

// HistoryRecord is one record of the schema history topic, keyed by
// "db.table" (Key): the definition a table has from the position of the
// Kafka transaction it is written in, or its drop.
//
// Rule: a record is written in the Kafka transaction of the binlog
// transaction (or first sight of the table) that gave the table this
// definition, so the committed history always ends at the committed
// position: a restarted capture decodes the binlog after that position
// with the definitions the history holds.
type HistoryRecord struct {
	Definition Definition `json:"definition"`
	Dropped    bool       `json:"dropped,omitempty"`
}

// Key is the record's Kafka key, "db.table".
func (r HistoryRecord) Key() []byte { return []byte(r.Definition.DB + "." + r.Definition.Table) }

// MarshalHistoryRecord encodes a record for the schema history topic.
func MarshalHistoryRecord(r HistoryRecord) ([]byte, error) { return json.Marshal(r) }

// UnmarshalHistoryRecord decodes a record of the schema history topic.
func UnmarshalHistoryRecord(b []byte) (HistoryRecord, error) {
	var r HistoryRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return HistoryRecord{}, err
	}
	return r, nil
}

// History is the latest definition of each table, by "db.table", as the
// history topic's records replayed in order give it.
type History map[string]Definition

// Apply replays one record.
func (h History) Apply(r HistoryRecord) {
	key := string(r.Key())
	if r.Dropped {
		delete(h, key)
		return
	}
	h[key] = r.Definition
}
