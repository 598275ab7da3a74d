// Package s3tables is a stand-in for the Amazon S3 Tables Iceberg REST
// endpoint (and for AWS Glue's) in front of the local stack's REST catalog,
// for tests that must see what AWS would answer rather than what the
// permissive fixture accepts.
//
// A Handler guarantees, for every request, before anything reaches the
// backing catalog:
//
//   - The SigV4 signature is verified as AWS does: the Authorization
//     header's access key, credential scope (date, region, signing name),
//     X-Amz-Date within 5 minutes of the stand-in's clock, X-Amz-Security-Token
//     when the credentials carry one, X-Amz-Content-Sha256 against the body,
//     and the signature itself, recomputed with aws-sdk-go-v2's signer over
//     the signed headers only. A failure is a 403 shaped like AWS's JSON
//     error (x-amzn-ErrorType header, {"message": ...} body).
//   - GET /v1/config accepts only the warehouse AWS accepts (a table bucket
//     ARN; for Glue an account id, optionally :s3tablescatalog/<bucket>) and
//     answers a prefix override; every later call must carry that prefix
//     and is forwarded without it to the backing catalog.
//   - S3 Tables' documented limits are enforced with 400 errors in the
//     Iceberg REST error model: one namespace level; namespace and table
//     names of 1 to 255 characters of [a-z0-9_] that begin and end with a
//     letter or digit; no namespace starting with "aws"; no view endpoints;
//     no table drop without purgeRequested=true.
//
// With Config.Maintain set, a Handler also runs managed maintenance as S3
// Tables does, on its own schedule (Config.MaintainEvery) and without
// cooperating with the writers: every table a client created, loaded or
// committed to through it is handed to Config.Maintain in turn, which
// commits compaction and expiry snapshots to the backing catalog directly
// (unsigned, as AWS's service-side maintenance does not go through the
// public endpoint), concurrently with the clients' commits. The Handler
// counts what each call committed and the clients' commits before and after
// (Handler.Maintenance), so that a test can require that maintenance landed
// between a writer's commits. What to run is the test's: S3 Tables' own
// compactor is not public, so tests supply ingest's (ingest maintain).
//
// What it does not model: IAM policies, table bucket existence (every valid
// ARN maps to the one backing catalog), vended credentials, unreferenced-file
// removal, and the per-table maintenance configuration API
// (PutTableMaintenanceConfiguration).
package s3tables

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/binlake/binlake/test/awssig"
)

// Flavor is the AWS service a Handler stands in for.
type Flavor int

const (
	// S3Tables is https://s3tables.<region>.amazonaws.com/iceberg: signing
	// name s3tables, warehouse = table bucket ARN, prefix = the URL-encoded
	// ARN.
	S3Tables Flavor = iota
	// Glue is https://glue.<region>.amazonaws.com/iceberg: signing name
	// glue, warehouse = account id (or <account>:s3tablescatalog/<bucket>),
	// prefix = catalogs/<URL-encoded warehouse>, as in Glue's documented
	// paths /iceberg/v1/catalogs/{catalog}/...
	Glue
)

// SigningName is the SigV4 service name of the flavor.
func (f Flavor) SigningName() string {
	if f == Glue {
		return "glue"
	}
	return "s3tables"
}

// Config configures a Handler.
type Config struct {
	// Backend is the URI of the backing Iceberg REST catalog (the stack's,
	// testenv.IcebergEnv(t).URI). Required.
	Backend string
	// Flavor is the service stood in for. Default S3Tables.
	Flavor Flavor
	// Region is the only signing region accepted. Default us-east-1.
	Region string
	// Credentials are the only credentials accepted: the access key, the
	// secret the signature is checked with and, when set, the session
	// token every request must carry. Required.
	Credentials aws.Credentials
	// Client reaches the backend. Default http.DefaultClient.
	Client *http.Client

	// Maintain, when set, is the managed maintenance: called with each
	// table (namespace, name) the clients created, loaded or committed
	// to, one table after the other, every MaintainEvery, until the
	// Handler is closed (ctx is then done). It commits to the backing
	// catalog directly and reports what landed. S3 Tables' defaults are
	// compaction to 512 MB files applying row-level deletes and expiry
	// of snapshots older than 120 h beyond the newest one; tests use
	// small thresholds. Default nil: no maintenance.
	Maintain func(ctx context.Context, ident []string) (MaintenanceRun, error)
	// MaintainEvery is the pause between two rounds of Maintain over the
	// tables. Default 10s.
	MaintainEvery time.Duration
}

// BasePath is where a Handler serves the catalog, as AWS does:
// https://s3tables.<region>.amazonaws.com/iceberg.
const BasePath = "/iceberg"

// Handler is the stand-in: an http.Handler that verifies, checks and
// forwards to the backing catalog. It is safe for concurrent use.
type Handler struct {
	cfg     Config
	backend *url.URL
	offset  atomic.Int64 // nanoseconds added to time.Now
	denied  atomic.Int64
	served  atomic.Int64
	tables  tables

	closeOnce sync.Once
	stop      context.CancelFunc // of the maintenance; nil without
	stopped   chan struct{}      // closed when the maintenance returned
}

var _ http.Handler = (*Handler)(nil)

// New returns a Handler for cfg. With Config.Maintain set, its
// maintenance runs until Close.
func New(cfg Config) (*Handler, error) {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.Credentials.AccessKeyID == "" || cfg.Credentials.SecretAccessKey == "" {
		return nil, errors.New("s3tables: Config.Credentials needs an access key and a secret")
	}
	u, err := url.Parse(cfg.Backend)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("s3tables: backend %q is not a URL", cfg.Backend)
	}
	if cfg.MaintainEvery <= 0 {
		cfg.MaintainEvery = 10 * time.Second
	}
	h := &Handler{cfg: cfg, backend: u}
	if cfg.Maintain != nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.stop, h.stopped = cancel, make(chan struct{})
		go func() {
			defer close(h.stopped)
			h.maintainLoop(ctx)
		}()
	}
	return h, nil
}

// Start serves a new Handler on a local port until the test ends and
// returns it with the catalog URI to give clients (ending in /iceberg).
func Start(t testing.TB, cfg Config) (*Handler, string) {
	t.Helper()
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close) // first: no maintenance runs past the test
	return h, srv.URL + BasePath
}

// SetClockOffset moves the stand-in's clock by d (positive: ahead), as if
// the client's clock were skewed by -d.
func (h *Handler) SetClockOffset(d time.Duration) { h.offset.Store(int64(d)) }

// Denied is how many requests were refused with a 403 so far.
func (h *Handler) Denied() int64 { return h.denied.Load() }

// Forwarded is how many requests reached the backing catalog so far
// (the config call included).
func (h *Handler) Forwarded() int64 { return h.served.Load() }

func (h *Handler) now() time.Time { return time.Now().Add(time.Duration(h.offset.Load())) }

// ServeHTTP verifies the request's signature, then applies the catalog
// rules and forwards it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		icebergError(w, http.StatusBadRequest, "BadRequestException", "reading the request body: "+err.Error())
		return
	}
	_ = r.Body.Close()
	if e := h.verify(r, body); e != nil {
		h.denied.Add(1)
		awsError(w, e)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))

	p, ok := strings.CutPrefix(r.URL.EscapedPath(), BasePath+"/")
	if !ok {
		icebergError(w, http.StatusNotFound, "NotFoundException", "no such path: "+r.URL.Path)
		return
	}
	segs, err := segments(p)
	if err != nil || len(segs) < 2 || segs[0] != "v1" {
		icebergError(w, http.StatusNotFound, "NotFoundException", "no such path: "+r.URL.Path)
		return
	}
	if len(segs) == 2 && segs[1] == "config" {
		h.config(w, r)
		return
	}
	rest, ok := h.stripPrefix(segs[1:])
	if !ok {
		icebergError(w, http.StatusBadRequest, "BadRequestException",
			"the path must begin with the prefix /v1/config returned (the URL-encoded warehouse)")
		return
	}
	if msg := refuse(r, rest, body); msg != "" {
		icebergError(w, http.StatusBadRequest, "BadRequestException", msg)
		return
	}
	status := h.forward(w, r, rest)
	h.tables.note(r, rest, body, status)
}

// createdName is the table name of a create-table request body.
func createdName(body []byte) string {
	var req struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(body, &req)
	return req.Name
}

// segments splits an escaped path into unescaped segments.
func segments(escaped string) ([]string, error) {
	parts := strings.Split(strings.TrimSuffix(escaped, "/"), "/")
	for i, s := range parts {
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, err
		}
		parts[i] = u
	}
	return parts, nil
}

var (
	bucketARN = regexp.MustCompile(`^arn:aws[a-z-]*:s3tables:([a-z0-9-]+):([0-9]{12}):bucket/([a-z0-9][a-z0-9-]{1,61}[a-z0-9])$`)
	glueWH    = regexp.MustCompile(`^[0-9]{12}(:s3tablescatalog/[a-z0-9][a-z0-9-]{1,61}[a-z0-9])?$`)
)

// warehouseOK reports whether wh is a warehouse the flavor accepts, and
// why not.
func (h *Handler) warehouseOK(wh string) string {
	if h.cfg.Flavor == Glue {
		if !glueWH.MatchString(wh) {
			return fmt.Sprintf("warehouse %q: Glue's Iceberg REST endpoint takes an account id, or <account id>:s3tablescatalog/<table bucket>", wh)
		}
		return ""
	}
	m := bucketARN.FindStringSubmatch(wh)
	if m == nil {
		return fmt.Sprintf("warehouse %q: S3 Tables takes the table bucket ARN, arn:aws:s3tables:<region>:<account>:bucket/<name>", wh)
	}
	if m[1] != h.cfg.Region {
		return fmt.Sprintf("warehouse %q: the table bucket is not in %s, the endpoint's region", wh, h.cfg.Region)
	}
	return ""
}

// Prefix is the prefix override /v1/config answers for warehouse wh.
func (h *Handler) Prefix(wh string) string {
	if h.cfg.Flavor == Glue {
		return "catalogs/" + url.QueryEscape(wh)
	}
	return url.QueryEscape(wh)
}

// stripPrefix removes the prefix segments from segs (after v1).
func (h *Handler) stripPrefix(segs []string) ([]string, bool) {
	if h.cfg.Flavor == Glue {
		if len(segs) < 2 || segs[0] != "catalogs" || h.warehouseOK(segs[1]) != "" {
			return nil, false
		}
		return segs[2:], true
	}
	if len(segs) < 1 || h.warehouseOK(segs[0]) != "" {
		return nil, false
	}
	return segs[1:], true
}

// config answers GET /v1/config from the backend's, with the prefix
// override for the warehouse and no endpoints list.
func (h *Handler) config(w http.ResponseWriter, r *http.Request) {
	wh := r.URL.Query().Get("warehouse")
	if wh == "" {
		icebergError(w, http.StatusBadRequest, "BadRequestException", "the warehouse parameter is required: the table bucket ARN")
		return
	}
	if msg := h.warehouseOK(wh); msg != "" {
		icebergError(w, http.StatusBadRequest, "BadRequestException", msg)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, h.backend.JoinPath("v1", "config").String(), nil)
	if err != nil {
		icebergError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	h.served.Add(1)
	resp, err := h.cfg.Client.Do(req)
	if err != nil {
		icebergError(w, http.StatusBadGateway, "ServiceUnavailableException", "reaching the backing catalog: "+err.Error())
		return
	}
	defer resp.Body.Close()
	var cfg struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil || resp.StatusCode != http.StatusOK {
		icebergError(w, http.StatusBadGateway, "ServiceUnavailableException", fmt.Sprintf("backing catalog config: status %d, %v", resp.StatusCode, err))
		return
	}
	if cfg.Defaults == nil {
		cfg.Defaults = map[string]string{}
	}
	if cfg.Overrides == nil {
		cfg.Overrides = map[string]string{}
	}
	cfg.Overrides["prefix"] = h.Prefix(wh)
	writeJSON(w, http.StatusOK, cfg)
}

// forward sends r to the backend at /v1/<rest> and returns the status it
// answered (0 when it was not reached).
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, rest []string) int {
	esc := make([]string, len(rest))
	for i, s := range rest {
		esc[i] = url.PathEscape(s)
	}
	target := *h.backend
	raw := strings.TrimSuffix(h.backend.EscapedPath(), "/") + "/v1/" + strings.Join(esc, "/")
	target.Path, _ = url.PathUnescape(raw)
	target.RawPath = raw
	target.RawQuery = r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, target.String(), r.Body)
	if err != nil {
		icebergError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return 0
	}
	req.ContentLength = r.ContentLength
	for k, v := range r.Header {
		if k == "Authorization" || strings.HasPrefix(k, "X-Amz-") {
			continue
		}
		req.Header[k] = v
	}
	req.Header.Del("Accept-Encoding") // let the transport decompress
	h.served.Add(1)
	resp, err := h.cfg.Client.Do(req)
	if err != nil {
		icebergError(w, http.StatusBadGateway, "ServiceUnavailableException", "reaching the backing catalog: "+err.Error())
		return 0
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		if k == "Content-Length" || k == "Content-Encoding" {
			continue
		}
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
	return resp.StatusCode
}

// payloadHash is the hex SHA-256 of body.
func payloadHash(body []byte) string { return awssig.PayloadHash(body) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// icebergError answers in the Iceberg REST error model.
func icebergError(w http.ResponseWriter, status int, typ, msg string) {
	type errorModel struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	}
	writeJSON(w, status, struct {
		Error errorModel `json:"error"`
	}{errorModel{msg, typ, status}})
}
