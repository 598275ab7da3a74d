// Package resume decides where a capture starts: from the state it stored
// or, for a new capture, from the position and with the snapshot that
// snapshot-mode says, and whether it must write a schema snapshot first.
// It also checks that the source grants what capture needs.
//
// The policy (Decide), by snapshot-mode, for a stored state:
//   - initial, initial_only, when_needed resume it, with the snapshot it
//     was running; no_data and never resume its position and drop a
//     snapshot it was running (they read no rows).
//   - when_needed treats a stored position the binlog no longer holds as
//     none: the capture starts over with a new snapshot.
//   - initial_only with its snapshot complete has nothing left to do.
//   - a state stored for another server flavor is an error, never reused.
//
// and for none (a new capture):
//   - initial, initial_only, when_needed start at the server's current
//     position with a snapshot of every captured table;
//   - no_data starts at the current position without one;
//   - never starts at start-position (current, earliest or a position).
//
// A new capture stores its start at once, and every mode but never writes
// the schema snapshot (include.schema.changes) in the same transaction.
// Tables the filter lists capture now and did not when the state was
// stored get an ad-hoc snapshot with initial and when_needed (NewTables).
package resume

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/capture/internal/stream"
)

// Config is what the policy reads of capture's settings.
type Config struct {
	// ID is the capture id and OffsetsTopic the topic of its state (for
	// error messages).
	ID, OffsetsTopic string
	// Mode is snapshot-mode.
	Mode snapshot.Mode
	// StartPosition is start-position, read with snapshot-mode never:
	// "current" (or ""), "earliest", or a position (binlog.ParsePosition).
	StartPosition string
	// SchemaChanges is include.schema.changes.
	SchemaChanges bool
}

// Source is what the policy asks the source server.
type Source interface {
	// BinlogHas reports whether the server's binlog still holds
	// everything after p.
	BinlogHas(ctx context.Context, p binlog.Position) (bool, error)
	// Tables lists the captured tables, "db.table", sorted.
	Tables(ctx context.Context) ([]snapshot.TableID, error)
}

// Plan is where and how a capture starts.
type Plan struct {
	// State is the state to start from.
	State stream.State
	// Stored reports that State is the stored one (a resume).
	Stored bool
	// Done reports that there is nothing to do: snapshot-mode
	// initial_only and its snapshot is complete.
	Done bool
	// StoreStart: State must be stored before streaming starts, so that
	// a capture stopped before its first change resumes there and not at
	// a later "current" (a new capture).
	StoreStart bool
	// SchemaSnapshot: write the schema snapshot in the transaction that
	// stores the start.
	SchemaSnapshot bool
}

// Decide returns the plan for a capture whose stored state is stored
// (found reports whether there is one) against server.
func Decide(ctx context.Context, cfg Config, stored []byte, found bool, server binlog.Server, src Source, logger *slog.Logger) (Plan, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if found {
		st, err := stream.UnmarshalState(stored)
		if err != nil {
			return Plan{}, fmt.Errorf("stored position of %s in %s: %w", cfg.ID, cfg.OffsetsTopic, err)
		}
		if st.Flavor != server.Flavor {
			return Plan{}, &FlavorError{ID: cfg.ID, Stored: st.Flavor, Server: server.Flavor}
		}
		if !cfg.Mode.ReadsData() {
			st.Snapshot = nil
		}
		resume := cfg.Mode != snapshot.ModeWhenNeeded
		if !resume {
			if resume, err = src.BinlogHas(ctx, st.Position); err != nil {
				return Plan{}, err
			}
		}
		if resume {
			return Plan{State: st, Stored: true, Done: cfg.Mode == snapshot.ModeInitialOnly && st.Snapshot.Done()}, nil
		}
		logger.Warn("snapshot-mode when_needed: the stored position is no longer in the binlog; taking a new snapshot",
			"gtid", st.GTIDSet, "binlog_file", st.File, "binlog_pos", st.Pos)
	}
	st, err := start(ctx, cfg, server, src)
	if err != nil {
		return Plan{}, err
	}
	return Plan{State: st, StoreStart: true, SchemaSnapshot: cfg.Mode != snapshot.ModeNever && cfg.SchemaChanges}, nil
}

// FlavorError reports a state stored by a capture of a server of another
// flavor (MySQL, MariaDB) than the source's: its positions mean nothing
// there.
type FlavorError struct {
	ID             string
	Stored, Server binlog.Flavor
}

// Error names the capture, both flavors and the fix.
func (e *FlavorError) Error() string {
	return fmt.Sprintf("the stored position of capture %s is for a %s server, the source is %s; use another id", e.ID, e.Stored, e.Server)
}

// start is where a new capture starts.
func start(ctx context.Context, cfg Config, server binlog.Server, src Source) (stream.State, error) {
	current := server.Current
	if current.GTIDSet == "" {
		current = binlog.Position{Flavor: server.Flavor, File: server.Current.File, Pos: server.Current.Pos}
	}
	switch cfg.Mode {
	case snapshot.ModeInitial, snapshot.ModeInitialOnly, snapshot.ModeWhenNeeded:
		tables, err := src.Tables(ctx)
		if err != nil {
			return stream.State{}, err
		}
		return stream.State{Position: current, Snapshot: &snapshot.Progress{Tables: tables}}, nil
	case snapshot.ModeNoData:
		return stream.State{Position: current}, nil
	}
	switch cfg.StartPosition {
	case "current", "":
		return stream.State{Position: current}, nil
	case "earliest":
		return stream.State{Position: binlog.Position{Flavor: server.Flavor}}, nil
	default:
		p, err := binlog.ParsePosition(server.Flavor, cfg.StartPosition)
		return stream.State{Position: p}, err
	}
}

// SchemaSnapshot lists what the schema snapshot of a new capture starting
// at state covers: tables are the captured tables ([db, table], sorted),
// charset and collation the server's character_set_server and
// collation_server. Debezium's schema snapshot covers the databases of the
// captured tables (a captured database without tables gets no event).
func SchemaSnapshot(state stream.State, charset, collation string, tables [][2]string) stream.SchemaSnapshot {
	snap := stream.SchemaSnapshot{Position: state.Position, DataFollows: state.Snapshot != nil && len(state.Snapshot.Tables) > 0,
		ServerCharset: charset, ServerCollation: collation, Tables: tables}
	for _, t := range tables {
		if len(snap.Databases) == 0 || snap.Databases[len(snap.Databases)-1] != t[0] {
			snap.Databases = append(snap.Databases, t[0])
		}
	}
	return snap
}

// LoadGrants returns the rows of SHOW GRANTS for capture's user.
func LoadGrants(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return nil, fmt.Errorf("reading grants: %w", err)
	}
	defer rows.Close()
	var grants []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return nil, err
		}
		grants = append(grants, g)
	}
	return grants, rows.Err()
}

// CheckGrants checks the replication grants capture needs in the rows of
// SHOW GRANTS, returning one error (binlog.ErrNotReady) per grant missing,
// each naming the statement that gives it.
func CheckGrants(grants []string) error {
	s := strings.ToUpper(strings.Join(grants, "\n"))
	has := func(p string) bool { return strings.Contains(s, "ALL PRIVILEGES ON *.*") || strings.Contains(s, p) }
	var errs []error
	if !has("REPLICATION SLAVE") && !has("REPLICATION REPLICA") {
		errs = append(errs, fmt.Errorf("%w: the capture user lacks REPLICATION SLAVE; run: GRANT REPLICATION SLAVE ON *.* TO <user>", binlog.ErrNotReady))
	}
	if !has("REPLICATION CLIENT") && !has("BINLOG MONITOR") && !has("SUPER") {
		errs = append(errs, fmt.Errorf("%w: the capture user lacks REPLICATION CLIENT (MariaDB: BINLOG MONITOR); run: GRANT REPLICATION CLIENT ON *.* TO <user>", binlog.ErrNotReady))
	}
	return errors.Join(errs...)
}
