package kafkasec

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/mskiam"
	"github.com/binlake/binlake/test/tlstest"
	"github.com/twmb/franz-go/pkg/kfake"
)

// This file checks ingest's aws-msk-iam options against a broker that
// verifies the signed AWS_MSK_IAM payload (test/mskiam). The same file is in
// ingest's copy of the package, with the names changed.

const (
	iamKey    = "AKIDBINLAKEIAM"
	iamSecret = "binlake-iam-secret"
	iamToken  = "binlake-iam-session-token"
	mskHost   = "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com"
)

// staticCreds stands for the AWS default chain; calls counts the retrievals.
func staticCreds(secret string, calls *atomic.Int32) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		calls.Add(1)
		return aws.Credentials{AccessKeyID: iamKey, SecretAccessKey: secret, SessionToken: iamToken, Source: "test"}, nil
	})
}

// iamClient is a client from k's options seeded with brokers; extra opts
// (a dialer for MSK names) come first.
func iamClient(t *testing.T, k *KafkaSecurity, brokers []string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts, err := k.ClientOpts(t.Context(), "binlake-ingest")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(append(extra, opts...), kgo.SeedBrokers(brokers...), kgo.RetryTimeout(2*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestKafkaSecurityMSKIAMAgainstVerifyingBroker runs the full aws-msk-iam
// options (TLS with the CA file, SASL from the credentials provider) against
// the verifying broker, dialled at 127.0.0.1 with AWS_REGION naming the
// region, as the binaries do for brokers without an AWS name: a good key
// pair produces and consumes; a wrong secret and an expired signature stop
// with an error that names the IAM action and the setting, and count as a
// refusal (final at start-up).
func TestKafkaSecurityMSKIAMAgainstVerifyingBroker(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	pki := tlstest.New(t)
	var calls atomic.Int32
	setup := func(cfg mskiam.Config, secret string) (*mskiam.Proxy, *kgo.Client, KafkaSecurity) {
		cfg.AccessKey, cfg.SecretKey, cfg.SessionToken, cfg.Region = iamKey, iamSecret, iamToken, "eu-west-1"
		cfg.Topics = []string{"iam"}
		b := iamBroker(t, cfg, pki.ServerConfig(false))
		k := KafkaSecurity{TLS: true, TLSCAFile: pki.CAFile, SASLMechanism: "AWS_MSK_IAM", awsRegionEnv: "eu-west-1", awsCredentials: staticCreds(secret, &calls)}
		if err := k.Validate(b.ListenAddrs()); err != nil {
			t.Fatal(err)
		}
		return b, iamClient(t, &k, b.ListenAddrs(), kgo.ConsumeTopics("iam")), k
	}

	b, cl, _ := setup(mskiam.Config{}, iamSecret)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "iam", Value: []byte("signed")}).FirstErr(); err != nil {
		t.Fatalf("producing: %v (auths %+v)", err, b.Auths())
	}
	if fs := cl.PollFetches(ctx); fs.Err() != nil || fs.NumRecords() != 1 {
		t.Fatalf("consuming: %v, %d records", fs.Err(), fs.NumRecords())
	}
	ok := b.Admitted()
	if len(ok) == 0 || ok[0].Host != "127.0.0.1" || ok[0].AccessKey != iamKey || ok[0].UserAgent != "binlake-ingest" {
		t.Fatalf("admitted %+v", ok)
	}
	if calls.Load() == 0 {
		t.Error("the credentials provider was never asked")
	}

	for _, tc := range []struct {
		name, secret, reason string
		cfg                  mskiam.Config
	}{
		{"wrong secret", "not-the-secret", "signature does not match", mskiam.Config{}},
		{"expired", iamSecret, "expired", mskiam.Config{Now: func() time.Time { return time.Now().Add(20 * time.Minute) }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cl, k := setup(tc.cfg, tc.secret)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			err := cl.Ping(ctx)
			if err == nil {
				t.Fatal("admitted")
			}
			if !k.Refusal(err) {
				t.Errorf("%v is not a refusal: start-up would retry it", err)
			}
			explained, refused := k.Explain(err)
			msg := explained.Error()
			for _, want := range []string{tc.reason, "MSK IAM authentication refused", MSKConnectAction, "kafka-sasl-mechanism", "AWS credentials"} {
				if !refused || !strings.Contains(msg, want) {
					t.Errorf("explained as %q (refused %v), want %q in it", msg, refused, want)
				}
			}
		})
	}
}

// TestKafkaSecurityMSKIAMOverMSKNames signs for the region in an MSK broker
// name, as on MSK: the broker advertises that name, the test dials it at
// 127.0.0.1 with TLS of its own (franz-go takes a dialer or a TLS
// configuration, not both, so only the SASL option comes from k here). Each
// session lasts 1s: the client re-authenticates across 4s of producing with
// fresh signatures, the credentials asked again each time.
func TestKafkaSecurityMSKIAMOverMSKNames(t *testing.T) {
	pki := tlstest.New(t)
	b := iamBroker(t, mskiam.Config{
		AccessKey: iamKey, SecretKey: iamSecret, SessionToken: iamToken, Region: "eu-west-1",
		Host: mskHost, SessionLifetime: time.Second, Topics: []string{"iam"},
	}, pki.ServerConfig(false))
	var calls atomic.Int32
	k := KafkaSecurity{SASLMechanism: SASLAWSMSKIAM, awsCredentials: staticCreds(iamSecret, &calls)}
	tc := pki.ClientConfig(false)
	tc.ServerName = tlstest.ServerName
	_, port, _ := net.SplitHostPort(b.ListenAddrs()[0])
	cl := iamClient(t, &k, []string{net.JoinHostPort(mskHost, port)}, kgo.Dialer(mskiam.Loopback(tc)))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "iam", Value: []byte("r")}).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}
	sigs := map[string]bool{}
	for _, a := range b.Auths() {
		if a.Err != nil {
			t.Fatalf("refused: %v", a.Err)
		}
		if a.Host != mskHost {
			t.Errorf("signed for %q, want %q", a.Host, mskHost)
		}
		sigs[a.Signature] = true
	}
	if len(sigs) < 4 || int(calls.Load()) < len(b.Auths()) {
		t.Fatalf("%d distinct signatures, %d credential retrievals for %d authentications over 4s of 1s sessions", len(sigs), calls.Load(), len(b.Auths()))
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
