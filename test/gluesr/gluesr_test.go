package gluesr

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/aws/smithy-go"

	"github.com/binlake/binlake/test/awssig"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDGLUETEST", SecretAccessKey: "glue-test-secret", SessionToken: "glue-test-token"}

func client(endpoint string, creds aws.Credentials, region string) *glue.Client {
	return glue.New(glue.Options{
		Region:       region,
		Credentials:  credentials.StaticCredentialsProvider{Value: creds},
		BaseEndpoint: aws.String(endpoint),
		Retryer:      aws.NopRetryer{},
	})
}

const avroV1 = `{"type":"record","name":"r","fields":[{"name":"id","type":"long"}]}`
const avroV2 = `{"type":"record","name":"r","fields":[{"name":"id","type":"long"},{"name":"x","type":["null","string"],"default":null}]}`

// TestSchemaLifecycle registers versions through the SDK and reads them
// back by id, by definition and by number.
func TestSchemaLifecycle(t *testing.T) {
	h, url := Start(t, Config{Credentials: testCreds})
	cl := client(url, testCreds, "us-east-1")
	ctx := t.Context()
	reg := &types.RegistryId{RegistryName: aws.String("binlake")}
	cs, err := cl.CreateSchema(ctx, &glue.CreateSchemaInput{RegistryId: reg, SchemaName: aws.String("db.t-value"), DataFormat: types.DataFormatAvro, Compatibility: types.CompatibilityBackward, SchemaDefinition: aws.String(avroV1)})
	if err != nil {
		t.Fatal(err)
	}
	sid := &types.SchemaId{RegistryName: reg.RegistryName, SchemaName: aws.String("db.t-value")}
	again, err := cl.RegisterSchemaVersion(ctx, &glue.RegisterSchemaVersionInput{SchemaId: sid, SchemaDefinition: aws.String(avroV1)})
	if err != nil || aws.ToString(again.SchemaVersionId) != aws.ToString(cs.SchemaVersionId) || again.VersionNumber == nil || *again.VersionNumber != 1 {
		t.Fatalf("registering the first definition again: %+v, %v", again, err)
	}
	v2, err := cl.RegisterSchemaVersion(ctx, &glue.RegisterSchemaVersionInput{SchemaId: &types.SchemaId{SchemaArn: cs.SchemaArn}, SchemaDefinition: aws.String(avroV2)})
	if err != nil || aws.ToString(v2.SchemaVersionId) == aws.ToString(cs.SchemaVersionId) || *v2.VersionNumber != 2 {
		t.Fatalf("registering a second definition: %+v, %v", v2, err)
	}
	byDef, err := cl.GetSchemaByDefinition(ctx, &glue.GetSchemaByDefinitionInput{SchemaId: sid, SchemaDefinition: aws.String(avroV2)})
	if err != nil || aws.ToString(byDef.SchemaVersionId) != aws.ToString(v2.SchemaVersionId) {
		t.Fatalf("GetSchemaByDefinition: %+v, %v", byDef, err)
	}
	got, err := cl.GetSchemaVersion(ctx, &glue.GetSchemaVersionInput{SchemaVersionId: cs.SchemaVersionId})
	if err != nil || aws.ToString(got.SchemaDefinition) != avroV1 || got.DataFormat != types.DataFormatAvro {
		t.Fatalf("GetSchemaVersion by id: %+v, %v", got, err)
	}
	latest, err := cl.GetSchemaVersion(ctx, &glue.GetSchemaVersionInput{SchemaId: sid, SchemaVersionNumber: &types.SchemaVersionNumber{LatestVersion: true}})
	if err != nil || aws.ToString(latest.SchemaDefinition) != avroV2 {
		t.Fatalf("GetSchemaVersion latest: %+v, %v", latest, err)
	}
	if h.Lookups() != 2 || h.Denied() != 0 {
		t.Errorf("lookups %d denied %d", h.Lookups(), h.Denied())
	}
}

// TestGetRegistry checks a registry answers by name and by ARN, and a
// malformed name is InvalidInputException.
func TestGetRegistry(t *testing.T) {
	_, url := Start(t, Config{Credentials: testCreds})
	cl := client(url, testCreds, "us-east-1")
	got, err := cl.GetRegistry(t.Context(), &glue.GetRegistryInput{RegistryId: &types.RegistryId{RegistryName: aws.String("binlake")}})
	if err != nil || aws.ToString(got.RegistryName) != "binlake" || got.Status != types.RegistryStatusAvailable {
		t.Fatalf("by name: %+v, %v", got, err)
	}
	if again, err := cl.GetRegistry(t.Context(), &glue.GetRegistryInput{RegistryId: &types.RegistryId{RegistryArn: got.RegistryArn}}); err != nil || aws.ToString(again.RegistryName) != "binlake" {
		t.Fatalf("by ARN %s: %+v, %v", aws.ToString(got.RegistryArn), again, err)
	}
	_, err = cl.GetRegistry(t.Context(), &glue.GetRegistryInput{RegistryId: &types.RegistryId{RegistryName: aws.String("no spaces")}})
	var bad *types.InvalidInputException
	if !errors.As(err, &bad) {
		t.Fatalf("malformed name: %v, want InvalidInputException", err)
	}
}

// TestAPIErrors checks Glue's errors reach the SDK as its typed errors.
func TestAPIErrors(t *testing.T) {
	_, url := Start(t, Config{Credentials: testCreds})
	cl := client(url, testCreds, "us-east-1")
	ctx := t.Context()
	_, err := cl.GetSchemaVersion(ctx, &glue.GetSchemaVersionInput{SchemaVersionId: aws.String("6f1c2b8e-1d2a-4c3b-9e8f-0a1b2c3d4e5f")})
	var nf *types.EntityNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("unknown version id: %v, want EntityNotFoundException", err)
	}
	_, err = cl.GetSchemaVersion(ctx, &glue.GetSchemaVersionInput{SchemaVersionId: aws.String("not-a-uuid")})
	var ii *types.InvalidInputException
	if !errors.As(err, &ii) {
		t.Fatalf("a malformed version id: %v, want InvalidInputException", err)
	}
	in := &glue.CreateSchemaInput{SchemaName: aws.String("s"), DataFormat: types.DataFormatAvro, SchemaDefinition: aws.String(avroV1)}
	if _, err := cl.CreateSchema(ctx, in); err != nil {
		t.Fatal(err)
	}
	var ae *types.AlreadyExistsException
	if _, err := cl.CreateSchema(ctx, in); !errors.As(err, &ae) {
		t.Fatalf("a second CreateSchema: %v, want AlreadyExistsException", err)
	}
	_, err = cl.RegisterSchemaVersion(ctx, &glue.RegisterSchemaVersionInput{SchemaId: &types.SchemaId{SchemaName: aws.String("nope")}, SchemaDefinition: aws.String(avroV1)})
	if !errors.As(err, &nf) {
		t.Fatalf("a version of an unknown schema: %v, want EntityNotFoundException", err)
	}
}

// TestSchemaVersionMetadata puts metadata on a version as AWS's serde
// does (x-amz-meta-transport: the topic) by id and by number: a pair put
// again is AlreadyExistsException, a key may hold several values, an
// eleventh pair is ResourceNumberLimitExceededException, an unknown
// version EntityNotFoundException; an operation the stand-in does not
// implement is listed by Unknown.
func TestSchemaVersionMetadata(t *testing.T) {
	h, url := Start(t, Config{Credentials: testCreds})
	cl := client(url, testCreds, "us-east-1")
	ctx := t.Context()
	cs, err := cl.CreateSchema(ctx, &glue.CreateSchemaInput{RegistryId: &types.RegistryId{RegistryName: aws.String("r")}, SchemaName: aws.String("topic"), DataFormat: types.DataFormatAvro, SchemaDefinition: aws.String(avroV1)})
	if err != nil {
		t.Fatal(err)
	}
	kv := func(k, v string) *types.MetadataKeyValuePair {
		return &types.MetadataKeyValuePair{MetadataKey: aws.String(k), MetadataValue: aws.String(v)}
	}
	put, err := cl.PutSchemaVersionMetadata(ctx, &glue.PutSchemaVersionMetadataInput{SchemaVersionId: cs.SchemaVersionId, MetadataKeyValue: kv("x-amz-meta-transport", "topic")})
	if err != nil || aws.ToString(put.SchemaVersionId) != aws.ToString(cs.SchemaVersionId) || aws.ToInt64(put.VersionNumber) != 1 || !put.LatestVersion ||
		aws.ToString(put.SchemaName) != "topic" || aws.ToString(put.RegistryName) != "r" || aws.ToString(put.MetadataValue) != "topic" {
		t.Fatalf("PutSchemaVersionMetadata: %+v, %v", put, err)
	}
	var ae *types.AlreadyExistsException
	if _, err := cl.PutSchemaVersionMetadata(ctx, &glue.PutSchemaVersionMetadataInput{SchemaVersionId: cs.SchemaVersionId, MetadataKeyValue: kv("x-amz-meta-transport", "topic")}); !errors.As(err, &ae) {
		t.Fatalf("the same pair again: %v, want AlreadyExistsException", err)
	}
	byNumber := &glue.PutSchemaVersionMetadataInput{SchemaId: &types.SchemaId{RegistryName: aws.String("r"), SchemaName: aws.String("topic")},
		SchemaVersionNumber: &types.SchemaVersionNumber{VersionNumber: aws.Int64(1)}, MetadataKeyValue: kv("x-amz-meta-transport", "other")}
	if _, err := cl.PutSchemaVersionMetadata(ctx, byNumber); err != nil {
		t.Fatalf("a second value of the key, by version number: %v", err)
	}
	for i := range 8 {
		if _, err := cl.PutSchemaVersionMetadata(ctx, &glue.PutSchemaVersionMetadataInput{SchemaVersionId: cs.SchemaVersionId, MetadataKeyValue: kv("k", strings.Repeat("v", i+1))}); err != nil {
			t.Fatalf("pair %d: %v", i+3, err)
		}
	}
	var rl *types.ResourceNumberLimitExceededException
	if _, err := cl.PutSchemaVersionMetadata(ctx, &glue.PutSchemaVersionMetadataInput{SchemaVersionId: cs.SchemaVersionId, MetadataKeyValue: kv("k", "eleventh")}); !errors.As(err, &rl) {
		t.Fatalf("an eleventh pair: %v, want ResourceNumberLimitExceededException", err)
	}
	var nf *types.EntityNotFoundException
	if _, err := cl.PutSchemaVersionMetadata(ctx, &glue.PutSchemaVersionMetadataInput{SchemaVersionId: aws.String("6f1c2b8e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"), MetadataKeyValue: kv("k", "v")}); !errors.As(err, &nf) {
		t.Fatalf("an unknown version: %v, want EntityNotFoundException", err)
	}
	info, _ := h.Schema("r", "topic")
	if len(info.Metadata) != 1 || len(info.Metadata[0]) != 10 || info.Metadata[0][0] != "x-amz-meta-transport=topic" || info.Metadata[0][1] != "x-amz-meta-transport=other" {
		t.Errorf("metadata held: %q", info.Metadata)
	}
	if u := h.Unknown(); len(u) != 0 {
		t.Errorf("unknown operations %v before any was called", u)
	}
	if _, err := cl.DeleteSchema(ctx, &glue.DeleteSchemaInput{SchemaId: &types.SchemaId{RegistryName: aws.String("r"), SchemaName: aws.String("topic")}}); err == nil {
		t.Fatal("DeleteSchema answered")
	}
	if u := h.Unknown(); len(u) != 1 || u[0] != "DeleteSchema" {
		t.Errorf("unknown operations %v, want [DeleteSchema]", u)
	}
}

// TestSignatureRefused checks that only a request signed with the key
// pair, region and signing name glue is admitted.
func TestSignatureRefused(t *testing.T) {
	h, url := Start(t, Config{Credentials: testCreds})
	ctx := t.Context()
	get := &glue.GetSchemaVersionInput{SchemaVersionId: aws.String("6f1c2b8e-1d2a-4c3b-9e8f-0a1b2c3d4e5f")}
	wrong := testCreds
	wrong.SecretAccessKey = "not-the-secret"
	otherKey := testCreds
	otherKey.AccessKeyID = "AKIDOTHER"
	for _, c := range []struct {
		name   string
		creds  aws.Credentials
		region string
		want   string
	}{
		{"wrong secret", wrong, "us-east-1", "InvalidSignatureException"},
		{"unknown key", otherKey, "us-east-1", "UnrecognizedClientException"},
		{"wrong region", testCreds, "eu-west-1", "InvalidSignatureException"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := client(url, c.creds, c.region).GetSchemaVersion(ctx, get)
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != c.want {
				t.Fatalf("err = %v, want %s", err, c.want)
			}
		})
	}
	if h.Denied() != 3 {
		t.Fatalf("denied %d, want 3", h.Denied())
	}

	// Raw requests: the signing name, a missing signature, a body that is
	// not the operation's JSON, and an operation not implemented.
	body := []byte(`{"SchemaVersionId":"6f1c2b8e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"}`)
	for _, c := range []struct {
		name, service, target string
		body                  []byte
		sign                  bool
		status                int
		want                  string
	}{
		{"signed for glue", "glue", "AWSGlue.GetSchemaVersion", body, true, 400, "EntityNotFoundException"},
		{"signed for s3tables", "s3tables", "AWSGlue.GetSchemaVersion", body, true, 403, "InvalidSignatureException"},
		{"unsigned", "glue", "AWSGlue.GetSchemaVersion", body, false, 403, "MissingAuthenticationTokenException"},
		{"malformed body", "glue", "AWSGlue.GetSchemaVersion", []byte(`{"SchemaVersionId":`), true, 400, "SerializationException"},
		{"unknown operation", "glue", "AWSGlue.DeleteRegistry", body, true, 400, "UnknownOperationException"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/", bytes.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-amz-json-1.1")
			req.Header.Set("X-Amz-Target", c.target)
			if c.sign {
				req.Header.Set("X-Amz-Security-Token", testCreds.SessionToken)
				if err := v4.NewSigner().SignHTTP(ctx, testCreds, req, awssig.PayloadHash(c.body), c.service, "us-east-1", time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("x-amzn-ErrorType"), c.want) {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, resp.Header.Get("x-amzn-ErrorType"), c.status, c.want)
			}
		})
	}
}

// TestPendingVersions checks a registered version stays PENDING for
// PendingChecks answers, then turns AVAILABLE, or FAILURE when Refuse says.
func TestPendingVersions(t *testing.T) {
	_, url := Start(t, Config{Credentials: testCreds, PendingChecks: 2, Refuse: func(def string) bool { return strings.Contains(def, `"x"`) }})
	cl := client(url, testCreds, "us-east-1")
	ctx := t.Context()
	if _, err := cl.CreateSchema(ctx, &glue.CreateSchemaInput{SchemaName: aws.String("s"), DataFormat: types.DataFormatAvro, SchemaDefinition: aws.String(avroV1)}); err != nil {
		t.Fatal(err)
	}
	sid := &types.SchemaId{SchemaName: aws.String("s")}
	for _, c := range []struct {
		def  string
		want types.SchemaVersionStatus
	}{
		{strings.Replace(avroV1, `"id"`, `"id2"`, 1), types.SchemaVersionStatusAvailable},
		{avroV2, types.SchemaVersionStatusFailure},
	} {
		reg, err := cl.RegisterSchemaVersion(ctx, &glue.RegisterSchemaVersionInput{SchemaId: sid, SchemaDefinition: aws.String(c.def)})
		if err != nil || reg.Status != types.SchemaVersionStatusPending {
			t.Fatalf("RegisterSchemaVersion: %+v, %v; want PENDING", reg, err)
		}
		var got []types.SchemaVersionStatus
		for range 3 {
			v, err := cl.GetSchemaVersion(ctx, &glue.GetSchemaVersionInput{SchemaVersionId: reg.SchemaVersionId})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v.Status)
		}
		if got[0] != types.SchemaVersionStatusPending || got[1] != types.SchemaVersionStatusPending || got[2] != c.want {
			t.Errorf("statuses of %s: %v, want PENDING, PENDING, %s", c.def, got, c.want)
		}
	}
}
