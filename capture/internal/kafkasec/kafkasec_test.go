package kafkasec

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/binlake/binlake/test/tlstest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/binlake/binlake/capture/internal/envflag"
)

// kafkaSec binds the Kafka security settings from args and env, as capture does.
func kafkaSec(t *testing.T, args []string, e map[string]string) (*KafkaSecurity, error) {
	t.Helper()
	var k KafkaSecurity
	fs := flag.NewFlagSet("capture", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	ef := envflag.New(fs, "CAPTURE_", func(name string) string { return e[name] })
	k.Bind(ef)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := ef.Err(); err != nil {
		return nil, err
	}
	return &k, nil
}

func TestKafkaSecurityValidate(t *testing.T) {
	pki := tlstest.New(t)
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	msk := []string{"b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"}
	local := []string{"127.0.0.1:9092"}
	for _, c := range []struct {
		name    string
		args    []string
		env     map[string]string
		brokers []string
		wantErr string // "" means valid; else a part of the message naming the fix
	}{
		{"default is plaintext", nil, nil, local, ""},
		{"tls with system roots", []string{"--kafka-tls"}, nil, local, ""},
		{"tls from env with CA and client cert", nil, map[string]string{
			"CAPTURE_KAFKA_TLS": "true", "CAPTURE_KAFKA_TLS_CA_FILE": pki.CAFile,
			"CAPTURE_KAFKA_TLS_CERT_FILE": pki.ClientCertFile, "CAPTURE_KAFKA_TLS_KEY_FILE": pki.ClientKeyFile,
		}, local, ""},
		{"CA without tls", []string{"--kafka-tls-ca-file=" + pki.CAFile}, nil, local, "add --kafka-tls"},
		{"cert without key", []string{"--kafka-tls", "--kafka-tls-cert-file=" + pki.ClientCertFile}, nil, local, "set both"},
		{"missing CA file", []string{"--kafka-tls", "--kafka-tls-ca-file=/nonexistent/ca.pem"}, nil, local, "reading kafka-tls-ca-file"},
		{"CA file without PEM", []string{"--kafka-tls", "--kafka-tls-ca-file=" + notPEM}, nil, local, "no PEM certificate"},
		{"key of another cert", []string{"--kafka-tls", "--kafka-tls-cert-file=" + pki.ClientCertFile, "--kafka-tls-key-file=" + pki.ServerKeyFile}, nil, local, "loading kafka-tls-cert-file"},
		{"scram-sha-512 password from env", []string{"--kafka-sasl-mechanism=scram-sha-512", "--kafka-sasl-username=u"},
			map[string]string{"CAPTURE_KAFKA_SASL_PASSWORD": "p"}, local, ""},
		{"SCRAM-SHA-256 Kafka spelling, password from file", []string{"--kafka-tls", "--kafka-sasl-mechanism=SCRAM-SHA-256"},
			map[string]string{"CAPTURE_KAFKA_SASL_USERNAME": "u", "CAPTURE_KAFKA_SASL_PASSWORD_FILE": pwFile}, local, ""},
		{"scram without password", []string{"--kafka-sasl-mechanism=scram-sha-256", "--kafka-sasl-username=u"}, nil, local, "CAPTURE_KAFKA_SASL_PASSWORD"},
		{"scram without user", []string{"--kafka-sasl-mechanism=scram-sha-256"}, map[string]string{"CAPTURE_KAFKA_SASL_PASSWORD": "p"}, local, "kafka-sasl-username"},
		{"plain over tls", []string{"--kafka-tls", "--kafka-sasl-mechanism=plain", "--kafka-sasl-username=u"}, map[string]string{"CAPTURE_KAFKA_SASL_PASSWORD": "p"}, local, ""},
		{"plain without tls", []string{"--kafka-sasl-mechanism=plain", "--kafka-sasl-username=u"}, map[string]string{"CAPTURE_KAFKA_SASL_PASSWORD": "p"}, local, "in clear"},
		{"password without mechanism", nil, map[string]string{"CAPTURE_KAFKA_SASL_PASSWORD": "p"}, local, "mechanism is none"},
		{"unknown mechanism", []string{"--kafka-sasl-mechanism=gssapi"}, nil, local, "want none, plain"},
		{"msk iam", []string{"--kafka-tls", "--kafka-sasl-mechanism=aws-msk-iam"}, nil, msk, ""},
		{"msk iam Kafka spelling", []string{"--kafka-tls", "--kafka-sasl-mechanism=AWS_MSK_IAM"}, nil, msk, ""},
		{"msk iam without tls", []string{"--kafka-sasl-mechanism=aws-msk-iam"}, nil, msk, "needs --kafka-tls"},
		{"msk iam with a password", []string{"--kafka-tls", "--kafka-sasl-mechanism=aws-msk-iam", "--kafka-sasl-username=u"}, nil, msk, "AWS default chain"},
		{"msk iam, no region in broker name nor env", []string{"--kafka-tls", "--kafka-sasl-mechanism=aws-msk-iam"}, nil, []string{"kafka.internal:9098"}, "set AWS_REGION"},
		{"msk iam, region from AWS_REGION", []string{"--kafka-tls", "--kafka-sasl-mechanism=aws-msk-iam"}, map[string]string{"AWS_REGION": "us-east-2"}, []string{"kafka.internal:9098"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := kafkaSec(t, c.args, c.env)
			if err == nil {
				err = k.Validate(c.brokers)
			}
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("valid settings refused: %v", err)
			case c.wantErr != "" && err == nil:
				t.Fatalf("accepted, want an error containing %q", c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Fatalf("error %q does not contain %q", err, c.wantErr)
			}
		})
	}
}

// clientFor builds a franz-go client from the settings' options and returns
// its configured SASL mechanisms and TLS configuration.
func clientFor(t *testing.T, k *KafkaSecurity) ([]sasl.Mechanism, *tls.Config) {
	t.Helper()
	opts, err := k.ClientOpts(t.Context(), "binlake-capture")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers("127.0.0.1:1"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var ms []sasl.Mechanism
	for _, v := range cl.OptValues(kgo.SASL) {
		ms = append(ms, v.([]sasl.Mechanism)...)
	}
	tc, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
	return ms, tc
}

func TestKafkaSecurityClientOptions(t *testing.T) {
	pki := tlstest.New(t)
	for _, c := range []struct {
		name     string
		k        KafkaSecurity
		wantMech string // "" for none
		wantTLS  bool
	}{
		{"none", KafkaSecurity{}, "", false},
		{"tls", KafkaSecurity{TLS: true, TLSCAFile: pki.CAFile, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile, TLSServerName: "b.example"}, "", true},
		{"plain", KafkaSecurity{TLS: true, SASLMechanism: SASLPlain, SASLUsername: "u", SASLPassword: "p"}, "PLAIN", true},
		{"scram-256", KafkaSecurity{SASLMechanism: SASLScramSHA256, SASLUsername: "u", SASLPassword: "p"}, "SCRAM-SHA-256", false},
		{"scram-512", KafkaSecurity{SASLMechanism: "SCRAM_SHA_512", SASLUsername: "u", SASLPassword: "p"}, "SCRAM-SHA-512", false},
		{"msk iam", KafkaSecurity{TLS: true, SASLMechanism: SASLAWSMSKIAM, awsCredentials: aws.AnonymousCredentials{}}, "AWS_MSK_IAM", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms, tc := clientFor(t, &c.k)
			var names []string
			for _, m := range ms {
				names = append(names, m.Name())
			}
			if got := strings.Join(names, ","); got != c.wantMech {
				t.Errorf("SASL mechanisms %q, want %q", got, c.wantMech)
			}
			if (tc != nil) != c.wantTLS {
				t.Fatalf("TLS config %v, want TLS %v", tc, c.wantTLS)
			}
			if tc == nil {
				return
			}
			if tc.MinVersion != tls.VersionTLS12 || tc.ServerName != c.k.TLSServerName {
				t.Errorf("TLS min version %x, server name %q", tc.MinVersion, tc.ServerName)
			}
			if (tc.RootCAs != nil) != (c.k.TLSCAFile != "") || len(tc.Certificates) != map[bool]int{true: 1}[c.k.TLSCertFile != ""] {
				t.Errorf("TLS roots set %v, %d client certificates", tc.RootCAs != nil, len(tc.Certificates))
			}
		})
	}
}

// TestKafkaSecurityMSKIAMSignsWithTheChainsCredentials runs the MSK IAM
// mechanism's first step: the signed payload must carry the access key and
// session token of the credentials provider, scoped to the broker's region
// and to the kafka-cluster service.
func TestKafkaSecurityMSKIAMSignsWithTheChainsCredentials(t *testing.T) {
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDBINLAKETEST", SecretAccessKey: "secret", SessionToken: "token-1", Source: "test"}, nil
	})
	k := KafkaSecurity{TLS: true, SASLMechanism: SASLAWSMSKIAM, awsCredentials: creds}
	ms, _ := clientFor(t, &k)
	if len(ms) != 1 {
		t.Fatalf("%d mechanisms", len(ms))
	}
	_, first, err := ms[0].Authenticate(t.Context(), "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098")
	if err != nil {
		t.Fatal(err)
	}
	var msg map[string]string
	if err := json.Unmarshal(first, &msg); err != nil {
		t.Fatalf("payload %q: %v", first, err)
	}
	date := time.Now().UTC().Format("20060102")
	if got, want := msg["x-amz-credential"], "AKIDBINLAKETEST/"+date+"/eu-west-1/kafka-cluster/aws4_request"; got != want {
		t.Errorf("credential %q, want %q", got, want)
	}
	if msg["x-amz-security-token"] != "token-1" || msg["action"] != "kafka-cluster:Connect" || msg["user-agent"] != "binlake-capture" {
		t.Errorf("payload %v", msg)
	}
	if strings.Contains(string(first), "secret\"") {
		t.Error("the secret key is in the payload")
	}
}

// TestKafkaSecurityAgainstKfake connects through the built options to an
// in-process fake broker (kfake) that requires TLS, a client certificate and
// SASL, produces a record and reads it back; a wrong password and a missing
// client certificate are refused. It checks the client side only (options,
// handshakes as franz-go runs them); the proof against a real Kafka broker
// is test/e2e TestKafkaSecurity.
func TestKafkaSecurityAgainstKfake(t *testing.T) {
	pki := tlstest.New(t)
	fake, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.TLS(pki.ServerConfig(true)),
		kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "plainuser", "plainpass"),
		kfake.Superuser("SCRAM-SHA-256", "scram256", "pass-256"),
		kfake.Superuser("SCRAM-SHA-512", "scram512", "pass-512"),
		kfake.SeedTopics(1, "sec"),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	mtls := KafkaSecurity{TLS: true, TLSCAFile: pki.CAFile, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile, TLSServerName: tlstest.ServerName}
	with := func(m SASLMechanism, user, pass string) KafkaSecurity {
		k := mtls
		k.SASLMechanism, k.SASLUsername, k.SASLPassword = m, user, pass
		return k
	}
	roundTrip := func(k KafkaSecurity, value string) error {
		if err := k.Validate(fake.ListenAddrs()); err != nil {
			t.Fatal(err)
		}
		opts, err := k.ClientOpts(t.Context(), "binlake-capture")
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(fake.ListenAddrs()...), kgo.RetryTimeout(2*time.Second))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sec", Value: []byte(value)}).FirstErr(); err != nil {
			return err
		}
		cons, err := kgo.NewClient(append(opts, kgo.SeedBrokers(fake.ListenAddrs()...), kgo.ConsumeTopics("sec"))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		for {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: record %q not read back", k.SASLMechanism, value)
			}
			found := false
			fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == value })
			if found {
				return nil
			}
		}
	}
	for _, k := range []KafkaSecurity{
		with(SASLPlain, "plainuser", "plainpass"),
		with(SASLScramSHA256, "scram256", "pass-256"),
		with(SASLScramSHA512, "scram512", "pass-512"),
	} {
		if err := roundTrip(k, "via "+string(k.SASLMechanism)); err != nil {
			t.Errorf("%s: %v", k.SASLMechanism, err)
		}
	}
	// Refusals: Ping returns the first broker's connection error.
	refused := func(k KafkaSecurity) error {
		opts, err := k.ClientOpts(t.Context(), "binlake-capture")
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(fake.ListenAddrs()...))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	// kfake closes the connection on a failed SASL exchange (a real broker
	// answers SASL_AUTHENTICATION_FAILED): with the right password the same
	// settings passed above, so any error here is the password's.
	if err := refused(with(SASLScramSHA512, "scram512", "wrong")); err == nil {
		t.Error("a wrong SCRAM password was accepted")
	}
	if err := refused(with(SASLPlain, "plainuser", "wrong")); err == nil {
		t.Error("a wrong PLAIN password was accepted")
	}
	noCert := with(SASLScramSHA256, "scram256", "pass-256")
	noCert.TLSCertFile, noCert.TLSKeyFile = "", ""
	if err := refused(noCert); err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("no client certificate: %v, want the broker's TLS alert", err)
	} else if err, ok := noCert.Explain(err); !ok || !strings.Contains(err.Error(), "set kafka-tls-cert-file and kafka-tls-key-file") {
		t.Errorf("no client certificate: explained as %v (%v), want the certificate settings named", err, ok)
	}
	untrusted := with(SASLScramSHA256, "scram256", "pass-256")
	untrusted.TLSCAFile = ""
	var unknownCA x509.UnknownAuthorityError
	if err := refused(untrusted); !errors.As(err, &unknownCA) {
		t.Errorf("broker certificate from an unknown CA: %v, want x509.UnknownAuthorityError", err)
	} else if err, ok := untrusted.Explain(err); !ok || !strings.Contains(err.Error(), "set kafka-tls-ca-file") {
		t.Errorf("unknown CA: explained as %v (%v), want kafka-tls-ca-file named", err, ok)
	}
}

// TestKafkaSecurityExplain checks the hint added to each kind of refusal
// (the TLS alerts and unknown CA of a live handshake are checked in
// TestKafkaSecurityAgainstKfake, and against a real broker in test/e2e
// TestKafkaSecurity), and that other errors pass unchanged.
func TestKafkaSecurityExplain(t *testing.T) {
	k := KafkaSecurity{TLS: true, TLSCertFile: "c.pem", SASLMechanism: SASLScramSHA512, SASLUsername: "app", SASLPassword: "hunter2"}
	for _, c := range []struct {
		name string
		err  error
		want string // "" when the error is not a refusal
	}{
		{"SASL failure", fmt.Errorf("creating topic x: %w", kerr.SaslAuthenticationFailed),
			`check kafka-sasl-username ("app") and the password in CAPTURE_KAFKA_SASL_PASSWORD or the file named by CAPTURE_KAFKA_SASL_PASSWORD_FILE`},
		{"mechanism not offered", kerr.UnsupportedSaslMechanism, "does not take kafka-sasl-mechanism scram-sha-512"},
		{"wrong name", &tls.CertificateVerificationError{Err: x509.HostnameError{Certificate: &x509.Certificate{}, Host: "b-1"}}, "set kafka-tls-server-name"},
		{"plaintext port", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, "unset kafka-tls"},
		{"certificate refused", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")},
			"kafka-tls-cert-file is a client certificate signed by a CA the broker trusts"},
		{"unreachable", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, ""},
		{"other", errors.New("boom"), ""},
	} {
		got, refused := k.Explain(c.err)
		switch {
		case refused != (c.want != ""):
			t.Errorf("%s: refused = %v", c.name, refused)
		case !errors.Is(got, c.err):
			t.Errorf("%s: %v does not wrap the cause", c.name, got)
		case c.want == "" && got.Error() != c.err.Error():
			t.Errorf("%s: changed to %v", c.name, got)
		case !strings.Contains(got.Error(), c.want):
			t.Errorf("%s: %v, want %q in it", c.name, got, c.want)
		case strings.Contains(got.Error(), "hunter2"):
			t.Errorf("%s: the password is in %v", c.name, got)
		}
	}
}
