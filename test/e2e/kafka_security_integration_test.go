//go:build integration

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/securekafka"
	"github.com/binlake/binlake/test/tlstest"
)

// TestKafkaSecurity runs the pipeline through a real Apache Kafka broker
// with security on (test/securekafka: its own KRaft node beside the
// stack's, which is not touched): capture publishes over SASL_SSL with
// SCRAM-SHA-512, its password read from CAPTURE_KAFKA_SASL_PASSWORD_FILE,
// and ingest consumes over mutual TLS into Iceberg; the table must equal
// MariaDB, both for the rows capture snapshots and for streamed changes.
// Then capture and ingest are started with a wrong SCRAM password and
// without a client certificate: each must exit at start with an error that
// says what was refused. No process log may contain a password.
func TestKafkaSecurity(t *testing.T) {
	began := time.Now()
	pki := tlstest.New(t)
	// Distinctive, so a leak into a log cannot be a coincidence.
	password := "scram-pw-" + randHex(t)
	wrongPassword := "wrong-pw-" + randHex(t)
	const user = "binlake-capture"
	broker := securekafka.Start(t, securekafka.Config{PKI: pki, Users: map[string]string{user: password}})
	t.Logf("secured broker serving after %s: SASL_SSL %s, mTLS %s", time.Since(began).Round(time.Millisecond), broker.SASLSSL, broker.MTLS)
	secrets := t.TempDir()
	pwFile := filepath.Join(secrets, "kafka-password")
	wrongFile := filepath.Join(secrets, "wrong-password")
	for f, pw := range map[string]string{pwFile: password + "\n", wrongFile: wrongPassword} {
		if err := os.WriteFile(f, []byte(pw), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// Later entries win over newCaptureEnv's and newIngestRun's
	// (os/exec keeps the last value of a duplicated key).
	saslCapture := func(file string) []string {
		return []string{
			"CAPTURE_KAFKA_BROKERS=" + broker.SASLSSL,
			"CAPTURE_KAFKA_TLS=true",
			"CAPTURE_KAFKA_TLS_CA_FILE=" + pki.CAFile,
			"CAPTURE_KAFKA_SASL_MECHANISM=" + securekafka.Mechanism,
			"CAPTURE_KAFKA_SASL_USERNAME=" + user,
			"CAPTURE_KAFKA_SASL_PASSWORD_FILE=" + file,
		}
	}
	mtlsIngest := []string{
		"INGEST_KAFKA_BROKERS=" + broker.MTLS,
		"INGEST_KAFKA_TLS=true",
		"INGEST_KAFKA_TLS_CA_FILE=" + pki.CAFile,
		"INGEST_KAFKA_TLS_CERT_FILE=" + pki.ClientCertFile,
		"INGEST_KAFKA_TLS_KEY_FILE=" + pki.ClientKeyFile,
		// The certificate names broker.binlake.test besides 127.0.0.1.
		"INGEST_KAFKA_TLS_SERVER_NAME=" + tlstest.ServerName,
	}
	// (3) No log of any run, good or refused, may hold a password; the
	// logs are at debug level and start with the effective configuration.
	checked := 0
	noSecrets := func(t *testing.T, p *proc) {
		t.Helper()
		out, err := os.ReadFile(p.log)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{password, wrongPassword} {
			if strings.Contains(string(out), s) {
				t.Errorf("%s contains a Kafka SASL password", filepath.Base(p.log))
			}
		}
		checked++
	}

	// (1) The pipeline over the secured listeners.
	c := newCaptureEnv(t, saslCapture(pwFile)...)
	exec1(t, c, typesDDL,
		`INSERT INTO t VALUES
		 (1, 10000000000, 'one', 1.50, '2024-02-29 23:59:59.123456', '2024-01-01 10:00:00.123', '2024-02-29', '{"a": [1, 2]}', NULL),
		 (2, -5, 'two ü😀', -2.25, '1970-01-01 00:00:00.000000', '2038-01-19 03:14:07.999', '1999-12-31', NULL, 'x')`)
	cp := start(t, binary(t, "capture"), c.env, "capture.log")
	waitLog(t, cp, "Connected to server", 45*time.Second)
	r := newIngestRun(t, c, append(mtlsIngest, "INGEST_FLUSH_INTERVAL=500ms")...)
	ip := r.start(t)
	exec1(t, c,
		"INSERT INTO t VALUES (3, 0, '', 99999999.99, '9999-12-31 23:59:59.999999', '2001-09-09 01:46:40.000', '1000-01-01', '[]', 'n')",
		"UPDATE t SET name = 'TWO', amount = amount + 1, note = NULL WHERE id = 2",
		"UPDATE t SET id = 4 WHERE id = 1",
		"DELETE FROM t WHERE id = 3",
		"BEGIN; INSERT INTO t (id, b, name, amount, dt, d) VALUES (5, 5, 'five', 0.01, '2024-06-01 12:00:00', '2024-06-01'); UPDATE t SET j = '{\"k\": \"v\"}' WHERE id = 5; COMMIT",
	)
	r.waitEqual(t, 60*time.Second, ip)
	rows := len(r.mariaRows(t))
	t.Logf("Iceberg equals MariaDB (%d rows) through SASL_SSL/SCRAM-SHA-512 and mutual TLS after %s", rows, time.Since(began).Round(time.Millisecond))
	cp.stop(t, 30*time.Second)
	ip.stop(t, 30*time.Second)
	for p, want := range map[*proc]string{cp: "kafka_sasl_mechanism=scram-sha-512", ip: "kafka_tls=true"} {
		if !strings.Contains(p.fullLog(t), want) {
			t.Errorf("%s does not log its effective Kafka settings (%s):\n%s", filepath.Base(p.log), want, p.output())
		}
		noSecrets(t, p)
	}

	// (2) Refusals: each process must exit by itself, quickly, naming
	// what the broker refused.
	refusals := []struct {
		name, bin string
		env       []string
		want      []string
	}{
		{"capture wrong SCRAM password", "capture", append(append([]string{}, c.env...), saslCapture(wrongFile)...),
			[]string{"SASL_AUTHENTICATION_FAILED", `check kafka-sasl-username ("` + user + `")`, "CAPTURE_KAFKA_SASL_PASSWORD_FILE"}},
		{"capture no client certificate", "capture", append(append([]string{}, c.env...),
			"CAPTURE_KAFKA_BROKERS="+broker.MTLS, "CAPTURE_KAFKA_SASL_MECHANISM=none", "CAPTURE_KAFKA_SASL_USERNAME=", "CAPTURE_KAFKA_SASL_PASSWORD_FILE="),
			// The alert is bad_certificate from Java 17, certificate_required
			// from some other JDKs: the hint is what must be there.
			[]string{"remote error: tls: ", "set kafka-tls-cert-file and kafka-tls-key-file"}},
		{"ingest wrong SCRAM password", "ingest", append(append([]string{}, r.env...),
			"INGEST_KAFKA_BROKERS="+broker.SASLSSL, "INGEST_KAFKA_TLS_CERT_FILE=", "INGEST_KAFKA_TLS_KEY_FILE=",
			"INGEST_KAFKA_SASL_MECHANISM=scram-sha-512", "INGEST_KAFKA_SASL_USERNAME="+user, "INGEST_KAFKA_SASL_PASSWORD="+wrongPassword),
			[]string{"SASL_AUTHENTICATION_FAILED", `check kafka-sasl-username ("` + user + `")`, "INGEST_KAFKA_SASL_PASSWORD"}},
		{"ingest no client certificate", "ingest", append(append([]string{}, r.env...),
			"INGEST_KAFKA_TLS_CERT_FILE=", "INGEST_KAFKA_TLS_KEY_FILE="),
			// The alert is bad_certificate from Java 17, certificate_required
			// from some other JDKs: the hint is what must be there.
			[]string{"remote error: tls: ", "set kafka-tls-cert-file and kafka-tls-key-file"}},
	}
	for i, rc := range refusals {
		t.Run(rc.name, func(t *testing.T) {
			t0 := time.Now()
			p := start(t, binary(t, rc.bin), rc.env, "refused-"+string(rune('a'+i))+".log")
			select {
			case <-p.done:
			case <-time.After(40 * time.Second):
				p.kill()
				t.Fatalf("%s still running after 40 s instead of failing at start:\n%s", rc.bin, p.output())
			}
			out := p.output()
			if p.err == nil {
				t.Fatalf("%s exited 0:\n%s", rc.bin, out)
			}
			for _, w := range rc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the error does not mention %q:\n%s", w, out)
				}
			}
			noSecrets(t, p)
			t.Logf("refused after %s: %s", time.Since(t0).Round(time.Millisecond), lastLine(out))
		})
	}
	t.Logf("%d process logs hold no password; the test took %s", checked, time.Since(began).Round(time.Millisecond))
}

func randHex(t *testing.T) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
