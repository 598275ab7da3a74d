//go:build integration

package chaos

import (
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/lakecheck"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/validate"
)

// tally sorts the failures of the checks into lost, duplicated and
// mismatched, and reports the first of each.
type tally struct {
	lost, dup, bad int
	shown          map[string]int
	lines          []string
}

func (t *tally) add(kind, line string) {
	switch kind {
	case "lost":
		t.lost++
	case "duplicated":
		t.dup++
	default:
		kind = "mismatched"
		t.bad++
	}
	if t.shown == nil {
		t.shown = map[string]int{}
	}
	if t.shown[kind]++; t.shown[kind] <= 15 {
		t.lines = append(t.lines, kind+": "+line)
	}
}

// classify sorts a validator's failure line by what it says.
func classify(line string) string {
	switch {
	case strings.Contains(line, "missing"), strings.Contains(line, "never applied"), strings.Contains(line, "lost its stored"),
		strings.Contains(line, "no snapshot of"):
		return "lost"
	case strings.Contains(line, "again"), strings.Contains(line, "times"), strings.Contains(line, "twice"),
		strings.Contains(line, "commit id"), strings.Contains(line, "past the end"):
		return "duplicated"
	}
	return "mismatched"
}

type logID struct {
	table, op string
	ver       int64
}

// verify waits until everything the writer committed is on the topics and
// in the lake, then checks, for the topics: every source change streamed
// after the initial snapshot is there exactly once with its values, each
// key's changes in commit order, a tombstone after each delete, at most
// one snapshot read per key per snapshot; and for the lake: each keyed
// table equals MariaDB value by value, the keyless table holds each change
// once, and every offset of every topic was applied in exactly one
// snapshot. It returns the failures counted as lost, duplicated and
// mismatched, and the number of source changes checked.
func (h *harness) verify() (lost, dup, bad, changes int) {
	t := h.t
	ctx := t.Context()
	h.caughtUp(5 * time.Minute)
	brokers := testenv.KafkaBrokers(t)
	var topics []string
	for _, tp := range kafkatest.ListTopics(t, brokers) {
		if strings.HasPrefix(tp, h.prefix+"."+h.dbName+".") && !strings.HasSuffix(tp, ".zz_caught_up") {
			topics = append(topics, tp)
		}
	}
	sort.Strings(topics)
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string][]kafkatest.Record{}
	kafkatest.ConsumeTopics(t, brokers, topics, 0, 5*time.Minute, func(r *kgo.Record) {
		rec, err := dec.DecodeRecord(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		recs[r.Topic] = append(recs[r.Topic], rec)
	})
	ends := map[string]map[int32]int64{}
	for _, tp := range topics {
		ends[tp] = map[int32]int64{}
		for _, r := range recs[tp] {
			if r.Value != nil { // ingest stores no offset for a trailing tombstone
				ends[tp][r.Partition] = max(ends[tp][r.Partition], r.Offset+1)
			}
		}
	}
	h.logf("the topics hold %d records over %d topics; waiting for the lake to store their ends", count(recs), len(topics))
	testenv.CheckFor(t, 8*time.Minute, 2*time.Second, func() error {
		for _, ns := range h.namespaces {
			if err := h.stored(ns, topics, ends); err != nil {
				return err
			}
		}
		return nil
	})
	h.logf("the lake stores every topic's end")

	var tl tally
	// The topics, against the writer's log.
	h.w.mu.Lock()
	log, seeded, snapEnd := h.w.log, h.w.seeded, h.w.snapEnd
	absorbedN := 0
	h.w.mu.Unlock()
	idx := map[logID]int{}
	for i, c := range log {
		if c.op != "t" {
			idx[logID{c.table, c.op, c.ver}] = i
		}
	}
	seen := make([]int, len(log))
	reads := map[string][]int{} // table/key → log index of the change each snapshot read shows
	lastSeq := map[string]int{}
	truncates := map[string]int{}
	for _, tp := range topics {
		kv := validate.Events(validate.PositionOrder(), validate.Tombstones(), validate.SnapshotReads())
		validate.NoteRecords(kv, recs[tp], nil)
		for _, f := range kv.Failures() {
			tl.add(classify(f), tp+": "+f)
		}
		for _, r := range recs[tp] {
			if r.Value == nil {
				continue
			}
			src, _ := r.Value["source"].(map[string]any)
			tbl, _ := src["table"].(string)
			op := r.Op()
			at := fmt.Sprintf("%s[%d]@%d %s", tp, r.Partition, r.Offset, op)
			if op == "t" {
				truncates[tbl]++
				continue
			}
			img, _ := r.Value["after"].(map[string]any)
			if op == "d" {
				img, _ = r.Value["before"].(map[string]any)
			}
			ver, ok := img["ver"].(int64)
			if !ok {
				tl.add("mismatched", at+": no ver in the row image")
				continue
			}
			if op == "r" {
				i, ok := writtenAt(idx, tbl, ver)
				if !ok {
					tl.add("mismatched", fmt.Sprintf("%s: snapshot read of %s ver %d, which the writer never wrote", at, tbl, ver))
					continue
				}
				if c := log[i]; c.key != "" {
					k := c.table + "/" + c.key
					reads[k] = append(reads[k], i)
				}
				continue
			}
			i, ok := idx[logID{tbl, op, ver}]
			if !ok {
				tl.add("mismatched", fmt.Sprintf("%s: %s ver %d is no change the writer made", at, tbl, ver))
				continue
			}
			seen[i]++
			c := log[i]
			if k := canonicalKey(r.Key); c.key != "" && k != c.key {
				tl.add("mismatched", fmt.Sprintf("%s: key %s, the writer changed %s", at, k, c.key))
			}
			if c.image != "" && op != "d" {
				if got := eventImage(tbl, img); got != c.image {
					tl.add("mismatched", fmt.Sprintf("%s: %s ver %d carries %q, the writer wrote %q", at, tbl, ver, got, c.image))
				}
			}
			if c.key != "" {
				k := c.table + "/" + c.key
				if last, ok := lastSeq[k]; ok && last >= i {
					tl.add("mismatched", fmt.Sprintf("%s: %s %s change %d after change %d: out of commit order", at, tbl, c.key, i, last))
				}
				lastSeq[k] = i
			}
		}
	}
	for i, c := range log {
		switch {
		case c.op == "t":
		case i < seeded && seen[i] > 0:
			tl.add("duplicated", fmt.Sprintf("%s %s ver %d: made before the initial snapshot, yet streamed %d times", c.table, c.op, c.ver, seen[i]))
		case i >= seeded && seen[i] == 0 && i < snapEnd && absorbed(c, i, snapEnd, reads[c.table+"/"+c.key]):
			// Made while the initial snapshot ran and read by it: the
			// snapshot's reads carry it, not the stream (by design).
			absorbedN++
		case i >= seeded && seen[i] == 0:
			tl.add("lost", fmt.Sprintf("%s %s %s ver %d (change %d): not on the topics", c.table, c.op, c.key, c.ver, i))
		case i >= seeded && seen[i] > 1:
			tl.add("duplicated", fmt.Sprintf("%s %s %s ver %d: on the topics %d times", c.table, c.op, c.key, c.ver, seen[i]))
		}
	}
	if n := truncates["Order Lines"]; n != 1 {
		tl.add(map[bool]string{true: "lost", false: "duplicated"}[n == 0], fmt.Sprintf("the truncate of Order Lines is on the topics %d times", n))
	}
	changes = len(log) - seeded

	// The lakes.
	admin := h.db.AdminDB(t, h.dbName)
	for _, ns := range h.namespaces {
		h.checkLake(&tl, admin, ns, topics, recs, ends)
	}
	for _, l := range tl.lines {
		t.Error(l)
	}
	h.logf("%d changes made while the initial snapshot ran are in its reads, not streamed", absorbedN)
	h.logf("verified %d source changes (%d before the initial snapshot), %d topics, %d lake tables in each of %d lakes", changes, seeded, len(topics), len(lakeTables), len(h.namespaces))
	return tl.lost, tl.dup, tl.bad, changes
}

// checkLake checks the tables of namespace ns.
func (h *harness) checkLake(tl *tally, admin *sql.DB, ns string, topics []string, recs map[string][]kafkatest.Record, ends map[string]map[int32]int64) {
	t, ctx := h.t, h.t.Context()
	tiled := map[string]bool{}
	for _, lt := range lakeTables {
		tbl, err := h.cat.LoadTable(ctx, table.Identifier{ns, lt.lake})
		if err != nil {
			tl.add("lost", fmt.Sprintf("lake table %s.%s: %v", ns, lt.lake, err))
			continue
		}
		if lt.key != "" {
			key := strings.Split(lt.key, ",")
			got, types, err := lakecheck.Iceberg(ctx, tbl, key)
			if err != nil {
				tl.add(classify(err.Error()), err.Error())
				continue
			}
			want, err := lakecheck.MariaDB(ctx, admin, lt.source, key, types)
			if err != nil {
				t.Fatalf("reading %s from MariaDB: %v", lt.source, err)
			}
			for _, d := range lakecheck.Diff(want, got, 1<<30) {
				kind := "mismatched"
				if strings.Contains(d, "missing from Iceberg") {
					kind = "lost"
				}
				tl.add(kind, ns+"."+lt.lake+": "+d)
			}
			h.logf("lake %s.%s: %d rows, MariaDB %d", ns, lt.lake, len(got.ByKey), len(want.ByKey))
		} else {
			for _, tp := range topics {
				if !strings.HasSuffix(tp, "."+lt.source) {
					continue
				}
				cl := validate.ChangeLogOnce(tp)
				validate.NoteRecords(cl, recs[tp], nil)
				if err := validate.ChangeLogRows(ctx, tbl, cl); err != nil {
					t.Fatal(err)
				}
				for _, f := range cl.Failures() {
					tl.add(classify(f), ns+"."+lt.lake+": "+f)
				}
				h.logf("lake %s.%s: the change log of %d records checked", ns, lt.lake, len(recs[tp]))
			}
		}
		hist, err := validate.History(tbl)
		if err != nil {
			t.Fatal(err)
		}
		fed := map[string]bool{}
		for _, s := range hist {
			for k := range s.Summary {
				if tp, ok := strings.CutPrefix(k, validate.OffsetsKeyPrefix); ok {
					fed[tp] = true
				}
			}
		}
		for tp := range fed {
			v := validate.OffsetTiling(tp)
			v.NoteApplied(recs[tp])
			for _, s := range hist {
				v.NoteSnapshot(s)
			}
			for p, n := range ends[tp] {
				v.NoteEnd(p, n)
			}
			for _, f := range v.Failures() {
				tl.add(classify(f), ns+"."+lt.lake+": "+f)
			}
			tiled[tp] = true
			h.logf("lake %s.%s: %s", ns, lt.lake, v)
		}
	}
	for _, tp := range topics {
		if !tiled[tp] && len(ends[tp]) > 0 {
			tl.add("lost", fmt.Sprintf("%s: no lake table stores the offsets of %s", ns, tp))
		}
	}
}

// stored checks that the tables of namespace ns store every topic's end
// offsets, in the newest snapshot holding each (a renamed table's current
// snapshot no longer names its old topic).
func (h *harness) stored(ns string, topics []string, ends map[string]map[int32]int64) error {
	ctx := h.t.Context()
	stored := map[string]map[int32]int64{}
	for _, lt := range lakeTables {
		tbl, err := h.cat.LoadTable(ctx, table.Identifier{ns, lt.lake})
		if err != nil || tbl.CurrentSnapshot() == nil {
			continue
		}
		hist, err := validate.History(tbl)
		if err != nil {
			return err
		}
		for _, s := range hist {
			for k, v := range s.Summary {
				if tp, ok := strings.CutPrefix(k, validate.OffsetsKeyPrefix); ok {
					if offs, err := validate.ParseOffsets(v); err == nil {
						stored[tp] = offs
					}
				}
			}
		}
	}
	for _, tp := range topics {
		for p, end := range ends[tp] {
			if stored[tp][p] < end {
				return fmt.Errorf("%s: %s[%d]: the lake stores offset %d, the topic ends at %d", ns, tp, p, stored[tp][p], end)
			}
		}
	}
	return nil
}

func count(m map[string][]kafkatest.Record) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// canonicalKey renders a record key as the writer's log does.
func canonicalKey(k map[string]any) string {
	if k == nil {
		return ""
	}
	names := make([]string, 0, len(k))
	for n := range k {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%v", n, k[n]))
	}
	return strings.Join(parts, ",")
}

// eventImage renders the values of a row image the writer's log keeps.
func eventImage(table string, img map[string]any) string {
	switch table {
	case "orders":
		return fmt.Sprintf("%v|%v", img["qty"], img["note"])
	case "Order Lines":
		return fmt.Sprint(img["sku"])
	case "audit":
		return fmt.Sprint(img["msg"])
	case "late":
		return fmt.Sprint(img["t"])
	}
	return fmt.Sprint(img["v"])
}

// renamedFrom is the old name of a table renamed mid-run: its rows
// written before the rename are in the writer's log under that name.
var renamedFrom = map[string]string{"ren_b": "ren_a"}

// writtenAt is the log index of the change that wrote ver into tbl (or
// into the table it was renamed from).
func writtenAt(idx map[logID]int, tbl string, ver int64) (int, bool) {
	for _, name := range []string{tbl, renamedFrom[tbl]} {
		if name == "" {
			continue
		}
		for _, op := range []string{"c", "u"} {
			if i, ok := idx[logID{name, op, ver}]; ok {
				return i, true
			}
		}
	}
	return 0, false
}

// absorbed reports whether keyed change c (log index i), made while the
// initial snapshot ran and absent from the stream, is held by the
// snapshot instead: an insert or update is when a snapshot read of its key
// shows it or a later change made before the snapshot ended; a delete is when no snapshot read of its key
// shows a change before it (a read before the delete would need the delete
// streamed after it). A keyless change is never absorbed here (the keyless
// table is written only after the snapshot).
func absorbed(c change, i, snapEnd int, reads []int) bool {
	if c.key == "" {
		return false
	}
	if c.op == "d" {
		for _, r := range reads {
			if r < i {
				return false
			}
		}
		return true
	}
	for _, r := range reads {
		if r >= i && r < snapEnd { // a read of the initial snapshot, not of a later one
			return true
		}
	}
	return false
}
