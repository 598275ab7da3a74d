package pipeline

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/commit"
)

// Metrics are ingest's Prometheus metrics. Labels are bounded: table, op,
// result, topic and partition.
type Metrics struct {
	rows        *prometheus.CounterVec
	commits     *prometheus.CounterVec
	attempts    *prometheus.CounterVec
	commitTime  *prometheus.HistogramVec
	bufRows     *prometheus.GaugeVec
	bufBytes    *prometheus.GaugeVec
	lastSource  *prometheus.GaugeVec
	deadLetters *prometheus.CounterVec
	stale       *prometheus.CounterVec
	rewrites    *prometheus.CounterVec
	rewriteFile *prometheus.CounterVec
	rewriteRows *prometheus.CounterVec
	rewriteTime *prometheus.CounterVec
	freshnessMu sync.Mutex
	lastTs      map[string]int64 // table → source ts_ms of the last committed change
	stable      map[tp]int64     // last stable offset seen in fetches
	next        map[tp]int64     // next offset the table holds
	freshDesc   *prometheus.Desc
	lagDesc     *prometheus.Desc
}

type tp struct {
	topic     string
	partition int32
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_rows_total",
			Help: "Change events committed to Iceberg, by table and op (c, r, u, d, t)."}, []string{"table", "op"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_commits_total",
			Help: "Table commits by result: ok, noop (already committed), conflict (gave up on conflicts), unknown (outcome unknown or other failure), invalid."}, []string{"table", "result"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_commit_attempts_total",
			Help: "Catalog commit attempts; more attempts than commits means conflicts or ambiguous outcomes were retried."}, []string{"table"}),
		commitTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ingest_commit_duration_seconds",
			Help: "Time to write files and commit one batch, retries included.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 12)}, []string{"table"}),
		bufRows: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ingest_buffered_rows",
			Help: "Change events buffered and not yet committed."}, []string{"table"}),
		bufBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ingest_buffered_bytes",
			Help: "Bytes of the change events buffered and not yet committed."}, []string{"table"}),
		lastSource: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ingest_last_committed_source_timestamp_seconds",
			Help: "source.ts_ms of the newest committed change."}, []string{"table"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_dead_letter_records_total",
			Help: "Records sent to the dead-letter topic (errors-tolerance=dlq), by source topic and stage (decode, map); a record an earlier run already sent is not counted again."}, []string{"topic", "stage"}),
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_stale_dropped_total",
			Help: "Change events committed as consumed but dropped because their source order is below the table's truncate watermark: a truncate later in the source erased them."}, []string{"table"}),
		rewrites: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_rewrites_total",
			Help: "In-ingest rewrites of a table's most deleted data files (rewrite-dead-fraction, rewrite-delete-files) by result: ok, conflict (another writer committed first; planned again after the next commit) or failed."}, []string{"table", "result"}),
		rewriteFile: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_rewrite_files_total",
			Help: "Data files rewritten by in-ingest rewrites (their delete files removed with them)."}, []string{"table"}),
		rewriteRows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_rewrite_rows_total",
			Help: "Rows of data files rewritten by in-ingest rewrites, by kind: live (moved to new files) or dead (dropped)."}, []string{"table", "kind"}),
		rewriteTime: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_rewrite_seconds_total",
			Help: "Time spent in in-ingest rewrites (planning included), which the table's next commit waits for."}, []string{"table"}),
		lastTs:    map[string]int64{},
		stable:    map[tp]int64{},
		next:      map[tp]int64{},
		freshDesc: prometheus.NewDesc("ingest_freshness_seconds", "Now minus the source timestamp of the newest committed change.", []string{"table"}, nil),
		lagDesc:   prometheus.NewDesc("ingest_consumer_lag", "Records (read_committed last stable offset) not yet committed to the table, per partition.", []string{"topic", "partition"}, nil),
	}
	reg.MustRegister(m.rows, m.commits, m.attempts, m.commitTime, m.bufRows, m.bufBytes, m.lastSource, m.deadLetters, m.stale,
		m.rewrites, m.rewriteFile, m.rewriteRows, m.rewriteTime, m)
	return m
}

// Describe implements prometheus.Collector for the computed gauges.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.freshDesc; ch <- m.lagDesc }

// Collect implements prometheus.Collector for the computed gauges.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.freshnessMu.Lock()
	defer m.freshnessMu.Unlock()
	now := time.Now()
	for t, ts := range m.lastTs {
		ch <- prometheus.MustNewConstMetric(m.freshDesc, prometheus.GaugeValue, now.Sub(time.UnixMilli(ts)).Seconds(), t)
	}
	for k, lso := range m.stable {
		next, ok := m.next[k]
		if !ok {
			next = 0
		}
		ch <- prometheus.MustNewConstMetric(m.lagDesc, prometheus.GaugeValue, float64(max(lso-next, 0)), k.topic, strconv.Itoa(int(k.partition)))
	}
}

func name(ident table.Identifier) string { return strings.Join(ident, ".") }

func (m *Metrics) setStable(topic string, partition int32, lso int64) {
	if lso < 0 {
		return
	}
	m.freshnessMu.Lock()
	m.stable[tp{topic, partition}] = lso
	m.freshnessMu.Unlock()
}

// forget drops the consumer lag of partitions this member no longer owns
// (revoked or lost), so that after a rebalance only the new owner reports
// them instead of this member repeating their last lag forever.
func (m *Metrics) forget(parts map[string][]int32) {
	m.freshnessMu.Lock()
	defer m.freshnessMu.Unlock()
	for topic, ps := range parts {
		for _, p := range ps {
			delete(m.stable, tp{topic, p})
			delete(m.next, tp{topic, p})
		}
	}
}

// deadLettered counts a record sent to the dead-letter topic.
func (m *Metrics) deadLettered(topic, stage string) {
	m.deadLetters.WithLabelValues(topic, stage).Inc()
}

// advanced records next offsets of topic that the consumer group holds
// (records passed on a topic without a table), for the consumer lag.
func (m *Metrics) advanced(topic string, next map[int32]int64) {
	m.freshnessMu.Lock()
	defer m.freshnessMu.Unlock()
	for p, n := range next {
		if n > m.next[tp{topic, p}] {
			m.next[tp{topic, p}] = n
		}
	}
}

func (m *Metrics) buffer(ident table.Identifier, rows int, bytes int64) {
	m.bufRows.WithLabelValues(name(ident)).Add(float64(rows))
	m.bufBytes.WithLabelValues(name(ident)).Add(float64(bytes))
}

func (m *Metrics) setBuffer(ident table.Identifier, rows int, bytes int64) {
	m.bufRows.WithLabelValues(name(ident)).Set(float64(rows))
	m.bufBytes.WithLabelValues(name(ident)).Set(float64(bytes))
}

func (m *Metrics) commitDone(ident table.Identifier, res commit.Result, d time.Duration, err error) {
	t := name(ident)
	m.commitTime.WithLabelValues(t).Observe(d.Seconds())
	m.attempts.WithLabelValues(t).Add(float64(res.Attempts))
	result := "ok"
	switch {
	case err == nil && res.Events == 0 && res.Passed == 0:
		result = "noop"
	case err == nil:
	case errors.Is(err, batch.ErrInvalidEvent):
		result = "invalid"
	case errors.Is(err, table.ErrCommitFailed):
		result = "conflict"
	default:
		result = "unknown"
	}
	m.commits.WithLabelValues(t, result).Inc()
	if err == nil {
		m.rewritten(t, res)
	}
}

// rewritten records the rewrite a successful commit made, if any.
func (m *Metrics) rewritten(t string, res commit.Result) {
	rw := res.Rewrite
	if rw.Duration > 0 {
		m.rewriteTime.WithLabelValues(t).Add(rw.Duration.Seconds())
	}
	switch {
	case res.RewriteErr != nil:
		m.rewrites.WithLabelValues(t, "failed").Inc()
	case rw.Conflict:
		m.rewrites.WithLabelValues(t, "conflict").Inc()
	case rw.Files > 0:
		m.rewrites.WithLabelValues(t, "ok").Inc()
		m.rewriteFile.WithLabelValues(t).Add(float64(rw.Files))
		m.rewriteRows.WithLabelValues(t, "live").Add(float64(rw.Rows))
		m.rewriteRows.WithLabelValues(t, "dead").Add(float64(rw.DeadRows))
	}
}

// committed records what a successful commit applied.
func (m *Metrics) committed(ident table.Identifier, buf *batch.Buffer, res commit.Result, topic string) {
	t := name(ident)
	var counts [256]int
	var maxTs int64
	for _, ev := range buf.Events() {
		counts[ev.Op]++
		maxTs = max(maxTs, ev.TsMs)
	}
	for op, n := range counts {
		if n > 0 {
			m.rows.WithLabelValues(t, string(rune(op))).Add(float64(n))
		}
	}
	// Added even when 0, so that the series exists from the table's first
	// commit and increase() sees its first drops.
	m.stale.WithLabelValues(t).Add(float64(res.StaleEvents))
	m.freshnessMu.Lock()
	defer m.freshnessMu.Unlock()
	if maxTs > m.lastTs[t] {
		m.lastTs[t] = maxTs
		m.lastSource.WithLabelValues(t).Set(float64(maxTs) / 1000)
	}
	for p, next := range res.Offsets[topic] {
		m.next[tp{topic, p}] = next
	}
}
