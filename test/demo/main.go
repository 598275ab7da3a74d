// Command demo runs binlake's main job end to end on the local stack
// (`make demo`): a sample shop database with a live writer, capture
// streaming it to Kafka, ingest upserting it into Iceberg, and, once the
// writer stops and the pipeline has caught up, the Iceberg tables printed
// beside the database's, ending with
//
//	DEMO tables=<n> rows_mariadb=<a> rows_iceberg=<b> equal=<true|false>
//
// where equal compares every row and value.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"
	"github.com/go-sql-driver/mysql"

	"github.com/binlake/binlake/test/icebergreader"
	"github.com/binlake/binlake/test/lakecheck"
)

type tableSpec struct {
	name string
	key  []string
}

var tables = []tableSpec{{"customers", []string{"id"}}, {"orders", []string{"id"}}, {"products", []string{"sku"}}}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func env(k string) string {
	v := os.Getenv(k)
	if v == "" {
		fmt.Fprintf(os.Stderr, "demo: %s is not set; run it with `make demo`\n", k)
		os.Exit(2)
	}
	return v
}

func say(format string, args ...any) {
	fmt.Printf("%s demo: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context) error {
	seconds := 20
	if v := os.Getenv("DEMO_SECONDS"); v != "" {
		seconds, _ = strconv.Atoi(v)
	}
	dbName := fmt.Sprintf("shop_%d", time.Now().Unix())
	prefix := "demo"
	work, err := os.MkdirTemp("", "binlake-demo")
	if err != nil {
		return err
	}
	say("building capture and ingest")
	for _, b := range []string{"capture", "ingest"} {
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(work, b), "github.com/binlake/binlake/"+b).CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", b, err, out)
		}
	}

	admin, err := open(env("BINLAKE_MARIADB_ADDR"), env("BINLAKE_MARIADB_ADMIN_USER"), env("BINLAKE_MARIADB_ADMIN_PASSWORD"), "")
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+dbName); err != nil {
		return err
	}
	db, err := open(env("BINLAKE_MARIADB_ADDR"), env("BINLAKE_MARIADB_ADMIN_USER"), env("BINLAKE_MARIADB_ADMIN_PASSWORD"), dbName)
	if err != nil {
		return err
	}
	defer db.Close()
	say("created database %s with a customers, an orders and a products table", dbName)
	for _, q := range []string{
		`CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(100) NOT NULL, email VARCHAR(200), tier ENUM('free','pro','enterprise') NOT NULL DEFAULT 'free', created_at DATETIME(6) NOT NULL)`,
		`CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, amount DECIMAL(12,2) NOT NULL, status ENUM('new','paid','shipped','cancelled') NOT NULL, note VARCHAR(200), ordered_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), ship_date DATE)`,
		`CREATE TABLE products (sku VARCHAR(32) PRIMARY KEY, title VARCHAR(200) NOT NULL, price DECIMAL(10,2) NOT NULL, stock INT NOT NULL, attrs JSON)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}

	common := os.Environ()
	capture := exec.CommandContext(ctx, filepath.Join(work, "capture"))
	capture.Env = append(common,
		"CAPTURE_MYSQL_ADDR="+env("BINLAKE_MARIADB_ADDR"), "CAPTURE_MYSQL_USER="+env("BINLAKE_MARIADB_CAPTURE_USER"),
		"CAPTURE_MYSQL_PASSWORD="+env("BINLAKE_MARIADB_CAPTURE_PASSWORD"), "CAPTURE_KAFKA_BROKERS="+env("BINLAKE_KAFKA_BROKERS"),
		"CAPTURE_SCHEMA_REGISTRY_URL="+env("BINLAKE_SCHEMA_REGISTRY_URL"), "CAPTURE_TOPIC_PREFIX="+prefix,
		"CAPTURE_DATABASE_INCLUDE_LIST="+dbName, "CAPTURE_ID=demo-"+dbName, "CAPTURE_METRICS_ADDR=127.0.0.1:0")
	ingest := exec.CommandContext(ctx, filepath.Join(work, "ingest"))
	ingest.Env = append(common,
		"INGEST_KAFKA_BROKERS="+env("BINLAKE_KAFKA_BROKERS"), "INGEST_SCHEMA_REGISTRY_URL="+env("BINLAKE_SCHEMA_REGISTRY_URL"),
		"INGEST_TOPIC_REGEX="+prefix+`\.`+dbName+`\..*`, "INGEST_GROUP_ID=demo-"+dbName,
		"INGEST_CATALOG_URI="+env("BINLAKE_ICEBERG_URI"), "INGEST_WAREHOUSE="+env("BINLAKE_ICEBERG_WAREHOUSE"),
		"INGEST_S3_ENDPOINT="+env("BINLAKE_S3_ENDPOINT"), "INGEST_S3_REGION="+env("AWS_REGION"),
		"INGEST_FLUSH_INTERVAL=2s", "INGEST_METRICS_ADDR=127.0.0.1:0")
	for name, cmd := range map[string]*exec.Cmd{"capture": capture, "ingest": ingest} {
		f, err := os.Create(filepath.Join(work, name+".log"))
		if err != nil {
			return err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 30 * time.Second
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
		say("started %s (log %s)", name, f.Name())
	}
	defer func() {
		for _, cmd := range []*exec.Cmd{capture, ingest} {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}()
	// Capture connects and stores its start position before the writer
	// starts.
	if err := waitLog(ctx, filepath.Join(work, "capture.log"), "Connected to server", time.Minute); err != nil {
		return err
	}

	say("writing live inserts, updates and deletes for %d s", seconds)
	n, err := write(ctx, db, time.Duration(seconds)*time.Second)
	if err != nil {
		return err
	}
	say("writer stopped after %d transactions; waiting for the pipeline to catch up", n)

	cat, err := rest.NewCatalog(ctx, "demo", env("BINLAKE_ICEBERG_URI"), rest.WithAdditionalProps(map[string]string{
		"s3.endpoint": env("BINLAKE_S3_ENDPOINT"), "s3.region": env("AWS_REGION"), "client.region": env("AWS_REGION"),
		"s3.access-key-id": env("AWS_ACCESS_KEY_ID"), "s3.secret-access-key": env("AWS_SECRET_ACCESS_KEY"),
	}))
	if err != nil {
		return err
	}
	var rowsDB, rowsLake int
	var equal bool
	var last []string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		rowsDB, rowsLake, equal, last = compare(ctx, cat, db, dbName, false)
		if equal || time.Now().After(deadline) {
			break
		}
		for _, c := range []*exec.Cmd{capture, ingest} {
			if c.ProcessState != nil {
				return fmt.Errorf("%s exited: %v (log in %s)", c.Path, c.ProcessState, work)
			}
		}
		time.Sleep(2 * time.Second) // polling interval: the loop compares again
	}
	compare(ctx, cat, db, dbName, true)
	for _, d := range last {
		fmt.Println("  difference:", d)
	}
	// A second, independent reader: Iceberg's Java reference implementation.
	if equal {
		say("checking again with the Java Iceberg reader (iceberg-data, applies equality deletes itself)")
		for _, ts := range tables {
			tbl, err := cat.LoadTable(ctx, table.Identifier{dbName, ts.name})
			if err != nil {
				return err
			}
			_, types, err := lakecheck.Iceberg(ctx, tbl, ts.key)
			if err != nil {
				return err
			}
			var cols []string
			for _, f := range tbl.Schema().Fields() {
				if f.Name != lakecheck.SourceOrderColumn {
					cols = append(cols, f.Name)
				}
			}
			jrows, err := icebergreader.ReadErr(dbName + "." + ts.name)
			if err != nil {
				return err
			}
			conv := make([]map[string]*string, len(jrows))
			for i, r := range jrows {
				conv[i] = r
			}
			java, err := lakecheck.FromJava(conv, cols, ts.key, types)
			if err != nil {
				return err
			}
			src, err := lakecheck.MariaDB(ctx, db, ts.name, ts.key, types)
			if err != nil {
				return err
			}
			if d := lakecheck.Diff(src, java, 10); len(d) > 0 {
				equal = false
				for _, x := range d {
					fmt.Println("  java reader difference:", x)
				}
			} else {
				say("%s: the Java reader sees the same %d rows", ts.name, len(java.ByKey))
			}
		}
	}
	fmt.Printf("DEMO tables=%d rows_mariadb=%d rows_iceberg=%d equal=%t\n", len(tables), rowsDB, rowsLake, equal)
	if !equal {
		return fmt.Errorf("iceberg differs from mariadb (logs in %s)", work)
	}
	return nil
}

func open(addr, user, pass, db string) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", addr, user, pass, db
	cfg.Params = map[string]string{"time_zone": "'+00:00'"}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// write runs a shop-like workload until d passes.
func write(ctx context.Context, db *sql.DB, d time.Duration) (int, error) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	end := time.Now().Add(d)
	var nextCustomer, nextOrder int64 = 1, 1
	n := 0
	for time.Now().Before(end) && ctx.Err() == nil {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return n, err
		}
		for range 1 + rng.IntN(4) {
			var q string
			var args []any
			switch r := rng.IntN(100); {
			case r < 15 || nextCustomer < 5:
				q, args = "INSERT INTO customers VALUES (?, ?, ?, ?, ?)", []any{nextCustomer, fmt.Sprintf("Customer %d", nextCustomer),
					fmt.Sprintf("c%d@example.com", nextCustomer), []string{"free", "pro", "enterprise"}[rng.IntN(3)],
					time.Now().UTC().Format("2006-01-02 15:04:05.000000")}
				nextCustomer++
			case r < 50:
				q, args = "INSERT INTO orders (id, customer_id, amount, status, note, ship_date) VALUES (?, ?, ?, 'new', ?, NULL)",
					[]any{nextOrder, 1 + rng.Int64N(nextCustomer-1), fmt.Sprintf("%d.%02d", rng.IntN(500), rng.IntN(100)), nullable(rng, "gift")}
				nextOrder++
			case r < 70:
				q, args = "UPDATE orders SET status = ELT(1 + FLOOR(RAND() * 4), 'new','paid','shipped','cancelled'), ship_date = CURDATE(), amount = amount + 1 WHERE id = ?",
					[]any{1 + rng.Int64N(nextOrder)}
			case r < 78:
				q, args = "DELETE FROM orders WHERE id = ?", []any{1 + rng.Int64N(nextOrder)}
			case r < 85:
				q, args = "UPDATE customers SET tier = 'pro', email = NULL WHERE id = ?", []any{1 + rng.Int64N(nextCustomer)}
			default:
				sku := fmt.Sprintf("SKU-%03d", rng.IntN(200))
				q, args = "INSERT INTO products VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE stock = stock - 1, price = price + 0.01",
					[]any{sku, "Product " + sku, fmt.Sprintf("%d.99", 1+rng.IntN(99)), 100, fmt.Sprintf(`{"color": "c%d", "tags": [1, 2]}`, rng.IntN(9))}
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				_ = tx.Rollback()
				return n, err
			}
		}
		if err := tx.Commit(); err != nil {
			return n, err
		}
		n++
		time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond) // writer pacing, not a wait
	}
	return n, nil
}

// waitLog waits until the log file at path contains text.
func waitLog(ctx context.Context, path, text string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if strings.Contains(string(b), text) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %q in %s after %s", text, path, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond): // polling interval
		}
	}
}

func nullable(rng *rand.Rand, s string) any {
	if rng.IntN(3) == 0 {
		return nil
	}
	return s
}

// compare reads every table from both sides; with show it prints them.
func compare(ctx context.Context, cat *rest.Catalog, db *sql.DB, dbName string, show bool) (rowsDB, rowsLake int, equal bool, diffs []string) {
	equal = true
	for _, ts := range tables {
		tbl, err := cat.LoadTable(ctx, table.Identifier{dbName, ts.name})
		if err != nil {
			return rowsDB, rowsLake, false, []string{fmt.Sprintf("%s: %v", ts.name, err)}
		}
		lake, types, err := lakecheck.Iceberg(ctx, tbl, ts.key)
		if err != nil {
			return rowsDB, rowsLake, false, []string{err.Error()}
		}
		src, err := lakecheck.MariaDB(ctx, db, ts.name, ts.key, types)
		if err != nil {
			return rowsDB, rowsLake, false, []string{err.Error()}
		}
		rowsDB += len(src.ByKey)
		rowsLake += len(lake.ByKey)
		d := lakecheck.Diff(src, lake, 10)
		if len(d) > 0 {
			equal = false
			diffs = append(diffs, d...)
		}
		if show {
			printSide(ts.name, src, lake)
		}
	}
	return rowsDB, rowsLake, equal, diffs
}

func printSide(name string, src, lake lakecheck.Rows) {
	fmt.Printf("\n== %s: MariaDB `SELECT * FROM %s` (%d rows) beside Iceberg (%d rows), first 8 by key ==\n", name, name, len(src.ByKey), len(lake.ByKey))
	keys := make([]string, 0, len(src.ByKey))
	for k := range src.ByKey {
		keys = append(keys, k)
	}
	sortKeys(keys)
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(w, "side\t%s\n", strings.Join(src.Columns, "\t"))
	lakeIdx := map[string]int{}
	for i, c := range lake.Columns {
		lakeIdx[c] = i
	}
	for i, k := range keys {
		if i == 8 {
			break
		}
		fmt.Fprintf(w, "mariadb\t%s\n", strings.Join(src.ByKey[k], "\t"))
		if l, ok := lake.ByKey[k]; ok {
			vals := make([]string, len(src.Columns))
			for j, c := range src.Columns {
				vals[j] = l[lakeIdx[c]]
			}
			fmt.Fprintf(w, "iceberg\t%s\n", strings.Join(vals, "\t"))
		} else {
			fmt.Fprintf(w, "iceberg\t(missing)\n")
		}
	}
	w.Flush()
}

func sortKeys(keys []string) {
	num := func(s string) (int64, bool) { n, err := strconv.ParseInt(s, 10, 64); return n, err == nil }
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0; j-- {
			a, aok := num(keys[j-1])
			b, bok := num(keys[j])
			less := keys[j] < keys[j-1]
			if aok && bok {
				less = b < a
			}
			if !less {
				break
			}
			keys[j-1], keys[j] = keys[j], keys[j-1]
		}
	}
}
