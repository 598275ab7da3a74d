package promref

import (
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{`capture_ready == 0`, []string{"capture_ready"}},
		{`sum by (table, op) (rate(capture_events_total{job=~"$capture_job", op!="r"}[$__rate_interval]))`, []string{"capture_events_total"}},
		{`histogram_quantile(0.99, sum by (job, le) (rate(ingest_commit_duration_seconds_bucket[15m]))) > 60`, []string{"ingest_commit_duration_seconds_bucket"}},
		{`(min by (table) (ingest_freshness_seconds) > 900) and on (table) (max by (table) (ingest_buffered_rows) > 0)`, []string{"ingest_buffered_rows", "ingest_freshness_seconds"}},
		{`capture_ready == 1 and (time() - capture_binlog_received_timestamp_seconds) > 3e2`, []string{"capture_binlog_received_timestamp_seconds", "capture_ready"}},
		{`deriv(sum by (topic) (ingest_consumer_lag)[15m:1m]) > 0 unless ingest_ready offset 5m`, []string{"ingest_consumer_lag", "ingest_ready"}},
		{`sum(rate(a_total[5m])) by (le) / ignoring(x) group_left(y) b`, []string{"a_total", "b"}},
		{`label_replace(up{job="x"}, "dst", "$1", "src", "(capture_.*)")`, []string{"up"}},
		{`process_resident_memory_bytes / 2^30`, []string{"process_resident_memory_bytes"}},
	} {
		if got := MetricNames(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("MetricNames(%s) = %v, want %v", tc.query, got, tc.want)
		}
	}
}

// TestDashboardAndRulesNameOnlyBinlakeMetrics: every series the dashboard
// and the rules query is capture's, ingest's, a Go or process collector's
// (both binaries export those; their own tests check them), or up. The
// tests TestDeployMetricsExist in capture and ingest check that each of
// them is registered.
func TestDashboardAndRulesNameOnlyBinlakeMetrics(t *testing.T) {
	exprs, err := Expressions("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions in %v", len(exprs), Files)
	}
	for _, e := range exprs {
		names := MetricNames(e.Query)
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", e.Where, e.Query)
		}
		for _, n := range names {
			ok := n == "up"
			for _, p := range []string{"capture_", "ingest_", "process_", "go_"} {
				ok = ok || strings.HasPrefix(n, p)
			}
			if !ok {
				t.Errorf("%s: %s is not a metric binlake exports", e.Where, n)
			}
		}
	}
}

// TestEveryAlertHasARunbook: each alert says what it means and what to do
// (annotations summary and runbook) and how urgent it is (label severity).
func TestEveryAlertHasARunbook(t *testing.T) {
	b, err := os.ReadFile("../../" + Files[1])
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			if rule.Alert == "" {
				continue
			}
			n++
			if rule.Annotations["summary"] == "" || len(strings.Fields(rule.Annotations["runbook"])) < 30 {
				t.Errorf("alert %s needs a summary and a runbook paragraph of a few sentences", rule.Alert)
			}
			if s := rule.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", rule.Alert, s)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d alerts", n)
	}
}
