// Package awssig verifies AWS SigV4 request signatures the way AWS's
// services do, for the test stand-ins of AWS endpoints (test/s3tables,
// test/gluesr) that must refuse what AWS would refuse.
//
// A Verifier checks the Authorization header's access key and credential
// scope (date, region, signing name), X-Amz-Date within MaxSkew of its
// clock, X-Amz-Security-Token when the credentials carry one,
// X-Amz-Content-Sha256 against the body, and the signature itself,
// recomputed with aws-sdk-go-v2's signer over the signed headers only. A
// refusal is a *DeniedError with the error type and message AWS answers
// with; WriteError sends it shaped like AWS's JSON protocols do.
package awssig

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// MaxSkew is how far X-Amz-Date may be from the clock (AWS: 5 minutes).
const MaxSkew = 5 * time.Minute

// DeniedError is one refusal of a request's authentication: the AWS error
// type (x-amzn-ErrorType) and message AWS answers with, and the status.
type DeniedError struct {
	Status  int
	Type    string // e.g. InvalidSignatureException
	Message string
}

func (e *DeniedError) Error() string { return e.Type + ": " + e.Message }

const (
	amzDate         = "X-Amz-Date"
	amzToken        = "X-Amz-Security-Token"
	amzContentSHA   = "X-Amz-Content-Sha256"
	amzDateFormat   = "20060102T150405Z"
	authAlgorithm   = "AWS4-HMAC-SHA256"
	msgMismatch     = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	msgInvalidToken = "The security token included in the request is invalid."
)

func denied(typ, format string, args ...any) *DeniedError {
	return &DeniedError{Status: http.StatusForbidden, Type: typ, Message: fmt.Sprintf(format, args...)}
}

// Verifier checks requests against one key pair, region and signing name.
// It is safe for concurrent use.
type Verifier struct {
	// Credentials are the only ones accepted: the access key, the secret
	// the signature is checked with and, when set, the session token
	// every request must carry.
	Credentials aws.Credentials
	// Region is the only signing region accepted.
	Region string
	// Service is the only signing name accepted (s3tables, glue...).
	Service string
	// Now is the verifier's clock. Default time.Now.
	Now func() time.Time

	signer *v4.Signer
}

// authorization is a parsed SigV4 Authorization header.
type authorization struct {
	accessKey, date, region, service string
	signedHeaders                    string
	signature                        string
}

func parseAuthorization(v string) (authorization, bool) {
	var a authorization
	alg, rest, ok := strings.Cut(v, " ")
	if !ok || alg != authAlgorithm {
		return a, false
	}
	for _, part := range strings.Split(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return a, false
		}
		switch k {
		case "Credential":
			f := strings.Split(val, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return a, false
			}
			a.accessKey, a.date, a.region, a.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			a.signedHeaders = val
		case "Signature":
			a.signature = val
		}
	}
	return a, a.accessKey != "" && a.signedHeaders != "" && a.signature != ""
}

// Verify checks r's SigV4 signature over body; nil when AWS would accept
// it.
func (v *Verifier) Verify(r *http.Request, body []byte) *DeniedError {
	creds := v.Credentials
	hdr := r.Header.Get("Authorization")
	if hdr == "" {
		return denied("MissingAuthenticationTokenException", "Missing Authentication Token")
	}
	a, ok := parseAuthorization(hdr)
	if !ok {
		return denied("IncompleteSignatureException", "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters with algorithm %s. Authorization=%s", authAlgorithm, authAlgorithm)
	}
	signedAt, err := time.Parse(amzDateFormat, r.Header.Get(amzDate))
	if err != nil {
		return denied("IncompleteSignatureException", "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
	}
	if a.accessKey != creds.AccessKeyID {
		return denied("UnrecognizedClientException", msgInvalidToken)
	}
	if r.Header.Get(amzToken) != creds.SessionToken {
		return denied("UnrecognizedClientException", msgInvalidToken)
	}
	if a.date != signedAt.Format("20060102") {
		return denied("InvalidSignatureException", "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '%s' != '%s', from '%s'.", a.date, signedAt.Format("20060102"), r.Header.Get(amzDate))
	}
	if a.region != v.Region {
		return denied("InvalidSignatureException", "Credential should be scoped to a valid region.")
	}
	if a.service != v.Service {
		return denied("InvalidSignatureException", "Credential should be scoped to correct service: '%s'.", v.Service)
	}
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	now = now.UTC()
	if signedAt.Before(now.Add(-MaxSkew)) {
		return denied("InvalidSignatureException", "Signature expired: %s is now earlier than %s (%s - 5 min.)",
			signedAt.Format(amzDateFormat), now.Add(-MaxSkew).Format(amzDateFormat), now.Format(amzDateFormat))
	}
	if signedAt.After(now.Add(MaxSkew)) {
		return denied("InvalidSignatureException", "Signature not yet current: %s is still later than %s (%s + 5 min.)",
			signedAt.Format(amzDateFormat), now.Add(MaxSkew).Format(amzDateFormat), now.Format(amzDateFormat))
	}
	signed := strings.Split(a.signedHeaders, ";")
	if !slices.Contains(signed, "host") || !slices.Contains(signed, "x-amz-date") {
		return denied("IncompleteSignatureException", "Signed headers must include host and x-amz-date.")
	}
	sum := PayloadHash(body)
	if got := r.Header.Get(amzContentSHA); got != "" && got != sum {
		return denied("InvalidSignatureException", "The provided 'x-amz-content-sha256' header does not match what was computed.")
	}

	// Recompute over a copy carrying only the signed headers.
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	cp := &http.Request{Method: r.Method, URL: &u, Host: r.Host, Header: http.Header{}}
	for _, name := range signed {
		switch name {
		case "host":
		case "content-length":
			cp.ContentLength = r.ContentLength
		default:
			if v, ok := r.Header[http.CanonicalHeaderKey(name)]; ok {
				cp.Header[http.CanonicalHeaderKey(name)] = v
			}
		}
	}
	signer := v.signer
	if signer == nil {
		signer = v4.NewSigner()
	}
	if err := signer.SignHTTP(r.Context(), creds, cp, sum, v.Service, v.Region, signedAt); err != nil {
		return denied("IncompleteSignatureException", "recomputing the signature: %v", err)
	}
	want, _ := parseAuthorization(cp.Header.Get("Authorization"))
	if want.signedHeaders != a.signedHeaders ||
		subtle.ConstantTimeCompare([]byte(want.signature), []byte(a.signature)) != 1 {
		return denied("InvalidSignatureException", msgMismatch)
	}
	return nil
}

// WriteError answers an error the way AWS's JSON protocols do: the type in
// the x-amzn-ErrorType header and the message in a JSON body.
func WriteError(w http.ResponseWriter, e *DeniedError) {
	w.Header().Set("x-amzn-ErrorType", e.Type+":http://internal.amazon.com/coral/com.amazon.coral.service/")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": e.Message})
}

// PayloadHash is the hex SHA-256 of body.
func PayloadHash(body []byte) string {
	s := sha256.Sum256(body)
	return hex.EncodeToString(s[:])
}
