// Package binlog reads the MySQL/MariaDB binary log with go-mysql's
// replication client and hands capture whole transactions' worth of typed
// events, tracking the position to resume from after each one.
//
// Guarantees: events arrive in binlog order; a Commit carries the position
// just after its transaction, which is the only position capture ever
// stores, so a resumed reader never starts inside a transaction.
package binlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Flavor is the server family: GTIDs, events and the source block differ.
type Flavor string

// Flavors.
const (
	FlavorMySQL   Flavor = "mysql"
	FlavorMariaDB Flavor = "mariadb"
)

// ErrInvalidPosition reports a position that cannot be parsed.
var ErrInvalidPosition = errors.New("binlog: invalid position")

// Position is a point in the binlog: a GTID set (preferred, survives
// failover) and the file and offset of the server it was read from.
type Position struct {
	Flavor  Flavor `json:"flavor"`
	GTIDSet string `json:"gtid_set,omitempty"`
	File    string `json:"file,omitempty"`
	Pos     uint32 `json:"pos,omitempty"`
}

// String renders the position for logs.
func (p Position) String() string {
	if p.GTIDSet != "" {
		return fmt.Sprintf("gtid=%s file=%s pos=%d", p.GTIDSet, p.File, p.Pos)
	}
	return fmt.Sprintf("file=%s pos=%d", p.File, p.Pos)
}

// IsZero reports whether no position is set.
func (p Position) IsZero() bool { return p.GTIDSet == "" && p.File == "" }

// ParseGTIDSet parses a GTID set of the flavor: MariaDB's
// domain-server-sequence list, or MySQL's uuid:interval list.
func ParseGTIDSet(f Flavor, s string) (mysql.GTIDSet, error) {
	var (
		set mysql.GTIDSet
		err error
	)
	switch f {
	case FlavorMariaDB:
		set, err = mysql.ParseMariadbGTIDSet(s)
	case FlavorMySQL:
		set, err = mysql.ParseMysqlGTIDSet(s)
	default:
		return nil, fmt.Errorf("%w: unknown flavor %q", ErrInvalidPosition, f)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: gtid set %q: %v", ErrInvalidPosition, s, err)
	}
	return set, nil
}

// ParsePosition parses the start position given by a user: "gtid:<set>",
// "file:<name>:<pos>", or a bare GTID set.
func ParsePosition(f Flavor, s string) (Position, error) {
	switch {
	case strings.HasPrefix(s, "file:"):
		rest := strings.TrimPrefix(s, "file:")
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 {
			return Position{}, fmt.Errorf("%w: %q is not file:<name>:<pos>", ErrInvalidPosition, s)
		}
		var pos uint32
		if _, err := fmt.Sscanf(rest[i+1:], "%d", &pos); err != nil || pos < 4 {
			return Position{}, fmt.Errorf("%w: %q: bad offset", ErrInvalidPosition, s)
		}
		return Position{Flavor: f, File: rest[:i], Pos: pos}, nil
	default:
		g := strings.TrimPrefix(s, "gtid:")
		if _, err := ParseGTIDSet(f, g); err != nil {
			return Position{}, err
		}
		return Position{Flavor: f, GTIDSet: g}, nil
	}
}

// MarshalPosition encodes a position for the offsets topic.
func MarshalPosition(p Position) ([]byte, error) { return json.Marshal(p) }

// UnmarshalPosition decodes a position from the offsets topic.
func UnmarshalPosition(b []byte) (Position, error) {
	var p Position
	if err := json.Unmarshal(b, &p); err != nil {
		return Position{}, fmt.Errorf("%w: %v", ErrInvalidPosition, err)
	}
	if p.Flavor != FlavorMySQL && p.Flavor != FlavorMariaDB {
		return Position{}, fmt.Errorf("%w: unknown flavor %q", ErrInvalidPosition, p.Flavor)
	}
	if p.GTIDSet != "" {
		if _, err := ParseGTIDSet(p.Flavor, p.GTIDSet); err != nil {
			return Position{}, err
		}
	}
	return p, nil
}
