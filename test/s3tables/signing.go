package s3tables

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// TestCredentials are the credentials the tests give the stand-in and
// sign with; never real.
var TestCredentials = aws.Credentials{AccessKeyID: "AKIDINGESTTEST", SecretAccessKey: "ingest-test-secret", SessionToken: "ingest-test-token"}

// TestBucketARN is the table bucket the tests name as the warehouse.
const TestBucketARN = "arn:aws:s3tables:us-east-1:111122223333:bucket/test"

// SetAWSEnv makes creds the only AWS credentials the default chain finds:
// the environment, with no shared files or profile to fall back on.
func SetAWSEnv(t testing.TB, creds aws.Credentials) {
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

// Refusal is a signing failure a test provokes: the credentials the
// client signs with, the stand-in's clock offset, and what AWS's 403
// says.
type Refusal struct {
	Name   string
	Creds  aws.Credentials
	Offset time.Duration
	Says   string
}

// Refusals are a wrong secret and a clock 10 minutes off.
func Refusals() []Refusal {
	wrong := TestCredentials
	wrong.SecretAccessKey = "not-the-secret"
	return []Refusal{
		{"wrong secret", wrong, 0, "signature we calculated does not match"},
		{"clock skew", TestCredentials, 10 * time.Minute, "Signature expired"},
	}
}

// CheckRefused fails t unless err is refused (the client's sentinel)
// saying what AWS said, where the credentials came from, the clock and
// each of more, with no secret shown.
func CheckRefused(t testing.TB, err, refused error, r Refusal, more ...string) {
	t.Helper()
	if !errors.Is(err, refused) {
		t.Fatalf("error %v, want %v", err, refused)
	}
	t.Log(err)
	for _, want := range append([]string{r.Says, "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY", "clock"}, more...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), r.Creds.SecretAccessKey) || strings.Contains(err.Error(), r.Creds.SessionToken) {
		t.Errorf("the error shows a secret: %v", err)
	}
}
