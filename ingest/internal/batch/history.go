package batch

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrHistoryUnordered reports a change that ingest cannot place in the
// table's binlog histories: it could precede or follow a history change
// (failover, RESET MASTER) in the same second. Ingest stops rather than
// guess, since a wrong guess drops or keeps a row a truncate decides.
var ErrHistoryUnordered = errors.New("batch: change cannot be ordered against the source's binlog histories")

// An Epoch is one binlog history of a table's source, as ingest saw it:
// the changes between two history changes (a failover to another server,
// RESET MASTER, a new log_bin basename), whose [SourceOrder]s compare with
// each other and not with another history's. Epochs are numbered in the
// order ingest met them, which is the source's: a history change is seen
// first as a change of a newer source time whose binlog position is lower
// than one already applied, or that names another binlog basename.
type Epoch struct {
	// Binlog is the binlog basename of the history ("mysql-bin").
	Binlog string `json:"binlog"`
	// Since is the source.ts_ms of the earliest change applied from the
	// history, First and Last its lowest and highest in-history order,
	// MaxTs the newest source.ts_ms applied from it.
	Since int64 `json:"since"`
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	MaxTs int64 `json:"max_ts"`
}

// Epochs is a table's histories, oldest first; an event's epoch is its
// index, kept in the top bits of its order ([EpochOrder]).
type Epochs []Epoch

// MaxEpochs bounds a table's histories (the bits left above a binlog
// position in an int64 order).
const MaxEpochs = 1 << epochBits

// EpochOrder returns the order of a change at in-history order o (from
// [SourceOrder]) in epoch e: every order of a later epoch sorts above
// every order of an earlier one, so truncate watermarks and the order
// column compare across histories.
func EpochOrder(e int, o int64) int64 { return int64(e)<<epochShift | o }

// ParseEpochs parses the JSON of a table's epochs property ("" is none).
func ParseEpochs(s string) (Epochs, error) {
	if s == "" {
		return nil, nil
	}
	var hs Epochs
	if err := json.Unmarshal([]byte(s), &hs); err != nil {
		return nil, fmt.Errorf("parsing epochs: %w", err)
	}
	return hs, nil
}

// String is the JSON form ParseEpochs reads.
func (hs Epochs) String() string {
	b, _ := json.Marshal(hs) // plain struct of strings and ints
	return string(b)
}

// Basename returns the binlog basename of a binlog file name: the part
// before the last dot ("mysql-bin" of "mysql-bin.000042").
func Basename(file string) string {
	if i := strings.LastIndexByte(file, '.'); i >= 0 {
		return file[:i]
	}
	return file
}

// Place gives every event of the buffer that committed does not cover and
// that has a source order its epoch among hs: it sets the event's Order
// (and the order column of its row) to [EpochOrder] of its epoch and its
// order within its history, so that [Buffer.Collapse] and the table
// compare orders of different histories by the order the histories came
// in. It returns hs with the epochs the events add or extend; hs itself is
// not changed. Place can be called again (a commit retried against a newer
// table): it starts from each event's in-history order.
//
// The rule, for an event at in-history order o and source time ts, with
// cur the newest epoch:
//   - ts before cur began (cur.Since): a late change of an older history
//     (a lagging partition); it takes the newest epoch that began at or
//     before ts.
//   - otherwise it is of cur, unless it starts a new history: its binlog
//     basename is not cur's, or its order is below one cur applied (o <
//     cur.Last) while its time is newer than every change cur applied
//     (ts > cur.MaxTs) — a binlog does not go back, so the source's
//     binlog restarted (RESET MASTER, or a failover to a server whose
//     files number lower). A snapshot row (op=r, or a change-log row
//     marked [Event.SnapshotRead]) carries the time it was read, not a
//     binlog time, and starts a history only by basename.
//   - In the second cur began, an event of cur's basename below cur's
//     first order could be a late change of either: ErrHistoryUnordered.
//
// Events are placed by source time, then order, so that one batch that
// spans a history change places the old history's changes first.
func (b *Buffer) Place(hs Epochs, committed Offsets) (Epochs, error) {
	hs = slices.Clone(hs)
	idx := slices.Index(b.columns, OrderColumn)
	for i := len(b.inHistory); i < len(b.events); i++ {
		b.inHistory = append(b.inHistory, b.events[i].Order)
	}
	todo := make([]int, 0, len(b.events))
	for i := range b.events {
		ev := &b.events[i]
		if b.inHistory[i] > 0 && !committed.Covers(ev.Topic, ev.Partition, ev.Offset) {
			todo = append(todo, i)
		}
	}
	slices.SortStableFunc(todo, func(x, y int) int {
		return cmp.Or(cmp.Compare(b.events[x].TsMs, b.events[y].TsMs), cmp.Compare(b.inHistory[x], b.inHistory[y]))
	})
	for _, i := range todo {
		ev, o := &b.events[i], b.inHistory[i]
		e, err := hs.place(ev, o)
		if err != nil {
			return nil, fmt.Errorf("%w: %c event at %s/%d/%d (binlog %s, order %s, ts_ms %d) against the histories %s", err, ev.Op, ev.Topic, ev.Partition, ev.Offset, ev.Binlog, FormatOrder(o), ev.TsMs, hs)
		}
		if e >= MaxEpochs {
			return nil, fmt.Errorf("%w: %c event at %s/%d/%d starts binlog history %d; a table holds at most %d", ErrHistoryUnordered, ev.Op, ev.Topic, ev.Partition, ev.Offset, e, MaxEpochs)
		}
		h := &hs[e]
		h.Since, h.MaxTs = min(h.Since, ev.TsMs), max(h.MaxTs, ev.TsMs)
		h.First, h.Last = min(h.First, o), max(h.Last, o)
		ev.Order = EpochOrder(e, o)
		if idx >= 0 && idx < len(ev.Row) && ev.Row[idx] != nil {
			ev.Row[idx] = ev.Order
		}
	}
	return hs, nil
}

// place returns the epoch of ev, appending a new one when ev starts a
// history.
func (hs *Epochs) place(ev *Event, o int64) (int, error) {
	ts := ev.TsMs
	n := len(*hs)
	start := func() int {
		*hs = append(*hs, Epoch{Binlog: ev.Binlog, Since: ts, First: o, Last: o, MaxTs: ts})
		return n
	}
	if n == 0 {
		return start(), nil
	}
	cur := (*hs)[n-1]
	switch {
	case ts < cur.Since:
		for e := n - 2; e >= 0; e-- {
			if (*hs)[e].Since <= ts {
				return e, nil
			}
		}
		return 0, nil
	case ts == cur.Since && ev.Binlog != cur.Binlog && n > 1 && ev.Binlog == (*hs)[n-2].Binlog:
		return n - 2, nil // the old history's last second
	case ev.Binlog != cur.Binlog:
		return start(), nil
	case o < cur.Last && ts > cur.MaxTs && ev.Op != OpRead && !ev.SnapshotRead:
		// A snapshot row's ts_ms is when it was read (milliseconds),
		// not its binlog time: it is newer than the changes streamed
		// after it in the same second (binlog times are whole seconds),
		// and an incremental snapshot's row can be newer than later
		// changes. It never starts a history by order.
		return start(), nil
	case ts == cur.Since && o < cur.First && n > 1:
		return 0, ErrHistoryUnordered
	}
	return n - 1, nil
}
