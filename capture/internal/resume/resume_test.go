package resume

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/capture/internal/stream"
)

// server is the source's state: its binlog still holds the stored
// position (has) or not, and lists tables.
type server struct {
	has       bool
	hasErr    error
	tables    []snapshot.TableID
	tablesErr error
}

func (s server) BinlogHas(context.Context, binlog.Position) (bool, error) { return s.has, s.hasErr }
func (s server) Tables(context.Context) ([]snapshot.TableID, error)       { return s.tables, s.tablesErr }

var (
	current    = binlog.Position{Flavor: binlog.FlavorMariaDB, GTIDSet: "0-1-50", File: "bin.000002", Pos: 900}
	storedPos  = binlog.Position{Flavor: binlog.FlavorMariaDB, GTIDSet: "0-1-10", File: "bin.000001", Pos: 400}
	tables     = ids("db.a", "db.b")
	signalOff  = int64(7)
	running    = &snapshot.Progress{Tables: tables, Table: 1, After: [][]byte{[]byte("9")}, Rows: 30, TableRows: 3}
	newFull    = stream.State{Position: current, Snapshot: &snapshot.Progress{Tables: tables}}
	newNoData  = stream.State{Position: current}
	adhocState = stream.IncrementalState{SignalOffset: &signalOff, Lists: &stream.TableLists{DatabaseInclude: "db"}}
)

func encode(t *testing.T, st stream.State) []byte {
	t.Helper()
	b, err := stream.MarshalState(st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecide runs the start-up policy over snapshot mode × stored state ×
// server state.
func TestDecide(t *testing.T) {
	none := func(*testing.T) []byte { return nil }
	storedAt := func(st stream.State) func(*testing.T) []byte {
		return func(t *testing.T) []byte { return encode(t, st) }
	}
	positionOnly := storedAt(stream.State{Position: storedPos, IncrementalState: adhocState})
	midSnapshot := storedAt(stream.State{Position: storedPos, Snapshot: running, IncrementalState: adhocState})
	mysqlStored := storedAt(stream.State{Position: binlog.Position{Flavor: binlog.FlavorMySQL, File: "binlog.000001", Pos: 4}})
	resumed := func(snap *snapshot.Progress) stream.State {
		return stream.State{Position: storedPos, Snapshot: snap, IncrementalState: adhocState}
	}
	up := server{has: true, tables: tables}
	purged := server{has: false, tables: tables}
	boom := errors.New("source down")

	for _, tc := range []struct {
		name    string
		mode    snapshot.Mode
		start   string // start-position
		stored  func(*testing.T) []byte
		server  server
		noGTID  bool // the server runs without GTIDs
		noDDL   bool // include.schema.changes off
		want    Plan
		wantErr func(error) bool
	}{
		// A new capture.
		{name: "initial, new", mode: snapshot.ModeInitial, stored: none, server: up,
			want: Plan{State: newFull, StoreStart: true, SchemaSnapshot: true}},
		{name: "initial_only, new", mode: snapshot.ModeInitialOnly, stored: none, server: up,
			want: Plan{State: newFull, StoreStart: true, SchemaSnapshot: true}},
		{name: "when_needed, new", mode: snapshot.ModeWhenNeeded, stored: none, server: up,
			want: Plan{State: newFull, StoreStart: true, SchemaSnapshot: true}},
		{name: "no_data, new", mode: snapshot.ModeNoData, stored: none, server: up,
			want: Plan{State: newNoData, StoreStart: true, SchemaSnapshot: true}},
		{name: "never, new, current", mode: snapshot.ModeNever, stored: none, server: up,
			want: Plan{State: newNoData, StoreStart: true}},
		{name: "never, new, current by name", mode: snapshot.ModeNever, start: "current", stored: none, server: up,
			want: Plan{State: newNoData, StoreStart: true}},
		{name: "never, new, earliest", mode: snapshot.ModeNever, start: "earliest", stored: none, server: up,
			want: Plan{State: stream.State{Position: binlog.Position{Flavor: binlog.FlavorMariaDB}}, StoreStart: true}},
		{name: "never, new, file position", mode: snapshot.ModeNever, start: "file:bin.000001:4", stored: none, server: up,
			want: Plan{State: stream.State{Position: binlog.Position{Flavor: binlog.FlavorMariaDB, File: "bin.000001", Pos: 4}}, StoreStart: true}},
		{name: "never, new, GTID set", mode: snapshot.ModeNever, start: "gtid:0-1-3", stored: none, server: up,
			want: Plan{State: stream.State{Position: binlog.Position{Flavor: binlog.FlavorMariaDB, GTIDSet: "0-1-3"}}, StoreStart: true}},
		{name: "never, new, bad position", mode: snapshot.ModeNever, start: "file:x", stored: none, server: up,
			wantErr: func(err error) bool { return errors.Is(err, binlog.ErrInvalidPosition) }},
		{name: "initial, new, server without GTIDs", mode: snapshot.ModeInitial, stored: none, server: up, noGTID: true,
			want: Plan{State: stream.State{Position: binlog.Position{Flavor: binlog.FlavorMariaDB, File: "bin.000002", Pos: 900},
				Snapshot: &snapshot.Progress{Tables: tables}}, StoreStart: true, SchemaSnapshot: true}},
		{name: "initial, new, schema changes off", mode: snapshot.ModeInitial, stored: none, server: up, noDDL: true,
			want: Plan{State: newFull, StoreStart: true}},
		{name: "initial, new, tables cannot be listed", mode: snapshot.ModeInitial, stored: none, server: server{tablesErr: boom},
			wantErr: func(err error) bool { return errors.Is(err, boom) }},

		// A stored state.
		{name: "initial, stored", mode: snapshot.ModeInitial, stored: positionOnly, server: up,
			want: Plan{State: resumed(nil), Stored: true}},
		{name: "initial, stored mid-snapshot", mode: snapshot.ModeInitial, stored: midSnapshot, server: up,
			want: Plan{State: resumed(running), Stored: true}},
		{name: "initial_only, stored, snapshot complete", mode: snapshot.ModeInitialOnly, stored: positionOnly, server: up,
			want: Plan{State: resumed(nil), Stored: true, Done: true}},
		{name: "initial_only, stored mid-snapshot", mode: snapshot.ModeInitialOnly, stored: midSnapshot, server: up,
			want: Plan{State: resumed(running), Stored: true}},
		{name: "no_data, stored mid-snapshot: the snapshot is dropped", mode: snapshot.ModeNoData, stored: midSnapshot, server: up,
			want: Plan{State: resumed(nil), Stored: true}},
		{name: "never, stored mid-snapshot: the snapshot is dropped", mode: snapshot.ModeNever, start: "earliest", stored: midSnapshot, server: up,
			want: Plan{State: resumed(nil), Stored: true}},
		{name: "initial, stored, binlog purged: resumed anyway", mode: snapshot.ModeInitial, stored: positionOnly, server: purged,
			want: Plan{State: resumed(nil), Stored: true}},
		{name: "when_needed, stored, in the binlog", mode: snapshot.ModeWhenNeeded, stored: midSnapshot, server: up,
			want: Plan{State: resumed(running), Stored: true}},
		{name: "when_needed, stored, binlog purged: a new snapshot", mode: snapshot.ModeWhenNeeded, stored: midSnapshot, server: purged,
			want: Plan{State: newFull, StoreStart: true, SchemaSnapshot: true}},
		{name: "when_needed, stored, binlog unreadable", mode: snapshot.ModeWhenNeeded, stored: positionOnly, server: server{hasErr: boom},
			wantErr: func(err error) bool { return errors.Is(err, boom) }},
		{name: "stored for a MySQL server", mode: snapshot.ModeInitial, stored: mysqlStored, server: up,
			wantErr: func(err error) bool {
				var fe *FlavorError
				return errors.As(err, &fe) && fe.Stored == binlog.FlavorMySQL && fe.Server == binlog.FlavorMariaDB
			}},
		{name: "stored state unreadable", mode: snapshot.ModeInitial, stored: func(*testing.T) []byte { return []byte("{") }, server: up,
			wantErr: func(err error) bool { return errors.Is(err, binlog.ErrInvalidPosition) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.stored(t)
			srv := binlog.Server{Flavor: binlog.FlavorMariaDB, Current: current}
			if tc.noGTID {
				srv.Current.GTIDSet = ""
			}
			cfg := Config{ID: "c1", OffsetsTopic: "offsets", Mode: tc.mode, StartPosition: tc.start, SchemaChanges: !tc.noDDL}
			got, err := Decide(t.Context(), cfg, b, b != nil, srv, tc.server, slog.New(slog.DiscardHandler))
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("got %+v, %v; want the error the case names", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("plan (-want +got):\n%s", d)
			}
		})
	}
}

func TestCheckGrants(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grants  []string
		missing int
	}{
		{"slave and client", []string{"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `capture`@`%`"}, 0},
		{"one row each", []string{"GRANT REPLICATION SLAVE ON *.* TO `capture`@`%`", "GRANT REPLICATION CLIENT ON *.* TO `capture`@`%`"}, 0},
		{"MariaDB's names", []string{"GRANT REPLICATION REPLICA, BINLOG MONITOR ON *.* TO `capture`@`%`"}, 0},
		{"super", []string{"GRANT SUPER, REPLICATION SLAVE ON *.* TO `capture`@`%`"}, 0},
		{"all privileges", []string{"GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"}, 0},
		{"lower case", []string{"grant replication slave, replication client on *.* to capture"}, 0},
		{"no client", []string{"GRANT REPLICATION SLAVE ON *.* TO `capture`@`%`"}, 1},
		{"no slave", []string{"GRANT REPLICATION CLIENT ON *.* TO `capture`@`%`"}, 1},
		{"all privileges on one database", []string{"GRANT ALL PRIVILEGES ON `db`.* TO `capture`@`%`"}, 2},
		{"none", []string{"GRANT USAGE ON *.* TO `capture`@`%`"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckGrants(tc.grants)
			var n int
			if err != nil {
				if !errors.Is(err, binlog.ErrNotReady) {
					t.Fatalf("%v: not ErrNotReady", err)
				}
				n = len(err.(interface{ Unwrap() []error }).Unwrap())
			}
			if n != tc.missing {
				t.Fatalf("%d grants reported missing (%v), want %d", n, err, tc.missing)
			}
		})
	}
}

func TestSchemaSnapshot(t *testing.T) {
	tbls := [][2]string{{"a", "t1"}, {"a", "t2"}, {"b", "t1"}}
	got := SchemaSnapshot(newFull, "utf8mb4", "utf8mb4_general_ci", tbls)
	want := stream.SchemaSnapshot{Position: current, ServerCharset: "utf8mb4", ServerCollation: "utf8mb4_general_ci",
		Databases: []string{"a", "b"}, Tables: tbls, DataFollows: true}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	for _, st := range []stream.State{newNoData, {Position: current, Snapshot: &snapshot.Progress{}}} {
		if SchemaSnapshot(st, "", "", tbls).DataFollows {
			t.Errorf("%+v: no data snapshot follows, yet DataFollows", st.Snapshot)
		}
	}
}

// ids names tables "db.table" (no dot in the database) as TableIDs.
func ids(names ...string) []snapshot.TableID {
	out := make([]snapshot.TableID, 0, len(names))
	for _, n := range names {
		db, tbl := snapshot.SplitTable(n)
		out = append(out, snapshot.TableID{DB: db, Table: tbl})
	}
	return out
}
