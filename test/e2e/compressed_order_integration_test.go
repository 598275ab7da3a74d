//go:build integration

package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// TestCompressedBinlogOrder runs capture on a MariaDB of the test's own
// with log_bin_compress=ON (a server setting others share), where one
// transaction writes several multi-row events of identical two-byte rows
// into a keyless table: zlib makes each *_ROWS_COMPRESSED_EVENT far
// smaller than its number of rows. ingest orders changes by pos + row
// (ingest/internal/batch/order.go), so every emitted row's pos + row must
// stay below the next event's position (End_log_pos of its event), and
// orders must not decrease in binlog (per partition, Kafka) order, with
// rows of different events never sharing one.
func TestCompressedBinlogOrder(t *testing.T) {
	m := testenv.PrivateMariaDB(t, testenv.PrivateMariaDBConfig{
		ServerArgs: []string{"--log-bin-compress=ON", "--log-bin-compress-min-len=10"},
	})
	db := m.CreateDatabase(t, "zorder")
	c := newCaptureEnvOn(t, m, db, "CAPTURE_LOG_LEVEL=info")
	exec1(t, c, "CREATE TABLE k (v TINYINT NOT NULL)")
	p := start(t, binary(t, "capture"), c.env, "capture.log")
	c.caughtUp(t, 2*time.Minute)

	execConn(t, c,
		"BEGIN",
		"INSERT INTO k SELECT 1 FROM seq_1_to_2000",
		"INSERT INTO k SELECT 1 FROM seq_1_to_2000",
		"UPDATE k SET v = 2 LIMIT 1500",
		"DELETE FROM k WHERE v = 1 LIMIT 1000",
		"COMMIT",
		"INSERT INTO k SELECT 3 FROM seq_1_to_2000")
	const want = 2000 + 2000 + 1500 + 1000 + 2000
	c.caughtUp(t, 2*time.Minute)
	p.stop(t, 30*time.Second)

	// Every event of the binlog: where it starts and where the next starts.
	type binlogEvent struct {
		typ string
		end int64
	}
	events := map[string]binlogEvent{} // "file:pos"
	admin := m.AdminDB(t, "")
	var ver, comp, minLen string
	if err := admin.QueryRowContext(t.Context(), "SELECT VERSION(), @@log_bin_compress, @@log_bin_compress_min_len").Scan(&ver, &comp, &minLen); err != nil {
		t.Fatal(err)
	}
	t.Logf("server %s log_bin_compress=%s log_bin_compress_min_len=%s", ver, comp, minLen)
	logs, err := admin.QueryContext(t.Context(), "SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for logs.Next() {
		cols, _ := logs.Columns()
		vals := make([]any, len(cols))
		var name string
		vals[0] = &name
		for i := 1; i < len(cols); i++ {
			vals[i] = new(any)
		}
		if err := logs.Scan(vals...); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	logs.Close()
	compressed := 0
	for _, f := range files {
		rows, err := admin.QueryContext(t.Context(), fmt.Sprintf("SHOW BINLOG EVENTS IN '%s'", f))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name, typ, info string
			var pos, end, server int64
			if err := rows.Scan(&name, &pos, &typ, &server, &end, &info); err != nil {
				t.Fatal(err)
			}
			events[fmt.Sprintf("%s:%d", name, pos)] = binlogEvent{typ, end}
			if strings.Contains(strings.ToLower(typ), "rows_compressed") {
				compressed++
			}
		}
		rows.Close()
	}

	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("k"), want, 2*time.Minute)
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].Partition != recs[j].Partition {
			return recs[i].Partition < recs[j].Partition
		}
		return recs[i].Offset < recs[j].Offset
	})
	type order struct {
		file     string
		pos, row int64
	}
	perEvent := map[string]int{} // rows emitted per event
	overfull := 0                // events of more rows than bytes
	var prev *order
	var prevPart int32 = -1
	n, bad := 0, 0
	for _, r := range recs {
		if r.Value == nil {
			continue
		}
		n++
		src := r.Value["source"].(map[string]any)
		o := order{file: src["file"].(string), pos: toInt64(src["pos"]), row: toInt64(src["row"])}
		at := fmt.Sprintf("%s:%d", o.file, o.pos)
		ev, ok := events[at]
		if !ok {
			t.Fatalf("record %d/%d: source %s:%d+%d is not the start of a binlog event", r.Partition, r.Offset, o.file, o.pos, o.row)
		}
		perEvent[at]++
		if o.pos+o.row >= ev.end {
			if bad++; bad <= 5 {
				t.Errorf("record %d/%d: %s at %s row %d: pos + row = %d reaches the next event at %d", r.Partition, r.Offset, ev.typ, at, o.row, o.pos+o.row, ev.end)
			}
		}
		if prev != nil && r.Partition == prevPart && prev.file == o.file {
			switch {
			case o.pos+o.row < prev.pos+prev.row:
				if bad++; bad <= 5 {
					t.Errorf("record %d/%d: order %s:%d+%d below the previous record's %d+%d", r.Partition, r.Offset, o.file, o.pos, o.row, prev.pos, prev.row)
				}
			case o.pos != prev.pos && o.pos+o.row == prev.pos+prev.row:
				if bad++; bad <= 5 {
					t.Errorf("record %d/%d: order %s:%d+%d equals that of the previous event's row %d+%d", r.Partition, r.Offset, o.file, o.pos, o.row, prev.pos, prev.row)
				}
			}
		}
		prev, prevPart = &o, r.Partition
	}
	for at, rows := range perEvent {
		t.Logf("event %s %s: %d rows, %d bytes", at, events[at].typ, rows, events[at].end-toInt64(strings.SplitN(at, ":", 2)[1]))
		if size := events[at].end - toInt64(strings.SplitN(at, ":", 2)[1]); int64(rows) > size {
			overfull++
		}
	}
	t.Logf("ORDER records=%d events=%d compressed_events=%d events_with_more_rows_than_bytes=%d violations=%d", n, len(perEvent), compressed, overfull, bad)
	if n != want {
		t.Errorf("%d change records, want %d", n, want)
	}
	if overfull == 0 {
		// Seen with MariaDB 10.11.19 (Debian): log_bin_compress=1 compresses
		// the Query events but writes Write/Update/Delete_rows_v1 events
		// uncompressed, so the cap is not reached here; it is covered from
		// events in capture/internal/binlog (TestReaderCompressedRowsCapped).
		t.Skipf("the server wrote no rows event of more rows than bytes (rows events compressed: %d): the orders checked hold, the cap is not exercised", compressed)
	}
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case float64:
		return int64(x)
	case string:
		var n int64
		fmt.Sscan(x, &n)
		return n
	}
	return -1
}
