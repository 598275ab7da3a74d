package stream

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/snapshot"
)

// Records as the capture before the versioned State (commit 22ab43e)
// stored them: its MarshalState's output, and a bare binlog.Position.
const (
	format0Full     = `{"flavor":"mariadb","gtid_set":"0-1-17","file":"mysql-bin.000003","pos":1234,"snapshot":{"tables":["db.a","db.b"],"table":1,"after":["NDI=","eA=="],"rows":100,"table_rows":7},"incremental_snapshot":{"tables":["db.c"],"table":0,"rows":0,"table_rows":0},"incremental_snapshot_paused":true,"signal_offset":41,"table_lists":{"database_include":"db","table_exclude":"db\\.tmp.*"}}`
	format0Position = `{"flavor":"mysql","gtid_set":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5","file":"binlog.000001","pos":157}`
)

func format0FullState() State {
	off := int64(41)
	return State{
		Position: binlog.Position{Flavor: binlog.FlavorMariaDB, GTIDSet: "0-1-17", File: "mysql-bin.000003", Pos: 1234},
		Snapshot: &snapshot.Progress{Tables: ids("db.a", "db.b"), Table: 1, After: [][]byte{[]byte("42"), []byte("x")}, Rows: 100, TableRows: 7},
		IncrementalState: IncrementalState{
			Incremental: &snapshot.Progress{Tables: ids("db.c")}, IncrementalPaused: true, SignalOffset: &off,
			Lists: &TableLists{DatabaseInclude: "db", TableExclude: `db\.tmp.*`},
		},
	}
}

// TestStateUpgradesFormat0 decodes records written before the State had a
// version, and checks that they come out whole and round-trip through the
// current format unchanged.
func TestStateUpgradesFormat0(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want State
	}{
		{"full state", format0Full, format0FullState()},
		{"bare position", format0Position, State{Position: binlog.Position{Flavor: binlog.FlavorMySQL,
			GTIDSet: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", File: "binlog.000001", Pos: 157}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UnmarshalState([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("decoded (-want +got):\n%s", d)
			}
			b, err := MarshalState(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := UnmarshalState(b)
			if err != nil {
				t.Fatalf("decoding %s: %v", b, err)
			}
			if d := cmp.Diff(tc.want, again); d != "" {
				t.Fatalf("after a round trip through %s (-want +got):\n%s", b, d)
			}
		})
	}
}

// TestStateVersion: the current format carries its version, and a record
// of a later version is refused, not read with fields it may have moved.
func TestStateVersion(t *testing.T) {
	b, err := MarshalState(format0FullState())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":2,"flavor":"mariadb"`; string(b[:len(want)]) != want {
		t.Fatalf("encoded %s, want it to start %s", b, want)
	}
	_, err = UnmarshalState([]byte(`{"version":3,"flavor":"mariadb","gtid_set":"0-1-17"}`))
	if !errors.Is(err, ErrStateVersion) {
		t.Fatalf("a version-3 record: %v, want ErrStateVersion", err)
	}
	for _, bad := range []string{`{"flavor":"oracle"}`, `not json`, `{"flavor":"mariadb","gtid_set":"x-y"}`} {
		if _, err := UnmarshalState([]byte(bad)); !errors.Is(err, binlog.ErrInvalidPosition) {
			t.Errorf("%s: %v, want ErrInvalidPosition", bad, err)
		}
	}
}

// TestStateTablesWithDots: a database and a table name that hold dots are
// stored apart, so `a.b`.`c` and `a`.`b.c` stay two tables after a round
// trip (a "db.table" string split at its first dot made both `a`.`b.c`);
// a version-1 record's strings still read.
func TestStateTablesWithDots(t *testing.T) {
	tables := []snapshot.TableID{{DB: "a.b", Table: "c"}, {DB: "a", Table: "b.c"}, {DB: "x", Table: "y"}}
	st := State{Position: binlog.Position{Flavor: binlog.FlavorMariaDB, GTIDSet: "0-1-1"},
		Snapshot: &snapshot.Progress{Tables: tables, Table: 1}}
	b, err := MarshalState(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalState(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(st, got); d != "" {
		t.Fatalf("after a round trip through %s (-want +got):\n%s", b, d)
	}
	old, err := UnmarshalState([]byte(`{"version":1,"flavor":"mariadb","gtid_set":"0-1-1","snapshot":{"tables":["x.y","db.t.with.dots"],"table":0,"rows":0,"table_rows":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []snapshot.TableID{{DB: "x", Table: "y"}, {DB: "db", Table: "t.with.dots"}}; !cmp.Equal(old.Snapshot.Tables, want) {
		t.Fatalf("version-1 tables read as %v, want %v", old.Snapshot.Tables, want)
	}
}
