//go:build integration

package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// TestCompatHeartbeat runs Debezium with heartbeat.interval.ms=1000 and
// capture with --heartbeat-topic-interval=1s on an idle database: the
// heartbeat records' key and value schemas and key must equal Debezium's,
// capture's records must arrive about once a second while nothing is
// captured, and each is committed with capture's position, which follows
// the binlog even though no captured table changes.
func TestCompatHeartbeat(t *testing.T) {
	const interval = time.Second
	// An offsets topic of its own, read read_committed below: the shared
	// one's last stable offset can stay behind an open transaction of any
	// capture killed on this stack (test/chaos), which capture's own
	// reader resolves and a read_committed one waits for.
	offsets := testenv.Unique(t, "offsets")
	r := newRunWith(t, runOpts{dbz: map[string]string{"heartbeat.interval.ms": fmt.Sprint(interval.Milliseconds())},
		capEnv: []string{"CAPTURE_HEARTBEAT_TOPIC_INTERVAL=" + interval.String(), "CAPTURE_OFFSETS_TOPIC=" + offsets}})
	m := testenv.MariaDBEnv(t)

	// A transaction in another database: capture must store a position
	// past it while its own database stays idle.
	other := m.CreateDatabase(t, "hbother")
	admin := m.AdminDB(t, other)
	if _, err := admin.ExecContext(t.Context(), "CREATE TABLE t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ExecContext(t.Context(), "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var gtid string
	if err := admin.QueryRowContext(t.Context(), "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	start := time.Now()

	// Heartbeats keep coming: wait for enough of capture's after the
	// workload to measure the interval by (five gaps), reading each time up
	// to the topic's end rather than until it is quiet.
	const beats = 6
	var got []kafkatest.Record
	var stamps []time.Time // of capture's heartbeats after start
	testenv.CheckFor(t, time.Minute, interval, func() error {
		got = kafkatest.ReadAll(t, r.brokers, r.dec, "__debezium-heartbeat."+r.capPrefix, 1, time.Minute)
		stamps = stamps[:0]
		for _, rec := range got {
			ms, _ := rec.Value["ts_ms"].(int64)
			if ts := time.UnixMilli(ms); ts.After(start) {
				stamps = append(stamps, ts)
			}
		}
		if len(stamps) < beats {
			return fmt.Errorf("capture wrote %d heartbeat records in the %v after the workload (%d in all), want %d (interval %v)",
				len(stamps), time.Since(start).Round(time.Millisecond), len(got), beats, interval)
		}
		return nil
	})
	want := kafkatest.ReadAll(t, r.brokers, r.dec, "__debezium-heartbeat."+r.dbzPrefix, 1, time.Minute)

	// Schemas and key as Debezium's; ts_ms is each connector's clock.
	n, diffs := compareRecord(t.Context(), t, r.dec, r.dbzPrefix, r.capPrefix, want[0], got[0], allowed)
	for _, d := range diffs {
		t.Error(d)
	}
	if n < 6 {
		t.Errorf("compared %d fields of a heartbeat record, want key, value and both schemas", n)
	}

	// The interval: over the idle period, about one record per interval.
	// Gaps are never shorter than the interval (less clock rounding).
	// Heartbeats are written at binlog transaction boundaries, so a large
	// transaction of another test on the shared server delays one (seen:
	// a 39 MB transaction read for 3 s, and gaps of 1.8 s and 5.3 s in
	// one run of 6): a delay only lengthens gaps, so the shortest quarter
	// of them is what must be the interval.
	var gaps []time.Duration
	for i := 1; i < len(stamps); i++ {
		gap := stamps[i].Sub(stamps[i-1])
		gaps = append(gaps, gap)
		if gap < interval-50*time.Millisecond || gap > 10*interval {
			t.Errorf("heartbeat %d came %v after the previous one, want about %v", i, gap, interval)
		}
	}
	slices.Sort(gaps)
	// Within a quarter interval: a capture heartbeating every other
	// interval has no gap under 2 s (the median at up to 2× let it pass).
	if q := gaps[len(gaps)/4]; q > interval+interval/4 {
		t.Errorf("a quarter of the gaps between heartbeats exceed %v, want about %v (gaps %v)", q, interval, gaps)
	}
	t.Logf("capture heartbeats: %d in %v, gaps %v; Debezium: %d records in total", len(stamps), stamps[len(stamps)-1].Sub(stamps[0]), gaps, len(want))

	// The stored position covers the other database's transaction.
	pos := storedPosition(t, r.brokers, offsets, r.capPrefix)
	for _, g := range strings.Split(gtid, ",") {
		if !covers(pos, g) {
			t.Errorf("stored position %s does not cover %s (binlog at %s)", pos, g, gtid)
		}
	}
}

// covers reports whether a MariaDB GTID set holds the domain-server-seq
// GTID g (same domain, sequence at least g's).
func covers(set, g string) bool {
	dom, _, _ := strings.Cut(g, "-")
	seq := g[strings.LastIndex(g, "-")+1:]
	for _, e := range strings.Split(set, ",") {
		if d, _, _ := strings.Cut(e, "-"); d == dom {
			s := e[strings.LastIndex(e, "-")+1:]
			return len(s) > len(seq) || (len(s) == len(seq) && s >= seq)
		}
	}
	return false
}

// storedPosition returns the GTID set of the last committed position of
// capture id in the offsets topic named, read up to its end as of now
// (captures keep writing to it, so it never goes quiet).
func storedPosition(t *testing.T, brokers []string, topic, id string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	// Read until every partition has a record at or past its end as of
	// now, or nothing arrives for 5 s.
	pending := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			pending[o.Partition] = o.Offset
		}
	})
	var last []byte
	for len(pending) > 0 {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if string(r.Key) == id {
				last = r.Value
			}
			if end, ok := pending[r.Partition]; ok && r.Offset >= end-1 {
				delete(pending, r.Partition)
			}
		})
		if n == 0 {
			break
		}
	}
	var st struct {
		GTIDSet string `json:"gtid_set"`
	}
	if err := json.Unmarshal(last, &st); err != nil {
		t.Fatalf("stored position of %s: %v (%s)", id, err, last)
	}
	return st.GTIDSet
}
