package run

import (
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/binlake/binlake/test/promref"
)

// TestDeployMetricsExist: every capture, Go and process series that the
// Grafana dashboard and the Prometheus rules query is one capture exports
// (RegisterMetrics is what Run registers), so a renamed metric fails here
// rather than leaving an empty panel or a silent alert.
func TestDeployMetricsExist(t *testing.T) {
	var rec promref.Recorder
	RegisterMetrics(&rec, func() bool { return true })
	promref.CheckQueried(t, "../../../..", "capture", &rec, 10)
}

// TestReadyMetric: capture_ready follows the readiness that /readyz reports.
func TestReadyMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	var ready atomic.Bool
	RegisterMetrics(reg, ready.Load)
	for _, want := range []float64{0, 1} {
		ready.Store(want == 1)
		if got := promref.GaugeValue(t, reg, "capture_ready"); got != want {
			t.Errorf("capture_ready = %v with ready %v, want %v", got, ready.Load(), want)
		}
	}
}
