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
	table := targetTable(targets(lines))
	for _, want := range []string{"| freshness p99 ≤ flush interval + 2 s (12 s) at 15790 changes/s | 14.77 s | missed |", "| capture peak RSS ≤ 256 MiB | 140 MiB (SCALE) | met |", "| capture streaming ≥ 20× Debezium | no line | not measured |"} {
		if !strings.Contains(table, want) {
			t.Errorf("target table lacks %q:\n%s", want, table)
		}
	}
}
