package lake

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/binlake/binlake/test/s3tables"
)

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
	standIn, uri := s3tables.Start(t, s3tables.Config{Backend: configOnlyBackend(t), Region: "us-east-1", Credentials: s3tables.TestCredentials})
	cfg := CatalogConfig{CatalogURI: uri, CatalogName: "test", Warehouse: s3tables.TestBucketARN, SigV4: true, SigV4Service: "s3tables", S3Region: "us-east-1"}

	s3tables.SetAWSEnv(t, s3tables.TestCredentials)
	if _, err := Open(t.Context(), cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("with the right credentials: %v", err)
	}

	for _, tc := range s3tables.Refusals() {
		t.Run(tc.Name, func(t *testing.T) {
			s3tables.SetAWSEnv(t, tc.Creds)
			standIn.SetClockOffset(tc.Offset)
			defer standIn.SetClockOffset(0)
			_, err := Open(t.Context(), cfg, slog.New(slog.DiscardHandler))
			s3tables.CheckRefused(t, err, ErrCatalogRefused, tc, "sigv4-service s3tables", "s3-region us-east-1")
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
	_, uri := s3tables.Start(t, s3tables.Config{Backend: configOnlyBackend(t), Flavor: s3tables.Glue, Region: "us-east-1", Credentials: s3tables.TestCredentials})
	cfg := CatalogConfig{CatalogURI: uri, CatalogName: "test", Warehouse: "111122223333:s3tablescatalog/test", SigV4: true, SigV4Service: "glue", S3Region: "us-east-1"}
	s3tables.SetAWSEnv(t, s3tables.TestCredentials)
	if _, err := Open(t.Context(), cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("signed for glue: %v", err)
	}
	cfg.SigV4Service = "s3tables"
	_, err := Open(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if !errors.Is(err, ErrCatalogRefused) || !strings.Contains(err.Error(), "correct service: 'glue'") || !strings.Contains(err.Error(), "sigv4-service s3tables") {
		t.Fatalf("signed for s3tables: %v", err)
	}
}
