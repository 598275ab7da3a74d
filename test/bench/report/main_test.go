package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleLog = `=== RUN   TestBenchPeer
INGEST mode=equality rows=1000000 seconds=13.71 rows_per_s=72936 ratio_to_equality=1.00 commits=10 rss_mib=479 index_mib=0.0
    peer_bench_integration_test.go:160: a log line
PEER name=iceberg-kafka-connect rows=1000000 seconds=62.62 rows_per_s=15971 commits=7 rss_mib=1008 first_to_last_rows_per_s=22499
RATIO name=iceberg-kafka-connect mode=equality ratio=4.57 first_to_last=n/a
RATIO this is not a benchmark line
FRESHNESS rate=15790 flush=10 p50=5.62 p99=14.77 max=14.77 lag_max=309565 commits=67
SCALE binary=capture tables=16 partitions=1 events=200000 cpu_s_per_m=13.64 rss_mib=140
--- PASS: TestBenchPeer (142.52s)
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

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bench.log")
	if err := os.WriteFile(in, []byte(sampleLog), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report")
	var stdout strings.Builder
	if err := run([]string{"-in", in, "-out", out}, &stdout); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## PEER", "append-only", "| equality | 1000000 | 13.71 |", "![", "SCALE binary=capture"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, png := range []string{"ratios.png", "throughput.png", "freshness.png", "cpu.png", "rss.png"} {
		if _, err := os.Stat(filepath.Join(out, png)); err != nil {
			t.Errorf("chart %s: %v", png, err)
		}
	}
}
