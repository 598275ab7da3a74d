//go:build integration

package smoke

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/test/testenv"
)

// TestMariaDBBinlog reads MariaDB's binlog with go-mysql as the capture user
// (the least-privileged user capture runs as), starting at the current GTID
// position, and checks that an insert made afterwards arrives as a GTID event
// followed by a rows event carrying the inserted values and the column names
// (binlog_row_metadata=FULL).
func TestMariaDBBinlog(t *testing.T) {
	env := testenv.MariaDBEnv(t)
	ctx := t.Context()
	dbName := env.CreateDatabase(t, "smoke")
	admin := env.AdminDB(t, dbName)
	if _, err := admin.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(10,2))"); err != nil {
		t.Fatal(err)
	}

	var pos string
	if err := admin.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	gset, err := mysql.ParseMariadbGTIDSet(pos)
	if err != nil {
		t.Fatalf("parsing gtid position %q: %v", pos, err)
	}

	host, portStr, err := net.SplitHostPort(env.Addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: 100000 + rand.Uint32N(100000),
		Flavor:   mysql.MariaDBFlavor,
		Host:     host,
		Port:     uint16(port),
		User:     env.CaptureUser,
		Password: env.CapturePassword,
	})
	defer syncer.Close()
	streamer, err := syncer.StartSyncGTID(gset)
	if err != nil {
		t.Fatalf("starting binlog stream at %s: %v", pos, err)
	}

	if _, err := admin.ExecContext(ctx, "INSERT INTO t VALUES (42, 'fourty-two', 12.34)"); err != nil {
		t.Fatal(err)
	}

	var gtid *replication.MariadbGTIDEvent
	deadline, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		ev, err := streamer.GetEvent(deadline)
		if err != nil {
			t.Fatalf("reading binlog (gtid event seen: %v): %v", gtid != nil, err)
		}
		switch e := ev.Event.(type) {
		case *replication.MariadbGTIDEvent:
			gtid = e
		case *replication.RowsEvent:
			if string(e.Table.Schema) != dbName {
				continue
			}
			if gtid == nil {
				t.Fatal("rows event arrived without a preceding GTID event")
			}
			if ev.Header.EventType != replication.WRITE_ROWS_EVENTv1 && ev.Header.EventType != replication.WRITE_ROWS_EVENTv2 {
				t.Fatalf("rows event type %s, want a write rows event", ev.Header.EventType)
			}
			if got := fmt.Sprint(e.Table.ColumnNameString()); got != "[id name amount]" {
				t.Fatalf("column names %s, want [id name amount] (binlog_row_metadata=FULL)", got)
			}
			if len(e.Rows) != 1 {
				t.Fatalf("%d rows, want 1", len(e.Rows))
			}
			row := e.Rows[0]
			if row[0] != int32(42) || fmt.Sprint(row[1]) != "fourty-two" || fmt.Sprint(row[2]) != "12.34" {
				t.Fatalf("row %#v, want [42 fourty-two 12.34]", row)
			}
			if gtid.GTID.SequenceNumber == 0 {
				t.Fatalf("GTID event without a sequence number: %+v", gtid.GTID)
			}
			next, err := mysql.ParseMariadbGTIDSet(pos)
			if err != nil {
				t.Fatal(err)
			}
			if err := next.Update(gtid.GTID.String()); err != nil {
				t.Fatal(err)
			}
			if next.Equal(gset) {
				t.Fatalf("GTID %s did not advance position %s", gtid.GTID.String(), pos)
			}
			return
		}
	}
}
