//go:build integration

package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestIngestDeleteModes runs capture and ingest as processes with
// --delete-mode=position (format v2), dv (format v3), and equality with a
// position override for the table under test: after inserts,
// updates, deletes, primary-key updates and a restart whose key index was
// removed, the table equals MariaDB and no snapshot ever added an
// equality delete, while row-level deletes were written.
func TestIngestDeleteModes(t *testing.T) {
	for _, tc := range []struct{ name, mode, version string }{
		{"position", "position", "2"},
		{"dv", "dv", "3"},
		// Equality for every table but this one (the database is only
		// known once the capture environment exists: see below).
		{"override", "equality; %s.t=position", "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCaptureEnv(t)
			if strings.Contains(tc.mode, "%s") {
				tc.mode = fmt.Sprintf(tc.mode, c.dbName)
			}
			exec1(t, c, typesDDL)
			cp := start(t, binary(t, "capture"), c.env, "capture.log")
			waitLog(t, cp, "Connected to server", 30*time.Second)
			state := t.TempDir()
			r := newIngestRun(t, c, "INGEST_DELETE_MODE="+tc.mode, "INGEST_STATE_DIR="+state, "INGEST_TABLE_FORMAT_VERSION="+tc.version)
			ip := r.start(t)
			exec1(t, c,
				`INSERT INTO t (id, b, name, amount, dt, d) VALUES (1, 1, 'one', 1.00, '2024-01-01 00:00:00', '2024-01-01'),
				 (2, 2, 'two', 2.00, '2024-01-02 00:00:00', '2024-01-02'), (3, 3, 'three', 3.00, '2024-01-03 00:00:00', '2024-01-03')`,
				"UPDATE t SET name = 'TWO' WHERE id = 2",
				"UPDATE t SET id = 4 WHERE id = 1",
				"DELETE FROM t WHERE id = 3",
			)
			r.waitEqual(t, 120*time.Second, ip)
			ip.stop(t, 60*time.Second)

			// The index is a cache: gone, it is rebuilt from the table.
			if err := os.RemoveAll(state); err != nil {
				t.Fatal(err)
			}
			ip = r.start(t)
			exec1(t, c,
				"UPDATE t SET name = 'four' WHERE id = 4",
				"UPDATE t SET name = 'TWO2' WHERE id = 2",
				"INSERT INTO t (id, b, name, amount, dt, d) VALUES (3, 3, 'back', 3.00, '2024-01-03 00:00:00', '2024-01-03')",
				"UPDATE t SET id = 5 WHERE id = 2",
			)
			r.waitEqual(t, 120*time.Second, ip)
			ip.stop(t, 60*time.Second)

			tbl, err := r.cat.LoadTable(t.Context(), r.ident)
			if err != nil {
				t.Fatal(err)
			}
			if v := strconv.Itoa(tbl.Metadata().Version()); v != tc.version {
				t.Errorf("table format v%s, want v%s", v, tc.version)
			}
			positional := 0
			for _, s := range tbl.Metadata().Snapshots() {
				if s.Summary == nil {
					continue
				}
				if n := s.Summary.Properties["added-equality-delete-files"]; n != "" && n != "0" {
					t.Errorf("snapshot %d added %s equality-delete files", s.SnapshotID, n)
				}
				n, _ := strconv.Atoi(s.Summary.Properties["added-delete-files"])
				positional += n
			}
			if positional == 0 {
				t.Errorf("no snapshot added a position-delete file or deletion vector")
			}
		})
	}
}
