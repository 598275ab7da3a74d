package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name    string
		s       Sample
		elapsed time.Duration
		width   int
		want    string
	}{
		{"running", Sample{Table: "db.orders", Rows: 450_000, Estimated: 1_000_000}, 5 * time.Second, 100,
			"db.orders  [#############------------------]   45%  450,000/~1,000,000 rows  90,000 rows/s  ETA 6.1s"},
		{"eta in whole seconds", Sample{Table: "db.t", Rows: 1000, Estimated: 100_000}, 10 * time.Second, 80,
			"db.t  [---------------------]    1%  1,000/~100,000 rows  100 rows/s  ETA 16m30s"},
		{"estimate exceeded", Sample{Table: "db.t", Rows: 1200, Estimated: 1000}, 2 * time.Second, 80,
			"db.t  [##########################-]   99%  1,200/~1,000 rows  600 rows/s  ETA 0s"},
		{"done", Sample{Table: "db.t", Rows: 1_234_567, Estimated: 1_000_000, Done: true}, 10 * time.Second, 80,
			"db.t  [#####################]  100%  1,234,567 rows  123,456 rows/s  done in 10s"},
		{"no estimate", Sample{Table: "db.t", Rows: 10}, time.Second, 60,
			"db.t  [--------------------------]    0%  10 rows  10 rows/s"},
		{"nothing read yet", Sample{Table: "db.t", Estimated: 500}, 0, 60,
			"db.t  [----------------]    0%  0/~500 rows  0 rows/s  ETA ?"},
		{"too narrow for a bar", Sample{Table: "db.orders", Rows: 5, Estimated: 10}, time.Second, 40,
			"db.orders   50%  5/~10 rows  5 rows/s  E"}, // cut at the width
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(Render(nil, tc.s, tc.elapsed, tc.width))
			if got != tc.want {
				t.Errorf("Render:\n got %q\nwant %q", got, tc.want)
			}
			if strings.Contains(got, "[") && len(got) != tc.width {
				t.Errorf("%d columns with a bar, want exactly %d", len(got), tc.width)
			}
			if len(got) > tc.width {
				t.Errorf("%d columns, wider than %d", len(got), tc.width)
			}
		})
	}
}

func TestGroup(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 123456: "123,456", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTerminalKeepsBarsBelowLogs checks the escape sequences: each update
// erases the bars it drew before, and a log line is written after erasing
// them and followed by them again.
func TestTerminalKeepsBarsBelowLogs(t *testing.T) {
	var out bytes.Buffer
	term := NewTerminal(&out, 60)
	now := time.Unix(1000, 0)
	term.now = func() time.Time { return now }
	const up = "\x1b[1A\x1b[2K"

	term.Update([]Sample{{Table: "db.a", Rows: 0, Estimated: 100}, {Table: "db.b", Estimated: 50}})
	first := out.String()
	if strings.Contains(first, up) || strings.Count(first, "\n") != 2 {
		t.Fatalf("first draw %q: want two lines and nothing erased", first)
	}
	out.Reset()

	now = now.Add(2 * time.Second)
	term.Update([]Sample{{Table: "db.a", Rows: 100, Estimated: 100, Done: true}, {Table: "db.b", Rows: 10, Estimated: 50}})
	second := out.String()
	if !strings.HasPrefix(second, up+up) || strings.Count(second, up) != 2 {
		t.Fatalf("second draw %q: want the two previous lines erased first", second)
	}
	if !strings.Contains(second, "db.a  ") || !strings.Contains(second, "done in 2s") || !strings.Contains(second, "db.b") {
		t.Fatalf("second draw %q: want db.a done in 2s and db.b running", second)
	}
	out.Reset()

	if _, err := term.Write([]byte("level=INFO msg=hello\n")); err != nil {
		t.Fatal(err)
	}
	logged := out.String()
	want := up + up + "level=INFO msg=hello\n"
	if !strings.HasPrefix(logged, want) {
		t.Fatalf("log write %q: want it to start with %q", logged, want)
	}
	if bars := strings.TrimPrefix(logged, want); strings.Count(bars, "\n") != 2 || !strings.Contains(bars, "db.b") {
		t.Fatalf("log write %q: want the two bars drawn again below the line", logged)
	}
	out.Reset()

	// A table that is done keeps its time: later draws say the same.
	now = now.Add(time.Minute)
	term.Update([]Sample{{Table: "db.a", Rows: 100, Estimated: 100, Done: true}})
	if s := out.String(); !strings.Contains(s, "done in 2s") {
		t.Fatalf("later draw %q: want db.a still done in 2s", s)
	}
}

func TestFromGatherer(t *testing.T) {
	reg := prometheus.NewRegistry()
	read := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "capture_snapshot_rows_read_total"}, []string{"table"})
	est := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "capture_snapshot_rows_estimated"}, []string{"table"})
	done := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "capture_snapshot_table_done"}, []string{"table"})
	other := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "capture_events_total"}, []string{"table"})
	reg.MustRegister(read, est, done, other)
	src := FromGatherer(reg)

	est.WithLabelValues("db.z").Set(10)
	read.WithLabelValues("db.z").Add(10)
	done.WithLabelValues("db.z").Set(1)
	if got := src(); len(got) != 1 || got[0] != (Sample{Table: "db.z", Rows: 10, Estimated: 10, Done: true}) {
		t.Fatalf("first samples %+v", got)
	}
	// A second table (sorting before the first) comes after it: the order
	// is the order tables were first seen, which is the snapshot's order.
	est.WithLabelValues("db.a").Set(100)
	read.WithLabelValues("db.a").Add(40)
	other.WithLabelValues("db.q").Inc()
	got := src()
	want := []Sample{{Table: "db.z", Rows: 10, Estimated: 10, Done: true}, {Table: "db.a", Rows: 40, Estimated: 100}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("samples %+v, want %+v", got, want)
	}
}
