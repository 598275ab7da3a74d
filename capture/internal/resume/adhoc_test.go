package resume

import (
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/capture/internal/stream"
)

// TestNewTables runs the policy for tables the lists newly capture over
// snapshot mode × stored lists × what the source and the history hold.
func TestNewTables(t *testing.T) {
	narrow := &stream.TableLists{TableInclude: `db\.a`}
	wide := &stream.TableLists{TableInclude: `db\..*`}
	src := server{tables: ids("db.a", "db.b", "db.c")}
	for _, tc := range []struct {
		name      string
		mode      snapshot.Mode
		stored    bool
		lists     *stream.TableLists // stored
		adhoc     *snapshot.Progress // stored
		history   map[string]schemahist.Definition
		want      *snapshot.Progress
		wantStore bool
	}{
		{name: "initial, lists widened", mode: snapshot.ModeInitial, stored: true, lists: narrow,
			want: &snapshot.Progress{Tables: ids("db.b", "db.c")}, wantStore: true},
		{name: "when_needed, lists widened", mode: snapshot.ModeWhenNeeded, stored: true, lists: narrow,
			want: &snapshot.Progress{Tables: ids("db.b", "db.c")}, wantStore: true},
		{name: "no_data, lists widened: only the lists are stored", mode: snapshot.ModeNoData, stored: true, lists: narrow, wantStore: true},
		{name: "never, lists widened: only the lists are stored", mode: snapshot.ModeNever, stored: true, lists: narrow, wantStore: true},
		{name: "initial_only, lists widened: only the lists are stored", mode: snapshot.ModeInitialOnly, stored: true, lists: narrow, wantStore: true},
		{name: "lists unchanged", mode: snapshot.ModeInitial, stored: true, lists: wide},
		{name: "stored without lists (older capture)", mode: snapshot.ModeInitial, stored: true, wantStore: true},
		{name: "new capture", mode: snapshot.ModeInitial, lists: narrow, wantStore: true},
		{name: "a table of the history is not new", mode: snapshot.ModeInitial, stored: true, lists: narrow,
			history: map[string]schemahist.Definition{"db.b": {DB: "db", Table: "b"}},
			want:    &snapshot.Progress{Tables: ids("db.c")}, wantStore: true},
		{name: "appended to the ad-hoc snapshot, a table still to read not twice", mode: snapshot.ModeInitial, stored: true, lists: narrow,
			adhoc: &snapshot.Progress{Tables: ids("db.x", "db.c"), Table: 1, Rows: 5},
			want:  &snapshot.Progress{Tables: ids("db.x", "db.c", "db.b"), Table: 1, Rows: 5}, wantStore: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stream.State{Position: storedPos}
			st.Lists, st.Incremental = tc.lists, tc.adhoc
			store, err := NewTables(t.Context(), tc.mode, &st, tc.stored, wide, tc.history, src, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, st.Incremental); d != "" {
				t.Errorf("ad-hoc snapshot (-want +got):\n%s", d)
			}
			if store != tc.wantStore || *st.Lists != *wide {
				t.Errorf("store %v with lists %+v, want %v with the current lists", store, st.Lists, tc.wantStore)
			}
		})
	}
	st := stream.State{IncrementalState: stream.IncrementalState{Lists: &stream.TableLists{TableInclude: "("}}}
	if _, err := NewTables(t.Context(), snapshot.ModeInitial, &st, true, wide, nil, src, nil); err == nil {
		t.Error("stored lists that do not compile accepted")
	}
}
