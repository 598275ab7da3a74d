package main

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/test/tlstest"
)

// registryStandIn is an https schema registry that answers GET /subjects
// only to requests carrying the Authorization header want.
func registryStandIn(t *testing.T, pki *tlstest.PKI, want string) (url string, seen func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != want {
			http.Error(w, `{"error_code":40101,"message":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		_, _ = w.Write([]byte("[]"))
	}))
	srv.TLS = pki.ServerConfig(false)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
}

// TestRegistryCredentials: basic auth (password from a file) and a bearer
// token (from the environment) reach an https registry trusted through
// schema-registry-ca-file; without the CA file or with a wrong password
// the registry is refused; the secrets are in no log field.
func TestRegistryCredentials(t *testing.T) {
	pki := tlstest.New(t)
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("reg-user:s3cret-pw"))
	for _, c := range []struct {
		name   string
		want   string // the header the registry expects
		env    map[string]string
		pingOK bool
		errHas string
	}{
		{"basic auth, password file", basic, map[string]string{"CAPTURE_SCHEMA_REGISTRY_USERNAME": "reg-user", "CAPTURE_SCHEMA_REGISTRY_PASSWORD_FILE": pwFile, "CAPTURE_SCHEMA_REGISTRY_CA_FILE": pki.CAFile}, true, ""},
		{"bearer token", "Bearer t0ken-abc", map[string]string{"CAPTURE_SCHEMA_REGISTRY_TOKEN": "t0ken-abc", "CAPTURE_SCHEMA_REGISTRY_CA_FILE": pki.CAFile}, true, ""},
		{"wrong password", basic, map[string]string{"CAPTURE_SCHEMA_REGISTRY_USERNAME": "reg-user", "CAPTURE_SCHEMA_REGISTRY_PASSWORD": "nope", "CAPTURE_SCHEMA_REGISTRY_CA_FILE": pki.CAFile}, false, "unauthorized"},
		{"no CA file", basic, map[string]string{"CAPTURE_SCHEMA_REGISTRY_USERNAME": "reg-user", "CAPTURE_SCHEMA_REGISTRY_PASSWORD_FILE": pwFile}, false, "certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, seen := registryStandIn(t, pki, c.want)
			c.env["CAPTURE_SCHEMA_REGISTRY_URL"] = url
			ef, cfg, _ := bindFlags(env(c.env))
			if err := ef.parse(nil); err != nil {
				t.Fatal(err)
			}
			if err := cfg.Registry.Validate(cfg.RegistryURL); err != nil {
				t.Fatal(err)
			}
			opts, err := cfg.Registry.clientOpts()
			if err != nil {
				t.Fatal(err)
			}
			reg, err := publish.NewRegistry(cfg.RegistryURL, opts...)
			if err != nil {
				t.Fatal(err)
			}
			err = reg.Ping(t.Context())
			if c.pingOK != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.errHas)) {
				t.Fatalf("ping: %v; want ok %v (error naming %q); registry saw %q", err, c.pingOK, c.errHas, seen())
			}
			logged := fmt.Sprint(cfg.redacted()...)
			for _, secret := range []string{"s3cret-pw", "t0ken-abc", "nope"} {
				if strings.Contains(logged, secret) {
					t.Errorf("a registry secret is in the start log: %s", logged)
				}
			}
		})
	}
}

func TestRegistrySecurityValidate(t *testing.T) {
	pwd := "hunter2-secret"
	for _, c := range []struct {
		name, url string
		r         RegistrySecurity
		errHas    string
	}{
		{"none", "http://registry:8081", RegistrySecurity{}, ""},
		{"scheme-less URL", "127.0.0.1:8081", RegistrySecurity{Username: "u", Password: pwd}, ""},
		{"credentials in the URL", "https://u:" + pwd + "@registry:8081", RegistrySecurity{}, "holds credentials"},
		{"in clear to a remote registry", "http://registry:8081", RegistrySecurity{Username: "u", Password: pwd}, "in clear"},
		{"token in clear", "http://registry:8081", RegistrySecurity{Token: pwd}, "in clear"},
		{"password without user", "https://registry", RegistrySecurity{Password: pwd}, "without schema-registry-username"},
		{"user without password", "https://registry", RegistrySecurity{Username: "u"}, "needs a password"},
		{"both", "https://registry", RegistrySecurity{Username: "u", Password: pwd, Token: "t"}, "not both"},
		{"CA file over http", "http://127.0.0.1:8081", RegistrySecurity{CAFile: "/nonexistent"}, "not https"},
		{"missing CA file", "https://registry", RegistrySecurity{CAFile: "/nonexistent/ca.pem"}, "schema-registry-ca-file"},
		{"set without a URL", "", RegistrySecurity{Token: "t"}, "schema-registry-url is empty"},
	} {
		err := c.r.Validate(c.url)
		if (c.errHas == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.errHas)) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.errHas)
		}
		if err != nil && strings.Contains(err.Error(), pwd) {
			t.Errorf("%s: the error shows the secret: %v", c.name, err)
		}
	}
}
