// Command report turns the lines the benchmarks print (CAPTURE, SNAPSHOT,
// LARGETXN, INGEST, PEER, RATIO, FRESHNESS, SCALE, SCAN: `KIND key=value
// ...`) into a Markdown report with PNG charts, for `make bench`:
//
//	go run ./test/bench/report -in bench.log -out bench-report
//
// Other lines of the log are ignored. The report opens with a table of
// issue 13's targets, each with its figure and whether it was met (see
// targets). Each table after it lists a kind's lines in
// the order they were printed; the charts set the figures beside the
// targets of issue 13 (ratios against the peers, freshness against the
// flush interval + 2 s, peak RSS against 256 MiB for capture and 1 GiB
// for ingest).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// kinds are the benchmark lines' first words, in report order.
var kinds = []string{"CAPTURE", "SNAPSHOT", "SNAPSHOT_CPU", "LARGETXN", "INGEST", "PEER", "RATIO", "FRESHNESS", "SCALE", "SCAN"}

// line is one printed benchmark line.
type line struct {
	kind string
	keys []string // in printed order
	vals map[string]string
	raw  string
}

func (l line) num(key string) float64 {
	v, _ := strconv.ParseFloat(l.vals[key], 64)
	return v
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	in := fs.String("in", "bench.log", "log holding the benchmarks' output")
	out := fs.String("out", "bench-report", "directory of the report (README.md and the charts)")
	title := fs.String("title", "binlake benchmarks", "the report's title")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	lines, err := parse(f)
	if err != nil {
		return fmt.Errorf("reading %s: %w", *in, err)
	}
	if len(lines) == 0 {
		return errors.New("no benchmark lines in " + *in)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	charts, err := drawCharts(lines, *out)
	if err != nil {
		return fmt.Errorf("drawing the charts: %w", err)
	}
	md := markdown(*title, lines, charts)
	if err := os.WriteFile(filepath.Join(*out, "README.md"), []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %d lines, %d charts in %s\n", len(lines), len(charts), *out)
	return nil
}

// parse reads the benchmark lines of r (`go test -v` output or a make
// log); a line counts when its first word is one of kinds and every word
// after it is key=value.
func parse(r io.Reader) ([]line, error) {
	var out []line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		words := strings.Fields(sc.Text())
		if len(words) < 2 || !slices.Contains(kinds, words[0]) {
			continue
		}
		l := line{kind: words[0], vals: map[string]string{}, raw: strings.Join(words, " ")}
		ok := true
		for _, w := range words[1:] {
			k, v, found := strings.Cut(w, "=")
			if !found {
				ok = false
				break
			}
			l.keys = append(l.keys, k)
			l.vals[k] = v
		}
		if ok {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// markdown renders the report: a table per kind, the charts, and the raw
// lines.
func markdown(title string, lines []line, charts []chart) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nWritten %s from %d benchmark lines.\n\n", title, time.Now().UTC().Format(time.RFC3339), len(lines))
	b.WriteString(targetTable(targets(lines)))
	for _, k := range kinds {
		var of []line
		for _, l := range lines {
			if l.kind == k {
				of = append(of, l)
			}
		}
		if len(of) == 0 {
			continue
		}
		var cols []string
		for _, l := range of {
			for _, c := range l.keys {
				if !slices.Contains(cols, c) {
					cols = append(cols, c)
				}
			}
		}
		fmt.Fprintf(&b, "## %s\n\n| %s |\n|%s\n", k, strings.Join(cols, " | "), strings.Repeat(" --- |", len(cols)))
		for _, l := range of {
			cells := make([]string, len(cols))
			for i, c := range cols {
				cells[i] = l.vals[c]
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
		b.WriteString("\n")
		if k == "PEER" {
			b.WriteString("The peer (Apache Iceberg Kafka Connect sink 1.12) is append-only: every event becomes a row. " +
				"ingest upserts (a mirror of the source), which is more work per event.\n\n")
		}
	}
	if len(charts) > 0 {
		b.WriteString("## Charts\n\n")
		for _, c := range charts {
			fmt.Fprintf(&b, "### %s\n\n![%s](%s)\n\n", c.title, c.title, c.file)
		}
	}
	b.WriteString("## Lines\n\n```\n")
	for _, l := range lines {
		b.WriteString(l.raw + "\n")
	}
	b.WriteString("```\n")
	return b.String()
}

// chart is one drawn PNG.
type chart struct{ title, file string }

// bar is one bar of a chart: its label, value and the target it is held
// against (0: none).
type bar struct {
	label         string
	value, target float64
}

// drawCharts draws the charts the lines allow into dir.
func drawCharts(lines []line, dir string) ([]chart, error) {
	var ratios, rates, fresh, cpu, rss []bar
	for _, l := range lines {
		switch l.kind {
		case "CAPTURE":
			ratios = append(ratios, bar{"capture/Debezium", l.num("ratio"), 20})
			rss = append(rss, bar{"capture (stream)", l.num("rss_mib"), 256})
		case "SNAPSHOT":
			ratios = append(ratios, bar{"snapshot/Debezium", l.num("ratio"), 20})
			rss = append(rss, bar{"capture (snapshot)", l.num("rss_mib"), 256})
		case "LARGETXN":
			rss = append(rss, bar{"capture (large txn)", l.num("rss_mib"), 256})
		case "INGEST":
			rates = append(rates, bar{"ingest " + l.vals["mode"], l.num("rows_per_s"), 0})
			rss = append(rss, bar{"ingest " + l.vals["mode"], l.num("rss_mib"), 1024})
		case "PEER":
			rates = append(rates, bar{"iceberg-kafka-connect", l.num("rows_per_s"), 0})
		case "RATIO":
			ratios = append(ratios, bar{"ingest " + l.vals["mode"] + "/IKC", l.num("ratio"), 8},
				bar{l.vals["mode"] + " first-to-last", l.num("first_to_last"), 5})
		case "FRESHNESS":
			target := l.num("flush") + 2
			fresh = append(fresh, bar{"p50", l.num("p50"), target}, bar{"p99", l.num("p99"), target}, bar{"max", l.num("max"), 0})
		case "SCALE":
			label := fmt.Sprintf("%s %dt×%dp", l.vals["binary"], int(l.num("tables")), int(l.num("partitions")))
			cpu = append(cpu, bar{label, l.num("cpu_s_per_m"), 0})
			limit := 1024.0
			if l.vals["binary"] == "capture" {
				limit = 256
			}
			rss = append(rss, bar{label, l.num("rss_mib"), limit})
		}
	}
	var out []chart
	for _, c := range []struct {
		title, file, unit string
		bars              []bar
	}{
		{"Ratios against the peers (dots: targets)", "ratios.png", "× peer", ratios},
		{"Throughput from process start to last commit", "throughput.png", "events/s", rates},
		{"Freshness: age of a commit's newest change when visible (dots: flush + 2 s)", "freshness.png", "seconds", fresh},
		{"CPU-seconds per million events", "cpu.png", "CPU-s / 1M events", cpu},
		{"Peak RSS (dots: limits)", "rss.png", "MiB", rss},
	} {
		if len(c.bars) == 0 {
			continue
		}
		if err := drawBars(filepath.Join(dir, c.file), c.title, c.unit, c.bars); err != nil {
			return nil, fmt.Errorf("drawing %s: %w", c.file, err)
		}
		out = append(out, chart{c.title, c.file})
	}
	return out, nil
}

// drawBars writes one bar chart, the targets as dots over the bars.
func drawBars(file, title, unit string, bars []bar) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	vals := make(plotter.Values, len(bars))
	labels := make([]string, len(bars))
	var targets plotter.XYs
	for i, b := range bars {
		vals[i], labels[i] = b.value, b.label
		if b.target > 0 {
			targets = append(targets, plotter.XY{X: float64(i), Y: b.target})
		}
	}
	bc, err := plotter.NewBarChart(vals, vg.Points(18))
	if err != nil {
		return err
	}
	bc.Color = color.RGBA{R: 60, G: 110, B: 180, A: 255}
	bc.LineStyle.Width = 0
	p.Add(bc)
	if len(targets) > 0 {
		sc, err := plotter.NewScatter(targets)
		if err != nil {
			return err
		}
		sc.Color = color.RGBA{R: 200, G: 40, B: 40, A: 255}
		sc.Radius = vg.Points(4)
		sc.Shape = draw.CircleGlyph{}
		p.Add(sc)
	}
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = -1.0, -0.5
	p.Y.Min = 0
	width := max(vg.Length(len(bars))*45, 360)
	return p.Save(width, 300, file)
}
