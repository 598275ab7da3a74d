package ingest

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/test/mskiam"
	"github.com/binlake/binlake/test/tlstest"
	"github.com/twmb/franz-go/pkg/kfake"
)

// lockedLog is a log ingest writes from several goroutines.
type lockedLog struct {
	mu sync.Mutex
	sb strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sb.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sb.String()
}

// TestRunMSKIAM runs ingest in-process (embedded catalog) with
// --kafka-sasl-mechanism aws-msk-iam against a broker that verifies the
// signed AWS_MSK_IAM payload (test/mskiam) and ends each session after 1s,
// its credentials from the AWS default chain (the AWS_* variables) and the
// region from AWS_REGION (the broker is dialled at 127.0.0.1). With the
// right key pair ingest starts, joins its group and keeps consuming across
// several re-authentications, each with a fresh signature, none refused;
// with a wrong secret it stops at start with an error naming the IAM action
// and the setting.
func TestRunMSKIAM(t *testing.T) {
	pki := tlstest.New(t)
	b := iamBroker(t, mskiam.Config{AccessKey: "AKIDINGEST", SecretKey: "ingest-secret", SessionToken: "ingest-token",
		Region: "eu-west-1", SessionLifetime: time.Second, Topics: []string{"p.db.t"}}, pki.ServerConfig(false))
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDINGEST")
	t.Setenv("AWS_SESSION_TOKEN", "ingest-token")
	args := []string{"-state-dir=" + t.TempDir(), "-topics=p.db.t", "-group-id=iam-g", "-kafka-brokers=" + strings.Join(b.ListenAddrs(), ","),
		"-kafka-tls", "-kafka-tls-ca-file=" + pki.CAFile, "-kafka-sasl-mechanism=aws-msk-iam",
		"-startup-timeout=0", "-metrics-addr=off", "-schema-registry-url="}
	getenv := env(map[string]string{"AWS_REGION": "eu-west-1"})

	t.Setenv("AWS_SECRET_ACCESS_KEY", "ingest-secret")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	log := &lockedLog{}
	done := make(chan error, 1)
	go func() { done <- runArgs(ctx, args, getenv, log) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("ingest stopped: %v (auths %+v)\n%s", err, b.Auths(), log)
		case <-time.After(100 * time.Millisecond):
		}
		sigs := map[string]bool{}
		for _, a := range b.Admitted() {
			sigs[a.Signature] = true
		}
		if len(sigs) >= 4 { // signatures differ by their second: >= 3s of re-authentication
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d admitted authentications after 30s, too few fresh signatures\n%s", len(b.Admitted()), log)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ingest stopping: %v\n%s", err, log)
	}
	sigs := map[string]bool{}
	for _, a := range b.Auths() {
		if a.Err != nil {
			t.Fatalf("refused: %v", a.Err)
		}
		if a.UserAgent != "binlake-ingest" || a.AccessKey != "AKIDINGEST" {
			t.Errorf("admitted %+v", a)
		}
		sigs[a.Signature] = true
	}
	t.Logf("%d authentications, %d distinct signatures", len(b.Auths()), len(sigs))

	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
	err := runArgs(t.Context(), args, getenv, log)
	if err == nil {
		t.Fatal("ingest started with a wrong secret")
	}
	for _, want := range []string{"SASL_AUTHENTICATION_FAILED", "signature does not match", "kafka-cluster:Connect", "kafka-sasl-mechanism", "AWS credentials"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// iamBroker is a kfake broker (unit tests only) behind the IAM check of
// mskiam.Proxy, the same proxy the integration tests put in front of the
// stack's real Kafka.
func iamBroker(t *testing.T, cfg mskiam.Config, tlsCfg *tls.Config) *mskiam.Proxy {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if len(cfg.Topics) > 0 {
		opts = append(opts, kfake.SeedTopics(1, cfg.Topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return mskiam.StartProxy(t, cfg, tlsCfg, c.ListenAddrs()[0])
}
