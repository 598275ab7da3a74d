//go:build integration

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestBenchScale measures what each binary spends per event as the work
// spreads out: ingest over 1, 4 and 16 tables of 1, 4 and 12 partitions
// each, and capture over 1 and 16 tables, each on BINLAKE_SCALE_EVENTS
// change events (default 200,000; TestBenchIngest's mix, split evenly over
// the tables). It prints per run
//
//	SCALE binary=<b> tables=<t> partitions=<p> events=<n> cpu_s_per_m=<x> rss_mib=<m>
//
// with cpu_s_per_m the process's user + system CPU seconds per million
// events (from its rusage: a figure that drifts far less with the
// machine's load than a rate) and rss_mib its peak resident set. ingest
// runs in its default delete mode (auto: position deletes on format v2)
// with a 5 s flush interval.
func TestBenchScale(t *testing.T) {
	if os.Getenv("BINLAKE_BENCH") != "1" {
		t.Skip("set BINLAKE_BENCH=1 (make bench-scale)")
	}
	events := envInt(t, "BINLAKE_SCALE_EVENTS", 200_000)
	bin, dir := build(t, "ingest"), t.TempDir()
	for _, tables := range []int{1, 4, 16} {
		for _, partitions := range []int{1, 4, 12} {
			src := newChangeTopics(t, changeWorkload{tables: tables, partitions: partitions, events: events})
			if partitions == 1 && (tables == 1 || tables == 16) {
				ps := src.capture.cmd.ProcessState
				printScale("capture", tables, partitions, src.events, cpuSeconds(ps), maxRSS(ps))
			}
			name := fmt.Sprintf("t%d-p%d", tables, partitions)
			r := runIngest(t, bin, dir, name, ingestEnv(t, src, src.db+"_"+name, "auto", "2"), float64(src.events))
			printScale("ingest", tables, partitions, src.events, r.cpu, r.rss)
		}
	}
}

// TestBenchCPUCapture runs TestBenchScale's capture part alone (1 and 16
// tables, one partition, BINLAKE_SCALE_EVENTS events) and prints the same
// SCALE lines: the quick measure of capture's CPU per event. With
// BINLAKE_CAPTURE_PROFILE=<dir> it also writes each run's CPU profile to
// <dir>/capture-t<tables>.pprof (go tool pprof -top); the profiled runs
// cost a little more CPU, so compare profiled runs with profiled ones.
// Each profile lasts BINLAKE_CAPTURE_PROFILE_SECONDS (default 30), which
// must outlast the run.
func TestBenchCPUCapture(t *testing.T) {
	if os.Getenv("BINLAKE_BENCH") != "1" {
		t.Skip("set BINLAKE_BENCH=1")
	}
	events := envInt(t, "BINLAKE_SCALE_EVENTS", 200_000)
	dir := os.Getenv("BINLAKE_CAPTURE_PROFILE")
	for _, tables := range []int{1, 16} {
		w := changeWorkload{tables: tables, partitions: 1, events: events}
		if dir != "" {
			w.profile = filepath.Join(dir, fmt.Sprintf("capture-t%d.pprof", tables))
			w.profileSeconds = envInt(t, "BINLAKE_CAPTURE_PROFILE_SECONDS", 30)
		}
		src := newChangeTopics(t, w)
		ps := src.capture.cmd.ProcessState
		printScale("capture", tables, 1, src.events, cpuSeconds(ps), maxRSS(ps))
	}
}

func printScale(binary string, tables, partitions, events int, cpu, rss float64) {
	fmt.Printf("SCALE binary=%s tables=%d partitions=%d events=%d cpu_s_per_m=%.2f rss_mib=%.0f\n",
		binary, tables, partitions, events, cpu/float64(events)*1e6, rss)
}

// maxRSS is an exited process's peak resident set in MiB (its rusage).
func maxRSS(ps *os.ProcessState) float64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return 0
}
