package config

import (
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/binlake/binlake/capture/internal/envflag"
	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/schemas/debezium"
	"github.com/binlake/binlake/test/tlstest"
)

// testFlags is capture's flag set reading the environment e.
func testFlags(out io.Writer, e map[string]string) *envflag.Set {
	fs := flag.NewFlagSet("capture", flag.ContinueOnError)
	fs.SetOutput(out)
	return envflag.New(fs, "CAPTURE_", func(k string) string { return e[k] })
}

func TestFlagBeatsEnvBeatsDefault(t *testing.T) {
	fsCfg := func(args []string, e map[string]string) Config {
		t.Helper()
		var cfg Config
		var out bytes.Buffer
		ef := testFlags(&out, e)
		cfg.Bind(ef)
		if err := ef.FlagSet().Parse(args); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if got := fsCfg(nil, nil).KafkaBrokers; got != "127.0.0.1:9092" {
		t.Errorf("default brokers %q", got)
	}
	if got := fsCfg(nil, map[string]string{"CAPTURE_KAFKA_BROKERS": "k:1"}).KafkaBrokers; got != "k:1" {
		t.Errorf("env brokers %q", got)
	}
	if got := fsCfg([]string{"--kafka-brokers=f:2"}, map[string]string{"CAPTURE_KAFKA_BROKERS": "k:1"}).KafkaBrokers; got != "f:2" {
		t.Errorf("flag brokers %q", got)
	}
}

func TestSecretFromFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	var out bytes.Buffer
	ef := testFlags(&out, map[string]string{"CAPTURE_MYSQL_PASSWORD_FILE": file})
	cfg.Bind(ef)
	if cfg.MySQLPassword != "s3cret" {
		t.Fatalf("password from file = %q", cfg.MySQLPassword)
	}
	ef = testFlags(&out, map[string]string{"CAPTURE_MYSQL_PASSWORD_FILE": file + ".missing"})
	cfg.Bind(ef)
	if ef.Err() == nil {
		t.Fatal("missing password file accepted")
	}
}

// TestNameAdjustmentModes checks the two name-adjustment settings: Debezium's
// values (case-insensitive), the defaults Debezium 3.5 applies with an Avro
// converter (avro for fields, none for schema names), and a clear error
// otherwise.
func TestNameAdjustmentModes(t *testing.T) {
	check := func(args []string, e map[string]string) (Config, error) {
		t.Helper()
		var cfg Config
		var out bytes.Buffer
		ef := testFlags(&out, e)
		cfg.Bind(ef)
		if err := ef.FlagSet().Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg.TopicPrefix = "p"
		return cfg, cfg.Validate()
	}
	cfg, err := check(nil, nil)
	if err != nil || cfg.Naming.Field != debezium.AdjustAvro || cfg.Naming.Schema != debezium.AdjustNone {
		t.Fatalf("defaults: %+v, %v; want avro for fields (Debezium with an Avro converter) and none for schema names", cfg.Naming, err)
	}
	cfg, err = check([]string{"--schema-name-adjustment-mode=AVRO"},
		map[string]string{"CAPTURE_FIELD_NAME_ADJUSTMENT_MODE": "avro_unicode"})
	if err != nil || cfg.Naming.Field != debezium.AdjustAvroUnicode || cfg.Naming.Schema != debezium.AdjustAvro {
		t.Fatalf("flag and env: %+v, %v", cfg.Naming, err)
	}
	_, err = check([]string{"--field-name-adjustment-mode=unicode"}, nil)
	if err == nil || !strings.Contains(err.Error(), "field-name-adjustment-mode") || !strings.Contains(err.Error(), "avro_unicode") {
		t.Fatalf("bad mode: %v, want an error naming the setting and its values", err)
	}
}

func TestSignalSettings(t *testing.T) {
	for _, tc := range []struct {
		channels, topic string
		wantErr         string
		wantTopic       string
	}{
		{"", "", "", ""},
		{"kafka", "", "", "db1-signal"},
		{" kafka ", "sig", "", "sig"},
		{"source,kafka", "", "source channel is not supported", ""},
		{"jmx", "", "not supported", ""},
		{"carrier-pigeon", "", "want kafka", ""},
		{"", "sig", "does not include kafka", ""},
	} {
		c := Config{TopicPrefix: "db1", SignalEnabledChannels: tc.channels, SignalKafkaTopic: tc.topic}
		err := c.validateSignals()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("channels %q topic %q: error %v, want %q", tc.channels, tc.topic, err, tc.wantErr)
			}
			continue
		}
		if err != nil || c.SignalKafkaTopic != tc.wantTopic {
			t.Errorf("channels %q topic %q: topic %q err %v, want topic %q", tc.channels, tc.topic, c.SignalKafkaTopic, err, tc.wantTopic)
		}
	}
}

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
			var cfg Config
			ef := testFlags(&bytes.Buffer{}, c.env)
			cfg.Bind(ef)
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
			reg, err := publish.NewRegistry(cfg.RegistryURL, opts...)
			if err != nil {
				t.Fatal(err)
			}
			err = reg.Ping(t.Context())
			if c.pingOK != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.errHas)) {
				t.Fatalf("ping: %v; want ok %v (error naming %q); registry saw %q", err, c.pingOK, c.errHas, seen())
			}
			logged := fmt.Sprint(cfg.Redacted()...)
			for _, secret := range []string{"s3cret-pw", "t0ken-abc", "nope"} {
				if strings.Contains(logged, secret) {
					t.Errorf("a registry secret is in the start log: %s", logged)
				}
			}
		})
	}
}

// TestGlueSettings checks the Glue settings come from their CAPTURE_*
// variables with AWS's converter defaults, and that Validate reports a
// bad one by its name.
func TestGlueSettings(t *testing.T) {
	parse := func(e map[string]string) Config {
		t.Helper()
		var cfg Config
		var out bytes.Buffer
		ef := testFlags(&out, e)
		cfg.Bind(ef)
		if err := ef.FlagSet().Parse(nil); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	def := parse(nil).Glue
	if def.Enabled() || def.RegistryName != "default-registry" || !def.AutoRegistration || def.Compatibility != "BACKWARD" || def.Compression != "none" {
		t.Errorf("defaults %+v, want Glue off, default-registry, auto-registration, BACKWARD, none", def)
	}
	set := parse(map[string]string{
		"CAPTURE_GLUE_REGISTRY_REGION": "eu-west-1", "CAPTURE_GLUE_REGISTRY_ENDPOINT": "https://glue.example",
		"CAPTURE_GLUE_REGISTRY_NAME": "cdc", "CAPTURE_GLUE_SCHEMA_AUTO_REGISTRATION": "false",
		"CAPTURE_GLUE_COMPATIBILITY": "FULL_ALL", "CAPTURE_GLUE_COMPRESSION": "zlib",
	}).Glue
	want := publish.GlueConfig{Region: "eu-west-1", Endpoint: "https://glue.example", RegistryName: "cdc", AutoRegistration: false, Compatibility: "FULL_ALL", Compression: "zlib"}
	if set != want {
		t.Errorf("from the environment %+v, want %+v", set, want)
	}
	bad := parse(map[string]string{"CAPTURE_TOPIC_PREFIX": "p", "CAPTURE_GLUE_REGISTRY_REGION": "eu-west-1", "CAPTURE_GLUE_COMPRESSION": "gzip"})
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "glue-compression") {
		t.Errorf("Validate with glue-compression gzip: %v", err)
	}
}
