// Package progress draws a progress bar per table on a terminal while
// capture's snapshot runs: rows read, rows per second and the time left,
// from the server's estimate of each table's rows.
//
// The bars sit below the log: every log line written through the
// Terminal first erases them and they are drawn again after it, so logs
// and bars never interleave. Only ANSI cursor-up and erase-line sequences
// are used. When stderr is not a terminal none of this runs and capture
// writes plain logs.
package progress

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sample is what is known of one table's snapshot at a moment.
type Sample struct {
	Table     string // db.table
	Rows      int64  // rows read so far
	Estimated int64  // the server's estimate of the table's rows (0: unknown)
	Done      bool   // every row of the table has been emitted
}

// IsTerminal reports whether w is a character device (a terminal) and
// term (the TERM variable) does not say it cannot move the cursor.
func IsTerminal(w io.Writer, term string) bool {
	f, ok := w.(*os.File)
	if !ok || term == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// FromGatherer reads the samples from capture's metrics:
// capture_snapshot_rows_read_total, capture_snapshot_rows_estimated and
// capture_snapshot_table_done, by their table label, in the order the
// tables were first seen.
func FromGatherer(g prometheus.Gatherer) func() []Sample {
	var order []string
	return func() []Sample {
		mfs, err := g.Gather()
		if err != nil {
			return nil
		}
		by := map[string]*Sample{}
		get := func(table string) *Sample {
			s := by[table]
			if s == nil {
				s = &Sample{Table: table}
				by[table] = s
			}
			return s
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				table := ""
				for _, l := range m.GetLabel() {
					if l.GetName() == "table" {
						table = l.GetValue()
					}
				}
				if table == "" {
					continue
				}
				switch mf.GetName() {
				case "capture_snapshot_rows_read_total":
					get(table).Rows = int64(m.GetCounter().GetValue())
				case "capture_snapshot_rows_estimated":
					get(table).Estimated = int64(m.GetGauge().GetValue())
				case "capture_snapshot_table_done":
					get(table).Done = m.GetGauge().GetValue() > 0
				}
			}
		}
		var seen []string
		for t := range by {
			if !slices.Contains(order, t) {
				seen = append(seen, t)
			}
		}
		slices.Sort(seen) // first seen together: by name
		order = append(order, seen...)
		out := make([]Sample, 0, len(order))
		for _, t := range order {
			if s := by[t]; s != nil {
				out = append(out, *s)
			}
		}
		return out
	}
}

// Terminal is an io.Writer for the log that keeps progress bars below it.
type Terminal struct {
	mu     sync.Mutex
	w      io.Writer
	width  int
	drawn  int // lines of bars on the screen now
	bars   []byte
	tables map[string]*tableClock
	now    func() time.Time
}

// tableClock remembers when a table was first seen and when it finished.
type tableClock struct {
	start, end time.Time
}

// NewTerminal returns a Terminal writing to w, width columns wide (0 or
// less: 100).
func NewTerminal(w io.Writer, width int) *Terminal {
	if width <= 0 {
		width = 100
	}
	return &Terminal{w: w, width: width, tables: map[string]*tableClock{}, now: time.Now}
}

// Write writes a log line above the bars.
func (t *Terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b []byte
	b = t.erase(b)
	b = append(b, p...)
	b = append(b, t.bars...)
	t.drawn = strings.Count(string(t.bars), "\n")
	if _, err := t.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (t *Terminal) erase(b []byte) []byte {
	for range t.drawn {
		b = append(b, "\x1b[1A\x1b[2K"...) // cursor up one line, erase it
	}
	return b
}

// Run redraws the bars from source every interval until every table
// shown is done or ctx ends, then draws them a last time and leaves them
// in the scrollback.
func (t *Terminal) Run(ctx context.Context, source func() []Sample, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		samples := source()
		t.Update(samples)
		if ctx.Err() != nil || allDone(samples) {
			t.mu.Lock()
			t.drawn, t.bars = 0, nil
			t.mu.Unlock()
			return nil
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

func allDone(samples []Sample) bool {
	for _, s := range samples {
		if !s.Done {
			return false
		}
	}
	return len(samples) > 0
}

// Update draws the bars of samples in place of the previous ones.
func (t *Terminal) Update(samples []Sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var bars []byte
	for _, s := range samples {
		c := t.tables[s.Table]
		if c == nil {
			c = &tableClock{start: now}
			t.tables[s.Table] = c
		}
		if s.Done && c.end.IsZero() {
			c.end = now
		}
		end := now
		if !c.end.IsZero() {
			end = c.end
		}
		bars = Render(bars, s, end.Sub(c.start), t.width)
		bars = append(bars, '\n')
	}
	b := t.erase(nil)
	b = append(b, bars...)
	t.bars, t.drawn = bars, strings.Count(string(bars), "\n")
	_, _ = t.w.Write(b)
}

// Render appends one table's bar, at most width columns (no newline):
//
//	db.orders  [#########-----------]  45%  450,000/1,000,000 rows  90,000 rows/s  ETA 6s
//
// elapsed is the time since the table started (until it finished, when
// done). The percentage and ETA come from the estimate, which can be
// exceeded: the bar then stays full and waits for the table to finish.
func Render(dst []byte, s Sample, elapsed time.Duration, width int) []byte {
	rate := 0.0
	if elapsed > 0 {
		rate = float64(s.Rows) / elapsed.Seconds()
	}
	frac := 0.0
	switch {
	case s.Done:
		frac = 1
	case s.Estimated > 0:
		frac = min(float64(s.Rows)/float64(s.Estimated), 0.99)
	}
	var tail string
	switch {
	case s.Done:
		tail = fmt.Sprintf("%s rows  %s rows/s  done in %s", group(s.Rows), group(int64(rate)), round(elapsed))
	case s.Estimated > 0:
		eta := "?"
		if rate > 0 {
			left := max(s.Estimated-s.Rows, 0)
			eta = round(time.Duration(float64(left) / rate * float64(time.Second)))
		}
		tail = fmt.Sprintf("%s/~%s rows  %s rows/s  ETA %s", group(s.Rows), group(s.Estimated), group(int64(rate)), eta)
	default:
		tail = fmt.Sprintf("%s rows  %s rows/s", group(s.Rows), group(int64(rate)))
	}
	name := s.Table
	pct := fmt.Sprintf("%3d%%", int(frac*100))
	// name, 2 spaces, [bar], 2 spaces, pct, 2 spaces, tail
	barW := width - len(name) - len(tail) - len(pct) - 8
	if barW < 10 {
		barW = 0 // too narrow for a bar: the figures alone
	}
	start := len(dst)
	dst = append(dst, name...)
	dst = append(dst, "  "...)
	if barW > 0 {
		fill := int(frac * float64(barW))
		dst = append(dst, '[')
		dst = append(dst, strings.Repeat("#", fill)...)
		dst = append(dst, strings.Repeat("-", barW-fill)...)
		dst = append(dst, "]  "...)
	}
	dst = append(dst, pct...)
	dst = append(dst, "  "...)
	dst = append(dst, tail...)
	if len(dst)-start > width {
		dst = dst[:start+width] // a terminal narrower than the figures
	}
	return dst
}

// group renders n with thousands separators: 1234567 → 1,234,567.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// round renders a duration to whole seconds (tenths under 10 s).
func round(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
