//go:build integration

package mskiam_test

import (
	"context"
	"errors"
	"fmt"
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

// TestProxyOnTheStack: the IAM check in front of the stack's real Kafka
// broker. A transactional producer and a consumer group (whose
// coordinators are found through the proxy, so every connection is
// checked) move 200 records through it with sessions of 1 s, so clients
// sign in again and again, each time with a signature the proxy verifies;
// a wrong secret is refused with SASL_AUTHENTICATION_FAILED. Only the
// proxy's TLS address is handed to the clients: an answer that leaked the
// broker's own (plaintext) address would fail the TLS handshake.
func TestProxyOnTheStack(t *testing.T) {
	ctx := t.Context()
	pki := tlstest.New(t)
	p := mskiam.StartProxy(t, mskiam.Config{AccessKey: key, SecretKey: secret, Region: "us-east-1", SessionLifetime: time.Second},
		pki.ServerConfig(false), testenv.KafkaBrokers(t)[0])
	topic := testenv.Unique(t, "iam")
	newClient := func(secretKey string, opts ...kgo.Opt) *kgo.Client {
		m := saslaws.ManagedStreamingIAM(func(context.Context) (saslaws.Auth, error) {
			return saslaws.Auth{AccessKey: key, SecretKey: secretKey, UserAgent: "mskiam-proxy-test"}, nil
		})
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.Addr()), kgo.DialTLSConfig(pki.ClientConfig(false)), kgo.SASL(m),
			kgo.RetryTimeout(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	adm := kadm.NewClient(newClient(secret))
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatalf("creating %s through the proxy: %v", topic, err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(ctx), topic) })

	prod := newClient(secret, kgo.TransactionalID(testenv.Unique(t, "tx")), kgo.DefaultProduceTopic(topic))
	for batch := range 4 {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			prod.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "%d", batch*50+i), Value: []byte("v")}, nil)
		}
		if err := prod.Flush(ctx); err != nil {
			t.Fatalf("producing transaction %d through the proxy: %v", batch, err)
		}
		if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("committing transaction %d through the proxy: %v", batch, err)
		}
		time.Sleep(600 * time.Millisecond) // past a session's end now and then: sign-ins again
	}
	cons := newClient(secret, kgo.ConsumerGroup(testenv.Unique(t, "g")), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for len(seen) < 200 && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cons.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)] = true })
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("group commit through the proxy: %v", err)
		}
	}
	if len(seen) != 200 {
		t.Fatalf("consumed %d of the 200 records through the proxy", len(seen))
	}
	admitted, sigs := 0, map[string]bool{}
	for _, a := range p.Auths() {
		if a.Err != nil {
			t.Fatalf("a good client was refused: %v", a.Err)
		}
		admitted++
		sigs[a.Signature] = true
	}
	if admitted < 4 || len(sigs) < 2 {
		t.Fatalf("%d sign-ins, %d distinct signatures: want the sessions of 1 s signed in again", admitted, len(sigs))
	}
	t.Logf("200 records through the proxy, transactional and in a group; %d sign-ins, %d distinct signatures", admitted, len(sigs))

	bad := newClient("wrong-secret")
	err := bad.Ping(ctx)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "signature does not match") {
		t.Fatalf("a wrong secret: %v, want SASL_AUTHENTICATION_FAILED (signature does not match)", err)
	}
}
