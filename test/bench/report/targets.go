package main

import (
	"fmt"
	"strconv"
	"strings"
)

// target is one of issue 13's targets checked against a run's lines.
type target struct {
	what   string
	figure string // what the lines gave, "" when they hold none
	met    bool
	src    *line // the line the figure comes from, nil when none
}

// targets checks every target the lines can speak to: ingest against the
// Iceberg Kafka Connect sink (≥ 8× from process start, ≥ 5× first commit
// to last, per delete mode), capture against Debezium streaming and
// snapshotting (≥ 20×), freshness (p99 ≤ flush + 2 s), and peak RSS
// (capture ≤ 256 MiB, ingest ≤ 1 GiB, `ingest maintain` included). A
// target whose lines are missing is listed with no figure, as missed.
func targets(lines []line) []target {
	var out []target
	of := func(kind string) []line {
		var ls []line
		for _, l := range lines {
			if l.kind == kind {
				ls = append(ls, l)
			}
		}
		return ls
	}
	atLeast := func(what string, v, bound float64, src *line) {
		t := target{what: what}
		if src != nil {
			t.figure, t.met, t.src = trim(v), v >= bound, src
		}
		out = append(out, t)
	}
	ratios := of("RATIO")
	for _, key := range []struct {
		name  string
		bound float64
	}{{"ratio", 8}, {"first_to_last", 5}} {
		if len(ratios) == 0 {
			atLeast(fmt.Sprintf("ingest %s ≥ %g× the Iceberg Kafka Connect sink", key.name, key.bound), 0, key.bound, nil)
		}
		for _, r := range ratios {
			v, err := strconv.ParseFloat(r.vals[key.name], 64) // n/a: not measured
			var src *line
			if err == nil {
				src = &r
			}
			atLeast(fmt.Sprintf("ingest (%s) %s ≥ %g× the Iceberg Kafka Connect sink", r.vals["mode"], key.name, key.bound),
				v, key.bound, src)
		}
	}
	for _, k := range []struct{ kind, what string }{{"CAPTURE", "capture streaming ≥ 20× Debezium"}, {"SNAPSHOT", "capture snapshotting ≥ 20× Debezium"}} {
		ls := of(k.kind)
		if len(ls) == 0 {
			atLeast(k.what, 0, 20, nil)
		}
		for _, l := range ls {
			atLeast(k.what, l.num("ratio"), 20, &l)
		}
	}
	fresh := of("FRESHNESS")
	if len(fresh) == 0 {
		out = append(out, target{what: "freshness p99 ≤ flush interval + 2 s"})
	}
	for _, l := range fresh {
		bound := l.num("flush") + 2
		out = append(out, target{what: fmt.Sprintf("freshness p99 ≤ flush interval + 2 s (%s s) at %s changes/s", trim(bound), l.vals["rate"]),
			figure: l.vals["p99"] + " s", met: l.num("p99") <= bound, src: &l})
	}
	// Peak RSS by binary: the largest rss_mib of each binary's lines.
	peak := func(what string, bound float64, pick func(line) (float64, string, bool)) {
		var top float64
		var from string
		var src *line
		for _, l := range lines {
			if v, name, ok := pick(l); ok && v >= top {
				top, from, src = v, name, &l
			}
		}
		t := target{what: what}
		if from != "" {
			t.figure, t.met, t.src = fmt.Sprintf("%s MiB (%s)", trim(top), from), top <= bound, src
		}
		out = append(out, t)
	}
	rss := func(l line, key string) (float64, string, bool) {
		if l.vals[key] == "" {
			return 0, "", false
		}
		return l.num(key), l.kind, true
	}
	peak("capture peak RSS ≤ 256 MiB", 256, func(l line) (float64, string, bool) {
		switch {
		case l.kind == "CAPTURE", l.kind == "SNAPSHOT", l.kind == "LARGETXN", l.kind == "SCALE" && l.vals["binary"] == "capture":
			return rss(l, "rss_mib")
		}
		return 0, "", false
	})
	peak("ingest peak RSS ≤ 1 GiB", 1024, func(l line) (float64, string, bool) {
		switch {
		case l.kind == "INGEST", l.kind == "SCAN", l.kind == "SCALE" && l.vals["binary"] == "ingest":
			return rss(l, "rss_mib")
		}
		return 0, "", false
	})
	peak("`ingest maintain` peak RSS ≤ 1 GiB", 1024, func(l line) (float64, string, bool) {
		if l.kind == "SCAN" && l.num("maintain_rss_mib") > 0 {
			from := "SCAN mode=" + l.vals["mode"]
			if rw := l.vals["rewrite"]; rw != "" && rw != "n/a" {
				from += " rewrite=" + rw // each mode runs with the in-ingest rewrite on and off
			}
			return l.num("maintain_rss_mib"), from, true
		}
		return 0, "", false
	})
	return out
}

// trim formats v without trailing zeros.
func trim(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// targetTable renders targets as a Markdown table, each figure with the
// command and the date of the run that printed it.
func (r report) targetTable(ts []target) string {
	var b strings.Builder
	b.WriteString("## Targets\n\n| target | figure | | command | run |\n| --- | --- | --- | --- | --- |\n")
	for _, t := range ts {
		verdict, fig, cmd, when := "missed", t.figure, "–", "–"
		if t.met {
			verdict = "met"
		}
		if t.src != nil {
			cmd, when = "`"+r.command(*t.src)+"`", r.when(*t.src)
		}
		if fig == "" {
			fig, verdict = "no line", "not measured"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", t.what, fig, verdict, cmd, when)
	}
	b.WriteString("\n")
	return b.String()
}
