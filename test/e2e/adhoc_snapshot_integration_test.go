//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/validate"
)

// newAdhocFixture is a table of n rows in a database a capture streams
// without an initial snapshot (snapshot-mode no_data), with the kafka
// signal channel enabled.
func newAdhocFixture(t *testing.T, n, chunk int) *snapFixture {
	return newSnapFixture(t, n, chunk, "CAPTURE_SNAPSHOT_MODE=no_data", "CAPTURE_SIGNAL_ENABLED_CHANNELS=kafka")
}

// requestSnapshot runs `capture snapshot --tables` with capture's
// environment and returns its output.
func requestSnapshot(t *testing.T, env []string, tables string) string {
	t.Helper()
	cmd := exec.Command(binary(t, "capture"), "snapshot", "--tables", tables)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("capture snapshot --tables %s: %v\n%s", tables, err, out)
	}
	return string(out)
}

// runAdhoc drives the ad-hoc snapshot tests: capture streams a table with
// existing rows while a writer changes it, `capture snapshot --tables`
// asks for an incremental snapshot of it, and kills > 0 kills capture
// (SIGKILL) at random moments of the snapshot. The compacted topic must
// equal the table.
func runAdhoc(t *testing.T, rows, kills, chunk int) {
	f := newAdhocFixture(t, rows, chunk)
	bin := binary(t, "capture")
	p := start(t, bin, f.c.env, "capture-0.log")
	waitLog(t, p, "Connected to server", time.Minute)

	wctx, stopWriter := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.write(wctx) }()
	defer func() { stopWriter(); wg.Wait() }()
	// Streaming before the snapshot: capture has published changes of the
	// writer before the snapshot is asked for.
	testenv.CheckFor(t, time.Minute, 50*time.Millisecond, func() error {
		if p.exited() {
			t.Fatalf("capture exited: %v\n%s", p.err, p.output())
		}
		if n := streamedEvents(f.metrics); n < 50 {
			return fmt.Errorf("capture published %d change events of the writer, want 50 before the snapshot", n)
		}
		return nil
	})

	// No signal channel: the command says what is missing.
	var noSignal []string
	for _, e := range f.c.env {
		if !strings.HasPrefix(e, "CAPTURE_SIGNAL_ENABLED_CHANNELS=") {
			noSignal = append(noSignal, e)
		}
	}
	cmd := exec.Command(bin, "snapshot", "--tables", f.c.dbName+".big")
	cmd.Env = append(os.Environ(), append(noSignal, "CAPTURE_SIGNAL_ENABLED_CHANNELS=")...)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no signal topic is configured") {
		t.Fatalf("capture snapshot without a signal channel: err=%v\n%s", err, out)
	}

	out := requestSnapshot(t, f.c.env, f.c.dbName+".big")
	t.Logf("capture snapshot: %s", strings.TrimSpace(out))
	began := time.Now()
	procs := []*proc{p}
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	during, finishedEarly := 0, false
	for i := 0; during < kills && i < 4*kills; i++ {
		// Kill a random moment after this process emitted snapshot rows
		// (its own metrics), so that kills land on the running snapshot
		// after progress it may have committed.
		testenv.CheckFor(t, 2*time.Minute, 20*time.Millisecond, func() error {
			if p.exited() || emittedReads(f.metrics) > 0 || strings.Contains(p.fullLog(t), "incremental snapshot: finished") {
				return nil
			}
			return fmt.Errorf("capture %d has emitted no snapshot rows; its log ends:\n%s", i, p.output())
		})
		time.Sleep(time.Duration(50+rng.IntN(600)) * time.Millisecond) // a random kill moment: pacing, not a wait
		if p.exited() {
			t.Fatalf("capture exited on its own before kill %d: %v\n%s", i, p.err, p.output())
		}
		p.kill()
		if strings.Contains(p.fullLog(t), "incremental snapshot: finished") {
			t.Logf("the snapshot finished before kill %d", i)
			finishedEarly = true
			p = start(t, bin, f.c.env, fmt.Sprintf("capture-%d.log", i+1))
			procs = append(procs, p)
			break
		}
		during++
		p = start(t, bin, f.c.env, fmt.Sprintf("capture-%d.log", i+1))
		procs = append(procs, p)
	}
	testenv.Eventually(t, 5*time.Minute, 200*time.Millisecond, func() bool {
		if p.exited() {
			t.Fatalf("capture exited: %v\n%s", p.err, p.output())
		}
		l := p.fullLog(t)
		if strings.Contains(l, "incremental snapshot: finished") {
			return true
		}
		// Finished (and logged so) before the last kill: the last process
		// resumes it only if the kill came before the finish was committed.
		return finishedEarly && strings.Contains(l, "Connected to server") && !strings.Contains(l, "incremental snapshot: resuming")
	}, "the incremental snapshot to finish")
	took := time.Since(began)
	var all strings.Builder
	for _, q := range procs {
		all.WriteString(q.fullLog(t))
	}
	logs := all.String()
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "signal") || strings.Contains(l, "incremental snapshot") || strings.Contains(l, "level=ERROR") {
			t.Log(l)
		}
	}
	waitChanges(t, &f.ops, 50, "the snapshot finished") // changes after the snapshot stream too
	stopWriter()
	wg.Wait() // the writer's statements are not cancelled: none is left running
	f.c.caughtUp(t, 5*time.Minute)
	t.Logf("writer made %d changes (%d failed statements)", f.ops.Load(), f.writeErr.Load())
	if f.ops.Load() < 500 {
		t.Fatalf("the writer made only %d changes; the test proves little", f.ops.Load())
	}

	want := f.table(t)
	got, cnt := f.compacted(t, len(want))
	p.stop(t, 30*time.Second)
	t.Logf("ad-hoc snapshot of %d rows, chunks of %d, %d kills during it, took %s; topic: %d records, %d op=r, markers %v",
		f.n, chunk, during, took.Round(time.Millisecond), cnt.records, cnt.reads, cnt.markers)
	diffViews(t, got, want)
	if len(cnt.markers) != 1 || cnt.markers["incremental"] != cnt.reads {
		t.Errorf("op=r markers %v: want every one \"incremental\"", cnt.markers)
	}
	if cnt.reads < f.n/2 {
		t.Errorf("only %d op=r events for %d rows: the snapshot did not run", cnt.reads, f.n)
	}
	if len(cnt.rereads) > 0 {
		t.Errorf("%d op=r events for %d rows; %d keys read more than once:\n%s", cnt.reads, f.n, len(cnt.rereads), validate.Report(cnt.rereads, 10))
	}
	if kills > 0 {
		if during < kills {
			t.Errorf("only %d kills hit the running snapshot; want at least %d", during, kills)
		}
		if !regexp.MustCompile(`incremental snapshot: resuming.* rows_emitted=[1-9]`).MatchString(logs) {
			t.Error("no restart resumed the incremental snapshot after emitted rows")
		}
	}

	// Streaming went on during the snapshot: between the first and the last
	// op=r event of the topic there are change events of the writer.
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, f.c.topic("big"), cnt.records, 2*time.Minute)
	first, last := -1, -1
	for i, r := range recs {
		if r.Op() == "r" {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	between := 0
	for _, r := range recs[max(first, 0):max(last, 0)] {
		switch r.Op() {
		case "c", "u", "d":
			between++
		}
	}
	t.Logf("%d streamed changes between the first and the last op=r event", between)
	if between < 20 {
		t.Errorf("only %d streamed changes between the first and the last op=r event: streaming did not go on during the snapshot", between)
	}
}

// TestAdhocSnapshotWhileStreaming: an incremental snapshot requested with
// `capture snapshot --tables` while capture streams a table a writer
// changes: the compacted topic equals the table and the changes kept
// streaming between the snapshot's chunks.
func TestAdhocSnapshotWhileStreaming(t *testing.T) { runAdhoc(t, 100000, 0, 1000) }

// TestAdhocSnapshotKill9: the same with capture killed (SIGKILL) several
// times during the snapshot: it resumes at the chunk after the last one
// committed and the signal is not executed again.
func TestAdhocSnapshotKill9(t *testing.T) { runAdhoc(t, 300000, 6, 100) }

// TestAdhocSnapshotWidenedIncludeList: a table added to the include list
// between runs is snapshotted incrementally at the next start; a table
// created while capture runs needs no snapshot (its rows are in the
// binlog); a further restart snapshots nothing.
func TestAdhocSnapshotWidenedIncludeList(t *testing.T) {
	c := newCaptureEnv(t, "CAPTURE_LOG_LEVEL=info", "CAPTURE_COMMIT_INTERVAL=100ms", "CAPTURE_SNAPSHOT_CHUNK_ROWS=700")
	exec1(t, c,
		"CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(64))",
		"CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(64))",
		"INSERT INTO a SELECT seq, CONCAT('a', seq) FROM seq_1_to_500",
		"INSERT INTO b SELECT seq, CONCAT('b', seq) FROM seq_1_to_3000")
	bin := binary(t, "capture")
	env1 := append(append([]string{}, c.env...), "CAPTURE_TABLE_INCLUDE_LIST="+c.dbName+`\.a`)
	p := start(t, bin, env1, "capture-1.log")
	waitLog(t, p, "snapshot: done", time.Minute)
	exec1(t, c, "UPDATE b SET v = 'changed while b was not captured' WHERE id <= 10")
	p.stop(t, 30*time.Second)
	exec1(t, c, "INSERT INTO b SELECT seq, CONCAT('b', seq) FROM seq_3001_to_3100", "DELETE FROM b WHERE id BETWEEN 11 AND 20")

	env2 := append(append([]string{}, c.env...), "CAPTURE_TABLE_INCLUDE_LIST="+c.dbName+`\.(a|b|d)`)
	p = start(t, bin, env2, "capture-2.log")
	waitLog(t, p, "incremental snapshot: finished", 2*time.Minute)
	if l := p.fullLog(t); !strings.Contains(l, "newly captured by the include lists") || !strings.Contains(l, c.dbName+".b") {
		t.Fatalf("capture did not name b as newly captured:\n%s", l)
	}
	exec1(t, c, "UPDATE b SET v = 'after' WHERE id = 3000",
		"CREATE TABLE d (id INT PRIMARY KEY, v VARCHAR(64))", "INSERT INTO d SELECT seq, CONCAT('d', seq) FROM seq_1_to_50")
	// d's rows published means b's update before them is too (capture
	// commits the binlog in order): stop only then.
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("d"), 50, time.Minute)
	p.stop(t, 30*time.Second)

	p = start(t, bin, env2, "capture-3.log")
	// Streaming and committing (a new row of d published): a snapshot
	// pending at start would have begun by then.
	exec1(t, c, "INSERT INTO d VALUES (51, 'd51')")
	kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("d"), 51, time.Minute)
	p.stop(t, 30*time.Second)
	if l := p.fullLog(t); strings.Contains(l, "newly captured") || strings.Contains(l, "incremental snapshot: starting") {
		t.Errorf("a restart with unchanged lists snapshotted again:\n%s", l)
	}

	admin := c.db.AdminDB(t, c.dbName)
	for _, tc := range []struct {
		table                string
		minRecords, wantRead int // wantRead < 0: at least the table's rows
		marker               string
	}{
		{"a", 500, 500, "first"}, // the initial snapshot only
		{"b", 3090, -1, "incremental"},
		{"d", 51, 0, ""}, // created while captured: no snapshot
	} {
		recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic(tc.table), tc.minRecords, 2*time.Minute)
		view := map[int32]string{}
		reads := 0
		markers := map[string]int{}
		for _, r := range recs {
			k := r.Key["id"].(int32)
			if r.Value == nil || r.Op() == "d" {
				delete(view, k)
				continue
			}
			if r.Op() == "r" {
				reads++
				markers[r.Value["source"].(map[string]any)["snapshot"].(string)]++
			}
			view[k] = r.Value["after"].(map[string]any)["v"].(string)
		}
		rows, err := admin.QueryContext(t.Context(), "SELECT id, v FROM "+tc.table)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int32]string{}
		for rows.Next() {
			var id int32
			var v string
			if err := rows.Scan(&id, &v); err != nil {
				t.Fatal(err)
			}
			want[id] = v
		}
		rows.Close()
		bad := 0
		for k, v := range want {
			if view[k] != v {
				bad++
				if bad < 5 {
					t.Errorf("%s: key %d is %q in the topic, %q in the table", tc.table, k, view[k], v)
				}
			}
		}
		if len(view) != len(want) || bad > 0 {
			t.Errorf("%s: topic has %d keys, table %d rows, %d differ", tc.table, len(view), len(want), bad)
		}
		t.Logf("%s: %d records, %d op=r %v, %d keys equal to the table", tc.table, len(recs), reads, markers, len(want)-bad)
		switch {
		case tc.wantRead >= 0 && reads != tc.wantRead:
			t.Errorf("%s: %d op=r events, want %d", tc.table, reads, tc.wantRead)
		case tc.wantRead < 0 && (reads < len(want)-150 || reads > len(want)):
			// The changes streamed from the stored position (100 inserts,
			// 10 deletes) may drop their keys from the first chunk.
			t.Errorf("%s: %d op=r events for %d rows", tc.table, reads, len(want))
		}
		if tc.marker != "" && markers[tc.marker] == 0 {
			t.Errorf("%s: no op=r marked %q: %v", tc.table, tc.marker, markers)
		}
		if tc.table == "b" && len(markers) != 1 {
			t.Errorf("b: markers %v, want incremental only", markers)
		}
	}
}
