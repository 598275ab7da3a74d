package gluereg

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"

	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/test/gluesr"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDGLUETEST", SecretAccessKey: "glue-test-secret", SessionToken: "glue-test-token"}

func awsConfig(creds aws.Credentials) aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: credentials.StaticCredentialsProvider{Value: creds}, Retryer: func() aws.Retryer { return aws.NopRetryer{} }}
}

// register creates a schema in the stand-in through the SDK and returns
// its first version's id.
func register(t *testing.T, endpoint, name, def string) decode.GlueID {
	t.Helper()
	cl := glue.NewFromConfig(awsConfig(testCreds), func(o *glue.Options) { o.BaseEndpoint = aws.String(endpoint) })
	out, err := cl.CreateSchema(t.Context(), &glue.CreateSchemaInput{SchemaName: aws.String(name), DataFormat: types.DataFormatAvro, SchemaDefinition: aws.String(def)})
	if err != nil {
		t.Fatal(err)
	}
	id, err := decode.ParseGlueID(aws.ToString(out.SchemaVersionId))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

const def = `{"type":"record","name":"k","fields":[{"name":"id","type":"long"}]}`

// TestLookup checks a schema version is fetched through a signed
// GetSchemaVersion once, then served from the bounded cache.
func TestLookup(t *testing.T) {
	h, endpoint := gluesr.Start(t, gluesr.Config{Credentials: testCreds})
	id := register(t, endpoint, "a", def)
	id2 := register(t, endpoint, "b", strings.Replace(def, `"k"`, `"k2"`, 1))
	c := NewFromConfig(awsConfig(testCreds), Config{Region: "us-east-1", Endpoint: endpoint})
	c.max = 1
	for range 3 {
		s, err := c.GlueSchemaVersion(t.Context(), id)
		if err != nil || s.Definition != def || s.DataFormat != "AVRO" {
			t.Fatalf("got %+v, %v", s, err)
		}
	}
	if h.Lookups() != 1 {
		t.Fatalf("%d GetSchemaVersion calls for one version, want 1", h.Lookups())
	}
	if _, err := c.GlueSchemaVersion(t.Context(), id2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GlueSchemaVersion(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if h.Lookups() != 3 || len(c.cache) != 1 {
		t.Fatalf("%d calls, %d cached: want the cache bounded to 1 version", h.Lookups(), len(c.cache))
	}
}

// TestErrorMeanings checks the lookup's errors carry decode's meanings:
// not found is about the record, a refusal about the settings, and an
// unreachable registry neither (the decoder retries it).
func TestErrorMeanings(t *testing.T) {
	_, endpoint := gluesr.Start(t, gluesr.Config{Credentials: testCreds})
	id := register(t, endpoint, "a", def)
	unknown := decode.GlueID{1, 2, 3}
	wrong := testCreds
	wrong.SecretAccessKey = "not-the-secret"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		name     string
		creds    aws.Credentials
		endpoint string
		id       decode.GlueID
		want     error // nil: neither sentinel
		says     string
	}{
		{"unknown version", testCreds, endpoint, unknown, decode.ErrUnknownSchema, "EntityNotFoundException"},
		{"wrong secret", wrong, endpoint, id, decode.ErrRegistryUnavailable, "glue-registry-region"},
		{"unreachable", testCreds, closed, id, nil, "connect"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := NewFromConfig(awsConfig(c.creds), Config{Region: "us-east-1", Endpoint: c.endpoint})
			_, err := cl.GlueSchemaVersion(t.Context(), c.id)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err = %v, want one saying %q", err, c.says)
			}
			for _, s := range []error{decode.ErrUnknownSchema, decode.ErrRegistryUnavailable} {
				if errors.Is(err, s) != (s == c.want) {
					t.Errorf("errors.Is(%v, %v) = %v", err, s, !(s == c.want))
				}
			}
			if strings.Contains(err.Error(), c.creds.SecretAccessKey) {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{Region: "eu-west-1"}, true},
		{Config{Region: "eu-west-1", Endpoint: "https://vpce-1.glue.eu-west-1.vpce.amazonaws.com"}, true},
		{Config{Endpoint: "https://glue.eu-west-1.amazonaws.com"}, false},
		{Config{Region: "eu-west-1", Endpoint: "glue.eu-west-1.amazonaws.com"}, false},
	} {
		if err := c.cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.cfg, err)
		}
	}
}
