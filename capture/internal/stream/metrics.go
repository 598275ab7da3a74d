package stream

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/schemas/debezium"
)

// Metrics are capture's Prometheus metrics. Labels are bounded: table
// (topic) and op, never keys or positions.
type Metrics struct {
	Events        *prometheus.CounterVec
	Bytes         prometheus.Counter
	Commits       *prometheus.CounterVec
	CommitSeconds prometheus.Histogram
	LagSeconds    prometheus.Gauge
	// ReceivedAt is the wall-clock time of the last binlog event or
	// heartbeat read from the server. The server sends a heartbeat every
	// heartbeat-interval when the binlog is idle, so a value older than a
	// few intervals means the replication connection stalled, which
	// LagSeconds (last set by the last event) cannot show.
	ReceivedAt    prometheus.Gauge
	BinlogPos     prometheus.Gauge
	BinlogFileSeq prometheus.Gauge
	// SnapshotRows counts rows read by the snapshot and
	// SnapshotRowsEstimated is the server's estimate of each table's rows.
	SnapshotRows          *prometheus.CounterVec
	SnapshotRowsEstimated *prometheus.GaugeVec
	// SnapshotTableDone is 1 for each table whose snapshot rows are all emitted.
	SnapshotTableDone *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg (if not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "capture_events_total", Help: "Change events published, by table topic and op.",
		}, []string{"table", "op"}),
		Bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "capture_bytes_out_total", Help: "Bytes of keys and values published.",
		}),
		Commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "capture_transaction_commits_total", Help: "Kafka transactions ended, by result.",
		}, []string{"result"}),
		CommitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "capture_transaction_commit_seconds", Help: "Latency of flushing and committing a Kafka transaction.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		LagSeconds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "capture_source_lag_seconds", Help: "Now minus the timestamp of the last binlog event read.",
		}),
		ReceivedAt: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "capture_binlog_received_timestamp_seconds", Help: "Unix time of the last binlog event or heartbeat received from the server.",
		}),
		BinlogPos: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "capture_position_binlog_pos", Help: "Binlog offset of the last committed position.",
		}),
		BinlogFileSeq: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "capture_position_binlog_file_seq", Help: "Sequence number of the binlog file of the last committed position.",
		}),
		SnapshotRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "capture_snapshot_rows_read_total", Help: "Rows read by the initial snapshot, by table (db.table).",
		}, []string{"table"}),
		SnapshotRowsEstimated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "capture_snapshot_rows_estimated", Help: "Rows of each snapshotted table as information_schema.TABLES.TABLE_ROWS estimates them.",
		}, []string{"table"}),
		SnapshotTableDone: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "capture_snapshot_table_done", Help: "1 once every snapshot row of the table (db.table) has been emitted.",
		}, []string{"table"}),
	}
	if reg != nil {
		reg.MustRegister(m.Events, m.Bytes, m.Commits, m.CommitSeconds, m.LagSeconds, m.ReceivedAt, m.BinlogPos, m.BinlogFileSeq, m.SnapshotRows, m.SnapshotRowsEstimated, m.SnapshotTableDone)
	}
	return m
}

// event counts an event of t and its bytes.
func (m *Metrics) event(t *table, op debezium.Op, bytes int) {
	t.eventCounter(m, op).Inc()
	m.Bytes.Add(float64(bytes))
}

func (m *Metrics) observeSource(ts uint32, now time.Time) {
	if ts == 0 {
		return
	}
	lag := now.Sub(time.Unix(int64(ts), 0)).Seconds()
	if lag < 0 {
		lag = 0
	}
	m.LagSeconds.Set(lag)
}

// received records that the server sent an event or a heartbeat at now.
func (m *Metrics) received(now time.Time) {
	m.ReceivedAt.Set(float64(now.UnixNano()) / 1e9)
}

func (m *Metrics) setPosition(p binlog.Position) {
	m.BinlogPos.Set(float64(p.Pos))
	var seq int
	if dot := lastDot(p.File); dot >= 0 {
		for _, c := range p.File[dot+1:] {
			if c < '0' || c > '9' {
				seq = 0
				break
			}
			seq = seq*10 + int(c-'0')
		}
	}
	m.BinlogFileSeq.Set(float64(seq))
}

func lastDot(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}
