//go:build integration

package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/tlstest"
)

// TestCaptureTLS runs capture against a MariaDB of the test's own with TLS
// on and require_secure_transport=ON (never the shared server's setting):
// with mysql-tls=verify-full it snapshots and streams a table, and capture
// status reads the server; a wrong CA, a wrong server name and
// mysql-tls=disabled each stop capture at once with an error naming the
// setting to change.
func TestCaptureTLS(t *testing.T) {
	pki, other := tlstest.New(t), tlstest.New(t)
	m := testenv.PrivateMariaDB(t, testenv.PrivateMariaDBConfig{ServerArgs: []string{
		"--ssl-ca=" + pki.CAFile, "--ssl-cert=" + pki.ServerCertFile, "--ssl-key=" + pki.ServerKeyFile,
		"--require-secure-transport=ON",
	}})
	m.TLS = pki.ClientConfig(false)
	dbName := m.CreateDatabase(t, "tls")
	c := newCaptureEnvOn(t, m, dbName, "CAPTURE_MYSQL_TLS=verify-full", "CAPTURE_MYSQL_TLS_CA_FILE="+pki.CAFile,
		"CAPTURE_MYSQL_TLS_SERVER_NAME="+tlstest.ServerName, "CAPTURE_STARTUP_TIMEOUT=20s")
	exec1(t, c, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO t VALUES (1, 'snapshot'), (2, 'snapshot')")
	bin := binary(t, "capture")

	// Each wrong setting stops capture at once, naming what to change.
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{"wrong CA", []string{"CAPTURE_MYSQL_TLS_CA_FILE=" + other.CAFile}, []string{"mysql-tls-ca-file", "verify_identity"}},
		{"wrong name", []string{"CAPTURE_MYSQL_TLS_SERVER_NAME=wrong.binlake.test"}, []string{"mysql-tls-server-name", "wrong.binlake.test"}},
		{"disabled", []string{"CAPTURE_MYSQL_TLS=disabled", "CAPTURE_MYSQL_TLS_CA_FILE=", "CAPTURE_MYSQL_TLS_SERVER_NAME="}, []string{"mysql-tls=disabled", "require_secure_transport", "mysql-tls=verify_identity"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin)
			cmd.Env = append(append(os.Environ(), c.env...), tc.env...)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("capture exited 0:\n%s", out)
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("capture took %s to stop: a refusal must not be retried", took)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the error does not say %q:\n%s", w, out)
				}
			}
		})
	}

	p := start(t, bin, c.env, "capture.log")
	waitLog(t, p, "snapshot: done", 2*time.Minute)
	exec1(t, c, "INSERT INTO t VALUES (3, 'streamed')")
	c.caughtUp(t, 2*time.Minute)
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, c.topic("t"), 3, time.Minute)
	var ops []string
	for _, r := range recs {
		ops = append(ops, r.Op())
	}
	if strings.Join(ops, ",") != "r,r,c" {
		t.Errorf("ops %v, want r,r,c (the snapshot, then the streamed insert)", ops)
	}
	if strings.Contains(p.fullLog(t), "certificate is not verified") {
		t.Errorf("capture warns that the certificate is not verified under verify-full")
	}
	p.stop(t, 30*time.Second)

	cmd := exec.Command(bin, "status", "--format=json")
	cmd.Env = append(os.Environ(), c.env...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"lag_bytes": 0`) {
		t.Errorf("capture status over TLS: %v\n%s", err, out)
	}
}
