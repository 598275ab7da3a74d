// Package registrysec holds ingest's schema registry security settings
// (basic auth, a bearer token, a CA bundle): their flags and variables,
// their validation and the franz-go sr client options they make. Both
// binaries hold this package, kept equal with the names changed
// (TestKafkaSecurityMatchesCapture).
package registrysec

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/ingest/internal/envflag"
	"github.com/binlake/binlake/ingest/internal/kafkasec"
)

// RegistrySecurity is how ingest authenticates to the schema registry and
// verifies it. The zero value sends no credentials and trusts the system
// roots for an https registry.
type RegistrySecurity struct {
	// Username and Password are HTTP basic-auth credentials (Confluent
	// Cloud: the API key and secret). The password is a secret: env or
	// file only.
	Username, Password string
	// Token is a bearer token, sent instead of basic auth. A secret: env
	// or file only.
	Token string
	// CAFile is a PEM bundle of the CAs the registry's certificate chains
	// to (default: the system roots); https only.
	CAFile string
}

// Bind adds the settings to f.
func (r *RegistrySecurity) Bind(f *envflag.Set) {
	f.String(&r.Username, "schema-registry-username", "", "schema registry basic-auth user; the password comes from INGEST_SCHEMA_REGISTRY_PASSWORD or INGEST_SCHEMA_REGISTRY_PASSWORD_FILE")
	f.Secret(&r.Password, "schema-registry-password", "the schema registry basic-auth password (with schema-registry-username)")
	f.Secret(&r.Token, "schema-registry-token", "a bearer token for the schema registry, instead of basic auth")
	f.String(&r.CAFile, "schema-registry-ca-file", "", "PEM file of the CAs that sign an https schema registry's certificate (default: the system roots)")
}

// Validate checks the settings against the registry URL they are for, and
// reads the CA file so a bad one fails at start. Credentials go only to an
// https registry (or one on a loopback address), never in the URL.
func (r *RegistrySecurity) Validate(registryURL string) error {
	if registryURL == "" {
		if *r != (RegistrySecurity{}) {
			return errors.New("schema registry credentials or CA file are set but schema-registry-url is empty")
		}
		return nil
	}
	if !strings.Contains(registryURL, "://") {
		registryURL = "http://" + registryURL // as the client reads it
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	u, err := url.Parse(registryURL)
	if err != nil {
		// The URL's own check reports it; nothing of it is logged here.
		return errors.New("schema-registry-url is not a URL")
	}
	if u.User != nil {
		bad("schema-registry-url holds credentials: set schema-registry-username and INGEST_SCHEMA_REGISTRY_PASSWORD (or _FILE) instead, so that they are neither logged nor shown in ps")
	}
	if r.Password != "" && r.Username == "" {
		bad("a schema registry password is set without schema-registry-username (INGEST_SCHEMA_REGISTRY_USERNAME)")
	}
	if r.Username != "" && r.Password == "" {
		bad("schema-registry-username needs a password in INGEST_SCHEMA_REGISTRY_PASSWORD or the file named by INGEST_SCHEMA_REGISTRY_PASSWORD_FILE")
	}
	if r.Token != "" && r.Username != "" {
		bad("set either basic auth (schema-registry-username) or a bearer token (INGEST_SCHEMA_REGISTRY_TOKEN) for the schema registry, not both")
	}
	secure := u.Scheme == "https"
	if (r.Username != "" || r.Token != "") && !secure && !loopbackHost(u.Hostname()) {
		bad("schema registry credentials would go in clear to %s: use an https schema-registry-url", u.Host)
	}
	if r.CAFile != "" {
		if !secure {
			bad("schema-registry-ca-file is set but schema-registry-url is not https")
		} else if _, err := r.tlsConfig(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (r *RegistrySecurity) tlsConfig() (*tls.Config, error) {
	pool, err := kafkasec.LoadCAs("schema-registry-ca-file", r.CAFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, nil
}

// ClientOpts are the registry client's options for these settings (none
// for the zero value). Call Validate first.
func (r *RegistrySecurity) ClientOpts() ([]sr.ClientOpt, error) {
	var opts []sr.ClientOpt
	if r.Username != "" {
		opts = append(opts, sr.BasicAuth(r.Username, r.Password))
	}
	if r.Token != "" {
		opts = append(opts, sr.BearerToken(r.Token))
	}
	if r.CAFile != "" {
		c, err := r.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, sr.DialTLSConfig(c))
	}
	return opts, nil
}
