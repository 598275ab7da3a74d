//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// TestSnapshotKeylessTable snapshots a table without a primary key (with
// duplicate rows) while a writer inserts, updates and deletes its rows,
// behind a keyed table so that the keyless table's snapshot starts well
// after capture's start position. Debezium's rules for such tables: every
// record has a null key; r and c add their after image, u replaces its
// before image by its after image, d removes its before image. Applied in
// topic order to a multiset, the topic must never remove a row it does
// not hold and must end equal to the table.
func TestSnapshotKeylessTable(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_LOG_LEVEL=info", "CAPTURE_SNAPSHOT_CHUNK_ROWS=1000", "CAPTURE_COMMIT_INTERVAL=100ms")
	admin := c.db.AdminDB(t, c.dbName)
	const keyed, keyless = 60000, 30000
	exec1(t, c,
		"CREATE TABLE a_keyed (id BIGINT PRIMARY KEY, v VARCHAR(32) NOT NULL)",
		fmt.Sprintf("INSERT INTO a_keyed SELECT seq, CONCAT('k', seq) FROM seq_1_to_%d", keyed),
		// No key, no unique index; (a, b, c) repeats, so rows have duplicates.
		"CREATE TABLE nk (a INT NOT NULL, b VARCHAR(32), c DECIMAL(10,2) NOT NULL)",
		fmt.Sprintf("INSERT INTO nk SELECT seq %% 7000, IF(seq %% 11 = 0, NULL, CONCAT('b', seq %% 3000)), (seq %% 50) / 4 FROM seq_1_to_%d", keyless),
	)

	wctx, stopWriter := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var ops, fails atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(5, 6))
		for wctx.Err() == nil {
			a := rng.IntN(7500)
			var q string
			switch r := rng.IntN(10); {
			case r < 4:
				q = fmt.Sprintf("INSERT INTO nk VALUES (%d, 'w%d', %d.25)", a, rng.IntN(50), rng.IntN(20))
			case r < 7:
				q = fmt.Sprintf("UPDATE nk SET c = c + 1, b = CONCAT(COALESCE(b, ''), '+') WHERE a = %d LIMIT 2", a)
			default:
				q = fmt.Sprintf("DELETE FROM nk WHERE a = %d LIMIT 1", a)
			}
			// Not cancelled with the writer: a statement cut off by the
			// client can still commit after the table was read.
			if _, err := admin.ExecContext(context.WithoutCancel(wctx), q); err != nil {
				if wctx.Err() == nil {
					fails.Add(1)
				}
				continue
			}
			ops.Add(1)
		}
	}()
	defer func() { stopWriter(); wg.Wait() }()

	p := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, p, "snapshot: done", 5*time.Minute)
	waitChanges(t, &ops, 50, "the snapshot finished") // changes after the snapshot stream too
	stopWriter()
	wg.Wait()
	c.caughtUp(t, 5*time.Minute)
	t.Logf("writer made %d changes (%d failed statements) while capture ran", ops.Load(), fails.Load())
	if ops.Load() < 200 {
		t.Fatalf("the writer made only %d changes; the test proves little", ops.Load())
	}
	for _, l := range strings.Split(p.fullLog(t), "\n") {
		if strings.Contains(l, "snapshot:") {
			t.Log(l)
		}
	}

	want := map[string]int{}
	rows, err := admin.QueryContext(t.Context(), "SELECT a, COALESCE(b, '\\0'), c FROM nk")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var a int64
		var b, cc string
		if err := rows.Scan(&a, &b, &cc); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("%d|%s|%s", a, b, cc)]++
		n++
	}
	rows.Close()

	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("nk"), n, 5*time.Minute)
	p.stop(t, 30*time.Second)
	rowKey := func(img any) string {
		m := img.(map[string]any)
		b := "\x00"
		if s, ok := m["b"].(string); ok {
			b = s
		}
		return fmt.Sprintf("%d|%s|%s", m["a"].(int32), b, m["c"].(*big.Rat).FloatString(2))
	}
	got := map[string]int{}
	ops2 := map[string]int{}
	bad := 0
	remove := func(k string, r kafkatest.Record) {
		if got[k] == 0 {
			bad++
			if bad <= 10 {
				t.Errorf("offset %d: op %s removes row %q, which the topic does not hold", r.Offset, r.Op(), k)
			}
			return
		}
		if got[k]--; got[k] == 0 {
			delete(got, k)
		}
	}
	for _, r := range recs {
		if r.RawKey != nil {
			t.Fatalf("offset %d: a table without a primary key has a non-null key %x", r.Offset, r.RawKey)
		}
		ops2[r.Op()]++
		switch r.Op() {
		case "":
			// the tombstone after a delete
		case "r", "c":
			got[rowKey(r.Value["after"])]++
		case "u":
			remove(rowKey(r.Value["before"]), r)
			got[rowKey(r.Value["after"])]++
		case "d":
			remove(rowKey(r.Value["before"]), r)
		default:
			t.Fatalf("offset %d: unexpected op %q", r.Offset, r.Op())
		}
	}
	t.Logf("topic: %d records %v; table: %d rows", len(recs), ops2, n)
	if ops2["r"] == 0 {
		t.Fatalf("no snapshot records")
	}
	// The writer ran from before capture's start position to after the
	// snapshot: without its changes on the topic, the multiset check below
	// only compares a snapshot with a table nobody changed.
	if streamed := ops2["c"] + ops2["u"] + ops2["d"]; streamed < 100 {
		t.Fatalf("only %d streamed changes on the topic; the writer's changes did not reach it", streamed)
	}
	for k, w := range want {
		if got[k] != w {
			bad++
			if bad <= 20 {
				t.Errorf("row %q: %d in the topic's multiset, %d in the table", k, got[k], w)
			}
		}
	}
	for k, g := range got {
		if want[k] == 0 {
			bad++
			if bad <= 20 {
				t.Errorf("row %q: %d in the topic's multiset, none in the table", k, g)
			}
		}
	}
	if bad > 0 {
		// The records of the first differing row's a, to see what happened.
		for k := range want {
			if got[k] == want[k] {
				continue
			}
			a := strings.SplitN(k, "|", 2)[0] + "|"
			for _, r := range recs {
				for _, img := range []string{"before", "after"} {
					if r.Value != nil && r.Value[img] != nil && strings.HasPrefix(rowKey(r.Value[img]), a) {
						src := r.Value["source"].(map[string]any)
						t.Logf("offset %d op %s %s %q (file %v pos %v snapshot %v)", r.Offset, r.Op(), img, rowKey(r.Value[img]), src["file"], src["pos"], src["snapshot"])
					}
				}
			}
			break
		}
		t.Fatalf("%d differences between the topic's multiset and the table", bad)
	}
}
