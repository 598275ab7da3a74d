package pipeline

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestConsumerLagForgetsRevokedPartitions: after a rebalance takes a
// partition away, this member stops reporting its lag (the new owner does),
// while the partitions it keeps are still reported.
func TestConsumerLagForgetsRevokedPartitions(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.setStable("p.db.t", 0, 100)
	m.setStable("p.db.t", 1, 50)
	m.freshnessMu.Lock()
	m.next[tp{"p.db.t", 0}] = 40 // the table holds offsets up to 40
	m.freshnessMu.Unlock()
	want := `
# HELP ingest_consumer_lag Records (read_committed last stable offset) not yet committed to the table, per partition.
# TYPE ingest_consumer_lag gauge
ingest_consumer_lag{partition="0",topic="p.db.t"} 60
ingest_consumer_lag{partition="1",topic="p.db.t"} 50
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ingest_consumer_lag"); err != nil {
		t.Fatal(err)
	}
	m.forget(map[string][]int32{"p.db.t": {0}})
	want = `
# HELP ingest_consumer_lag Records (read_committed last stable offset) not yet committed to the table, per partition.
# TYPE ingest_consumer_lag gauge
ingest_consumer_lag{partition="1",topic="p.db.t"} 50
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ingest_consumer_lag"); err != nil {
		t.Fatalf("after partition 0 was revoked: %v", err)
	}
}
