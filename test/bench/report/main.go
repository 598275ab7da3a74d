// Command report turns the lines the benchmarks print (CAPTURE, SNAPSHOT,
// LARGETXN, INGEST, PEER, RATIO, FRESHNESS, SCALE, SCAN: `KIND key=value
// ...`) into a Markdown report with PNG charts, for `make bench`:
//
//	go run ./test/bench/report -in bench.log -out bench-report [-page test/bench/BENCHMARKS.md]
//
// Other lines of the log are ignored, except the BENCHRUN and BENCHDONE
// lines `make bench` writes around each benchmark target (target, start or
// end time, commit, load, exit status): every figure is reported with the
// command that printed it and the date of that run. Lines no BENCHRUN line
// precedes (a log put together by hand) are credited to the make target
// that prints their kind and to the date given with -date.
//
// The report opens with a table of the runs, then a table of issue 13's
// targets, each with its figure, whether it was met and the run it comes
// from (see targets). Each table after it lists a kind's lines in the
// order they were printed; the charts set the figures beside the targets
// of issue 13 (ratios against the peers, freshness against the flush
// interval + 2 s, peak RSS against 256 MiB for capture and 1 GiB for
// ingest). The report goes to <out>/README.md with its charts beside it
// and, with -page, to that page too, its charts in -charts (default: the
// page's directory's charts/), linked relative to the page: `make bench`
// writes the repository's test/bench/BENCHMARKS.md this way. Whatever the
// page it replaces holds below keepMarker (the history of earlier runs,
// written by hand) is carried over to the new page.
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

// targetOf is the make target that prints each kind, for lines no
// BENCHRUN line names (make bench runs bench-peer, which prints
// bench-ingest's INGEST lines too, in place of bench-ingest).
var targetOf = map[string]string{
	"CAPTURE": "bench-capture", "SNAPSHOT": "bench-snapshot", "SNAPSHOT_CPU": "bench-snapshot",
	"LARGETXN": "bench-large-txn", "INGEST": "bench-peer", "PEER": "bench-peer", "RATIO": "bench-peer",
	"FRESHNESS": "bench-freshness", "SCALE": "bench-scale", "SCAN": "bench-scan",
}

// run is one benchmark target's run as make bench records it: BENCHRUN
// target=<make target> start=<RFC 3339 UTC> commit=<hash> load=<1-min
// load> before it, and BENCHDONE target=<t> end=<time> exit=<status>
// after it.
type run struct {
	target, start, end, exit, commit, load string
}

// command is how the run was started.
func (r run) command() string { return "make " + r.target }

// line is one printed benchmark line.
type line struct {
	kind string
	keys []string // in printed order
	vals map[string]string
	raw  string
	run  *run // the run that printed it; nil when no BENCHRUN line precedes it
}

func (l line) num(key string) float64 {
	v, _ := strconv.ParseFloat(l.vals[key], 64)
	return v
}

func main() {
	if err := runMain(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func runMain(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	in := fs.String("in", "bench.log", "log holding the benchmarks' output")
	out := fs.String("out", "bench-report", "directory of the report (README.md and the charts)")
	title := fs.String("title", "binlake benchmarks", "the report's title")
	page := fs.String("page", "", "also write the report to this Markdown file (make bench: test/bench/BENCHMARKS.md)")
	chartDir := fs.String("charts", "", "directory of the page's charts (default: charts/ beside -page)")
	date := fs.String("date", "", "the date of the run, for lines no BENCHRUN line precedes (a log put together by hand)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return fmt.Errorf("opening the log: %w", err)
	}
	defer f.Close()
	lines, runs, err := parseRuns(f)
	if err != nil {
		return fmt.Errorf("reading %s: %w", *in, err)
	}
	if len(lines) == 0 {
		return errors.New("no benchmark lines in " + *in)
	}
	r := report{title: *title, source: *in, date: *date, lines: lines, runs: runs}
	if err := r.write(filepath.Join(*out, "README.md"), *out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %d lines, %d runs in %s\n", len(lines), len(runs), *out)
	if *page != "" {
		dir := *chartDir
		if dir == "" {
			dir = filepath.Join(filepath.Dir(*page), "charts")
		}
		r.page = true
		if err := r.write(*page, dir); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "report: page %s, charts in %s\n", *page, dir)
	}
	return nil
}

// relDir is to relative to from, either given relative to the working
// directory or absolute.
func relDir(from, to string) (string, error) {
	f, err := filepath.Abs(from)
	if err != nil {
		return "", err
	}
	t, err := filepath.Abs(to)
	if err != nil {
		return "", err
	}
	return filepath.Rel(f, t)
}

// keepMarker starts the part of the page that make bench carries over
// from the page it replaces: the history of earlier runs, written by hand.
const keepMarker = "<!-- make bench keeps everything below this line -->"

// keptPart returns the part of the page in file from keepMarker on, ""
// when the file or the marker is missing.
func keptPart(file string) (string, error) {
	old, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the page it replaces: %w", err)
	}
	_, kept, found := strings.Cut(string(old), keepMarker)
	if !found {
		return "", nil
	}
	return "\n" + keepMarker + kept, nil
}

// report is what one log gives.
type report struct {
	title, source string
	date          string // for lines without a run
	page          bool   // the repository's page: says how it was made and that make bench rewrites it
	lines         []line
	runs          []*run
}

// write draws the charts into chartDir and writes the Markdown to file,
// linking the charts relative to file's directory.
func (r report) write(file, chartDir string) error {
	if err := os.MkdirAll(chartDir, 0o755); err != nil {
		return fmt.Errorf("making the chart directory: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("making the report's directory: %w", err)
	}
	charts, err := drawCharts(r.lines, chartDir)
	if err != nil {
		return fmt.Errorf("drawing the charts: %w", err)
	}
	rel, err := relDir(filepath.Dir(file), chartDir)
	if err != nil {
		return fmt.Errorf("linking the charts: %w", err)
	}
	for i := range charts {
		charts[i].file = filepath.ToSlash(filepath.Join(rel, charts[i].file))
	}
	md := r.markdown(charts)
	if r.page {
		kept, err := keptPart(file)
		if err != nil {
			return err
		}
		md += kept
	}
	if err := os.WriteFile(file, []byte(md), 0o644); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

// parse reads the benchmark lines of r (`go test -v` output or a make
// log); a line counts when its first word is one of kinds and every word
// after it is key=value.
func parse(r io.Reader) ([]line, error) {
	lines, _, err := parseRuns(r)
	return lines, err
}

// parseRuns reads the benchmark lines of r and the runs that printed them
// (BENCHRUN and BENCHDONE lines), in the order of the log.
func parseRuns(r io.Reader) ([]line, []*run, error) {
	var out []line
	var runs []*run
	var cur *run
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		words := strings.Fields(sc.Text())
		if len(words) < 2 {
			continue
		}
		kv, ok := keyValues(words[1:])
		switch {
		case !ok:
			continue
		case words[0] == "BENCHRUN":
			cur = &run{target: kv.vals["target"], start: kv.vals["start"], commit: kv.vals["commit"], load: kv.vals["load"]}
			runs = append(runs, cur)
		case words[0] == "BENCHDONE":
			if cur != nil && cur.target == kv.vals["target"] {
				cur.end, cur.exit = kv.vals["end"], kv.vals["exit"]
			}
			cur = nil // a line after it is no run's: credited by its kind
		case slices.Contains(kinds, words[0]):
			kv.kind, kv.raw, kv.run = words[0], strings.Join(words, " "), cur
			out = append(out, kv)
		}
	}
	return out, runs, sc.Err()
}

// keyValues reads words that are all key=value.
func keyValues(words []string) (line, bool) {
	l := line{vals: map[string]string{}}
	for _, w := range words {
		k, v, found := strings.Cut(w, "=")
		if !found {
			return line{}, false
		}
		l.keys = append(l.keys, k)
		l.vals[k] = v
	}
	return l, true
}

// command is the command that printed l.
func (r report) command(l line) string {
	if l.run != nil {
		return l.run.command()
	}
	return "make " + targetOf[l.kind]
}

// when is the date of the run that printed l.
func (r report) when(l line) string {
	switch {
	case l.run != nil && l.run.start != "":
		return l.run.start
	case r.date != "":
		return r.date
	}
	return "not recorded"
}

// from names l's command and run: "`make bench-peer`, 2026-12-05T09:52:54Z".
func (r report) from(l line) string {
	return fmt.Sprintf("`%s`, %s", r.command(l), r.when(l))
}

// markdown renders the report: the runs, the targets, a table per kind
// and run, the charts, and the raw lines.
func (r report) markdown(charts []chart) string {
	var b strings.Builder
	now := time.Now().UTC().Format(time.RFC3339)
	fmt.Fprintf(&b, "# %s\n\n", r.title)
	if r.page {
		b.WriteString(wrap(fmt.Sprintf("This page is written by `make bench` (`test/bench/report`, from the %d benchmark lines of `%s`) on %s; "+
			"the next `make bench` writes it again, with its charts in the directory beside it. "+
			"Every figure comes with the command that printed it and the date that run started. "+
			"`make bench-short` does not write this page: its small counts make figures that are not comparable. "+
			"Earlier runs, if any, are in the history at the end, which `make bench` carries over.",
			len(r.lines), r.source, now), 110) + "\n\n")
	} else {
		fmt.Fprintf(&b, "Written %s from %d benchmark lines of `%s`.\n\n", now, len(r.lines), r.source)
	}
	if len(r.runs) > 0 {
		b.WriteString("## Runs\n\n| command | started | ended | exit | commit | load at start |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, rn := range r.runs {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", rn.command(), orDash(rn.start), orDash(rn.end), orDash(rn.exit), orDash(rn.commit), orDash(rn.load))
		}
		b.WriteString("\n")
	}
	b.WriteString(r.targetTable(targets(r.lines)))
	for _, k := range kinds {
		var of []line
		for _, l := range r.lines {
			if l.kind == k {
				of = append(of, l)
			}
		}
		if len(of) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n", k)
		// One table per run, each under the command and date that made it.
		for len(of) > 0 {
			from := r.from(of[0])
			n := 1
			for n < len(of) && r.from(of[n]) == from {
				n++
			}
			b.WriteString(table(from, of[:n]))
			of = of[n:]
		}
		if k == "PEER" {
			b.WriteString("The peer (Apache Iceberg Kafka Connect sink 1.12) is append-only: every event becomes a row. " +
				"ingest upserts (a mirror of the source), which is more work per event.\n\n")
		}
	}
	if len(charts) > 0 {
		b.WriteString("## Charts\n\nDrawn from the lines above, each figure from the run its table names.\n\n")
		for _, c := range charts {
			fmt.Fprintf(&b, "### %s\n\n![%s](%s)\n\n", c.title, c.title, c.file)
		}
	}
	b.WriteString("## Lines\n\n```\n")
	last := ""
	for _, l := range r.lines {
		if from := r.from(l); from != last {
			fmt.Fprintf(&b, "# %s\n", strings.ReplaceAll(from, "`", ""))
			last = from
		}
		b.WriteString(l.raw + "\n")
	}
	b.WriteString("```\n")
	return b.String()
}

// maxRow is the longest table row the report writes: the docs test
// (test/docs) allows no line over 400 characters.
const maxRow = 300

// table renders lines of one kind and run as Markdown under the command
// and date that printed them: one table, or several when the columns would
// make a row longer than maxRow, each repeating the first column.
func table(from string, of []line) string {
	var b strings.Builder
	var cols []string
	for _, l := range of {
		for _, c := range l.keys {
			if !slices.Contains(cols, c) {
				cols = append(cols, c)
			}
		}
	}
	width := func(c string) int { // the column's widest cell, with its " | "
		w := len(c)
		for _, l := range of {
			w = max(w, len(l.vals[c]))
		}
		return w + 3
	}
	fmt.Fprintf(&b, "From %s:\n\n", from)
	for rest := cols; len(rest) > 0; {
		part, used := []string{rest[0]}, 2+width(rest[0])
		if len(cols) > 0 && rest[0] != cols[0] {
			part, used = []string{cols[0], rest[0]}, 2+width(cols[0])+width(rest[0])
		}
		rest = rest[1:]
		for len(rest) > 0 && used+width(rest[0]) <= maxRow {
			part, used, rest = append(part, rest[0]), used+width(rest[0]), rest[1:]
		}
		fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(part, " | "), strings.Repeat(" --- |", len(part)))
		for _, l := range of {
			cells := make([]string, len(part))
			for i, c := range part {
				cells[i] = l.vals[c]
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// wrap breaks text into lines of at most width bytes at spaces (a word
// longer than width gets a line of its own).
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
		case n+1+len(w) > width:
			b.WriteString("\n")
			n = 0
		default:
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
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
