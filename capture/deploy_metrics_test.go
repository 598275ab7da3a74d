package main

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/binlake/binlake/test/promref"
)

// TestDeployMetricsExist: every capture, Go and process series that the
// Grafana dashboard and the Prometheus rules query is one capture exports
// (registerMetrics is what run registers), so a renamed metric fails here
// rather than leaving an empty panel or a silent alert.
func TestDeployMetricsExist(t *testing.T) {
	var rec promref.Recorder
	registerMetrics(&rec, func() bool { return true })
	exprs, err := promref.Expressions("..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range exprs {
		for _, name := range promref.MetricNames(e.Query) {
			if name == "up" || strings.HasPrefix(name, "ingest_") {
				continue // Prometheus' own, or ingest's (checked by ingest's test)
			}
			checked++
			if !rec.Exports(name) {
				t.Errorf("%s queries %s, which capture does not export (it exports %v)", e.Where, name, rec.Names())
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d capture series queried by %v", checked, promref.Files)
	}
}

// TestReadyMetric: capture_ready follows the readiness that /readyz reports.
func TestReadyMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	var ready atomic.Bool
	registerMetrics(reg, ready.Load)
	for _, want := range []float64{0, 1} {
		ready.Store(want == 1)
		if got := gaugeValue(t, reg, "capture_ready"); got != want {
			t.Errorf("capture_ready = %v with ready %v, want %v", got, ready.Load(), want)
		}
	}
}

func gaugeValue(t *testing.T, g prometheus.Gatherer, name string) float64 {
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
