//go:build integration

package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The source tables. Every row has a ver: a number the writer gives each
// row change, unique over the whole run, so that every change event on the
// topics names the one source change it carries (c and u by the after
// image's ver, d by the before image's).
var chaosDDL = []string{
	// Multi-partition topics (capture creates them with 3), a legacy latin1 column.
	"CREATE TABLE orders (id BIGINT PRIMARY KEY, ver BIGINT NOT NULL, qty INT NOT NULL, " +
		"note VARCHAR(100) CHARACTER SET latin1 NOT NULL, amount DECIMAL(12,2) NOT NULL, updated DATETIME(6) NOT NULL)",
	// An odd name, a composite key.
	"CREATE TABLE `Order Lines` (order_id BIGINT NOT NULL, line INT NOT NULL, ver BIGINT NOT NULL, " +
		"sku VARCHAR(40) CHARACTER SET utf8mb4 NOT NULL, PRIMARY KEY (order_id, line))",
	// No primary key: an append-only change log in the lake.
	"CREATE TABLE audit (ver BIGINT NOT NULL, msg VARCHAR(100) NOT NULL, at TIMESTAMP(3) NOT NULL DEFAULT '2024-01-01 00:00:00.000')",
	// Renamed to ren_b mid-run.
	"CREATE TABLE ren_a (id INT PRIMARY KEY, ver BIGINT NOT NULL, v VARCHAR(30) NOT NULL)",
}

// midRun are the schema changes the writer makes as the run goes on, each
// once the nemesis has injected the given fraction of its faults.
var midRun = []struct {
	at   float64
	what string
}{
	{0.15, "ALTER TABLE orders ADD COLUMN extra INT NULL"},
	{0.30, "CREATE TABLE late (id BIGINT PRIMARY KEY, ver BIGINT NOT NULL, t VARCHAR(20) NOT NULL)"},
	{0.45, "TRUNCATE TABLE `Order Lines`"},
	{0.60, "RENAME TABLE ren_a TO ren_b"},
	{0.75, "ALTER TABLE `Order Lines` MODIFY sku VARCHAR(80) CHARACTER SET utf8mb4 NOT NULL"},
}

// change is one source row change the writer committed; its index in the
// writer's log is its commit order.
type change struct {
	table string // the source table's name at the time
	op    string // c, u, d, t
	key   string // canonical key ("" for audit, keyless, and t)
	ver   int64  // after image's ver (c, u), before image's (d)
	image string // c, u: the values the topic must carry (see eventImage); "": not checked
}

// writer is the one source writer. It logs every change it committed, in
// commit order; the gate lets the nemesis stop it between transactions.
type writer struct {
	db   *sql.DB
	rng  *rand.Rand
	gate sync.RWMutex

	mu      sync.Mutex
	log     []change
	ver     int64
	nextID  int64
	orders  map[int64]int64 // id → ver
	lines   map[[2]int64]int64
	audit   map[int64]bool // ver → live
	ren     map[int64]int64
	late    map[int64]int64
	renName string
	hasLate bool
	txns    int
	failed  int
	seeded  int         // changes before capture started: on the topics as snapshot reads only
	keyless atomic.Bool // audit may be written: capture's initial snapshot is done
	snapEnd int         // len(log) once capture's initial snapshot was seen done
	steps   chan string // schema changes to make, in order
	stepped []string
}

func newWriter(db *sql.DB, seed uint64) *writer {
	return &writer{db: db, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), nextID: 1,
		orders: map[int64]int64{}, lines: map[[2]int64]int64{}, audit: map[int64]bool{}, ren: map[int64]int64{},
		late: map[int64]int64{}, renName: "ren_a", steps: make(chan string, len(midRun))}
}

// latin1Notes are legacy-charset values (all in latin1).
var latin1Notes = []string{"café", "naïve façade", "Grüße aus Köln", "½ price ¿sí?", "plain"}

// skus are 4-byte UTF-8 values too.
var skus = []string{"SKU-😀", "日本語", "plain", "Ωmega", "a'b\"c\\d"}

type stmt struct {
	q    string
	args []any
	// apply records the change in the writer's state and log once the
	// transaction committed.
	apply func()
}

// txn builds one random transaction; big ones have thousands of rows.
// The caller holds w.mu.
func (w *writer) txn() []stmt {
	var out []stmt
	live := func(m map[int64]int64) (int64, bool) {
		for k := range m { // map order is random enough to pick a key
			return k, true
		}
		return 0, false
	}
	// Planned state: a transaction's statements see its earlier ones.
	orders := clone(w.orders)
	lines := clone(w.lines)
	ren, late := clone(w.ren), clone(w.late)
	audit := map[int64]bool{}
	for k, v := range w.audit {
		audit[k] = v
	}
	newVer := func() int64 { w.ver++; return w.ver }
	var pending []func()
	logc := func(c change) { pending = append(pending, func() { w.log = append(w.log, c) }) }

	if w.rng.IntN(400) == 0 { // a large transaction: one multi-row insert of 3,000 lines
		oid := w.nextID
		w.nextID++
		var vals []string
		var args []any
		for l := range 3000 {
			v := newVer()
			sku := fmt.Sprintf("bulk-%d-%d", oid, l)
			vals = append(vals, "(?, ?, ?, ?)")
			args = append(args, oid, l, v, sku)
			k := [2]int64{oid, int64(l)}
			lines[k] = v
			logc(change{table: "Order Lines", op: "c", key: lineKey(k), ver: v, image: sku})
		}
		out = append(out, stmt{q: "INSERT INTO `Order Lines` (order_id, line, ver, sku) VALUES " + strings.Join(vals, ","), args: args})
	}
	for n := 1 + w.rng.IntN(6); len(out) < n; {
		switch r := w.rng.IntN(100); {
		case r < 22 || len(orders) < 50: // insert an order
			id := w.nextID
			w.nextID++
			v, qty, note := newVer(), w.rng.IntN(1000), latin1Notes[w.rng.IntN(len(latin1Notes))]
			orders[id] = v
			out = append(out, stmt{q: "INSERT INTO orders (id, ver, qty, note, amount, updated) VALUES (?, ?, ?, ?, ?, ?)",
				args: []any{id, v, qty, note, fmt.Sprintf("%d.%02d", w.rng.IntN(100000), w.rng.IntN(100)), time.Now().UTC().Truncate(time.Microsecond)}})
			logc(change{table: "orders", op: "c", key: orderKey(id), ver: v, image: fmt.Sprintf("%d|%s", qty, note)})
		case r < 45: // update an order
			id, _ := live(orders)
			v, qty, note := newVer(), w.rng.IntN(1000), latin1Notes[w.rng.IntN(len(latin1Notes))]
			orders[id] = v
			out = append(out, stmt{q: "UPDATE orders SET ver = ?, qty = ?, note = ?, amount = amount + 1 WHERE id = ?", args: []any{v, qty, note, id}})
			logc(change{table: "orders", op: "u", key: orderKey(id), ver: v, image: fmt.Sprintf("%d|%s", qty, note)})
		case r < 52: // delete an order
			id, _ := live(orders)
			old := orders[id]
			delete(orders, id)
			out = append(out, stmt{q: "DELETE FROM orders WHERE id = ?", args: []any{id}})
			logc(change{table: "orders", op: "d", key: orderKey(id), ver: old})
		case r < 56: // a primary-key change: d of the old key, c of the new one
			id, _ := live(orders)
			old := orders[id]
			nid := w.nextID
			w.nextID++
			v := newVer()
			delete(orders, id)
			orders[nid] = v
			out = append(out, stmt{q: "UPDATE orders SET id = ?, ver = ? WHERE id = ?", args: []any{nid, v, id}})
			logc(change{table: "orders", op: "d", key: orderKey(id), ver: old})
			logc(change{table: "orders", op: "c", key: orderKey(nid), ver: v}) // the moved row keeps its values: not checked here
		case r < 70: // insert or update a line
			oid := 1 + w.rng.Int64N(w.nextID)
			k := [2]int64{oid, int64(w.rng.IntN(5))}
			v, sku := newVer(), skus[w.rng.IntN(len(skus))]
			op := "c"
			if _, ok := lines[k]; ok {
				op = "u"
			}
			lines[k] = v
			out = append(out, stmt{q: "INSERT INTO `Order Lines` (order_id, line, ver, sku) VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE ver = VALUES(ver), sku = VALUES(sku)",
				args: []any{k[0], k[1], v, sku}})
			logc(change{table: "Order Lines", op: op, key: lineKey(k), ver: v, image: sku})
		case r < 75: // delete a line
			for k, old := range lines {
				delete(lines, k)
				out = append(out, stmt{q: "DELETE FROM `Order Lines` WHERE order_id = ? AND line = ?", args: []any{k[0], k[1]}})
				logc(change{table: "Order Lines", op: "d", key: lineKey(k), ver: old})
				break
			}
		case r < 85 && !w.keyless.Load():
			// The keyless table is written once capture's initial snapshot
			// is done: its consistent read holds the changes made before
			// it, which are then never streamed (capture/README.md), and
			// the check of the topics could not tell those from losses.
		case r < 85: // audit: insert, sometimes update or delete a row (no key: by ver)
			switch a := w.rng.IntN(10); {
			case a < 7 || len(audit) == 0:
				v := newVer()
				msg := fmt.Sprintf("event %d", v)
				audit[v] = true
				out = append(out, stmt{q: "INSERT INTO audit (ver, msg, at) VALUES (?, ?, ?)", args: []any{v, msg, time.Now().UTC().Truncate(time.Millisecond)}})
				logc(change{table: "audit", op: "c", ver: v, image: msg})
			default:
				var old int64
				for k := range audit {
					old = k
					break
				}
				delete(audit, old)
				if a < 9 {
					v := newVer()
					audit[v] = true
					msg := fmt.Sprintf("event %d (was %d)", v, old)
					out = append(out, stmt{q: "UPDATE audit SET ver = ?, msg = ? WHERE ver = ?", args: []any{v, msg, old}})
					logc(change{table: "audit", op: "u", ver: v, image: msg})
				} else {
					out = append(out, stmt{q: "DELETE FROM audit WHERE ver = ?", args: []any{old}})
					logc(change{table: "audit", op: "d", ver: old})
				}
			}
		case r < 93 || !w.hasLate: // the renamed table
			out = append(out, w.small(w.renName, ren, newVer, logc)...)
		default: // the table created mid-run
			out = append(out, w.small("late", late, newVer, logc)...)
		}
	}
	if len(out) > 0 {
		out[len(out)-1].apply = func() {
			w.orders, w.lines, w.ren, w.late, w.audit = orders, lines, ren, late, audit
			for _, p := range pending {
				p()
			}
		}
	}
	return out
}

// small is an insert, update or delete on ren_a/ren_b or late (id, ver, v|t).
func (w *writer) small(name string, m map[int64]int64, newVer func() int64, logc func(change)) []stmt {
	col := "v"
	if name == "late" {
		col = "t"
	}
	id := 1 + w.rng.Int64N(300)
	v := newVer()
	val := fmt.Sprintf("%s-%d", name, v)
	if old, ok := m[id]; ok && w.rng.IntN(4) == 0 {
		delete(m, id)
		logc(change{table: name, op: "d", key: orderKey(id), ver: old})
		return []stmt{{q: "DELETE FROM " + name + " WHERE id = ?", args: []any{id}}}
	}
	op := "c"
	if _, ok := m[id]; ok {
		op = "u"
	}
	m[id] = v
	logc(change{table: name, op: op, key: orderKey(id), ver: v, image: val})
	return []stmt{{q: "INSERT INTO " + name + " (id, ver, " + col + ") VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE ver = VALUES(ver), " + col + " = VALUES(" + col + ")",
		args: []any{id, v, val}}}
}

func orderKey(id int64) string  { return fmt.Sprintf("id=%d", id) }
func lineKey(k [2]int64) string { return fmt.Sprintf("line=%d,order_id=%d", k[1], k[0]) }
func clone[K comparable](m map[K]int64) map[K]int64 {
	out := make(map[K]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// run writes until ctx ends. A transaction that fails is rolled back and
// forgotten (the nemesis stops the writer around source restarts, so no
// commit's outcome is ever unknown).
func (w *writer) run(ctx context.Context, t *testing.T) {
	for ctx.Err() == nil {
		w.gate.RLock()
		select {
		case s := <-w.steps:
			w.schemaChange(ctx, t, s)
			w.gate.RUnlock()
			continue
		default:
		}
		w.mu.Lock()
		ver, next := w.ver, w.nextID
		stmts := w.txn()
		w.mu.Unlock()
		err := w.exec(ctx, stmts)
		w.mu.Lock()
		if err != nil {
			w.ver, w.nextID = ver, next // nothing of it happened
			w.failed++
		} else {
			stmts[len(stmts)-1].apply()
			w.txns++
		}
		w.mu.Unlock()
		w.gate.RUnlock()
		if err != nil && ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond) // a steady load, not a saturated source on 2 cores
	}
}

func (w *writer) exec(ctx context.Context, stmts []stmt) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s.q, s.args...); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// schemaChange runs one mid-run DDL statement, retrying through faults
// (each is safe to retry only until it succeeds, which MariaDB reports).
func (w *writer) schemaChange(ctx context.Context, t *testing.T, s string) {
	for ctx.Err() == nil {
		_, err := w.db.ExecContext(ctx, s)
		if err == nil {
			break
		}
		t.Logf("writer: %s: %v (retrying)", s, err)
		time.Sleep(500 * time.Millisecond)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stepped = append(w.stepped, s)
	switch {
	case strings.HasPrefix(s, "TRUNCATE"):
		w.log = append(w.log, change{table: "Order Lines", op: "t"})
		w.lines = map[[2]int64]int64{}
	case strings.HasPrefix(s, "RENAME"):
		w.renName = "ren_b"
	case strings.HasPrefix(s, "CREATE TABLE late"):
		w.hasLate = true
	}
}

// seed writes the rows the initial snapshot reads (op r), logged as
// creates: an r event carries the change that made the row.
func (w *writer) seed(ctx context.Context, t *testing.T, n int) {
	for range n {
		w.mu.Lock()
		stmts := w.txn()
		w.mu.Unlock()
		if err := w.exec(ctx, stmts); err != nil {
			t.Fatalf("seeding: %v", err)
		}
		w.mu.Lock()
		stmts[len(stmts)-1].apply()
		w.mu.Unlock()
	}
}
