//go:build integration

package securekafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/binlake/binlake/test/securekafka"
	"github.com/binlake/binlake/test/tlstest"
)

// TestBrokerListeners starts the secured broker and checks each listener
// accepts what it should and refuses the rest: a record produced over
// SASL_SSL is read back over mutual TLS; a wrong SCRAM password, an
// unknown user and a client without a certificate are refused.
func TestBrokerListeners(t *testing.T) {
	pki := tlstest.New(t)
	start := time.Now()
	b := securekafka.Start(t, securekafka.Config{PKI: pki, Users: map[string]string{"alice": "alice-pw"}})
	t.Logf("broker serving after %s: SASL_SSL %s, mTLS %s", time.Since(start).Round(time.Millisecond), b.SASLSSL, b.MTLS)

	scramAs := func(user, pw string) kgo.Opt {
		return kgo.SASL(scram.Auth{User: user, Pass: pw}.AsSha512Mechanism())
	}
	client := func(addr string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	sasl := client(b.SASLSSL, kgo.DialTLSConfig(pki.ClientConfig(false)), scramAs("alice", "alice-pw"))
	if _, err := kadm.NewClient(sasl).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatalf("creating a topic over SASL_SSL: %v", err)
	}
	if err := sasl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("producing over SASL_SSL: %v", err)
	}
	mtls := client(b.MTLS, kgo.DialTLSConfig(pki.ClientConfig(true)), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := mtls.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatalf("consuming over mutual TLS: %v", err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "hello" {
		t.Fatalf("consumed %v, want the one record", recs)
	}

	for name, cl := range map[string]*kgo.Client{
		"wrong password": client(b.SASLSSL, kgo.DialTLSConfig(pki.ClientConfig(false)), scramAs("alice", "nope")),
		"unknown user":   client(b.SASLSSL, kgo.DialTLSConfig(pki.ClientConfig(false)), scramAs("mallory", "alice-pw")),
	} {
		err := cl.Ping(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s over SASL_SSL: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	err := client(b.MTLS, kgo.DialTLSConfig(pki.ClientConfig(false))).Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), "tls") {
		t.Errorf("no client certificate over the mTLS listener: %v, want a TLS alert", err)
	}
	t.Logf("refusal without a client certificate: %v", err)
}
