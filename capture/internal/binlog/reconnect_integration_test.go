//go:build integration

package binlog

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/test/testenv"
)

// cutter forwards TCP connections to a server and can cut the ones open.
type cutter struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutter(t *testing.T, upstream string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln}
	t.Cleanup(func() { _ = ln.Close(); c.cut() })
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = down.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, down, up)
			c.mu.Unlock()
			go func() { _, _ = io.Copy(up, down); _ = up.Close() }()
			go func() { _, _ = io.Copy(down, up); _ = down.Close() }()
		}
	}()
	return c
}

// cut closes every connection open through the forwarder.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		_ = conn.Close()
	}
	c.conns = nil
}

// TestReconnectAfterCommit: the connection to the server breaks right
// after a transaction's commit was read. The reader must stream on from
// after that transaction, handing it over once: go-mysql's own retry
// resumed from its GTID set before the transaction and handed it over
// again (a duplicate delete on the chaos workload's topics after a
// MariaDB restart).
func TestReconnectAfterCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	m := testenv.MariaDBEnv(t)
	db := m.CreateDatabase(t, "rc")
	admin := m.AdminDB(t, db)
	if _, err := admin.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	var gtid string
	if err := admin.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	link := newCutter(t, m.Addr)
	r, err := Open(ctx, Config{Addr: link.ln.Addr().String(), User: m.CaptureUser, Password: m.CapturePassword,
		Flavor: FlavorMariaDB, ServerID: 100000 + rand.Uint32N(1<<20)}, Position{Flavor: FlavorMariaDB, GTIDSet: gtid})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	var ids []int64
	// untilCommit reads until the commit of the transaction that wrote id.
	untilCommit := func(id int64) {
		t.Helper()
		mine := false
		for {
			ev, err := r.Next(ctx)
			if err != nil {
				t.Fatalf("reading up to the commit of id %d (read %v): %v", id, ids, err)
			}
			switch {
			case ev.Kind == KindRows && string(ev.Table.Schema) == db && string(ev.Table.Table) == "t":
				for _, row := range ev.Rows {
					ids = append(ids, int64(row[0].(int32)))
				}
				mine = slices.Contains(ids, id)
			case ev.Kind == KindCommit && mine:
				return
			}
		}
	}
	for id := int64(1); id <= 3; id++ {
		if _, err := admin.ExecContext(ctx, "INSERT INTO t VALUES (?)", id); err != nil {
			t.Fatal(err)
		}
		untilCommit(id)
		link.cut() // right after the commit, before the next transaction
	}
	if _, err := admin.ExecContext(ctx, "INSERT INTO t VALUES (4)"); err != nil {
		t.Fatal(err)
	}
	untilCommit(4)
	if want := []int64{1, 2, 3, 4}; !slices.Equal(ids, want) {
		t.Errorf("rows read across three broken connections: %v, want %v", ids, want)
	}
}

// TestReconnectInsideTransaction: the connection breaks while a large
// transaction is being read, three times. The reader must read it again
// from its start and hand over each of its rows once, with one Begin and
// one Commit: before, a connection lost inside a transaction stopped
// capture ("io.ReadFull(header) failed ... connection was bad" in a chaos
// run), to be restarted from its last committed position.
func TestReconnectInsideTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	m := testenv.MariaDBEnv(t)
	db := m.CreateDatabase(t, "rct")
	admin := m.AdminDB(t, db)
	if _, err := admin.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY, pad VARCHAR(200))"); err != nil {
		t.Fatal(err)
	}
	var gtid string
	if err := admin.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	// About 30 MB of rows events: far more than the socket buffers hold
	// when the connection is cut, so the rest must come from a new one.
	const rows = 150000
	if _, err := admin.ExecContext(ctx, "INSERT INTO t SELECT seq, REPEAT('x', 200) FROM seq_1_to_150000"); err != nil {
		t.Fatal(err)
	}
	link := newCutter(t, m.Addr)
	r, err := Open(ctx, Config{Addr: link.ln.Addr().String(), User: m.CaptureUser, Password: m.CapturePassword,
		Flavor: FlavorMariaDB, ServerID: 100000 + rand.Uint32N(1<<20), EventBuffer: 1}, Position{Flavor: FlavorMariaDB, GTIDSet: gtid})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	// Cut at the transaction's first rows event, then at the first one
	// read after each resumption: each cut is of a new connection.
	const cuts = 3
	cut := 0
	var ids []int64
	begins, commits, events := 0, 0, 0
	mine := false
	for done := false; !done; {
		ev, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("reading the transaction (%d rows read): %v", len(ids), err)
		}
		switch ev.Kind {
		case KindBegin:
			begins++
		case KindRows:
			if string(ev.Table.Schema) != db {
				continue
			}
			mine = true
			for _, row := range ev.Rows {
				ids = append(ids, int64(row[0].(int32)))
			}
			if events++; cut < cuts && r.resumed == cut {
				link.cut()
				cut++
			}
		case KindCommit:
			if !mine {
				begins = 0 // another transaction's
				continue
			}
			commits++
			done = true
		}
	}
	if r.resumed != cuts {
		t.Errorf("the transaction was resumed %d times after %d cuts inside it", r.resumed, cuts)
	}
	if len(ids) != rows {
		t.Errorf("read %d rows, want %d", len(ids), rows)
	}
	for i, id := range ids {
		if id != int64(i+1) {
			t.Fatalf("row %d read is id %d, want %d (each row once, in order)", i, id, i+1)
		}
	}
	if begins != 1 || commits != 1 {
		t.Errorf("%d begins and %d commits for one transaction", begins, commits)
	}
}
