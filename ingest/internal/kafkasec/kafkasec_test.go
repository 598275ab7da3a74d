package kafkasec

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestKafkaSecurityExplainNamesIngestVariables checks the hint for refused
// credentials names ingest's variables, not capture's.
func TestKafkaSecurityExplainNamesIngestVariables(t *testing.T) {
	k := KafkaSecurity{SASLMechanism: SASLScramSHA512, SASLUsername: "app", SASLPassword: "hunter2"}
	got, refused := k.Explain(kerr.SaslAuthenticationFailed)
	if !refused || !strings.Contains(got.Error(), "INGEST_KAFKA_SASL_PASSWORD_FILE") || strings.Contains(got.Error(), "CAPTURE_") {
		t.Errorf("explained as %v (refused %v), want INGEST_KAFKA_SASL_PASSWORD_FILE named", got, refused)
	}
}
