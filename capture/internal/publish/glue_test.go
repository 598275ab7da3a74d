package publish

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/binlake/binlake/test/gluesr"
)

var glueCreds = aws.Credentials{AccessKeyID: "AKIDCAPTUREGLUE", SecretAccessKey: "capture-glue-secret"}

func glueAWS(creds aws.Credentials) aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: credentials.StaticCredentialsProvider{Value: creds}, Retryer: func() aws.Retryer { return aws.NopRetryer{} }}
}

func glueConfig(endpoint string) GlueConfig {
	return GlueConfig{Region: "us-east-1", Endpoint: endpoint, RegistryName: "binlake-test", AutoRegistration: true, Compatibility: "FULL", Compression: "none"}
}

const (
	keyDef   = `{"type":"record","name":"Key","namespace":"p.db.t","fields":[{"name":"id","type":"int"}]}`
	valueDef = `{"type":"record","name":"Envelope","namespace":"p.db.t","fields":[{"name":"op","type":"string"}]}`
)

// TestFrames checks both framings byte by byte, and that a zlib Glue body
// inflates back to the Avro written.
func TestFrames(t *testing.T) {
	cf := ConfluentFrame(0x01020304)
	if got := cf.AppendHeader(nil); !bytes.Equal(got, []byte{0, 1, 2, 3, 4}) {
		t.Errorf("Confluent header %x", got)
	}
	if got := (Frame{}).Header(); !bytes.Equal(got, []byte{0, 0, 0, 0, 0}) {
		t.Errorf("zero Frame header %x", got)
	}
	id, err := parseUUID("0123abcd-4567-89ef-ABCD-0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	wantID := []byte{0x01, 0x23, 0xab, 0xcd, 0x45, 0x67, 0x89, 0xef, 0xab, 0xcd, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab}
	if !bytes.Equal(id[:], wantID) {
		t.Fatalf("parseUUID = %x", id)
	}
	for _, bad := range []string{"", "0123abcd45678-9ef-ABCD-0123456789ab", "0123abcd-4567-89ef-ABCD-0123456789ax"} {
		if _, err := parseUUID(bad); err == nil {
			t.Errorf("parseUUID(%q) succeeded", bad)
		}
	}
	body := bytes.Repeat([]byte("avro body "), 50)
	pf := GlueFrame(id, false)
	plain, err := pf.Seal(append(pf.AppendHeader(nil), body...))
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]byte{3, 0}, wantID...), body...); !bytes.Equal(plain, want) {
		t.Errorf("plain Glue record %x\nwant %x", plain, want)
	}
	f := GlueFrame(id, true)
	rec := append(f.AppendHeader(make([]byte, 0, 8)), body...)
	z, err := f.Seal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(z[:18], append([]byte{3, 5}, wantID...)) {
		t.Fatalf("zlib Glue header %x", z[:18])
	}
	zr, err := zlib.NewReader(bytes.NewReader(z[18:]))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("inflated %q, %v", got, err)
	}
	if len(z) >= len(rec) {
		t.Errorf("zlib record of %d bytes, plain %d", len(z), len(rec))
	}
	if _, err := f.Seal([]byte{3, 5}); err == nil {
		t.Error("sealing a truncated record succeeded")
	}
}

// TestGlueRegistersOnce checks the registration flow against the signed
// stand-in: the subject is the schema name, created with the configured
// compatibility in the configured registry once, then served from the
// cache; a new definition becomes a new version; a new process finds the
// registered versions by definition without creating anything.
func TestGlueRegistersOnce(t *testing.T) {
	h, endpoint := gluesr.Start(t, gluesr.Config{Credentials: glueCreds})
	r := NewGlueRegistryFromConfig(glueAWS(glueCreds), glueConfig(endpoint))
	if err := r.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	var first Frame
	for i := range 3 {
		f, err := r.Frame(t.Context(), "p.db.t-value", []byte(valueDef))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = f
		} else if f != first {
			t.Fatalf("frame %d %x, first %x", i, f.Header(), first.Header())
		}
	}
	if _, err := r.Frame(t.Context(), "p.db.t-key", []byte(keyDef)); err != nil {
		t.Fatal(err)
	}
	if n := h.Calls("GetSchemaByDefinition"); n != 2 {
		t.Errorf("%d GetSchemaByDefinition calls for two schemas, want 2", n)
	}
	if n := h.Calls("CreateSchema"); n != 2 {
		t.Errorf("%d CreateSchema calls, want 2", n)
	}
	info, ok := h.Schema("binlake-test", "p.db.t-value")
	if !ok || info.Compatibility != "FULL" || info.DataFormat != "AVRO" || len(info.Versions) != 1 || info.Versions[0] != valueDef {
		t.Fatalf("schema p.db.t-value in binlake-test: %+v, %v", info, ok)
	}
	hdr := first.Header()
	if len(hdr) != 18 || hdr[0] != 3 || hdr[1] != 0 {
		t.Fatalf("header %x", hdr)
	}

	// An evolved value schema: a new version of the same schema.
	evolved := strings.Replace(valueDef, `]}`, `,{"name":"x","type":["null","int"],"default":null}]}`, 1)
	f2, err := r.Frame(t.Context(), "p.db.t-value", []byte(evolved))
	if err != nil {
		t.Fatal(err)
	}
	if f2 == first {
		t.Fatal("an evolved definition got the first version's frame")
	}
	if n := h.Calls("RegisterSchemaVersion"); n != 1 {
		t.Errorf("%d RegisterSchemaVersion calls, want 1", n)
	}
	if info, _ := h.Schema("binlake-test", "p.db.t-value"); len(info.Versions) != 2 {
		t.Errorf("%d versions after evolving, want 2", len(info.Versions))
	}

	// A restarted capture (zlib now) finds the first version by definition.
	creates := h.Calls("CreateSchema") // the evolved one's answered AlreadyExists
	cfg := glueConfig(endpoint)
	cfg.Compression = "ZLIB" // as AWS spells it
	r2 := NewGlueRegistryFromConfig(glueAWS(glueCreds), cfg)
	f3, err := r2.Frame(t.Context(), "p.db.t-value", []byte(valueDef))
	if err != nil {
		t.Fatal(err)
	}
	if h3 := f3.Header(); h3[1] != 5 || !bytes.Equal(h3[2:], hdr[2:]) {
		t.Fatalf("restarted frame %x, want compression 5 and version %x", h3, hdr[2:])
	}
	if h.Calls("CreateSchema") != creates || h.Calls("RegisterSchemaVersion") != 1 {
		t.Errorf("a restart registered again: CreateSchema %d, RegisterSchemaVersion %d", h.Calls("CreateSchema"), h.Calls("RegisterSchemaVersion"))
	}
}

// TestGlueAutoRegistrationOff checks a missing schema stops with an error
// naming the setting, and that nothing is created.
func TestGlueAutoRegistrationOff(t *testing.T) {
	h, endpoint := gluesr.Start(t, gluesr.Config{Credentials: glueCreds})
	cfg := glueConfig(endpoint)
	cfg.AutoRegistration = false
	r := NewGlueRegistryFromConfig(glueAWS(glueCreds), cfg)
	_, err := r.Frame(t.Context(), "p.db.t-value", []byte(valueDef))
	if !errors.Is(err, ErrGlueSchemaMissing) || !strings.Contains(err.Error(), "glue-schema-auto-registration") || !strings.Contains(err.Error(), "p.db.t-value") {
		t.Fatalf("got %v, want ErrGlueSchemaMissing naming the schema and glue-schema-auto-registration", err)
	}
	if h.Calls("CreateSchema")+h.Calls("RegisterSchemaVersion") != 0 {
		t.Fatal("auto-registration off created a schema")
	}
	// Registered by someone else, it is found.
	on := NewGlueRegistryFromConfig(glueAWS(glueCreds), glueConfig(endpoint))
	want, err := on.Frame(t.Context(), "p.db.t-value", []byte(valueDef))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Frame(t.Context(), "p.db.t-value", []byte(valueDef)); err != nil || got != want {
		t.Fatalf("with the schema registered: %x, %v; want %x", got.Header(), err, want.Header())
	}
}

// TestGlueRefused checks a request the stand-in refuses for its signature
// stops with ErrGlueRefused, naming the region setting and credentials.
func TestGlueRefused(t *testing.T) {
	h, endpoint := gluesr.Start(t, gluesr.Config{Credentials: glueCreds})
	wrong := glueCreds
	wrong.SecretAccessKey = "not-the-secret"
	r := NewGlueRegistryFromConfig(glueAWS(wrong), glueConfig(endpoint))
	_, err := r.Frame(t.Context(), "p.db.t-value", []byte(valueDef))
	if !errors.Is(err, ErrGlueRefused) || !strings.Contains(err.Error(), "glue-registry-region us-east-1") || !strings.Contains(err.Error(), "credentials") {
		t.Fatalf("got %v, want ErrGlueRefused naming glue-registry-region and the credentials", err)
	}
	if h.Denied() == 0 {
		t.Fatal("the stand-in refused nothing")
	}
	if err := r.Ping(t.Context()); !errors.Is(err, ErrGlueRefused) || !r.Final(err) || !strings.Contains(err.Error(), "GetRegistry") {
		t.Fatalf("Ping with a wrong secret: %v (final %v), want a final ErrGlueRefused naming GetRegistry", err, r.Final(err))
	}
	// Signed for another region: refused too.
	cfg := glueConfig(endpoint)
	cfg.Region = "eu-west-1"
	r = NewGlueRegistryFromConfig(glueAWS(glueCreds), cfg)
	if _, err := r.Frame(t.Context(), "p.db.t-value", []byte(valueDef)); !errors.Is(err, ErrGlueRefused) {
		t.Fatalf("signed for eu-west-1: %v", err)
	}
}

// TestGlueConfigValidate checks the settings' checks name the setting.
func TestGlueConfigValidate(t *testing.T) {
	ok := GlueConfig{RegistryName: "default-registry", AutoRegistration: true, Compatibility: "BACKWARD", Compression: "none"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mod  func(*GlueConfig)
		want string
	}{
		{func(c *GlueConfig) { c.Endpoint = "http://x" }, "glue-registry-endpoint is set without glue-registry-region"},
		{func(c *GlueConfig) { c.Region, c.Endpoint = "us-east-1", "x:1" }, "glue-registry-endpoint"},
		{func(c *GlueConfig) { c.RegistryName = "" }, "glue-registry-name"},
		{func(c *GlueConfig) { c.Compatibility = "backward" }, "glue-compatibility"},
		{func(c *GlueConfig) { c.Compression = "gzip" }, "glue-compression"},
	} {
		cfg := ok
		c.mod(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", cfg, err, c.want)
		}
	}
}

// TestGluePendingVersion checks a new version Glue answers PENDING is
// asked about until AVAILABLE before its records are framed, and one that
// fails Glue's compatibility check stops with ErrGlueVersionFailed naming
// glue-compatibility.
func TestGluePendingVersion(t *testing.T) {
	h, endpoint := gluesr.Start(t, gluesr.Config{Credentials: glueCreds, PendingChecks: 2,
		Refuse: func(def string) bool { return strings.Contains(def, `"refused"`) }})
	r := NewGlueRegistryFromConfig(glueAWS(glueCreds), glueConfig(endpoint))
	r.poll = time.Millisecond
	if _, err := r.Frame(t.Context(), "p.db.t-value", []byte(valueDef)); err != nil { // CreateSchema: AVAILABLE at once
		t.Fatal(err)
	}
	evolved := strings.Replace(valueDef, `]}`, `,{"name":"x","type":["null","int"],"default":null}]}`, 1)
	if _, err := r.Frame(t.Context(), "p.db.t-value", []byte(evolved)); err != nil {
		t.Fatal(err)
	}
	if n := h.Lookups(); n != 3 {
		t.Errorf("%d GetSchemaVersion calls for a version PENDING for 2, want 3", n)
	}
	refused := strings.Replace(valueDef, `]}`, `,{"name":"refused","type":"int"}]}`, 1)
	_, err := r.Frame(t.Context(), "p.db.t-value", []byte(refused))
	if !errors.Is(err, ErrGlueVersionFailed) || !strings.Contains(err.Error(), "FAILURE") || !strings.Contains(err.Error(), "glue-compatibility") || !r.Final(err) {
		t.Fatalf("a refused definition: %v, want a final ErrGlueVersionFailed naming FAILURE and glue-compatibility", err)
	}
}
