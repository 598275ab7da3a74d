// Package signal reads and writes Debezium signals on a Kafka signal topic
// (Debezium's kafka signal channel, signal.kafka.topic), so that a running
// capture can be told to take an ad-hoc incremental snapshot.
//
// The format is Debezium's: a record whose key is the connector's logical
// name (capture's topic prefix) and whose value is a JSON document
// {"id": "...", "type": "execute-snapshot", "data": {...}}. As in Debezium,
// only partition 0 of the topic is read, records with another key are
// skipped, and the reader starts after the signal offset stored with the
// connector's position (Debezium's incremental_snapshot_signal_offset), so
// capture stores the offset of each signal it acts on in the same Kafka
// transaction as its position: a signal is acted on exactly once across
// restarts.
//
// Parse never fails hard: a bad signal is an error the caller logs and
// skips; it never stops capture.
package signal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Signal types capture acts on (Debezium's names).
const (
	TypeExecuteSnapshot = "execute-snapshot"
	TypeStopSnapshot    = "stop-snapshot"
	TypePauseSnapshot   = "pause-snapshot"
	TypeResumeSnapshot  = "resume-snapshot"
	TypeLog             = "log"
)

// SnapshotIncremental is the only snapshot type capture runs; Debezium's
// other type, "blocking", stops streaming, which capture does not do.
const SnapshotIncremental = "incremental"

var (
	// ErrOtherConnector reports a record whose key is not this capture's
	// topic prefix: it is meant for another connector and is skipped.
	ErrOtherConnector = errors.New("signal: for another connector")
	// ErrInvalid reports a signal that cannot be parsed or is not
	// supported; it is skipped.
	ErrInvalid = errors.New("signal: invalid")
)

// Signal is one parsed signal.
type Signal struct {
	// ID is the sender's identifier (Debezium: usually a UUID), for logs.
	ID string
	// Type is one of the Type* constants.
	Type string
	// Collections are the data-collections of execute-snapshot and
	// stop-snapshot: regular expressions matching whole "db.table" names
	// (Debezium's semantics). Empty for stop-snapshot means every table.
	Collections []string
	// Message is the message of a log signal.
	Message string
}

// envelope is the JSON value of a signal record.
type envelope struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// snapshotData is the data of execute-snapshot and stop-snapshot.
type snapshotData struct {
	Collections          []string          `json:"data-collections"`
	Type                 string            `json:"type"`
	AdditionalConditions []json.RawMessage `json:"additional-conditions"`
	SurrogateKey         string            `json:"surrogate-key"`
}

// Parse decodes a signal record for the connector named prefix.
func Parse(prefix string, key, value []byte) (Signal, error) {
	if string(key) != prefix {
		return Signal{}, fmt.Errorf("%w: key %q is not the topic prefix %q", ErrOtherConnector, truncate(key), prefix)
	}
	if len(bytes.TrimSpace(value)) == 0 {
		return Signal{}, fmt.Errorf("%w: empty value", ErrInvalid)
	}
	var env envelope
	if err := json.Unmarshal(value, &env); err != nil {
		return Signal{}, fmt.Errorf("%w: value is not a JSON signal document: %v", ErrInvalid, err)
	}
	s := Signal{ID: env.ID, Type: env.Type}
	data, err := dataDocument(env.Data)
	if err != nil {
		return s, err
	}
	switch env.Type {
	case TypeExecuteSnapshot, TypeStopSnapshot:
		var d snapshotData
		if len(data) > 0 {
			if err := json.Unmarshal(data, &d); err != nil {
				return s, fmt.Errorf("%w: %s data: %v", ErrInvalid, env.Type, err)
			}
		}
		if d.Type != "" && !strings.EqualFold(d.Type, SnapshotIncremental) {
			return s, fmt.Errorf("%w: %s of type %q: capture runs only incremental snapshots (streaming never stops)", ErrInvalid, env.Type, d.Type)
		}
		if len(d.AdditionalConditions) > 0 {
			return s, fmt.Errorf("%w: %s with additional-conditions is not supported; send it without them", ErrInvalid, env.Type)
		}
		if d.SurrogateKey != "" {
			return s, fmt.Errorf("%w: %s with a surrogate-key is not supported: the primary key is used", ErrInvalid, env.Type)
		}
		for _, c := range d.Collections {
			c = strings.TrimSpace(c)
			if c == "" {
				continue
			}
			if _, err := compile(c); err != nil {
				return s, fmt.Errorf("%w: data-collections entry %q: %v", ErrInvalid, c, err)
			}
			s.Collections = append(s.Collections, c)
		}
		if env.Type == TypeExecuteSnapshot && len(s.Collections) == 0 {
			return s, fmt.Errorf("%w: execute-snapshot names no data-collections", ErrInvalid)
		}
	case TypePauseSnapshot, TypeResumeSnapshot:
	case TypeLog:
		var d struct {
			Message string `json:"message"`
		}
		if len(data) > 0 {
			if err := json.Unmarshal(data, &d); err != nil {
				return s, fmt.Errorf("%w: log data: %v", ErrInvalid, err)
			}
		}
		s.Message = d.Message
	case "":
		return s, fmt.Errorf("%w: no type", ErrInvalid)
	default:
		return s, fmt.Errorf("%w: type %q is not supported (capture acts on %s, %s, %s, %s and %s)", ErrInvalid, env.Type,
			TypeExecuteSnapshot, TypeStopSnapshot, TypePauseSnapshot, TypeResumeSnapshot, TypeLog)
	}
	return s, nil
}

// dataDocument returns the data field as a JSON object. Debezium's kafka
// channel carries an object; its source channel a string holding one, which
// is accepted too.
func dataDocument(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: data: %v", ErrInvalid, err)
		}
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		raw = json.RawMessage(s)
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%w: data is not a JSON object", ErrInvalid)
	}
	return raw, nil
}

// Matcher matches "db.table" names against data-collections entries.
type Matcher []*regexp.Regexp

// NewMatcher compiles data-collections entries (whole-name, case-insensitive
// regular expressions, as capture's include lists).
func NewMatcher(collections []string) (Matcher, error) {
	m := make(Matcher, 0, len(collections))
	for _, c := range collections {
		re, err := compile(c)
		if err != nil {
			return nil, fmt.Errorf("%w: data-collections entry %q: %v", ErrInvalid, c, err)
		}
		m = append(m, re)
	}
	return m, nil
}

// Match reports whether name matches any entry.
func (m Matcher) Match(name string) bool {
	for _, re := range m {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// Unmatched returns the entries that match none of names, for warnings.
func (m Matcher) Unmatched(names []string) []string {
	var out []string
	for _, re := range m {
		hit := false
		for _, n := range names {
			if re.MatchString(n) {
				hit = true
				break
			}
		}
		if !hit {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(re.String(), "(?i)^(?:"), ")$"))
		}
	}
	return out
}

func compile(c string) (*regexp.Regexp, error) { return regexp.Compile("(?i)^(?:" + c + ")$") }

// ExecuteSnapshot returns the value of an execute-snapshot signal for an
// incremental snapshot of tables.
func ExecuteSnapshot(id string, tables []string) ([]byte, error) {
	return json.Marshal(map[string]any{
		"id":   id,
		"type": TypeExecuteSnapshot,
		"data": map[string]any{"data-collections": tables, "type": SnapshotIncremental},
	})
}

// Value returns the value of a signal of typ (stop-snapshot with tables,
// pause-snapshot, resume-snapshot).
func Value(id, typ string, tables []string) ([]byte, error) {
	if typ == TypeExecuteSnapshot {
		return ExecuteSnapshot(id, tables)
	}
	v := map[string]any{"id": id, "type": typ}
	if typ == TypeStopSnapshot {
		d := map[string]any{"type": SnapshotIncremental}
		if len(tables) > 0 {
			d["data-collections"] = tables
		}
		v["data"] = d
	}
	return json.Marshal(v)
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}
