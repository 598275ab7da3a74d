//go:build integration

package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/test/testenv"
)

// TestIngestScheduledMaintenance runs the ingest binary with
// --maintain-interval=1m (the shortest it takes) on its own namespace
// while a workload keeps updating the table: the in-process schedule
// compacts and expires the table between ingest's own commits, ingest's
// next commits ride over those snapshots (a conflict reloads and
// retries), and at the end the table equals MariaDB, with fewer snapshots
// than ingest committed.
func TestIngestScheduledMaintenance(t *testing.T) {
	// Mostly waiting for the first round: it runs beside the other
	// parallel test (TestIngestDeleteModesReaders), after the serial ones.
	t.Parallel()
	c := newCaptureEnv(t)
	exec1(t, c, typesDDL)
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 30*time.Second)
	r := newIngestRun(t, c, "INGEST_MAINTAIN_INTERVAL=1m", "INGEST_MAINTAIN_NAMESPACES="+c.dbName,
		"INGEST_EXPIRE_OLDER_THAN=1s", "INGEST_EXPIRE_RETAIN_LAST=2")
	ip := r.start(t)
	exec1(t, c, `INSERT INTO t (id, b, name, amount, dt, d) SELECT seq, seq, CONCAT('n', seq), seq, '2024-01-01 00:00:00', '2024-01-01' FROM seq_1_to_60`)

	// The workload: one update or delete-and-reinsert every 200 ms until
	// maintenance was seen and ingest committed after it.
	stop := make(chan struct{})
	db := c.db.AdminDB(t, c.dbName)
	db.SetMaxOpenConns(1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond): // the workload's pace
			}
			id := 1 + i%60
			stmts := []string{fmt.Sprintf("UPDATE t SET name = 'u%d', amount = amount + 1 WHERE id = %d", i, id)}
			if i%7 == 0 {
				stmts = []string{fmt.Sprintf("DELETE FROM t WHERE id = %d", id),
					fmt.Sprintf("INSERT INTO t (id, b, name, amount, dt, d) VALUES (%d, %d, 'again', 1, '2024-01-02 00:00:00', '2024-01-02')", id, i)}
			}
			for _, q := range stmts {
				if _, err := db.ExecContext(t.Context(), q); err != nil {
					t.Errorf("%s: %v", q, err)
					return
				}
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	// Maintenance snapshots are tagged binlake.maintenance=<step>; the
	// expiry of the same run may remove them, so every snapshot seen is
	// noted while polling.
	steps := map[string]bool{}
	var ingestAfter int64
	testenv.CheckFor(t, 150*time.Second, time.Second, func() error {
		if ip.exited() {
			t.Fatalf("ingest exited: %v\n%s", ip.err, ip.output())
		}
		tbl, err := r.cat.LoadTable(t.Context(), r.ident)
		if err != nil {
			return err
		}
		var lastMaint int64
		for _, s := range tbl.Metadata().Snapshots() {
			if s.Summary == nil {
				continue
			}
			if step := s.Summary.Properties["binlake.maintenance"]; step != "" {
				steps[step] = true
				lastMaint = max(lastMaint, s.SequenceNumber)
			} else if lastMaint > 0 && s.SequenceNumber > lastMaint {
				ingestAfter = s.SnapshotID
			}
		}
		if !steps["compact"] || ingestAfter == 0 {
			var logged []string
			for _, l := range strings.Split(ip.fullLog(t), "\n") {
				if strings.Contains(l, "component=maintain") {
					logged = append(logged, l)
				}
			}
			return fmt.Errorf("maintenance steps seen %v, ingest commit after one: %v; maintenance log: %s", steps, ingestAfter != 0, strings.Join(logged[max(0, len(logged)-4):], "\n"))
		}
		return nil
	})
	close(stop)
	wg.Wait()
	r.waitEqual(t, 120*time.Second, ip)

	tbl, err := r.cat.LoadTable(t.Context(), r.ident)
	if err != nil {
		t.Fatal(err)
	}
	log := ip.fullLog(t)
	commits := strings.Count(log, "msg=committed ")
	if n := len(tbl.Metadata().Snapshots()); n >= commits {
		t.Errorf("%d snapshots left after scheduled expiry (retain last 2) of %d commits", n, commits)
	}
	if strings.Contains(log, "scheduled maintenance failed") {
		t.Errorf("scheduled maintenance failed:\n%s", ip.output())
	}
	t.Logf("maintenance steps seen %v; %d snapshots left of %d ingest commits; ingest committed after maintenance (snapshot %d)", steps, len(tbl.Metadata().Snapshots()), commits, ingestAfter)
}
