//go:build integration

package bench

import (
	"database/sql"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/validate"
)

// TestBenchFreshness drives a steady workload of BINLAKE_FRESHNESS_RATE
// source changes per second (default 20,000; inserts and updates, one
// statement of each per table every 100 ms) over 8 tables for
// BINLAKE_FRESHNESS_SECONDS (default 300) through capture and ingest
// (flush interval 10 s), and prints
//
//	FRESHNESS rate=<achieved changes/s> flush=<s> p50=<s> p99=<s> max=<s> lag_max=<records> commits=<n>
//
// over every commit made during and after the workload: the age of its
// newest change when it became visible, the snapshot's timestamp-ms minus
// its binlake.source.ts-ms (the binlog event time of its newest change).
// Binlog event times have whole seconds, so an age can read up to 1 s
// older than it is. lag_max is the largest ingest_consumer_lag seen. When
// the machine cannot issue the rate, rate says what it did.
func TestBenchFreshness(t *testing.T) {
	if os.Getenv("BINLAKE_BENCH") != "1" {
		t.Skip("set BINLAKE_BENCH=1 (make bench-freshness)")
	}
	const tables, flush = 8, 10 * time.Second
	rate := envInt(t, "BINLAKE_FRESHNESS_RATE", 20_000)
	seconds := envInt(t, "BINLAKE_FRESHNESS_SECONDS", 300)
	m := testenv.MariaDBEnv(t)
	brokers := testenv.KafkaBrokers(t)
	db := m.CreateDatabase(t, "bfresh")
	admin := m.AdminDB(t, "")
	conn := m.AdminDB(t, db)
	var names []string
	for i := range tables {
		names = append(names, fmt.Sprintf("orders_%d", i))
		mustExec(t, conn, strings.Replace(ordersDDL, "TABLE orders", "TABLE "+names[i], 1))
	}
	var gtid string
	if err := admin.QueryRowContext(t.Context(), "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	// One row per table first, so that every topic exists before ingest
	// starts and its first commit comes before the clock starts.
	for _, n := range names {
		mustExec(t, conn, insertOrders(n, 1, 1))
	}
	prefix := "bf_" + db
	capture := startCapture(t, captureEnv(t, m, prefix, db, "CAPTURE_SNAPSHOT_MODE=never", "CAPTURE_START_POSITION=gtid:"+gtid))
	var topics []string
	for _, n := range names {
		topics = append(topics, prefix+"."+db+"."+n)
		waitEnd(t, brokers, topics[len(topics)-1], 1, 2*time.Minute)
	}
	ice := testenv.IcebergEnv(t)
	// The default delete mode (auto) and the flush interval of the issue
	// (the last of a variable's values counts).
	env := append(ingestEnv(t, changeTopics{topics: topics}, db, "auto", "2"), "INGEST_FLUSH_INTERVAL="+flush.String())
	ingest := startIngest(t, build(t, "ingest"), t.TempDir(), "freshness", env)
	testenv.CheckFor(t, 2*time.Minute, 200*time.Millisecond, func() error {
		ms, err := scrape("http://" + ingest.addr + "/metrics")
		if err != nil {
			return err
		}
		if n := ms["ingest_rows_total"]; n < tables {
			return fmt.Errorf("ingest committed %.0f of the %d first rows", n, tables)
		}
		return nil
	})

	// The workload, in the background: ingest's metrics are polled
	// meanwhile (lag_max) until it has committed all of it.
	started := time.Now()
	var total atomic.Int64
	total.Store(-1)
	go func() {
		n := steadyWorkload(t, conn, names, rate, time.Duration(seconds)*time.Second)
		total.Store(int64(n) + tables)
	}()
	r := ingest.wait(t, func() float64 { return float64(total.Load()) })
	achieved := float64(total.Load()-tables) / float64(seconds)
	capture.stop()

	cat, err := rest.NewCatalog(t.Context(), "bench", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	var ages []float64
	for _, n := range names {
		tbl, err := cat.LoadTable(t.Context(), table.Identifier{db, n})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tbl.Metadata().Snapshots() {
			if s.TimestampMs < started.UnixMilli() || s.Summary == nil {
				continue
			}
			if s.Summary.Properties[validate.CommitIDKey] == "" {
				continue // not a batch's (an in-ingest rewrite's): no source change
			}
			src, err := strconv.ParseInt(s.Summary.Properties["binlake.source.ts-ms"], 10, 64)
			if err != nil {
				t.Fatalf("snapshot %d of %s has no binlake.source.ts-ms: %v", s.SnapshotID, n, err)
			}
			ages = append(ages, float64(s.TimestampMs-src)/1000)
		}
	}
	if len(ages) == 0 {
		t.Fatal("no commits during the workload")
	}
	slices.Sort(ages)
	fmt.Printf("FRESHNESS rate=%.0f flush=%.0f p50=%.2f p99=%.2f max=%.2f lag_max=%.0f commits=%d\n",
		achieved, flush.Seconds(), quantile(ages, 0.50), quantile(ages, 0.99), ages[len(ages)-1], r.lagMax, len(ages))
}

// steadyWorkload issues rate changes per second over tables for d: every
// 100 ms, per table, one INSERT of new rows and one UPDATE of existing
// ones (4:1), each table on its own connection. A statement that takes
// longer than its tick delays the next one (ticks are dropped, not made
// up), so the achieved rate can fall short. It returns the changes made
// (rows affected).
func steadyWorkload(t *testing.T, conn *sql.DB, tables []string, rate int, d time.Duration) int {
	perTick := max(rate/10/len(tables), 2) // changes per table per 100 ms
	ins := max(perTick*4/5, 1)
	upd := perTick - ins
	var (
		wg    sync.WaitGroup
		total atomic.Int64
		errs  = make(chan error, len(tables))
	)
	deadline := time.Now().Add(d)
	for _, name := range tables {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			next, cursor := 2, 2 // id 1 is the first row
			for time.Now().Before(deadline) {
				<-tick.C
				res, err := conn.ExecContext(t.Context(), insertOrders(name, next, next+ins-1))
				if err != nil {
					errs <- err
					return
				}
				next += ins
				n, _ := res.RowsAffected()
				if cursor+upd >= next {
					cursor = 2
				}
				res, err = conn.ExecContext(t.Context(), fmt.Sprintf(
					"UPDATE %s SET amount = amount + 1, note = CONCAT(note, '+') WHERE id BETWEEN %d AND %d", name, cursor, cursor+upd-1))
				if err != nil {
					errs <- err
					return
				}
				cursor += upd
				u, _ := res.RowsAffected()
				total.Add(n + u)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("workload: %v", err)
	}
	return int(total.Load())
}

// quantile is the q-quantile of sorted (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
