package status

import (
	"bytes"
	"context"
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/mskiam"
	"github.com/binlake/binlake/test/tlstest"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestRunMSKIAM runs ingest status in-process (empty embedded catalog: it
// still lists the topics' ends) with --kafka-sasl-mechanism aws-msk-iam
// against a broker that verifies the signed AWS_MSK_IAM payload
// (test/mskiam), its credentials from the AWS default chain (AWS_*
// variables) and the region from AWS_REGION: the right key pair is
// admitted and the report comes; a wrong secret stops it with an error
// naming the IAM action and the setting.
func TestRunMSKIAM(t *testing.T) {
	pki := tlstest.New(t)
	b := iamBroker(t, mskiam.Config{AccessKey: "AKIDSTATUS", SecretKey: "status-secret", SessionToken: "status-token",
		Region: "eu-west-1", Topics: []string{"p.db.t"}}, pki.ServerConfig(false))
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDSTATUS")
	t.Setenv("AWS_SESSION_TOKEN", "status-token")
	args := []string{"-state-dir=" + t.TempDir(), "-format=json", "-kafka-brokers=" + strings.Join(b.ListenAddrs(), ","),
		"-kafka-tls", "-kafka-tls-ca-file=" + pki.CAFile, "-kafka-sasl-mechanism=aws-msk-iam"}
	getenv := env(map[string]string{"AWS_REGION": "eu-west-1"})
	run := func(secret string) error {
		t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		var out bytes.Buffer
		return runArgs(ctx, args, getenv, &out)
	}
	if err := run("status-secret"); err != nil {
		t.Fatalf("with the right key pair: %v (auths %+v)", err, b.Auths())
	}
	ok := b.Admitted()
	if len(ok) == 0 || ok[0].UserAgent != "binlake-ingest-status" || ok[0].AccessKey != "AKIDSTATUS" {
		t.Fatalf("admitted %+v", ok)
	}
	err := run("wrong-secret")
	if err == nil {
		t.Fatal("status ran with a wrong secret")
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
