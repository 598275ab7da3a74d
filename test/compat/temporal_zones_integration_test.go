//go:build integration

package compat

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/workload"
)

// TestCompatTemporalZones runs testdata/temporal_zones.sql on a private
// MariaDB whose system zone is Europe/Berlin, with the zone tables loaded:
// TIMESTAMP values written in the skipped and the repeated hour of Berlin
// and New York, by snapshot (z_snap, written before both connectors start)
// and by binlog (z_stream, the same statements after). It compares every
// event with Debezium, then checks capture's values against the server's
// own SELECT in a UTC session, and the snapshot rows against the streamed
// rows: the two paths must not differ.
func TestCompatTemporalZones(t *testing.T) {
	m := testenv.PrivateMariaDB(t, testenv.PrivateMariaDBConfig{SystemZone: "Europe/Berlin", TimeZoneTables: true})
	t.Setenv("BINLAKE_MARIADB_ADDR", m.Addr) // Debezium and capture both read it
	var zone string
	if err := m.AdminDB(t, "").QueryRowContext(t.Context(), "SELECT @@system_time_zone").Scan(&zone); err != nil {
		t.Fatal(err)
	}
	if zone != "CET" && zone != "CEST" {
		t.Fatalf("private server system_time_zone = %q, want Europe/Berlin's CET or CEST", zone)
	}
	text, err := os.ReadFile(filepath.Join(debezium.RepoRoot(), "test/compat/testdata/temporal_zones.sql"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.Parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	r := newRunWith(t, runOpts{dbz: w.Debezium, capEnv: w.CaptureEnv, before: w.Before})
	r.allowTable = w.Allow
	r.exec(w.Stmts...)
	r.compare(3)

	// The oracle: the server's SELECT with time_zone '+00:00'.
	conn, err := m.AdminDB(t, r.db).Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "SET time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{} // id → column → Debezium value
	// A TIMESTAMP is its UNIX_TIMESTAMP (0 for the zero value): read back
	// in UTC through FROM_UNIXTIME, fraction included.
	rows, err := conn.QueryContext(t.Context(), "SELECT id, DATE_FORMAT(FROM_UNIXTIME(UNIX_TIMESTAMP(ts)), '%Y-%m-%dT%H:%i:%s.%fZ'), "+
		"DATE_FORMAT(FROM_UNIXTIME(UNIX_TIMESTAMP(ts0)), '%Y-%m-%dT%H:%i:%sZ'), "+
		"IF(MONTH(dt) = 0, NULL, DATE_FORMAT(dt, '%Y-%m-%d %H:%i:%s.%f')) FROM z_stream")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, ts, ts0 string
		var dt sql.NullString
		if err := rows.Scan(&id, &ts, &ts0, &dt); err != nil {
			t.Fatal(err)
		}
		var dtWant any // a zero DATETIME in a nullable column is NULL (TYPES.md)
		if dt.Valid {
			wall, err := time.Parse("2006-01-02 15:04:05.000000", dt.String)
			if err != nil {
				t.Fatal(err)
			}
			dtWant = wall.UnixMicro()
		}
		want[id] = map[string]any{"ts": ts, "ts0": ts0, "dt": dtWant}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(want) != 14 {
		t.Fatalf("z_stream has %d rows, want 14", len(want))
	}

	byID := func(table, op string) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, rec := range kafkatest.ReadAll(t, r.brokers, r.dec, r.capPrefix+"."+r.db+"."+table, len(want), time.Minute) {
			if rec.Op() != op {
				t.Errorf("%s: op %q, want %q", table, rec.Op(), op)
				continue
			}
			after, _ := rec.Value["after"].(map[string]any)
			out[fmt.Sprint(after["id"])] = after
		}
		return out
	}
	snap, stream := byID("z_snap", "r"), byID("z_stream", "c")
	for id := 1; id <= len(want); id++ {
		key := strconv.Itoa(id)
		for _, col := range []string{"ts", "ts0", "dt"} {
			w := want[key][col]
			if g := stream[key][col]; g != w {
				t.Errorf("z_stream id %d %s: capture streamed %v, MariaDB's SELECT in UTC says %v", id, col, g, w)
			}
			if g := snap[key][col]; g != w {
				t.Errorf("z_snap id %d %s: capture's snapshot read %v, MariaDB's SELECT in UTC says %v", id, col, g, w)
			}
		}
	}
	// A TIMESTAMP default written in the Berlin session, in the repeated
	// hour: the schema default must be the instant MariaDB fills in.
	defs := kafkatest.ReadAll(t, r.brokers, r.dec, r.capPrefix+"."+r.db+".z_def", 2, time.Minute)
	after, _ := defs[0].Value["after"].(map[string]any)
	filled, _ := after["ts"].(string)
	schema, err := r.dec.Schema(t.Context(), defs[0].ValueID)
	if err != nil {
		t.Fatal(err)
	}
	if filled == "" || !strings.Contains(schema, `"connect.default":"`+filled+`"`) {
		t.Errorf("z_def.ts: MariaDB filled in %q, capture's value schema has another default: %s", filled, schema)
	}
	fmt.Printf("ZONES default z_def.ts=%s (the value MariaDB filled in)\n", filled)
	fmt.Printf("ZONES rows=%d snapshot=%d streamed=%d (each equal to MariaDB's SELECT in UTC)\n", len(want), len(snap), len(stream))
}
