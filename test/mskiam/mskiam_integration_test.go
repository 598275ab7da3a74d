//go:build integration

package mskiam_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	saslaws "github.com/twmb/franz-go/pkg/sasl/aws"

	"github.com/binlake/binlake/test/mskiam"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/tlstest"
)

const (
	key    = "AKIDMSKIAMTEST"
	secret = "mskiam-secret"
	host   = "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com"
)

func client(t *testing.T, b testBroker, seed, secretKey string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	pki := b.PKI
	_, port, _ := net.SplitHostPort(b.ListenAddrs()[0])
	tc := pki.ClientConfig(false)
	tc.ServerName = tlstest.ServerName
	m := saslaws.ManagedStreamingIAM(func(context.Context) (saslaws.Auth, error) {
		return saslaws.Auth{AccessKey: key, SecretKey: secretKey, UserAgent: "mskiam-test"}, nil
	})
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(net.JoinHostPort(seed, port)),
		kgo.Dialer(mskiam.Loopback(tc)), kgo.SASL(m),
		kgo.RetryTimeout(2 * time.Second),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// testBroker is mskiam.Proxy in front of the stack's real Kafka broker,
// with a topic of the test's own.
type testBroker struct {
	*mskiam.Proxy
	PKI   *tlstest.PKI
	topic string
}

func start(t *testing.T, cfg mskiam.Config) testBroker {
	pki := tlstest.New(t)
	if cfg.AccessKey == "" {
		cfg.AccessKey, cfg.SecretKey = key, secret
	}
	if cfg.Region == "" {
		cfg.Region = "eu-west-1"
	}
	if cfg.Host == "" {
		cfg.Host = host
	}
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.Unique(t, "iam")
	direct, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	adm := kadm.NewClient(direct)
	if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, topic); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(t.Context()), topic) })
	return testBroker{mskiam.StartProxy(t, cfg, pki.ServerConfig(false), brokers[0]), pki, topic}
}

// TestAdmitsAGoodSignature produces and reads back a record as a client
// signing with the broker's key pair, over the AWS broker name.
func TestAdmitsAGoodSignature(t *testing.T) {
	b := start(t, mskiam.Config{})
	cl := client(t, b, host, secret, kgo.ConsumeTopics(b.topic))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: b.topic, Value: []byte("signed")}).FirstErr(); err != nil {
		t.Fatalf("producing: %v (auths %+v)", err, b.Auths())
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("consuming: %v, %d records", err, fs.NumRecords())
	}
	ok := b.Admitted()
	if len(ok) == 0 || ok[0].Host != host || ok[0].AccessKey != key || ok[0].UserAgent != "mskiam-test" {
		t.Fatalf("admitted %+v", ok)
	}
	for _, a := range b.Auths() {
		if a.Err != nil {
			t.Errorf("refused: %v", a.Err)
		}
	}
}

// TestRefuses checks each refusal reaches the client as
// SASL_AUTHENTICATION_FAILED with the broker's reason.
func TestRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    mskiam.Config
		seed   string
		secret string
		want   string
	}{
		{"bad secret", mskiam.Config{}, host, "not-the-secret", "signature does not match"},
		{"expired", mskiam.Config{Now: func() time.Time { return time.Now().Add(16 * time.Minute) }}, host, secret, "expired"},
		{"signed in the future", mskiam.Config{Now: func() time.Time { return time.Now().Add(-6 * time.Minute) }}, host, secret, "in the future"},
		{"wrong region", mskiam.Config{Region: "us-east-1"}, host, secret, `region "eu-west-1", this cluster is in "us-east-1"`},
		{"wrong host", mskiam.Config{}, "b-2.demo.abc123.c2.kafka.eu-west-1.amazonaws.com", secret, "signed for host"},
		{"unknown key", mskiam.Config{AccessKey: "AKIDOTHER", SecretKey: secret}, host, secret, "access key"},
		{"missing session token", mskiam.Config{SessionToken: "tok"}, host, secret, "security token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, tc.cfg)
			cl := client(t, b, tc.seed, tc.secret)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			err := cl.Ping(ctx)
			if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want SASL_AUTHENTICATION_FAILED naming %q", err, tc.want)
			}
			if len(b.Admitted()) != 0 {
				t.Fatalf("admitted %+v", b.Admitted())
			}
		})
	}
}

// TestReauthenticates gives each session 1s: a client producing for 4s
// re-authenticates on its connections with fresh signatures, and every
// record lands.
func TestReauthenticates(t *testing.T) {
	b := start(t, mskiam.Config{SessionLifetime: time.Second})
	cl := client(t, b, host, secret)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	deadline := time.Now().Add(4 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: b.topic, Value: []byte("r")}).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", n, err)
		}
		n++
		time.Sleep(100 * time.Millisecond)
	}
	sigs := map[string]bool{}
	for _, a := range b.Auths() {
		if a.Err != nil {
			t.Fatalf("refused: %v", a.Err)
		}
		sigs[a.Signature] = true
	}
	if len(sigs) < 4 {
		t.Fatalf("%d distinct admitted signatures over 4s with 1s sessions, want >= 4", len(sigs))
	}
	t.Logf("%d records, %d authentications", n, len(b.Auths()))
}
