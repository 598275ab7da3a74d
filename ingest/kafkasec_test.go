package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlake/binlake/test/tlstest"
)

// The Kafka security code is capture's (TestKafkaSecurityMatchesCapture
// keeps internal/kafkasec equal to capture's copy with the names changed),
// and capture/kafkasec_test.go tests it: validation rules, franz-go options,
// MSK IAM signing, kfake round trips and refusal hints. What is ingest's own
// is checked here: the INGEST_ variables and the wiring into
// --check-config and --help.

// TestKafkaSecurityIngestSettings runs ingest --check-config with the
// Kafka security settings given through INGEST_* variables.
func TestKafkaSecurityIngestSettings(t *testing.T) {
	pki := tlstest.New(t)
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"INGEST_CATALOG_URI": "http://c:8181", "INGEST_TOPICS": "p.db.t"}
	for _, c := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string // "" means valid; else a part of the message naming the fix
	}{
		{"mutual tls from env", nil, map[string]string{
			"INGEST_KAFKA_TLS": "true", "INGEST_KAFKA_TLS_CA_FILE": pki.CAFile,
			"INGEST_KAFKA_TLS_CERT_FILE": pki.ClientCertFile, "INGEST_KAFKA_TLS_KEY_FILE": pki.ClientKeyFile,
		}, ""},
		{"scram password from file", []string{"-kafka-tls", "-kafka-sasl-mechanism=SCRAM-SHA-512"},
			map[string]string{"INGEST_KAFKA_SASL_USERNAME": "u", "INGEST_KAFKA_SASL_PASSWORD_FILE": pwFile}, ""},
		{"scram without password", []string{"-kafka-sasl-mechanism=scram-sha-256", "-kafka-sasl-username=u"}, nil, "INGEST_KAFKA_SASL_PASSWORD"},
		{"CA without tls", nil, map[string]string{"INGEST_KAFKA_TLS_CA_FILE": pki.CAFile}, "INGEST_KAFKA_TLS=true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := map[string]string{}
			for _, m := range []map[string]string{base, c.env} {
				for k, v := range m {
					e[k] = v
				}
			}
			var out bytes.Buffer
			err := run(t.Context(), append([]string{"ingest", "-check-config"}, c.args...), env(e), &out, &out)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("valid settings refused: %v", err)
			case c.wantErr != "" && err == nil:
				t.Fatalf("accepted, want an error containing %q", c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Fatalf("error %q does not contain %q", err, c.wantErr)
			}
			if strings.Contains(out.String()+errString(err), "s3cret") {
				t.Error("the SASL password is in the output")
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestKafkaSecurityPasswordHasNoFlag checks the SASL password is a secret.
func TestKafkaSecurityPasswordHasNoFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"ingest", "--help"}, env(nil), &out, &out); err == nil {
		t.Fatal("--help returned no error")
	}
	if strings.Contains(out.String(), "-kafka-sasl-password") {
		t.Error("the Kafka SASL password has a flag")
	}
	if !strings.Contains(out.String(), "-kafka-sasl-mechanism") || !strings.Contains(out.String(), "INGEST_KAFKA_TLS_CA_FILE") {
		t.Errorf("help lacks the Kafka security flags:\n%s", out.String())
	}
}
