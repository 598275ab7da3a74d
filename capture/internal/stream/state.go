package stream

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/snapshot"
)

// State is capture's stored state: the one record kept under the capture
// id in the offsets topic. It holds the binlog position to resume after,
// the initial snapshot's progress while one runs, and what ad-hoc
// snapshots need (their progress, the offset of the last signal acted on,
// the table filter lists in force).
//
// Rule: a State is written only as the last record of the Kafka
// transaction that holds every event before its Position (publish.Commit),
// so a reader of the offsets topic never sees a State that is ahead of, or
// behind, the events a read_committed consumer sees.
//
// Wire format: JSON, one object with the fields flattened, and
// "version": stateVersion. Records written before the version field
// existed (format 0: the same fields, or a bare binlog.Position) decode
// and are upgraded by UnmarshalState. A record of a later version fails
// with ErrStateVersion rather than being read wrongly.
type State struct {
	binlog.Position
	Snapshot *snapshot.Progress `json:"snapshot,omitempty"`
	IncrementalState
}

// stateVersion is the format MarshalState writes. Version 1 has the
// fields of format 0 (unversioned) plus "version". Version 2 stores each
// snapshot table as {"db":…,"table":…} (snapshot.TableID) where 0 and 1
// stored "db.table" strings, which still read: a capture of version 1
// then refuses a version-2 record rather than fail on its tables.
const stateVersion = 2

// ErrStateVersion reports a stored state written by a newer capture, in a
// format this one does not know.
var ErrStateVersion = errors.New("stream: stored state of an unknown version")

// stateRecord is State on the wire.
type stateRecord struct {
	Version int `json:"version,omitempty"`
	State
}

// MarshalState encodes a state for the offsets topic, in the current
// format.
func MarshalState(s State) ([]byte, error) {
	return json.Marshal(stateRecord{Version: stateVersion, State: s})
}

// UnmarshalState decodes a stored state of any known format, upgrading an
// older one.
func UnmarshalState(b []byte) (State, error) {
	p, err := binlog.UnmarshalPosition(b)
	if err != nil {
		return State{}, err
	}
	var rec stateRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return State{}, fmt.Errorf("%w: %v", binlog.ErrInvalidPosition, err)
	}
	if rec.Version > stateVersion {
		return State{}, fmt.Errorf("%w: version %d, this capture reads up to %d; run a capture at least as new as the one that stored it",
			ErrStateVersion, rec.Version, stateVersion)
	}
	rec.Position = p
	return upgradeState(rec), nil
}

// upgradeState brings a decoded record of an older version to the
// current one. Format 0 (before the version field) has the same fields as
// version 1, and a bare position is a State without snapshot or ad-hoc
// state, so neither needs converting; a later format that moves or renames
// a field converts it here.
func upgradeState(rec stateRecord) State {
	return rec.State
}

// stateBytes encodes the state the loop stores with position pos: the
// running snapshot's progress (as Snapshot, or as Incremental for an
// ad-hoc one) and the ad-hoc snapshots' state.
func (s *Stream) stateBytes(pos binlog.Position) ([]byte, error) {
	st := State{Position: pos}
	if s.snap.running() {
		p := s.snap.prog
		if s.snap.incremental {
			st.Incremental = &p
		} else {
			st.Snapshot = &p
		}
	}
	s.incr.addState(&st)
	return MarshalState(st)
}
