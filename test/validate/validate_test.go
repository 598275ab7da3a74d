package validate

import (
	"strings"
	"testing"

	"github.com/binlake/binlake/test/lakecheck"
)

const topic = "p.db.t"

func ev(p int32, off int64, key, op, row string, pos int64) Event {
	return Event{Topic: topic, Partition: p, Offset: off, Key: key, Op: op, Row: row, Pos: Position{File: "bin.000001", Pos: pos}}
}

func tomb(p int32, off int64, key string) Event {
	return Event{Topic: topic, Partition: p, Offset: off, Key: key}
}

func run(v EventValidator, evs ...Event) []string {
	for _, e := range evs {
		v.NoteEvent(e)
	}
	return v.Failures()
}

// check fails unless the failures are none (want == "") or one of them
// contains want.
func check(t *testing.T, got []string, want string) {
	t.Helper()
	if want == "" {
		if len(got) > 0 {
			t.Fatalf("want no failures, got:\n%s", strings.Join(got, "\n"))
		}
		return
	}
	for _, f := range got {
		if strings.Contains(f, want) {
			return
		}
	}
	t.Fatalf("want a failure containing %q, got %q", want, got)
}

var source = []Change{
	{"id=1", "c", "v=0"}, {"id=2", "c", "v=0"}, {"id=1", "u", "v=1"}, {"id=1", "d", "v=1"}, {"id=1", "c", "v=0"},
}

// good is source on a topic: per key in order, a tombstone after the delete.
func good() []Event {
	return []Event{
		ev(0, 0, "id=1", "c", "v=0", 10), ev(1, 0, "id=2", "c", "v=0", 11), ev(0, 1, "id=1", "u", "v=1", 12),
		ev(0, 2, "id=1", "d", "v=1", 13), tomb(0, 3, "id=1"), ev(0, 4, "id=1", "c", "v=0", 14),
	}
}

func TestExactlyOnce(t *testing.T) {
	g := good()
	for _, tc := range []struct {
		name string
		evs  []Event
		want string
	}{
		{"good", g, ""},
		{"duplicate", append(append([]Event{}, g...), ev(0, 5, "id=1", "u", "v=1", 12)), "change u:v=1 on the topic 1 time(s) too many"},
		{"lost", append(append([]Event{}, g[:2]...), g[3:]...), "change u:v=1 missing 1 time(s)"},
		{"foreign", append(append([]Event{}, g...), ev(2, 0, "id=3", "c", "v=0", 15)), "key id=3: change c:v=0 on the topic 1 time(s) too many"},
		{"wrong value", []Event{g[0], g[1], ev(0, 1, "id=1", "u", "v=9", 12), g[3], g[4], g[5]}, "change u:v=1 missing"},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, run(ExactlyOnce(source), tc.evs...), tc.want) })
	}
}

func TestKeyOrder(t *testing.T) {
	g := good()
	check(t, run(KeyOrder(source), g...), "")
	// A missing change is not an ordering failure.
	check(t, run(KeyOrder(source), g[0], g[1], g[3], g[4], g[5]), "")
	// Swapped update and delete.
	check(t, run(KeyOrder(source), g[0], g[1], g[3], g[2], g[4], g[5]), "key id=1: u:v=1")
	// Redelivered after a later change: the replay after a restart.
	check(t, run(KeyOrder(source), g[0], g[1], g[2], g[3], g[2]), "key id=1: u:v=1")
}

func TestPositionOrder(t *testing.T) {
	g := good()
	check(t, run(PositionOrder(), g...), "")
	check(t, run(PositionOrder(), ev(0, 0, "id=1", "c", "", 20), ev(0, 1, "id=1", "u", "", 19)), "at bin.000001:19#0 after")
	check(t, run(PositionOrder(), ev(0, 0, "id=1", "c", "", 20), ev(3, 0, "id=1", "u", "", 21)), "in partitions 0 and 3")
	// A later binlog file orders after any position of an earlier one.
	later := ev(0, 1, "id=1", "u", "", 4)
	later.Pos.File = "bin.000002"
	check(t, run(PositionOrder(), ev(0, 0, "id=1", "c", "", 20), later), "")
	// Snapshot reads carry the snapshot's position; not checked.
	check(t, run(PositionOrder(), ev(0, 0, "id=1", "c", "", 20), ev(0, 1, "id=1", "r", "", 5)), "")
}

func TestTombstones(t *testing.T) {
	g := good()
	check(t, run(Tombstones(), g...), "")
	check(t, run(Tombstones(), g[0], g[3], g[5]), "where the tombstone of")
	check(t, run(Tombstones(), g[0], g[3]), "no tombstone after")
	check(t, run(Tombstones(), g[0], tomb(0, 1, "id=1")), "follows no delete")
	check(t, run(Tombstones(), g[3], tomb(0, 3, "id=1"), tomb(0, 4, "id=1")), "follows no delete")
	// Keyless tables: a delete's tombstone has a null key, not checked.
	check(t, run(Tombstones(), ev(0, 0, "", "d", "", 1), ev(1, 0, "", "c", "", 2)), "")
}

func TestSnapshotReads(t *testing.T) {
	r := func(off int64, key, marker string) Event {
		e := ev(0, off, key, "r", "", 1)
		e.Snapshot = marker
		return e
	}
	check(t, run(SnapshotReads(), r(0, "id=1", "first"), r(1, "id=2", "true"), r(2, "id=3", "last")), "")
	check(t, run(SnapshotReads(), r(0, "id=1", "first"), r(1, "id=2", "true"), r(2, "id=1", "true")), "key id=1 read twice in one initial snapshot")
	// A second snapshot (a new first marker) may read the key again.
	check(t, run(SnapshotReads(), r(0, "id=1", "first"), r(1, "id=1", "first")), "")
	check(t, run(SnapshotReads(), r(0, "id=1", "incremental"), r(1, "id=1", "incremental")), "read twice in one incremental snapshot")
	// A multi-partition topic: the second snapshot's first record is in
	// partition 0, its other reads in partition 2, which is read first.
	at := func(p int32, off int64, key, marker string, ts int64) Event {
		e := r(off, key, marker)
		e.Partition, e.TsMs = p, ts
		return e
	}
	resnap := []Event{at(2, 0, "id=2", "true", 100), at(2, 5, "id=2", "true", 900), at(2, 6, "id=3", "true", 901),
		at(0, 0, "id=1", "first", 99), at(0, 4, "id=1", "first_in_data_collection", 899)}
	check(t, run(SnapshotReads(), resnap...), "")
	check(t, run(SnapshotReads(), append(resnap, at(1, 0, "id=3", "true", 950))...), "key id=3 read twice in one initial snapshot")
	// Streamed changes of a key between its reads are no excuse.
	check(t, run(SnapshotReads(), r(0, "id=1", "first"), ev(0, 1, "id=1", "u", "", 5), r(2, "id=1", "true")), "read twice")
}

func TestEventsComposes(t *testing.T) {
	g := good()
	v := Events(ExactlyOnce(source), KeyOrder(source), Tombstones())
	check(t, run(v, g...), "")
	// Dropping the tombstone and duplicating the first change fails two
	// validators.
	got := run(Events(ExactlyOnce(source), KeyOrder(source), Tombstones()), g[0], g[1], g[2], g[3], g[5], g[0])
	check(t, got, "exactly once:")
	check(t, got, "tombstones:")
	check(t, got, "key order:")
}

func snap(id int64, offsets, commit string) Snapshot {
	s := Snapshot{ID: id, Summary: map[string]string{CommitIDKey: commit}}
	if offsets != "" {
		s.Summary[OffsetsKeyPrefix+topic] = offsets
	}
	return s
}

func tiling(ends map[int32]int64, snaps ...Snapshot) []string {
	v := OffsetTiling(topic)
	for _, s := range snaps {
		v.NoteSnapshot(s)
	}
	for p, n := range ends {
		v.NoteEnd(p, n)
	}
	return v.Failures()
}

func TestOffsetTiling(t *testing.T) {
	ends := map[int32]int64{0: 30, 1: 7}
	for _, tc := range []struct {
		name  string
		snaps []Snapshot
		want  string
	}{
		{"tiles", []Snapshot{snap(1, `{"0":10}`, "a"), snap(2, `{"0":10,"1":7}`, "b"),
			snap(3, "", ""), // maintenance: no offsets
			snap(4, `{"0":30,"1":7}`, "c")}, ""},
		{"gap at the end", []Snapshot{snap(1, `{"0":10,"1":7}`, "a")}, "partition 0: offsets [10, 30) never applied"},
		{"partition never applied", []Snapshot{snap(1, `{"0":30}`, "a")}, "partition 1: offsets [0, 7) never applied"},
		// The offset store ignored: each restart starts the partition over
		// and stores only what its batch consumed.
		{"restart from zero", []Snapshot{snap(1, `{"0":20,"1":7}`, "a"), snap(2, `{"0":12}`, "b"), snap(3, `{"0":30}`, "c")},
			"partition 0: snapshot 2 stores offset 12 below the 20 stored before"},
		{"lost partition", []Snapshot{snap(1, `{"0":20,"1":7}`, "a"), snap(2, `{"0":30}`, "b")}, "partition 1 lost its stored offset"},
		{"replay after loss", []Snapshot{snap(1, `{"0":20,"1":7}`, "a"), snap(2, `{"1":7}`, "b"), snap(3, `{"0":30,"1":7}`, "c")},
			"partition 0: offsets [0, 20) applied again by snapshot 3 (first applied by snapshot 1)"},
		{"commit twice", []Snapshot{snap(1, `{"0":20,"1":7}`, "a"), snap(2, `{"0":25,"1":7}`, "b"), snap(3, `{"0":30,"1":7}`, "a")}, "commit id a in snapshots 1 and 3"},
		{"one commit, two snapshots", []Snapshot{snap(1, `{"0":20,"1":7}`, "a"), snap(2, `{"0":30,"1":7}`, "b"), snap(3, `{"0":30,"1":7}`, "b")}, ""},
		{"past the end", []Snapshot{snap(1, `{"0":31,"1":7}`, "a")}, "past the end 30"},
		{"corrupt", []Snapshot{snap(1, `{"0":`, "a")}, "offsets"},
		{"no ingest snapshot", []Snapshot{snap(1, "", "")}, "no snapshot of 1 holds its offsets"},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, tiling(ends, tc.snaps...), tc.want) })
	}
}

// TestOffsetTilingFirstOffsets checks a snapshot's first applied offsets
// against the records of the topic: the stored offsets alone cannot tell a
// range [0, 30) from [12, 30) resumed from offsets another table held.
func TestOffsetTilingFirstOffsets(t *testing.T) {
	withFirst := func(s Snapshot, first string) Snapshot { s.Summary[FirstOffsetsKeyPrefix+topic] = first; return s }
	run := func(snaps ...Snapshot) []string {
		v := OffsetTiling(topic)
		// Records at 0..9, a transaction marker at 10, records 11..29.
		for o := int64(0); o < 30; o++ {
			if o != 10 {
				v.NoteRecord(0, o)
			}
		}
		for _, s := range snaps {
			v.NoteSnapshot(s)
		}
		v.NoteEnd(0, 30)
		return v.Failures()
	}
	check(t, run(withFirst(snap(1, `{"0":10}`, "a"), `{"0":0}`), withFirst(snap(2, `{"0":30}`, "b"), `{"0":11}`)), "")
	check(t, run(withFirst(snap(1, `{"0":30}`, "a"), `{"0":12}`)),
		"partition 0: offsets [0, 12) never applied: snapshot 1's range starts at 12, past the record at 0")
	check(t, run(withFirst(snap(1, `{"0":10}`, "a"), `{"0":0}`), withFirst(snap(2, `{"0":30}`, "b"), `{"0":12}`)),
		"offsets [10, 12) never applied: snapshot 2's range starts at 12, past the record at 11")
	check(t, run(withFirst(snap(1, `{"0":10}`, "a"), `{"0":0}`), withFirst(snap(2, `{"0":30}`, "b"), `{"0":9}`)),
		"snapshot 2 applied offsets from 9, below the 10 stored before it")
	check(t, run(withFirst(snap(1, `{"0":30}`, "a"), `{"0":`)), "first offsets")
}

func TestChangeLogOnce(t *testing.T) {
	evs := []Event{ev(0, 0, "", "c", "", 1), ev(1, 0, "", "u", "", 2), ev(0, 1, "", "d", "", 3), tomb(0, 2, ""), ev(1, 1, "", "t", "", 4)}
	rows := []ChangeRow{{0, 0, false}, {1, 0, true}, {1, 0, false}, {0, 1, true}, {1, 1, false}}
	cl := func(rows ...ChangeRow) []string {
		v := ChangeLogOnce(topic)
		for _, e := range evs {
			v.NoteEvent(e)
		}
		for _, r := range rows {
			v.NoteRow(r)
		}
		return v.Failures()
	}
	check(t, cl(rows...), "")
	check(t, cl(append(rows, rows[1])...), "p.db.t[1]@0 before image of u in the table 2 times")
	check(t, cl(rows[1:]...), "p.db.t[0]@0 after image of c missing")
	check(t, cl(append(rows, ChangeRow{0, 2, false})...), "[0]@2 after image in the table 1 time(s), but no such change")
}

func TestTableEquals(t *testing.T) {
	want := lakecheck.Rows{Columns: []string{"id", "v"}, ByKey: map[string][]string{"1": {"1", "a"}, "2": {"2", "b"}}}
	same := lakecheck.Rows{Columns: []string{"id", "v"}, ByKey: map[string][]string{"1": {"1", "a"}, "2": {"2", "b"}}}
	check(t, TableEquals("t", want, same).Failures(), "")
	other := lakecheck.Rows{Columns: []string{"id", "v"}, ByKey: map[string][]string{"1": {"1", "x"}, "3": {"3", "c"}}}
	got := TableEquals("t", want, other).Failures()
	check(t, got, `key 1 column v: mariadb="a" iceberg="x"`)
	check(t, got, "key 2: missing from Iceberg")
	check(t, got, "key 3: in Iceberg, not in MariaDB")
}
