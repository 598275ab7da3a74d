package s3tables

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDSTANDIN", SecretAccessKey: "stand-in-secret", SessionToken: "stand-in-token"}

const testARN = "arn:aws:s3tables:us-east-1:111122223333:bucket/test"

// backend is a fake catalog that records the paths it is asked for.
type backend struct {
	mu    sync.Mutex
	paths []string
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.paths = append(b.paths, r.Method+" "+r.URL.EscapedPath()+"?"+r.URL.RawQuery)
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/v1/config" {
		_, _ = io.WriteString(w, `{"defaults":{},"overrides":{},"endpoints":["GET /v1/{prefix}/namespaces"]}`)
		return
	}
	_, _ = io.WriteString(w, `{}`)
}

func (b *backend) last() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.paths) == 0 {
		return ""
	}
	return b.paths[len(b.paths)-1]
}

func startStandIn(t *testing.T, flavor Flavor) (*Handler, string, *backend) {
	t.Helper()
	be := &backend{}
	bs := httptest.NewServer(be)
	t.Cleanup(bs.Close)
	h, uri := Start(t, Config{Backend: bs.URL, Flavor: flavor, Region: "us-east-1", Credentials: testCreds})
	return h, uri, be
}

// signed is a request as aws-sdk-go-v2 signs it for iceberg-go: payload
// hash in X-Amz-Content-Sha256, then SignHTTP.
type signed struct {
	method, url string
	body        string
	creds       aws.Credentials
	region      string
	service     string
	at          time.Time
	sendBody    *string // a body other than the one signed
}

func (s signed) do(t *testing.T) (*http.Response, map[string]string) {
	t.Helper()
	if s.creds == (aws.Credentials{}) {
		s.creds = testCreds
	}
	if s.region == "" {
		s.region = "us-east-1"
	}
	if s.service == "" {
		s.service = "s3tables"
	}
	if s.at.IsZero() {
		s.at = time.Now()
	}
	var rd io.Reader
	if s.body != "" {
		rd = strings.NewReader(s.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), s.method, s.url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if s.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	hash := payloadHash([]byte(s.body))
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := v4.NewSigner().SignHTTP(context.Background(), s.creds, req, hash, s.service, s.region, s.at); err != nil {
		t.Fatal(err)
	}
	if s.sendBody != nil {
		req.Body = io.NopCloser(strings.NewReader(*s.sendBody))
		req.ContentLength = int64(len(*s.sendBody))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]string{}
	b, _ := io.ReadAll(resp.Body)
	var nested struct {
		Error map[string]any `json:"error"`
	}
	if json.Unmarshal(b, &nested) == nil && nested.Error != nil {
		for k, v := range nested.Error {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
	} else {
		_ = json.Unmarshal(b, &out)
	}
	out["raw"] = string(b)
	return resp, out
}

func TestVerify(t *testing.T) {
	_, uri, _ := startStandIn(t, S3Tables)
	nsURL := uri + "/v1/" + url.QueryEscape(testARN) + "/namespaces"
	create := `{"namespace":["sales"],"properties":{}}`
	tampered := `{"namespace":["other"],"properties":{}}`
	wrongSecret, noToken, otherKey := testCreds, testCreds, testCreds
	wrongSecret.SecretAccessKey = "not-the-secret"
	noToken.SessionToken = ""
	otherKey.AccessKeyID = "AKIDOTHER"
	for _, tc := range []struct {
		name     string
		req      signed
		status   int
		errType  string
		inMesage string
	}{
		{"good GET", signed{method: "GET", url: nsURL}, 200, "", ""},
		{"good POST", signed{method: "POST", url: nsURL, body: create}, 200, "", ""},
		{"wrong secret", signed{method: "GET", url: nsURL, creds: wrongSecret}, 403, "InvalidSignatureException", "does not match"},
		{"wrong region", signed{method: "GET", url: nsURL, region: "eu-west-1"}, 403, "InvalidSignatureException", "valid region"},
		{"wrong service", signed{method: "GET", url: nsURL, service: "execute-api"}, 403, "InvalidSignatureException", "correct service: 's3tables'"},
		{"signed 10 minutes ago", signed{method: "GET", url: nsURL, at: time.Now().Add(-10 * time.Minute)}, 403, "InvalidSignatureException", "Signature expired"},
		{"signed 10 minutes ahead", signed{method: "GET", url: nsURL, at: time.Now().Add(10 * time.Minute)}, 403, "InvalidSignatureException", "not yet current"},
		{"tampered body", signed{method: "POST", url: nsURL, body: create, sendBody: &tampered}, 403, "InvalidSignatureException", "x-amz-content-sha256"},
		{"unknown access key", signed{method: "GET", url: nsURL, creds: otherKey}, 403, "UnrecognizedClientException", "security token"},
		{"missing session token", signed{method: "GET", url: nsURL, creds: noToken}, 403, "UnrecognizedClientException", "security token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := tc.req.do(t)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body["raw"])
			}
			if tc.errType == "" {
				return
			}
			if got := resp.Header.Get("x-amzn-ErrorType"); !strings.HasPrefix(got, tc.errType+":") {
				t.Errorf("x-amzn-ErrorType %q, want %s", got, tc.errType)
			}
			if !strings.Contains(body["message"], tc.inMesage) {
				t.Errorf("message %q does not say %q", body["message"], tc.inMesage)
			}
		})
	}
}

// TestVerifyTamperedHeader: a signed header changed after signing (the
// body hash header left alone) fails the recomputed signature.
func TestVerifyTamperedHeader(t *testing.T) {
	h, err := New(Config{Backend: "http://127.0.0.1:1", Credentials: testCreds})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "http://s3tables.example/iceberg/v1/config?warehouse="+url.QueryEscape(testARN), nil)
	req.Header.Set("X-Amz-Content-Sha256", payloadHash(nil))
	if err := v4.NewSigner().SignHTTP(t.Context(), testCreds, req, payloadHash(nil), "s3tables", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if e := h.Verify(req, nil); e != nil {
		t.Fatalf("a good signature is refused: %v", e)
	}
	req.URL.RawQuery = "warehouse=other"
	if e := h.Verify(req, nil); e == nil || e.Type != "InvalidSignatureException" {
		t.Fatalf("a changed query is accepted or refused wrongly: %v", e)
	}
}

func TestClockOffset(t *testing.T) {
	h, uri, _ := startStandIn(t, S3Tables)
	nsURL := uri + "/v1/" + url.QueryEscape(testARN) + "/namespaces"
	h.SetClockOffset(20 * time.Minute)
	resp, body := signed{method: "GET", url: nsURL}.do(t)
	if resp.StatusCode != 403 || !strings.Contains(body["message"], "Signature expired") {
		t.Fatalf("a client 20 minutes behind: status %d %s", resp.StatusCode, body["raw"])
	}
	if h.Denied() != 1 {
		t.Errorf("Denied() = %d, want 1", h.Denied())
	}
	h.SetClockOffset(0)
	if resp, body := (signed{method: "GET", url: nsURL}).do(t); resp.StatusCode != 200 {
		t.Fatalf("with the clock back: status %d %s", resp.StatusCode, body["raw"])
	}
}

func TestConfig(t *testing.T) {
	_, uri, _ := startStandIn(t, S3Tables)
	for _, tc := range []struct {
		warehouse string
		status    int
	}{
		{testARN, 200},
		{"", 400},
		{"s3://warehouse/", 400},
		{"111122223333", 400},
		{"arn:aws:s3tables:eu-west-1:111122223333:bucket/test", 400}, // another region
		{"arn:aws:s3tables:us-east-1:111122223333:bucket/Bad_Name", 400},
	} {
		t.Run(tc.warehouse, func(t *testing.T) {
			resp, body := signed{method: "GET", url: uri + "/v1/config?warehouse=" + url.QueryEscape(tc.warehouse)}.do(t)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body["raw"])
			}
			if tc.status != 200 {
				if body["type"] != "BadRequestException" {
					t.Errorf("error type %q: %s", body["type"], body["raw"])
				}
				return
			}
			var cfg struct {
				Overrides map[string]string `json:"overrides"`
				Endpoints []string          `json:"endpoints"`
			}
			if err := json.Unmarshal([]byte(body["raw"]), &cfg); err != nil {
				t.Fatal(err)
			}
			if got, want := cfg.Overrides["prefix"], url.QueryEscape(testARN); got != want {
				t.Errorf("prefix %q, want %q", got, want)
			}
			if cfg.Endpoints != nil {
				t.Errorf("endpoints %v: S3 Tables lists none", cfg.Endpoints)
			}
		})
	}
}

func TestRules(t *testing.T) {
	_, uri, be := startStandIn(t, S3Tables)
	base := uri + "/v1/" + url.QueryEscape(testARN)
	long := strings.Repeat("a", 256)
	for _, tc := range []struct {
		name        string
		method, url string
		body        string
		status      int
		forwardedTo string
	}{
		{"list namespaces", "GET", base + "/namespaces", "", 200, "GET /v1/namespaces?"},
		{"create namespace", "POST", base + "/namespaces", `{"namespace":["sales_2"]}`, 200, "POST /v1/namespaces?"},
		{"create nested namespace", "POST", base + "/namespaces", `{"namespace":["a","b"]}`, 400, ""},
		{"list under a parent", "GET", base + "/namespaces?parent=a", "", 400, ""},
		{"nested namespace in path", "GET", base + "/namespaces/a%1Fb", "", 400, ""},
		{"namespace aws", "POST", base + "/namespaces", `{"namespace":["aws_data"]}`, 400, ""},
		{"namespace uppercase", "POST", base + "/namespaces", `{"namespace":["Sales"]}`, 400, ""},
		{"namespace hyphen", "POST", base + "/namespaces", `{"namespace":["a-b"]}`, 400, ""},
		{"namespace leading underscore", "POST", base + "/namespaces", `{"namespace":["_a"]}`, 400, ""},
		{"namespace 255", "POST", base + "/namespaces", `{"namespace":["` + long[:255] + `"]}`, 200, "POST /v1/namespaces?"},
		{"namespace 256", "POST", base + "/namespaces", `{"namespace":["` + long + `"]}`, 400, ""},
		{"create table", "POST", base + "/namespaces/sales/tables", `{"name":"orders"}`, 200, "POST /v1/namespaces/sales/tables?"},
		{"create table bad name", "POST", base + "/namespaces/sales/tables", `{"name":"Orders.v2"}`, 400, ""},
		{"load table", "GET", base + "/namespaces/sales/tables/orders", "", 200, "GET /v1/namespaces/sales/tables/orders?"},
		{"drop without purge", "DELETE", base + "/namespaces/sales/tables/orders", "", 400, ""},
		{"drop with purge", "DELETE", base + "/namespaces/sales/tables/orders?purgeRequested=true", "", 200, "DELETE /v1/namespaces/sales/tables/orders?purgeRequested=true"},
		{"list views", "GET", base + "/namespaces/sales/views", "", 400, ""},
		{"rename view", "POST", base + "/views/rename", `{}`, 400, ""},
		{"no prefix", "GET", uri + "/v1/namespaces", "", 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := be.last()
			resp, body := signed{method: tc.method, url: tc.url, body: tc.body}.do(t)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body["raw"])
			}
			if tc.status == 400 {
				if body["type"] != "BadRequestException" || body["message"] == "" {
					t.Errorf("not an Iceberg REST error: %s", body["raw"])
				}
				if be.last() != before {
					t.Errorf("a refused request reached the backend: %s", be.last())
				}
				return
			}
			if got := be.last(); got != tc.forwardedTo {
				t.Errorf("forwarded as %q, want %q", got, tc.forwardedTo)
			}
		})
	}
}

func TestGlue(t *testing.T) {
	_, uri, be := startStandIn(t, Glue)
	const wh = "111122223333:s3tablescatalog/test"
	resp, body := signed{method: "GET", url: uri + "/v1/config?warehouse=" + url.QueryEscape(testARN), service: "glue"}.do(t)
	if resp.StatusCode != 400 {
		t.Fatalf("Glue took a bucket ARN as warehouse: %d %s", resp.StatusCode, body["raw"])
	}
	resp, body = signed{method: "GET", url: uri + "/v1/config?warehouse=" + url.QueryEscape(wh), service: "glue"}.do(t)
	if resp.StatusCode != 200 || !strings.Contains(body["raw"], `"prefix":"catalogs/`+url.QueryEscape(wh)+`"`) {
		t.Fatalf("config: %d %s", resp.StatusCode, body["raw"])
	}
	nsURL := uri + "/v1/catalogs/" + url.QueryEscape(wh) + "/namespaces"
	if resp, body := (signed{method: "GET", url: nsURL}).do(t); resp.StatusCode != 403 ||
		!strings.Contains(body["message"], "correct service: 'glue'") {
		t.Fatalf("signed for s3tables: %d %s", resp.StatusCode, body["raw"])
	}
	if resp, body := (signed{method: "GET", url: nsURL, service: "glue"}).do(t); resp.StatusCode != 200 || be.last() != "GET /v1/namespaces?" {
		t.Fatalf("signed for glue: %d %s, forwarded %q", resp.StatusCode, body["raw"], be.last())
	}
}

// TestCheckName is the naming rule alone.
func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name      string
		namespace bool
		ok        bool
	}{
		{"a", true, true},
		{"db_1", true, true},
		{"1db", false, true},
		{"", true, false},
		{"db_", false, false},
		{"a.b", true, false},
		{"aws", true, false},
		{"awsome", true, false},
		{"aws_table", false, true}, // the aws rule is for namespaces
		{"caf\u00e9", false, false},
	} {
		if got := CheckName(tc.name, tc.namespace) == ""; got != tc.ok {
			t.Errorf("CheckName(%q, %v) ok = %v, want %v", tc.name, tc.namespace, got, tc.ok)
		}
	}
}
