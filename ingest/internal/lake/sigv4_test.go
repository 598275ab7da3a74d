package lake

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/binlake/binlake/test/s3tables"
)

// standInCreds are the test credentials the stand-in accepts; never real.
var standInCreds = aws.Credentials{AccessKeyID: "AKIDINGESTTEST", SecretAccessKey: "ingest-test-secret", SessionToken: "ingest-test-token"}

const standInARN = "arn:aws:s3tables:us-east-1:111122223333:bucket/test"

// setAWSEnv makes creds the only AWS credentials the default chain finds:
// the environment, with no shared files or profile to fall back on.
func setAWSEnv(t *testing.T, creds aws.Credentials) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_ACCESS_KEY_ID", creds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", creds.SessionToken)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// refusal is a signing failure the refusal tests provoke: the credentials
// ingest signs with, the stand-in's clock offset, and what AWS's 403 says.
type refusal struct {
	name   string
	creds  aws.Credentials
	offset time.Duration
	says   string
}

// refusals are a wrong secret and a clock 10 minutes off.
func refusals() []refusal {
	wrong := standInCreds
	wrong.SecretAccessKey = "not-the-secret"
	return []refusal{
		{"wrong secret", wrong, 0, "signature we calculated does not match"},
		{"clock skew", standInCreds, 10 * time.Minute, "Signature expired"},
	}
}

// checkRefused fails t unless err is ErrCatalogRefused saying what AWS
// said, where the credentials came from, the clock and each of more, with
// no secret shown.
func checkRefused(t *testing.T, err error, tc refusal, more ...string) {
	t.Helper()
	if !errors.Is(err, ErrCatalogRefused) {
		t.Fatalf("error %v, want ErrCatalogRefused", err)
	}
	t.Log(err)
	for _, want := range append([]string{tc.says, "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY", "clock"}, more...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), tc.creds.SecretAccessKey) || strings.Contains(err.Error(), tc.creds.SessionToken) {
		t.Errorf("the error shows a secret: %v", err)
	}
}

// configOnlyBackend answers the config call, as a catalog with no tables.
func configOnlyBackend(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"defaults":{},"overrides":{}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestOpenCatalogSigV4 connects through the S3 Tables stand-in with the
// settings of the README, then with a wrong secret and with a clock 10
// minutes off: both stop at the connection, with ErrCatalogRefused and a
// message that names where the credentials came from and the clock.
func TestOpenCatalogSigV4(t *testing.T) {
	standIn, uri := s3tables.Start(t, s3tables.Config{Backend: configOnlyBackend(t), Region: "us-east-1", Credentials: standInCreds})
	cfg := CatalogConfig{CatalogURI: uri, CatalogName: "test", Warehouse: standInARN, SigV4: true, SigV4Service: "s3tables", S3Region: "us-east-1"}

	setAWSEnv(t, standInCreds)
	if _, err := Open(t.Context(), cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("with the right credentials: %v", err)
	}

	for _, tc := range refusals() {
		t.Run(tc.name, func(t *testing.T) {
			setAWSEnv(t, tc.creds)
			standIn.SetClockOffset(tc.offset)
			defer standIn.SetClockOffset(0)
			_, err := Open(t.Context(), cfg, slog.New(slog.DiscardHandler))
			checkRefused(t, err, tc, "sigv4-service s3tables", "s3-region us-east-1")
		})
	}
}

func TestCredentialSource(t *testing.T) {
	for source, want := range map[string]string{
		"EnvConfigCredentials":                              "AWS_ACCESS_KEY_ID",
		"SharedConfigCredentials: /home/x/.aws/credentials": "/home/x/.aws/credentials",
		"AssumeRoleWithWebIdentityProvider":                 "web identity",
		"":                                                  "default credential chain",
	} {
		if got := credentialSource(source); !strings.Contains(got, want) {
			t.Errorf("credentialSource(%q) = %q, want it to name %q", source, got, want)
		}
	}
}

// TestOpenCatalogGlue connects through the Glue flavour of the stand-in
// (signing name glue, warehouse <account>:s3tablescatalog/<bucket>); signed
// for s3tables instead, Glue refuses it and the error names the signing name.
func TestOpenCatalogGlue(t *testing.T) {
	_, uri := s3tables.Start(t, s3tables.Config{Backend: configOnlyBackend(t), Flavor: s3tables.Glue, Region: "us-east-1", Credentials: standInCreds})
	cfg := CatalogConfig{CatalogURI: uri, CatalogName: "test", Warehouse: "111122223333:s3tablescatalog/test", SigV4: true, SigV4Service: "glue", S3Region: "us-east-1"}
	setAWSEnv(t, standInCreds)
	if _, err := Open(t.Context(), cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("signed for glue: %v", err)
	}
	cfg.SigV4Service = "s3tables"
	_, err := Open(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if !errors.Is(err, ErrCatalogRefused) || !strings.Contains(err.Error(), "correct service: 'glue'") || !strings.Contains(err.Error(), "sigv4-service s3tables") {
		t.Fatalf("signed for s3tables: %v", err)
	}
}
