//go:build integration

package compat

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/workload"
)

// statements returns the statements of a SQL script in the workload
// format (test/workload), failing the test on a malformed one.
func statements(t *testing.T, script string) []string {
	t.Helper()
	w, err := workload.Parse(script)
	if err != nil {
		t.Fatal(err)
	}
	return append(w.Before, w.Stmts...)
}

// capturedUpTo inserts a row into a marker table of db and waits until
// the capture writing topics under prefix has published it. capture
// commits the binlog in order, so every change made before the call is
// then on its topics: a read up to their end offsets sees all of them, and
// any record capture wrote twice. The marker table is created by the first
// call; the capture's include lists must let it through.
func capturedUpTo(t *testing.T, db, prefix string, timeout time.Duration) {
	t.Helper()
	admin := testenv.MariaDBEnv(t).AdminDB(t, db)
	for _, stmt := range []string{"CREATE TABLE IF NOT EXISTS zz_caught_up (id INT AUTO_INCREMENT PRIMARY KEY)", "INSERT INTO zz_caught_up VALUES ()"} {
		if _, err := admin.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var n int
	if err := admin.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM zz_caught_up").Scan(&n); err != nil {
		t.Fatal(err)
	}
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, prefix+"."+db+".zz_caught_up", n, timeout)
}

// waitLogFile waits until the log file at path contains text; a timeout
// reports how the log ends.
func waitLogFile(t *testing.T, path, text string, timeout time.Duration) {
	t.Helper()
	testenv.CheckFor(t, timeout, 100*time.Millisecond, func() error {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), text) {
			return nil
		}
		return fmt.Errorf("no %q in %s yet; it ends:\n%s", text, path, b[max(0, len(b)-2000):])
	})
}
