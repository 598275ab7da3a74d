// Package promref lists the metric names that binlake's Grafana dashboard
// (deploy/grafana/binlake.json) and Prometheus rules
// (deploy/prometheus/alerts.yml) query, so that tests in capture and ingest
// can check each against the metrics the binary registers: a renamed
// metric then fails a unit test instead of leaving an empty panel or an
// alert that never fires.
//
// Names are read from the PromQL expressions with a small lexer that
// drops strings, label matchers, ranges, grouping clauses, function
// calls and keywords; what is left are the metric names. promtool checks
// the expressions' syntax (make deploy-check).
package promref

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"
)

// Files are the dashboard and rules files, relative to the repository root.
var Files = []string{"deploy/grafana/binlake.json", "deploy/prometheus/alerts.yml"}

// Expr is one PromQL expression and where it is.
type Expr struct {
	Where string // file and panel title or alert name
	Query string
}

// Expressions reads every PromQL expression of the dashboard and the rules
// under the repository root: panel targets' expr, templating queries
// (label_values(metric, label)) and rule exprs.
func Expressions(root string) ([]Expr, error) {
	var exprs []Expr
	dash, err := os.ReadFile(filepath.Join(root, Files[0]))
	if err != nil {
		return nil, err
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(dash, &d); err != nil {
		return nil, fmt.Errorf("reading %s: %w", Files[0], err)
	}
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			exprs = append(exprs, Expr{Files[0] + ": panel " + p.Title, t.Expr})
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				return nil, fmt.Errorf("reading %s: variable %s: %w", Files[0], v.Name, err)
			}
		}
		m := labelValues.FindStringSubmatch(strings.TrimSpace(q.Query))
		if m == nil {
			return nil, fmt.Errorf("%s: variable %s: query %q is not label_values(<selector>, <label>)", Files[0], v.Name, q.Query)
		}
		exprs = append(exprs, Expr{Files[0] + ": variable " + v.Name, m[1]})
	}
	rules, err := os.ReadFile(filepath.Join(root, Files[1]))
	if err != nil {
		return nil, err
	}
	var r struct {
		Groups []struct {
			Rules []struct {
				Alert  string `json:"alert"`
				Record string `json:"record"`
				Expr   string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(rules, &r); err != nil {
		return nil, fmt.Errorf("reading %s: %w", Files[1], err)
	}
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			exprs = append(exprs, Expr{Files[1] + ": " + rule.Alert + rule.Record, rule.Expr})
		}
	}
	return exprs, nil
}

var (
	strRe      = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	matcherRe  = regexp.MustCompile(`\{[^}]*\}`)
	rangeRe    = regexp.MustCompile(`\[[^\]]*\]`)
	groupingRe = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identRe    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	keywords   = map[string]bool{
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
		"atan2": true, "start": true, "end": true,
	}
)

// MetricNames returns the metric names an expression selects, sorted and
// without duplicates.
func MetricNames(query string) []string {
	q := strRe.ReplaceAllString(query, `""`)
	q = matcherRe.ReplaceAllString(q, "{}")
	q = rangeRe.ReplaceAllString(q, "[]")
	q = groupingRe.ReplaceAllString(q, " ")
	var names []string
	for _, loc := range identRe.FindAllStringIndex(q, -1) {
		name := q[loc[0]:loc[1]]
		if loc[0] > 0 {
			if c := q[loc[0]-1]; c == '$' || c == '.' || (c >= '0' && c <= '9') {
				continue // a Grafana variable, a number's exponent or a duration's unit
			}
		}
		if keywords[strings.ToLower(name)] {
			continue
		}
		if rest := strings.TrimLeft(q[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function or an aggregation
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Recorder is a prometheus.Registerer that keeps the metric names of what
// is registered on it: pass it where a binary registers its metrics to
// learn every name it exports, including vectors without children yet.
type Recorder struct {
	names map[string]bool
}

var _ prometheus.Registerer = (*Recorder)(nil)

var fqNameRe = regexp.MustCompile(`fqName: "([^"]+)"`)

// Register records the names of c's descriptions.
func (r *Recorder) Register(c prometheus.Collector) error {
	if r.names == nil {
		r.names = map[string]bool{}
	}
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		m := fqNameRe.FindStringSubmatch(d.String())
		if m == nil {
			return fmt.Errorf("no fqName in %s", d)
		}
		r.names[m[1]] = true
	}
	return nil
}

// MustRegister records each collector's names and panics on an error.
func (r *Recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister does nothing and reports false.
func (r *Recorder) Unregister(prometheus.Collector) bool { return false }

// Exports reports whether a series name belongs to a registered metric: the
// name itself, or a histogram's or summary's _bucket, _sum or _count.
func (r *Recorder) Exports(series string) bool {
	if r.names[series] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(series, suffix); ok && r.names[base] {
			return true
		}
	}
	return false
}

// Names returns the recorded metric names, sorted.
func (r *Recorder) Names() []string {
	var out []string
	for n := range r.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// CheckQueried fails t unless every series of binary's own metrics
// (prefix binary+"_", plus the Go and process collectors) that the
// dashboard and the rules under root query is one rec recorded; the other
// binary's series and Prometheus' own "up" are left to their own checks.
// It also fails when fewer than min series were checked, so that a
// dashboard that lost its queries cannot pass.
func CheckQueried(t testing.TB, root, binary string, rec *Recorder, min int) {
	t.Helper()
	exprs, err := Expressions(root)
	if err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"capture": "ingest_", "ingest": "capture_"}[binary]
	checked := 0
	for _, e := range exprs {
		for _, name := range MetricNames(e.Query) {
			if name == "up" || strings.HasPrefix(name, other) {
				continue
			}
			checked++
			if !rec.Exports(name) {
				t.Errorf("%s queries %s, which %s does not export (it exports %v)", e.Where, name, binary, rec.Names())
			}
		}
	}
	if checked < min {
		t.Errorf("only %d %s series queried by %v", checked, binary, Files)
	}
}

// GaugeValue is the value of the single series of gauge name in g.
func GaugeValue(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series %s gathered", name)
	return 0
}
