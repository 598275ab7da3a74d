//go:build integration

package run

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	saslaws "github.com/twmb/franz-go/pkg/sasl/aws"

	"github.com/binlake/binlake/test/mskiam"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/tlstest"
)

type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunMSKIAM runs the capture command in process against the stack's
// MariaDB and registry and a Kafka broker that verifies the signed
// AWS_MSK_IAM exchange (test/mskiam) and ends each session after 1s, with
// --kafka-sasl-mechanism aws-msk-iam, its credentials from the AWS default
// chain (AWS_* variables) and the region from AWS_REGION (the broker is
// dialled at 127.0.0.1). Capture snapshots a table and streams rows
// inserted over 4s through its transactional producer, re-authenticating
// with fresh signatures, none refused, every row read back committed; with
// a wrong secret it stops at start naming the IAM action and the setting.
func TestRunMSKIAM(t *testing.T) {
	m := testenv.MariaDBEnv(t)
	registry := testenv.RegistryURL(t)
	db := m.CreateDatabase(t, "iamrun")
	admin := m.AdminDB(t, db)
	if _, err := admin.ExecContext(t.Context(), "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO t VALUES (1, 'a')"); err != nil {
		t.Fatal(err)
	}
	pki := tlstest.New(t)
	b := mskiam.Start(t, mskiam.Config{AccessKey: "AKIDCAPTURE", SecretKey: "capture-secret", SessionToken: "capture-token",
		Region: "eu-west-1", SessionLifetime: time.Second}, pki.ServerConfig(false))
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDCAPTURE")
	t.Setenv("AWS_SESSION_TOKEN", "capture-token")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "capture-secret")
	prefix := testenv.Unique(t, "iamrun")
	cfg := captureConfig(t, map[string]string{
		"CAPTURE_TOPIC_PREFIX": prefix, "CAPTURE_OFFSETS_TOPIC": prefix + ".offsets", "CAPTURE_DATABASE_INCLUDE_LIST": db,
		"CAPTURE_METRICS_ADDR": "off", "CAPTURE_TOPIC_CREATION_DEFAULT_REPLICATION_FACTOR": "1", "CAPTURE_STARTUP_TIMEOUT": "0s",
		"CAPTURE_KAFKA_BROKERS": strings.Join(b.ListenAddrs(), ","), "CAPTURE_SCHEMA_REGISTRY_URL": registry,
		"CAPTURE_KAFKA_TLS": "true", "CAPTURE_KAFKA_TLS_CA_FILE": pki.CAFile, "CAPTURE_KAFKA_SASL_MECHANISM": "aws-msk-iam", "AWS_REGION": "eu-west-1",
		"CAPTURE_MYSQL_ADDR": m.Addr, "CAPTURE_MYSQL_USER": m.CaptureUser, "CAPTURE_MYSQL_PASSWORD": m.CapturePassword,
	})
	log := &syncLog{}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Config{Capture: cfg, Logger: slog.New(slog.NewTextHandler(log, nil))}) }()
	rows := 1
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("capture stopped: %v (auths %+v)\n%s", err, b.Auths(), log)
		default:
		}
		rows++
		if _, err := admin.ExecContext(t.Context(), fmt.Sprintf("INSERT INTO t VALUES (%d, 'r')", rows)); err != nil {
			t.Fatal(err)
		}
	}

	// Read the rows back as another IAM client of the same broker.
	tc := pki.ClientConfig(false)
	mech := saslaws.ManagedStreamingIAM(func(context.Context) (saslaws.Auth, error) {
		return saslaws.Auth{AccessKey: "AKIDCAPTURE", SecretKey: "capture-secret", SessionToken: "capture-token", UserAgent: "reader"}, nil
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenAddrs()...), kgo.DialTLSConfig(tc), kgo.SASL(mech),
		kgo.ConsumeTopics(prefix+"."+db+".t"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	testenv.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		fctx, fcancel := context.WithTimeout(ctx, time.Second)
		defer fcancel()
		cl.PollFetches(fctx).EachRecord(func(r *kgo.Record) {
			if len(r.Value) > 0 {
				seen[string(r.Key)] = true
			}
		})
		if len(seen) < rows {
			return fmt.Errorf("%d of %d rows read back", len(seen), rows)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Fatalf("capture stopping: %v\n%s", err, log)
	}
	sigs := map[string]bool{}
	for _, a := range b.Auths() {
		if a.Err != nil {
			t.Fatalf("refused: %v", a.Err)
		}
		if a.UserAgent == "binlake-capture" {
			sigs[a.Signature] = true
		}
	}
	if len(sigs) < 3 {
		t.Errorf("%d distinct capture signatures over %d authentications in 4s of 1s sessions, want re-authentication", len(sigs), len(b.Auths()))
	}
	t.Logf("%d rows, %d authentications, %d distinct capture signatures", rows, len(b.Auths()), len(sigs))

	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
	rctx, rcancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer rcancel()
	err = Run(rctx, Config{Capture: cfg, Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err == nil {
		t.Fatal("capture started with a wrong secret")
	}
	for _, want := range []string{"SASL_AUTHENTICATION_FAILED", "signature does not match", "kafka-cluster:Connect", "kafka-sasl-mechanism", "AWS credentials"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
