//go:build integration

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/mskiam"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/tlstest"
)

// TestMSKIAMPipeline runs both binaries through an IAM check in front of
// the stack's real Kafka broker (mskiam.Proxy): TLS, the AWS_MSK_IAM SASL
// exchange verified (action, host, scope, expiry, signature, session
// token), sessions of 2 s so that every client signs in again and again
// over the run (KIP-368 re-authentication with fresh signatures), and the
// broker's own address never handed out. capture with a wrong secret stops
// at start naming the IAM action and the setting; then capture (its
// transactional producer, schema history, offsets) and ingest (its group)
// move a snapshot and changes into the lake, which ends equal to MariaDB;
// ingest status and ingest replay --publish work through the same check.
// The credentials come from the AWS default chain (the AWS_* variables),
// the region from AWS_REGION (the proxy is dialled at 127.0.0.1).
func TestMSKIAMPipeline(t *testing.T) {
	pki := tlstest.New(t)
	p := mskiam.StartProxy(t, mskiam.Config{AccessKey: "AKIDPIPELINE", SecretKey: "pipeline-secret", SessionToken: "pipeline-token",
		Region: "eu-west-1", SessionLifetime: 2 * time.Second}, pki.ServerConfig(false), testenv.KafkaBrokers(t)[0])
	awsEnv := []string{"AWS_ACCESS_KEY_ID=AKIDPIPELINE", "AWS_SECRET_ACCESS_KEY=pipeline-secret", "AWS_SESSION_TOKEN=pipeline-token",
		"AWS_REGION=eu-west-1", "AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent", "AWS_EC2_METADATA_DISABLED=true"}
	kafka := func(prefix string) []string {
		return append([]string{prefix + "_KAFKA_BROKERS=" + p.Addr(), prefix + "_KAFKA_TLS=true", prefix + "_KAFKA_TLS_CA_FILE=" + pki.CAFile,
			prefix + "_KAFKA_SASL_MECHANISM=aws-msk-iam"}, awsEnv...)
	}
	c := newCaptureEnv(t, kafka("CAPTURE")...)
	exec1(t, c, typesDDL,
		`INSERT INTO t VALUES (1, 10000000000, 'one', 1.50, '2024-02-29 23:59:59.123456', '2024-01-01 10:00:00.123', '2024-02-29', '{"a": [1, 2]}', NULL)`)

	bad := start(t, binary(t, "capture"), append(slices.Clone(c.env), "AWS_SECRET_ACCESS_KEY=wrong"), "capture-refused.log")
	select {
	case <-bad.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("capture with a wrong AWS secret still runs:\n%s", bad.output())
	}
	log := bad.fullLog(t)
	for _, want := range []string{"kafka-cluster:Connect", "kafka-sasl-mechanism", "signature does not match"} {
		if bad.err == nil || !strings.Contains(log, want) {
			t.Errorf("capture with a wrong AWS secret: %v, want an exit naming %q:\n%s", bad.err, want, lastLines(log, 10))
		}
	}
	refused := len(p.Auths()) - len(p.Admitted())
	if refused == 0 {
		t.Fatal("the proxy refused nothing")
	}

	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 60*time.Second)
	l := keyedLake(t)
	r := newIngestRunOn(t, c, l, kafka("INGEST")...)
	ip := r.start(t)
	exec1(t, c, typesChanges...)
	r.waitEqual(t, 90*time.Second, ip)
	// A few sessions' time with changes flowing: every client signs in
	// again with a fresh signature.
	for i := range 5 {
		exec1(t, c, fmt.Sprintf("INSERT INTO t (id, b, name, amount, dt, d) VALUES (%d, %d, 'later', 1.00, '2024-06-01 12:00:00', '2024-06-01')", 10+i, i))
		time.Sleep(time.Second)
	}
	r.waitEqual(t, 90*time.Second, ip)
	status := runIngest(t, r.env, "status", "-format=json", "-tables="+c.dbName+`\..*`)
	if !strings.Contains(status, c.dbName) {
		t.Errorf("ingest status through the IAM check does not list %s:\n%s", c.dbName, status)
	}
	ip.stop(t, 60*time.Second)

	// ingest replay from the table's first snapshot, published: its own
	// group and reads go through the check too; the table stays equal.
	tbl, err := r.cat.LoadTable(t.Context(), r.ident)
	if err != nil {
		t.Fatal(err)
	}
	first := tbl.Metadata().Snapshots()[0].SnapshotID
	runIngest(t, append(slices.Clone(r.env), "INGEST_METRICS_ADDR=off"), "replay", "--tables", strings.ReplaceAll(strings.Join(r.ident, "."), ".", `\.`),
		"--from-snapshot", fmt.Sprint(first), "--publish", "--branch", "iam")
	r.waitEqual(t, 30*time.Second, nil)
	// The same replay with a wrong secret is refused, naming the action
	// and the setting.
	cmd := exec.CommandContext(t.Context(), binary(t, "ingest"), "replay", "--tables", strings.ReplaceAll(strings.Join(r.ident, "."), ".", `\.`),
		"--from-snapshot", fmt.Sprint(first), "--branch", "iam-refused")
	cmd.Env = append(append(os.Environ(), r.env...), "INGEST_METRICS_ADDR=off", "AWS_SECRET_ACCESS_KEY=wrong")
	out, rerr := cmd.CombinedOutput()
	for _, want := range []string{"kafka-cluster:Connect", "kafka-sasl-mechanism"} {
		if rerr == nil || !strings.Contains(string(out), want) {
			t.Errorf("ingest replay with a wrong AWS secret: %v, want an exit naming %q:\n%s", rerr, want, lastLines(string(out), 10))
		}
	}
	cp.stop(t, 30*time.Second)

	// Refused: only the two runs with the wrong secret (capture's first,
	// the replay's last).
	byAgent, refusedBy, sigs := map[string]int{}, map[string]int{}, map[string]bool{}
	for _, a := range p.Auths() {
		if a.Err != nil {
			refusedBy[a.UserAgent]++
			continue
		}
		byAgent[a.UserAgent]++
		sigs[a.Signature] = true
	}
	if len(refusedBy) != 2 || refusedBy["binlake-capture"] != refused || refusedBy["binlake-ingest-replay"] == 0 {
		t.Errorf("refused sign-ins by client: %v, want %d of capture's wrong secret and the wrong replay's only", refusedBy, refused)
	}
	for _, agent := range []string{"binlake-capture", "binlake-ingest"} {
		if byAgent[agent] < 3 {
			t.Errorf("%d sign-ins of %s, want it to sign in again as its sessions end (sign-ins by agent: %v)", byAgent[agent], agent, byAgent)
		}
	}
	for _, agent := range []string{"binlake-ingest-status", "binlake-ingest-replay"} {
		if byAgent[agent] == 0 {
			t.Errorf("no sign-in of %s: it did not go through the IAM check (sign-ins by agent: %v)", agent, byAgent)
		}
	}
	t.Logf("MSKIAM sign-ins by client: %v, %d distinct signatures; refused (the wrong secrets): %v", byAgent, len(sigs), refusedBy)
}
