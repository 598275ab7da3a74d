//go:build integration

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlake/binlake/test/testenv"
)

// build compiles one of binlake's binaries into the test's directory.
func build(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/binlake/binlake/"+name).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return bin
}

// captureEnv is the environment of a capture of database db under prefix.
func captureEnv(t *testing.T, m testenv.MariaDB, prefix, db string, extra ...string) []string {
	t.Helper()
	return append(append(os.Environ(),
		"CAPTURE_MYSQL_ADDR="+m.Addr, "CAPTURE_MYSQL_USER="+m.CaptureUser, "CAPTURE_MYSQL_PASSWORD="+m.CapturePassword,
		"CAPTURE_KAFKA_BROKERS="+strings.Join(testenv.KafkaBrokers(t), ","), "CAPTURE_SCHEMA_REGISTRY_URL="+testenv.RegistryURL(t),
		"CAPTURE_TOPIC_PREFIX="+prefix, "CAPTURE_DATABASE_INCLUDE_LIST="+db, "CAPTURE_METRICS_ADDR=off"), extra...)
}
