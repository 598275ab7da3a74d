package status

import (
	"context"
	"crypto/tls"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/mskiam"
	"github.com/binlake/binlake/test/tlstest"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestStatusMSKIAM runs capture status with --kafka-sasl-mechanism
// aws-msk-iam against a broker that verifies the signed AWS_MSK_IAM payload
// (test/mskiam), its credentials from the AWS default chain (the AWS_*
// variables): the right key pair gets through to Kafka (status then finds
// no stored position); a wrong secret stops with an error naming the IAM
// action and the setting. The broker is dialled at 127.0.0.1, so the region
// comes from AWS_REGION.
func TestStatusMSKIAM(t *testing.T) {
	pki := tlstest.New(t)
	b := iamBroker(t, mskiam.Config{AccessKey: "AKIDSTATUS", SecretKey: "status-secret", SessionToken: "status-token",
		Region: "eu-west-1", Topics: []string{"offsets"}}, pki.ServerConfig(false))
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDSTATUS")
	t.Setenv("AWS_SESSION_TOKEN", "status-token")
	run := func(secret string) error {
		t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
		cfg := captureConfig(t, map[string]string{"CAPTURE_KAFKA_BROKERS": strings.Join(b.ListenAddrs(), ","),
			"CAPTURE_KAFKA_TLS": "true", "CAPTURE_KAFKA_TLS_CA_FILE": pki.CAFile, "CAPTURE_KAFKA_SASL_MECHANISM": "aws-msk-iam",
			"AWS_REGION":           "eu-west-1",
			"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_OFFSETS_TOPIC": "offsets", "CAPTURE_MYSQL_ADDR": "127.0.0.1:1"})
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		_, err := Run(ctx, Config{Capture: cfg})
		return err
	}
	if err := run("status-secret"); !errors.Is(err, ErrStale) {
		t.Fatalf("with the right key pair: %v, want ErrStale (no stored position); auths %+v", err, b.Auths())
	}
	ok := b.Admitted()
	if len(ok) == 0 || ok[0].UserAgent != "binlake-capture-status" || ok[0].AccessKey != "AKIDSTATUS" {
		t.Fatalf("admitted %+v", ok)
	}
	err := run("wrong-secret")
	if err == nil || errors.Is(err, ErrStale) {
		t.Fatalf("with a wrong secret: %v, want a refusal", err)
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
