package ingest

import (
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/binlake/binlake/test/promref"
)

// TestDeployMetricsExist: every ingest, Go and process series that the
// Grafana dashboard and the Prometheus rules query is one ingest exports
// (registerMetrics is what Run registers), so a renamed metric fails here
// rather than leaving an empty panel or a silent alert.
func TestDeployMetricsExist(t *testing.T) {
	var rec promref.Recorder
	registerMetrics(&rec, func() bool { return true })
	promref.CheckQueried(t, "../../../..", "ingest", &rec, 10)
}

// TestReadyMetric: ingest_ready follows the readiness that /readyz reports.
func TestReadyMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	var ready atomic.Bool
	registerMetrics(reg, ready.Load)
	for _, want := range []float64{0, 1} {
		ready.Store(want == 1)
		if got := promref.GaugeValue(t, reg, "ingest_ready"); got != want {
			t.Errorf("ingest_ready = %v with ready %v, want %v", got, ready.Load(), want)
		}
	}
}
