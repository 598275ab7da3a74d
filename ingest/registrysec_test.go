package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/test/tlstest"
)

// TestRegistryBearerToken: ingest's registry client sends the bearer token
// from INGEST_SCHEMA_REGISTRY_TOKEN to an https registry it trusts through
// schema-registry-ca-file (the settings are capture's, kept equal by
// TestKafkaSecurityMatchesCapture; capture's TestRegistryCredentials covers
// basic auth and the refusals).
func TestRegistryBearerToken(t *testing.T) {
	pki := tlstest.New(t)
	var got string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		if got != "Bearer ingest-t0ken" {
			http.Error(w, `{"error_code":40101,"message":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		_, _ = w.Write([]byte("[]"))
	}))
	srv.TLS = pki.ServerConfig(false)
	srv.StartTLS()
	defer srv.Close()
	ef, cfg, _ := bindFlags(env(map[string]string{
		"INGEST_SCHEMA_REGISTRY_URL": srv.URL, "INGEST_SCHEMA_REGISTRY_TOKEN": "ingest-t0ken", "INGEST_SCHEMA_REGISTRY_CA_FILE": pki.CAFile,
	}))
	if err := ef.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Registry.Validate(cfg.RegistryURL); err != nil {
		t.Fatal(err)
	}
	opts, err := cfg.Registry.ClientOpts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(cfg.RegistryURL)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Subjects(t.Context()); err != nil {
		t.Fatalf("listing subjects: %v (registry saw Authorization %q)", err, got)
	}
}
