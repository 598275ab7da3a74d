//go:build integration

package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/validate"
)

// change is one committed source change of a key, as the writer made it.
type change struct {
	op string // c, u, d
	v  int64  // the row's v after (c, u) or before (d) the change
}

// workload is a single writer making random multi-statement transactions
// of inserts, updates (v = v + 1) and deletes over a small key space, and
// logging, per key, every change it committed, in commit order.
type workload struct {
	db   *sql.DB
	keys int

	mu       sync.Mutex
	log      map[int64][]change
	live     map[int64]int64 // key → v
	changes  int
	commits  int
	failures int
}

func newWorkload(db *sql.DB, keys int) *workload {
	return &workload{db: db, keys: keys, log: map[int64][]change{}, live: map[int64]int64{}}
}

func (w *workload) run(ctx context.Context, t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for ctx.Err() == nil {
		tx, err := w.db.BeginTx(ctx, nil)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("begin: %v", err)
			}
			return
		}
		w.mu.Lock()
		live := make(map[int64]int64, len(w.live))
		for k, v := range w.live {
			live[k] = v
		}
		w.mu.Unlock()
		var pending []struct {
			k int64
			c change
		}
		n := 1 + rng.IntN(5)
		ok := true
		for range n {
			k := int64(1 + rng.IntN(w.keys))
			v, exists := live[k]
			var c change
			var q string
			var args []any
			switch {
			case !exists:
				c, q, args = change{"c", 0}, "INSERT INTO kv (id, v, pad) VALUES (?, 0, ?)", []any{k, strings.Repeat("x", rng.IntN(100))}
				live[k] = 0
			case rng.IntN(10) < 7:
				c, q, args = change{"u", v + 1}, "UPDATE kv SET v = v + 1 WHERE id = ?", []any{k}
				live[k] = v + 1
			default:
				c, q, args = change{"d", v}, "DELETE FROM kv WHERE id = ?", []any{k}
				delete(live, k)
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				ok = false
				break
			}
			pending = append(pending, struct {
				k int64
				c change
			}{k, c})
		}
		if !ok || tx.Commit() != nil {
			_ = tx.Rollback()
			w.mu.Lock()
			w.failures++
			w.mu.Unlock()
			continue
		}
		w.mu.Lock()
		w.live = live
		for _, p := range pending {
			w.log[p.k] = append(w.log[p.k], p.c)
		}
		w.changes += len(pending)
		w.commits++
		w.mu.Unlock()
	}
}

// TestCaptureKill9ExactlyOnce kills capture with SIGKILL at random moments
// (at least 20 times) while a writer runs, restarting it each time, then
// starts a second capture with the same id to check the first is fenced.
// A read_committed consumer must see every change exactly once and, per
// key, in commit order, each delete followed by its tombstone.
func TestCaptureKill9ExactlyOnce(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_TOPIC_CREATION_DEFAULT_PARTITIONS=3", "CAPTURE_LOG_LEVEL=info", "CAPTURE_COMMIT_INTERVAL=50ms")
	exec1(t, c, "CREATE TABLE kv (id BIGINT PRIMARY KEY, v BIGINT NOT NULL, pad VARCHAR(100))")
	bin := binary(t, "capture")

	// Start capture once so that it stores a position before the writer starts.
	first := start(t, bin, c.env, "capture-0.log")
	waitLog(t, first, "Connected to server", 30*time.Second)

	w := newWorkload(c.db.AdminDB(t, c.dbName), 300)
	wctx, stopWriter := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.run(wctx, t) }()

	rng := rand.New(rand.NewPCG(7, 9))
	p := first
	const kills = 20
	for i := range kills {
		time.Sleep(time.Duration(300+rng.IntN(2500)) * time.Millisecond) // a random kill moment: pacing, not a wait
		if p.exited() {
			t.Fatalf("capture exited on its own before kill %d: %v\n%s", i, p.err, p.output())
		}
		p.kill()
		p = start(t, bin, c.env, fmt.Sprintf("capture-%d.log", i+1))
	}

	// A second capture with the same id fences the running one, once that
	// one holds the producer: it is streaming and the topic's last stable
	// offset has moved since (its first commit, or the abort of the killed
	// one's open transaction when it took the transactional id). Started
	// earlier, the newer one could be fenced by the older instead.
	older := p
	waitLog(t, older, "Connected to server", time.Minute)
	lso := lastStable(t, c.topic("kv"))
	testenv.CheckFor(t, time.Minute, 50*time.Millisecond, func() error {
		if now := lastStable(t, c.topic("kv")); now <= lso {
			return fmt.Errorf("the running capture has not committed: last stable offsets still sum to %d", now)
		}
		return nil
	})
	newer := start(t, bin, c.env, "capture-newer.log")
	testenv.Eventually(t, 60*time.Second, 100*time.Millisecond, older.exited, "the older capture to stop after being fenced")
	// The older capture stops either when Kafka fences its producer or,
	// first, when MariaDB drops its binlog connection because a replica
	// with the same server id connected: both before it can write again.
	// A commit racing the takeover was once answered UNKNOWN_SERVER_ERROR
	// (Kafka 4.3): capture stops on that too, saying the outcome is unknown
	// and why (publish.ErrCommitUnknown); the checks below still prove
	// nothing was lost or written twice.
	if out := older.output(); !strings.Contains(out, "fenced") && !strings.Contains(out, "same server_id") && !strings.Contains(out, "could not say whether the transaction committed") {
		t.Errorf("older capture exited without reporting fencing:\n%s", out)
	}
	// The newer capture streams the writer's changes before the writer
	// stops: the writer makes more, and the topic's last stable offset
	// grows well past the markers that ending the older capture's
	// transaction adds (one per partition).
	fenced := lastStable(t, c.topic("kv"))
	w.mu.Lock()
	made := w.changes
	w.mu.Unlock()
	testenv.CheckFor(t, 2*time.Minute, 50*time.Millisecond, func() error {
		if newer.exited() {
			t.Fatalf("the newer capture exited: %v\n%s", newer.err, newer.output())
		}
		w.mu.Lock()
		more := w.changes - made
		w.mu.Unlock()
		if grown := lastStable(t, c.topic("kv")) - fenced; more < 50 || grown < 50 {
			return fmt.Errorf("since the fencing the writer made %d changes and the last stable offsets grew by %d, want 50 each", more, grown)
		}
		return nil
	})
	stopWriter()
	wg.Wait()

	w.mu.Lock()
	total := w.changes
	deletes := 0
	for _, cs := range w.log {
		for _, ch := range cs {
			if ch.op == "d" {
				deletes++
			}
		}
	}
	w.mu.Unlock()
	t.Logf("writer committed %d transactions, %d changes (%d deletes); %d transactions failed", w.commits, total, deletes, w.failures)
	if total < 1000 {
		t.Fatalf("the workload made only %d changes; the test proves little", total)
	}

	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	c.caughtUp(t, 3*time.Minute) // the read ends at the end offsets: duplicates included
	recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("kv"), total+deletes, 3*time.Minute)
	newer.stop(t, 30*time.Second)

	got := map[int64][]change{}
	partition := map[int64]int32{}
	expectTomb := map[int64]bool{}
	for _, r := range recs {
		k := r.Key["id"].(int64)
		if p, ok := partition[k]; ok && p != r.Partition {
			t.Fatalf("key %d in partitions %d and %d", k, p, r.Partition)
		}
		partition[k] = r.Partition
		if r.Value == nil {
			if !expectTomb[k] {
				t.Fatalf("key %d: tombstone at offset %d not right after a delete", k, r.Offset)
			}
			expectTomb[k] = false
			continue
		}
		if expectTomb[k] {
			t.Fatalf("key %d: %s at offset %d where a tombstone was due", k, r.Op(), r.Offset)
		}
		var row map[string]any
		if r.Op() == "d" {
			row = r.Value["before"].(map[string]any)
			expectTomb[k] = true
		} else {
			row = r.Value["after"].(map[string]any)
		}
		got[k] = append(got[k], change{r.Op(), row["v"].(int64)})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var bad int
	for k, want := range w.log {
		if fmt.Sprint(got[k]) != fmt.Sprint(want) {
			bad++
			if bad <= 5 {
				t.Errorf("key %d:\n got %v\nwant %v", k, got[k], want)
			}
		}
	}
	for k := range got {
		if _, ok := w.log[k]; !ok {
			t.Errorf("key %d has events but the writer never changed it", k)
		}
	}
	if bad > 0 || len(recs) != total+deletes {
		t.Fatalf("%d keys differ; %d records read, want %d (changes + tombstones)", bad, len(recs), total+deletes)
	}
	// The same guarantees as test/validate states them, from the writer's log.
	var source []validate.Change
	for k, cs := range w.log {
		for _, ch := range cs {
			source = append(source, validate.Change{Key: fmt.Sprintf("id=%d", k), Op: ch.op, Row: fmt.Sprint(ch.v)})
		}
	}
	v := validate.Events(validate.ExactlyOnce(source), validate.KeyOrder(source), validate.PositionOrder(), validate.Tombstones())
	validate.NoteRecords(v, recs, func(img map[string]any) string { return fmt.Sprint(img["v"]) })
	if f := v.Failures(); len(f) > 0 {
		t.Fatalf("%d validator failures:\n%s", len(f), validate.Report(f, 20))
	}
	t.Logf("verified %d changes and %d tombstones over %d keys across %d kills and one fencing", total, deletes, len(w.log), kills)
}

// lastStable is the sum over topic's partitions of the last stable offset
// (what read_committed consumers can read up to).
func lastStable(t *testing.T, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListCommittedOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("%s[%d]: %v", topic, o.Partition, o.Err)
		}
		sum += o.Offset
	})
	return sum
}
