//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/validate"
)

// TestReplay undoes a bad write with ingest replay: a foreign writer
// commits wrong rows into a table capture and ingest keep current (every
// row once more, and rows MariaDB never had), the workload goes on, and
// `ingest replay --from-snapshot S --publish` rebuilds the table from the
// snapshot before the bad write and the offsets S recorded, in a branch,
// while the running ingest keeps main current and the workload keeps
// writing. The replay is killed (SIGKILL) once it has committed into the
// branch, and the second run resumes it. After the publish the table
// equals MariaDB, the branch and the replay's record are gone, and the
// running ingest goes on applying changes on top of the replayed table.
// Then the topic's records before S's offsets are deleted (as retention
// would) and a replay from S stops before it starts, naming the earliest
// offset left and the topic settings that would have kept them.
func TestReplay(t *testing.T) {
	t.Parallel()
	c := newCaptureEnv(t)
	exec1(t, c, typesDDL)
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 30*time.Second)
	r := newIngestRun(t, c)
	ip := r.start(t)
	bin := binary(t, "ingest")

	insert := func(from, to int) {
		var vals []string
		for id := from; id < to; id++ {
			vals = append(vals, fmt.Sprintf("(%d, %d, 'n%d', %d.25, '2024-01-02 03:04:05.000006', '2024-01-02 03:04:05.007', '2024-01-02', '{\"i\": %d}', NULL)", id, id*7, id, id, id))
		}
		exec1(t, c, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
	}
	insert(1, 201)
	r.waitEqual(t, 120*time.Second, ip)
	good := r.snapshotID(t)

	// The foreign writer: every row appended once more, and a row MariaDB
	// never had, in one snapshot without ingest's offsets.
	ctx := t.Context()
	tbl, err := r.cat.LoadTable(ctx, r.ident)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.AppendTable(ctx, rows, 1000, nil); err != nil {
		t.Fatalf("foreign append: %v", err)
	}
	rows.Release()
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("foreign commit: %v", err)
	}
	goodOffsets := r.storedAt(t, good)
	if got, want := len(r.icebergRows(t)), 400; got != want {
		t.Fatalf("after the foreign write the table has %d rows, want %d (the corruption must show)", got, want)
	}

	// The workload goes on while main is corrupt.
	exec1(t, c,
		"UPDATE t SET name = CONCAT(name, '-u'), amount = amount + 1 WHERE id % 3 = 0",
		"DELETE FROM t WHERE id % 10 = 1",
		"UPDATE t SET id = id + 1000 WHERE id IN (2, 4, 8)")
	insert(201, 301)
	// On the topic before the replay starts: a replay that finds nothing
	// past the snapshot's offsets publishes at once, before the kill below
	// can land (seen beside another lane's tests, capture lagging).
	c.caughtUp(t, 2*time.Minute)
	// And committed on main: a replay reads only the topics where main is
	// ahead of its start, and one that finds main where it starts has
	// nothing to read and publishes at once.
	testenv.CheckFor(t, 2*time.Minute, 200*time.Millisecond, func() error {
		if ip.exited() {
			t.Fatalf("ingest exited: %v\n%s", ip.err, ip.output())
		}
		main := r.stored(t)
		for part, off := range goodOffsets {
			p, err := strconv.ParseInt(part, 10, 32)
			if err != nil {
				t.Fatalf("partition %q: %v", part, err)
			}
			if main[int32(p)] > off {
				return nil
			}
		}
		return fmt.Errorf("main stores %v, not past the good snapshot's %v yet", main, goodOffsets)
	})

	// A background writer keeps changing the table while the replay runs.
	var wg sync.WaitGroup
	var writes atomic.Int64
	wctx, stopWriter := context.WithCancel(ctx)
	wg.Go(func() {
		db := c.db.AdminDB(t, c.dbName)
		rng := rand.New(rand.NewPCG(1, 2))
		for next := 400; wctx.Err() == nil; next++ {
			var q string
			switch rng.IntN(3) {
			case 0:
				q = fmt.Sprintf("INSERT INTO t (id, b, name, amount, dt, d) VALUES (%d, 1, 'w', 1.00, '2024-05-05 05:05:05', '2024-05-05')", next)
			case 1:
				q = fmt.Sprintf("UPDATE t SET note = 'w%d' WHERE id = %d", next, 1+rng.IntN(300))
			default:
				q = fmt.Sprintf("DELETE FROM t WHERE id = %d", 1+rng.IntN(300))
			}
			// Not cancelled mid-statement: a statement cut off client side
			// may still commit after the writer stopped, past the moment
			// the comparison reads MariaDB.
			if _, err := db.ExecContext(context.WithoutCancel(wctx), q); err == nil {
				writes.Add(1)
			}
			time.Sleep(20 * time.Millisecond) // write pace
		}
	})
	defer func() { stopWriter(); wg.Wait() }()

	name := strings.Join(r.ident, ".")
	args := []string{"replay", "--tables", strings.ReplaceAll(name, ".", `\.`), "--from-snapshot", strconv.FormatInt(good, 10), "--publish", "--branch", "fix"}
	// Small flushes, so that the replay commits into the branch several
	// times and the kill lands after some of them.
	renv := append(slices.Clone(r.env), "INGEST_FLUSH_ROWS=40", "INGEST_METRICS_ADDR=off")
	rp := startArgs(t, bin, args, renv, "replay-1.log")
	testenv.CheckFor(t, 2*time.Minute, 50*time.Millisecond, func() error {
		if rp.exited() {
			t.Fatalf("replay exited before it was killed: %v\n%s", rp.err, rp.output())
		}
		tbl, err := r.cat.LoadTable(ctx, r.ident)
		if err != nil {
			return err
		}
		if head := tbl.Metadata().SnapshotByName("fix"); head == nil || head.SnapshotID == good {
			return fmt.Errorf("no commit into the branch yet")
		}
		return nil
	})
	rp.kill()
	t.Logf("replay killed after its first branch commits:\n%s", lastLines(rp.fullLog(t), 5))

	// The resumed run flushes at ingest's usual limits.
	renv = append(slices.Clone(r.env), "INGEST_METRICS_ADDR=off")
	resumed := time.Now()
	rp = startArgs(t, bin, args, renv, "replay-2.log")
	select {
	case <-rp.done:
	case <-time.After(4 * time.Minute):
		t.Fatalf("the resumed replay did not finish within 4 minutes:\n%s", rp.output())
	}
	if rp.err != nil {
		t.Fatalf("the resumed replay failed: %v\n%s", rp.err, rp.output())
	}
	out := rp.fullLog(t)
	t.Logf("the resumed replay took %s:\n%s", time.Since(resumed).Round(time.Millisecond), lastLines(out, 6))
	for _, want := range []string{"resuming the replay", "table published", "replay published"} {
		if !strings.Contains(out, want) {
			t.Errorf("the resumed replay did not log %q:\n%s", want, out)
		}
	}
	stopWriter()
	wg.Wait()
	t.Logf("the background writer made %d changes during the replay", writes.Load())
	if writes.Load() < 20 {
		t.Errorf("only %d changes during the replay: the test proves little about main moving on", writes.Load())
	}
	r.waitEqual(t, 2*time.Minute, ip)

	tbl, err = r.cat.LoadTable(ctx, r.ident)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Metadata().SnapshotByName("fix") != nil {
		t.Error("branch fix is still there after the publish")
	}
	for k := range tbl.Properties() {
		if strings.HasPrefix(k, "binlake.replay.") {
			t.Errorf("table property %s is still there after the publish", k)
		}
	}
	// The running ingest goes on on top of the replayed table.
	exec1(t, c, "UPDATE t SET name = 'after' WHERE id = 5", "DELETE FROM t WHERE id = 6")
	insert(100000, 100010)
	r.waitEqual(t, 2*time.Minute, ip)

	// A replay that needs records the topic no longer holds stops before it
	// starts and says why.
	adm := kadm.NewClient(kafkaClient(t))
	ends, err := adm.ListEndOffsets(ctx, r.topic)
	if err != nil {
		t.Fatal(err)
	}
	del := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) { del.AddOffset(o.Topic, o.Partition, o.Offset, -1) })
	res, err := adm.DeleteRecords(ctx, del)
	if err != nil || res.Error() != nil {
		t.Fatalf("deleting the topic's records: %v %v", err, res.Error())
	}
	rp = startArgs(t, bin, []string{"replay", "--tables", strings.ReplaceAll(name, ".", `\.`), "--from-snapshot", strconv.FormatInt(good, 10), "--branch", "late"}, renv, "replay-3.log")
	<-rp.done
	out = rp.fullLog(t)
	if rp.err == nil {
		t.Fatalf("a replay from offsets deleted from the topic succeeded:\n%s", out)
	}
	var earliest []string
	ends.Each(func(o kadm.ListedOffset) { earliest = append(earliest, fmt.Sprintf("earliest offset is %d", o.Offset)) })
	for _, want := range append(earliest, fmt.Sprintf("from snapshot %d needs", good), "no longer holds the offsets", "retention.ms=", "cleanup.policy=", "--topic-creation-default-cleanup-policy=compact") {
		if !strings.Contains(out, want) {
			t.Errorf("the refused replay does not say %q:\n%s", want, out)
		}
	}
	// --from-offsets at the good snapshot's offsets resolves to the newest
	// snapshot of main that had applied nothing from them on: the good
	// one, since the publish took the foreign writer's snapshot (which
	// holds its parent's offsets) out of main's history. Refused the same
	// way.
	var from []string
	for p, o := range goodOffsets {
		from = append(from, fmt.Sprintf("%s=%d", p, o))
	}
	rp = startArgs(t, bin, []string{"replay", "--tables", strings.ReplaceAll(name, ".", `\.`), "--from-offsets", strings.Join(from, ","), "--branch", "late"}, renv, "replay-4.log")
	<-rp.done
	out = rp.fullLog(t)
	if want := fmt.Sprintf("from snapshot %d needs", good); rp.err == nil || !strings.Contains(out, want) {
		t.Errorf("replay --from-offsets %s: want a refusal naming %q (%v):\n%s", strings.Join(from, ","), want, rp.err, out)
	}
	tbl, err = r.cat.LoadTable(ctx, r.ident)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Metadata().SnapshotByName("late") != nil {
		t.Error("the refused replay left a branch")
	}
	if _, ok := tbl.Properties()["binlake.replay.late"]; ok {
		t.Error("the refused replay left its record")
	}
	ip.stop(t, time.Minute)
}

// kafkaClient is a plain client of the stack's brokers, closed with t.
func kafkaClient(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// storedAt is the offsets snapshot id of the table stores for its topic,
// by partition.
func (r *ingestRun) storedAt(t *testing.T, id int64) map[string]int64 {
	t.Helper()
	tbl, err := r.cat.LoadTable(t.Context(), r.ident)
	if err != nil {
		t.Fatal(err)
	}
	s := tbl.SnapshotByID(id)
	if s == nil || s.Summary == nil {
		t.Fatalf("snapshot %d has no summary", id)
	}
	v := s.Summary.Properties[validate.OffsetsKeyPrefix+r.topic]
	out := map[string]int64{}
	if err := json.Unmarshal([]byte(v), &out); err != nil || len(out) == 0 {
		t.Fatalf("snapshot %d: offsets %q: %v", id, v, err)
	}
	return out
}
