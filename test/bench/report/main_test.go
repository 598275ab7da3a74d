package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sampleLog is a make bench log: BENCHRUN and BENCHDONE lines around each
// target, the benchmark lines, and go test's and make's other lines.
const sampleLog = `BENCHRUN target=bench-peer start=2026-12-05T09:52:54Z commit=5e16152 load=1.40
eval "$(deploy/local/stack.sh env)" && BINLAKE_REQUIRE_STACK=1 go test -run TestBenchPeer -v ./test/bench
=== RUN   TestBenchPeer
INGEST mode=equality rows=1000000 seconds=13.71 rows_per_s=72936 ratio_to_equality=1.00 commits=10 rss_mib=479 index_mib=0.0
    peer_bench_integration_test.go:160: a log line
PEER name=iceberg-kafka-connect rows=1000000 seconds=62.62 rows_per_s=15971 commits=7 rss_mib=1008 first_to_last_rows_per_s=22499
RATIO name=iceberg-kafka-connect mode=equality ratio=4.57 first_to_last=n/a
RATIO this is not a benchmark line
--- PASS: TestBenchPeer (142.52s)
BENCHDONE target=bench-peer end=2026-12-05T09:55:20Z exit=0
BENCHRUN target=bench-freshness start=2026-12-05T09:55:21Z commit=5e16152 load=2.10
FRESHNESS rate=15790 flush=10 p50=5.62 p99=14.77 max=14.77 lag_max=309565 commits=67
BENCHDONE target=bench-freshness end=2026-12-05T10:01:02Z exit=1
SCALE binary=capture tables=16 partitions=1 events=200000 cpu_s_per_m=13.64 rss_mib=140
`

func TestParse(t *testing.T) {
	lines, err := parse(strings.NewReader(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range lines {
		kinds = append(kinds, l.kind)
	}
	if got, want := strings.Join(kinds, " "), "INGEST PEER RATIO FRESHNESS SCALE"; got != want {
		t.Fatalf("kinds %q, want %q", got, want)
	}
	if got := lines[1].num("rows_per_s"); got != 15971 {
		t.Errorf("PEER rows_per_s = %v, want 15971", got)
	}
	if got := lines[2].num("first_to_last"); got != 0 {
		t.Errorf("n/a reads as %v, want 0", got)
	}
	if got := lines[0].keys[0]; got != "mode" {
		t.Errorf("first INGEST key %q, want mode", got)
	}
}

func TestParseRuns(t *testing.T) {
	lines, runs, err := parseRuns(strings.NewReader(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	if got, want := *runs[1], (run{target: "bench-freshness", start: "2026-12-05T09:55:21Z", end: "2026-12-05T10:01:02Z", exit: "1", commit: "5e16152", load: "2.10"}); got != want {
		t.Errorf("run %+v, want %+v", got, want)
	}
	r := report{lines: lines, runs: runs}
	for i, want := range []string{
		"`make bench-peer`, 2026-12-05T09:52:54Z", "`make bench-peer`, 2026-12-05T09:52:54Z", "`make bench-peer`, 2026-12-05T09:52:54Z",
		"`make bench-freshness`, 2026-12-05T09:55:21Z",
		// After bench-freshness's BENCHDONE a line is no run's: its kind names the target, no date.
		"`make bench-scale`, not recorded",
	} {
		if got := r.from(lines[i]); got != want {
			t.Errorf("line %d (%s) from %q, want %q", i, lines[i].kind, got, want)
		}
	}
}

// writeLog writes log into a new directory and returns its path.
func writeLog(t *testing.T, log string) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "bench.log")
	if err := os.WriteFile(in, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

func read(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRun(t *testing.T) {
	in := writeLog(t, sampleLog)
	out := filepath.Join(t.TempDir(), "report")
	var stdout strings.Builder
	if err := runMain([]string{"-in", in, "-out", out}, &stdout); err != nil {
		t.Fatal(err)
	}
	md := read(t, filepath.Join(out, "README.md"))
	for _, want := range []string{
		"## PEER", "append-only", "| equality | 1000000 | 13.71 |", "![", "SCALE binary=capture",
		"| `make bench-freshness` | 2026-12-05T09:55:21Z | 2026-12-05T10:01:02Z | 1 | 5e16152 | 2.10 |",
		"From `make bench-peer`, 2026-12-05T09:52:54Z:\n\n| mode | rows |",
		"](ratios.png)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "next `make bench`") {
		t.Error("the report in bench-report/ says it is the repository's page")
	}
	for _, png := range []string{"ratios.png", "throughput.png", "freshness.png", "cpu.png", "rss.png"} {
		if _, err := os.Stat(filepath.Join(out, png)); err != nil {
			t.Errorf("chart %s: %v", png, err)
		}
	}
}

// TestRunPage writes the repository's page as make bench does: beside the
// report, with its charts in charts/ next to it and linked from it.
func TestRunPage(t *testing.T) {
	in := writeLog(t, sampleLog)
	dir := t.TempDir()
	page := filepath.Join(dir, "test", "bench", "BENCHMARKS.md")
	var stdout strings.Builder
	if err := runMain([]string{"-in", in, "-out", filepath.Join(dir, "bench-report"), "-page", page}, &stdout); err != nil {
		t.Fatal(err)
	}
	md := read(t, page)
	for _, want := range []string{
		"the next `make bench` writes it again",
		"## Runs", "## Targets",
		"| freshness p99 ≤ flush interval + 2 s (12 s) at 15790 changes/s | 14.77 s | missed | `make bench-freshness` | 2026-12-05T09:55:21Z |",
		"From `make bench-freshness`, 2026-12-05T09:55:21Z:",
		"![Peak RSS (dots: limits)](charts/rss.png)",
		"# make bench-peer, 2026-12-05T09:52:54Z\nINGEST mode=equality",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q:\n%s", want, md)
		}
	}
	for _, png := range []string{"ratios.png", "throughput.png", "freshness.png", "cpu.png", "rss.png"} {
		if _, err := os.Stat(filepath.Join(dir, "test", "bench", "charts", png)); err != nil {
			t.Errorf("page chart %s: %v", png, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bench-report", "README.md")); err != nil {
		t.Errorf("the report beside the page: %v", err)
	}
}

// TestRunPageKeepsHistory rewrites a page that ends in a history kept by
// hand: the new page has the new figures and the same history.
func TestRunPageKeepsHistory(t *testing.T) {
	in := writeLog(t, sampleLog)
	dir := t.TempDir()
	page := filepath.Join(dir, "BENCHMARKS.md")
	history := keepMarker + "\n\n## History\n\n`make bench-capture`, 2026-12-02: ratio=13.18\n"
	if err := os.WriteFile(page, []byte("# old\n\nratio=1.00 of an old run\n\n"+history), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runMain([]string{"-in", in, "-out", filepath.Join(dir, "r"), "-page", page}, io.Discard); err != nil {
		t.Fatal(err)
	}
	md := read(t, page)
	if strings.Contains(md, "of an old run") {
		t.Error("the old page's figures above the marker were kept")
	}
	if !strings.HasSuffix(md, "```\n\n"+history) {
		t.Errorf("the page does not end in the history it had:\n%s", md)
	}
	if strings.Count(md, keepMarker) != 1 {
		t.Errorf("%d markers", strings.Count(md, keepMarker))
	}
}

// TestPageLines writes the page from the 2026-12-05 make bench's lines
// (its SCAN lines are the widest) and holds it to the docs test's rules
// (test/docs): no line outside code blocks over 400 characters.
func TestPageLines(t *testing.T) {
	log := sampleLog + `SCAN mode=equality ingest_rows_per_s=156980 read_s=409.24 read_compacted_s=2.09 ratio=196.19 delete_files=100 index_mib=0.0 rss_mib=955 duckdb_read_s=timeout duckdb_read_compacted_s=0.95 duckdb_ratio=timeout data_files=110 compacted_data_files=1 compacted_delete_files=0 commits=110 maintain_s=211.53 maintain_rss_mib=8395 ingest_vs_equality=1.00
SCAN mode=position ingest_rows_per_s=75126 read_s=21.94 read_compacted_s=1.62 ratio=13.54 delete_files=190 index_mib=61.2 rss_mib=891 duckdb_read_s=2.87 duckdb_read_compacted_s=0.87 duckdb_ratio=3.28 data_files=110 compacted_data_files=1 compacted_delete_files=0 commits=110 maintain_s=13.61 maintain_rss_mib=802 ingest_vs_equality=0.48
`
	in := writeLog(t, log)
	dir := t.TempDir()
	page := filepath.Join(dir, "BENCHMARKS.md")
	if err := runMain([]string{"-in", in, "-out", filepath.Join(dir, "r"), "-page", page}, io.Discard); err != nil {
		t.Fatal(err)
	}
	md := read(t, page)
	code := false
	for i, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			code = !code
			continue
		}
		if !code && len(l) > maxRow {
			t.Errorf("line %d: %d bytes: %.80s…", i+1, len(l), l)
		}
	}
	for _, want := range []string{"maintain_rss_mib", "| 8395 |", "ingest_vs_equality"} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestTableSplits splits a line too wide for one table into tables that
// each fit and each start with the first column.
func TestTableSplits(t *testing.T) {
	raw := "SCAN mode=equality"
	for i := range 40 {
		raw += fmt.Sprintf(" column_%02d=value_%02d", i, i)
	}
	lines, err := parse(strings.NewReader(raw + "\n"))
	if err != nil || len(lines) != 1 {
		t.Fatalf("parse: %v, %d lines", err, len(lines))
	}
	md := table("`make bench-scan`, 2026-12-05", lines)
	var headers int
	for _, l := range strings.Split(md, "\n") {
		if len(l) > maxRow {
			t.Errorf("row of %d bytes: %.60s…", len(l), l)
		}
		if strings.HasPrefix(l, "| mode |") {
			headers++
		}
	}
	if headers < 2 {
		t.Errorf("%d tables, want the columns split over at least 2:\n%s", headers, md)
	}
	for i := range 40 {
		if n := strings.Count(md, fmt.Sprintf("column_%02d", i)); n != 1 {
			t.Errorf("column_%02d appears %d times, want once", i, n)
		}
	}
}

// TestWrap breaks at spaces, never over the width.
func TestWrap(t *testing.T) {
	got := wrap("aaa bbb ccc dddddddddd e", 7)
	if want := "aaa bbb\nccc\ndddddddddd\ne"; got != want {
		t.Errorf("wrap = %q, want %q", got, want)
	}
}

// TestRunWithoutRuns reads a log with no BENCHRUN lines (put together by
// hand): each line is credited to the make target that prints its kind and
// to the date given with -date.
func TestRunWithoutRuns(t *testing.T) {
	var log strings.Builder
	for _, l := range strings.Split(sampleLog, "\n") {
		if !strings.HasPrefix(l, "BENCH") {
			log.WriteString(l + "\n")
		}
	}
	in := writeLog(t, log.String())
	dir := t.TempDir()
	page := filepath.Join(dir, "BENCHMARKS.md")
	var stdout strings.Builder
	if err := runMain([]string{"-in", in, "-out", filepath.Join(dir, "r"), "-page", page, "-charts", filepath.Join(dir, "c"), "-date", "2026-12-05"}, &stdout); err != nil {
		t.Fatal(err)
	}
	md := read(t, page)
	for _, want := range []string{"From `make bench-peer`, 2026-12-05:", "From `make bench-freshness`, 2026-12-05:", "From `make bench-scale`, 2026-12-05:", "](c/ratios.png)"} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "## Runs") {
		t.Error("a runs table with no runs")
	}
}

func TestRunNoLines(t *testing.T) {
	in := writeLog(t, "ok  \tgithub.com/binlake/binlake/test/bench\t1.2s\n")
	err := runMain([]string{"-in", in, "-out", t.TempDir()}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no benchmark lines") {
		t.Fatalf("err %v, want no benchmark lines", err)
	}
}

func TestTargets(t *testing.T) {
	lines, err := parse(strings.NewReader(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]target{}
	for _, tg := range targets(lines) {
		got[tg.what] = tg
	}
	for what, want := range map[string]target{
		"ingest (equality) ratio ≥ 8× the Iceberg Kafka Connect sink":         {figure: "4.57", met: false},
		"ingest (equality) first_to_last ≥ 5× the Iceberg Kafka Connect sink": {figure: "", met: false},
		"capture streaming ≥ 20× Debezium":                                    {figure: "", met: false},
		"freshness p99 ≤ flush interval + 2 s (12 s) at 15790 changes/s":      {figure: "14.77 s", met: false},
		"capture peak RSS ≤ 256 MiB":                                          {figure: "140 MiB (SCALE)", met: true},
		"ingest peak RSS ≤ 1 GiB":                                             {figure: "479 MiB (INGEST)", met: true},
		"`ingest maintain` peak RSS ≤ 1 GiB":                                  {figure: "", met: false},
	} {
		g, ok := got[what]
		if !ok {
			t.Errorf("no target %q among %v", what, got)
			continue
		}
		if g.figure != want.figure || g.met != want.met {
			t.Errorf("%s: figure %q met %v, want %q %v", what, g.figure, g.met, want.figure, want.met)
		}
	}
	table := report{}.targetTable(targets(lines))
	for _, want := range []string{
		"| freshness p99 ≤ flush interval + 2 s (12 s) at 15790 changes/s | 14.77 s | missed | `make bench-freshness` | 2026-12-05T09:55:21Z |",
		"| capture peak RSS ≤ 256 MiB | 140 MiB (SCALE) | met | `make bench-scale` | not recorded |",
		"| ingest peak RSS ≤ 1 GiB | 479 MiB (INGEST) | met | `make bench-peer` | 2026-12-05T09:52:54Z |",
		"| capture streaming ≥ 20× Debezium | no line | not measured | – | – |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("target table lacks %q:\n%s", want, table)
		}
	}
}

// TestTargetsScanRewrite: bench-scan prints each positional mode twice,
// with the in-ingest rewrite on and off, so the `ingest maintain` peak
// names the run of the mode it comes from.
func TestTargetsScanRewrite(t *testing.T) {
	lines, err := parse(strings.NewReader(`SCAN mode=equality rewrite=n/a rss_mib=900 maintain_rss_mib=700
SCAN mode=dv rewrite=on rss_mib=800 maintain_rss_mib=600
SCAN mode=dv rewrite=off rss_mib=800 maintain_rss_mib=950
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets(lines) {
		if tg.what == "`ingest maintain` peak RSS ≤ 1 GiB" {
			if want := "950 MiB (SCAN mode=dv rewrite=off)"; tg.figure != want || !tg.met {
				t.Errorf("maintain peak %q met %v, want %q met", tg.figure, tg.met, want)
			}
			return
		}
	}
	t.Fatal("no `ingest maintain` peak RSS target")
}
