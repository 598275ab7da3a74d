// Package gluesr is a stand-in for AWS Glue Schema Registry's API, for
// tests that must see what AWS would answer: an http.Handler speaking
// Glue's JSON 1.1 protocol (POST /, X-Amz-Target: AWSGlue.<Operation>,
// Content-Type application/x-amz-json-1.1) that aws-sdk-go-v2's Glue
// client talks to through its BaseEndpoint.
//
// A Handler guarantees, for every request, before any operation runs:
//
//   - The SigV4 signature is verified as AWS does (test/awssig) for the
//     signing name glue, the Handler's region and its one key pair; a
//     failure is a 403 shaped like AWS's JSON error (x-amzn-ErrorType
//     header, {"message": ...} body).
//   - The request is a POST of JSON 1.1 naming a known operation; anything
//     else is a 400 (UnknownOperationException, SerializationException).
//
// It implements the schema registry calls binlake, its tests and AWS's
// Java serde (the Kafka Connect converter) make: GetRegistry, CreateSchema
// (the first version with it), RegisterSchemaVersion (answering the
// existing version for a definition registered before),
// GetSchemaByDefinition, GetSchemaVersion (by SchemaVersionId, or by
// SchemaId with a version number or LatestVersion) and
// PutSchemaVersionMetadata (key-value pairs kept per version, 10 at most). Unknown registries,
// schemas and versions are EntityNotFoundException, bad ids and missing
// members InvalidInputException, a second CreateSchema of one name
// AlreadyExistsException: 400s with {"__type", "Message"} as Glue answers.
//
// Calls, Unknown and Schema let tests see what reached it; Config.Logf
// is told of every request answered with an error.
//
// What it does not model: IAM policies, compatibility checks between
// versions (every definition is accepted as is, whatever Compatibility
// says, unless Config.Refuse fails it; Config.PendingChecks delays new
// versions as Glue's asynchronous check does), registries other than those named in requests (each is created on
// first use), schema metadata, deletion, and the other Glue APIs.
package gluesr

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/binlake/binlake/test/awssig"
)

// Account is the AWS account id in the ARNs the stand-in answers.
const Account = "111122223333"

// DefaultRegistry is the registry a SchemaId without RegistryName names,
// as in Glue.
const DefaultRegistry = "default-registry"

// Config configures a Handler.
type Config struct {
	// Region is the only signing region accepted. Default us-east-1.
	Region string
	// Credentials are the only credentials accepted. Required.
	Credentials aws.Credentials
	// PendingChecks, when above 0, makes a version that
	// RegisterSchemaVersion adds PENDING (Glue checking its
	// compatibility) for that many GetSchemaVersion answers; then it is
	// AVAILABLE, or FAILURE if Refuse says so. Default 0: AVAILABLE at once.
	PendingChecks int
	// Refuse, if set, fails the compatibility check of the definitions it
	// returns true for (with PendingChecks, after the pending answers).
	Refuse func(definition string) bool
	// Logf, if set, is told of every request answered with an error (a
	// bad signature, an unknown operation, a missing schema...): the
	// operation, the error and the start of the request body, so a test
	// sees what a client the stand-in does not understand sent. Start
	// sets it to the test's Logf.
	Logf func(format string, args ...any)
}

// Handler is the stand-in. It is safe for concurrent use.
type Handler struct {
	cfg    Config
	verify awssig.Verifier
	denied atomic.Int64
	lookup atomic.Int64 // GetSchemaVersion calls answered

	mu       sync.Mutex
	schemas  map[string]*schema  // by registry/name
	versions map[string]*version // by version id
	calls    map[string]int64    // answered (not refused) requests by operation
	unknown  []string            // operations called that the stand-in does not implement
}

type schema struct {
	registry, name, format, compatibility string
	versions                              []*version
}

type version struct {
	id, definition string
	status         string // AVAILABLE, PENDING or FAILURE
	checks         int    // PENDING answers left
	number         int64
	schema         *schema
	created        time.Time
	metadata       [][2]string // key-value pairs, in the order put
}

var _ http.Handler = (*Handler)(nil)

// New returns a Handler for cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Credentials.AccessKeyID == "" || cfg.Credentials.SecretAccessKey == "" {
		return nil, fmt.Errorf("gluesr: Config.Credentials needs an access key and a secret")
	}
	return &Handler{
		cfg:      cfg,
		verify:   awssig.Verifier{Credentials: cfg.Credentials, Region: cfg.Region, Service: "glue"},
		schemas:  map[string]*schema{},
		versions: map[string]*version{},
		calls:    map[string]int64{},
	}, nil
}

// Start serves a new Handler on a local port until the test ends and
// returns it with the endpoint to give clients (their BaseEndpoint).
func Start(t testing.TB, cfg Config) (*Handler, string) {
	t.Helper()
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv.URL
}

// Denied is how many requests were refused for their signature so far.
func (h *Handler) Denied() int64 { return h.denied.Load() }

// Lookups is how many GetSchemaVersion calls were answered with a schema
// so far.
func (h *Handler) Lookups() int64 { return h.lookup.Load() }

// Calls is how many requests of operation op (CreateSchema,
// GetSchemaByDefinition...) passed the signature check so far, answered
// with a result or an error.
func (h *Handler) Calls(op string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[op]
}

// Unknown lists the operations called so far that the stand-in does not
// implement (answered UnknownOperationException), in call order.
func (h *Handler) Unknown() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.unknown)
}

// SchemaInfo describes a schema the stand-in holds.
type SchemaInfo struct {
	DataFormat, Compatibility string
	// Versions are the definitions of its versions, oldest first.
	Versions []string
	// Metadata holds each version's metadata (PutSchemaVersionMetadata),
	// "key=value" in the order put; Metadata[i] is Versions[i]'s.
	Metadata [][]string
}

// Schema returns what the stand-in holds as schema name of registry.
func (h *Handler) Schema(registry, name string) (SchemaInfo, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.schemas[registry+"/"+name]
	if s == nil {
		return SchemaInfo{}, false
	}
	info := SchemaInfo{DataFormat: s.format, Compatibility: s.compatibility}
	for _, v := range s.versions {
		info.Versions = append(info.Versions, v.definition)
		var md []string
		for _, kv := range v.metadata {
			md = append(md, kv[0]+"="+kv[1])
		}
		info.Metadata = append(info.Metadata, md)
	}
	return info, true
}

// apiError is an error of Glue's JSON 1.1 protocol.
type apiError struct {
	typ, msg string
}

func (e *apiError) Error() string { return e.typ + ": " + e.msg }

func invalid(format string, args ...any) *apiError {
	return &apiError{"InvalidInputException", fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{"EntityNotFoundException", fmt.Sprintf(format, args...)}
}

// writeError answers e as Glue does: 400, the type in x-amzn-ErrorType
// and in the body's __type, and Message.
func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("x-amzn-ErrorType", e.typ)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": e.typ, "Message": e.msg})
}

// ServeHTTP verifies the request's signature, then runs its operation.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, &apiError{"SerializationException", "reading the request body: " + err.Error()})
		return
	}
	target := r.Header.Get("X-Amz-Target")
	if e := h.verify.Verify(r, body); e != nil {
		h.denied.Add(1)
		h.logf("refused %s: bad signature: %v", target, e)
		awssig.WriteError(w, e)
		return
	}
	op, ok := strings.CutPrefix(target, "AWSGlue.")
	if r.Method != http.MethodPost || r.URL.Path != "/" || !ok {
		h.logf("refused %s %s (X-Amz-Target %q): not a Glue call", r.Method, r.URL.Path, target)
		writeError(w, &apiError{"UnknownOperationException", "expected POST / with X-Amz-Target: AWSGlue.<Operation>"})
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		writeError(w, &apiError{"SerializationException", fmt.Sprintf("content type %q, want application/x-amz-json-1.1", ct)})
		return
	}
	var in request
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(&in); err != nil {
		writeError(w, &apiError{"SerializationException", "the request body is not a JSON object of the operation's input: " + err.Error()})
		return
	}
	h.mu.Lock()
	h.calls[op]++
	h.mu.Unlock()
	var out any
	var e *apiError
	switch op {
	case "CreateSchema":
		out, e = h.createSchema(in)
	case "RegisterSchemaVersion":
		out, e = h.registerSchemaVersion(in)
	case "GetSchemaByDefinition":
		out, e = h.getSchemaByDefinition(in)
	case "GetSchemaVersion":
		out, e = h.getSchemaVersion(in)
	case "GetRegistry":
		out, e = h.getRegistry(in)
	case "PutSchemaVersionMetadata":
		out, e = h.putSchemaVersionMetadata(in)
	default:
		h.mu.Lock()
		h.unknown = append(h.unknown, op)
		h.mu.Unlock()
		e = &apiError{"UnknownOperationException", "the stand-in does not implement " + op}
	}
	if e != nil {
		h.logf("answered %s with %v; the request: %.2000s", target, e, body)
		writeError(w, e)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

func (h *Handler) logf(format string, args ...any) {
	if h.cfg.Logf != nil {
		h.cfg.Logf("gluesr: "+format, args...)
	}
}

// request holds the members of every operation implemented.
type request struct {
	RegistryID          *struct{ RegistryName, RegistryArn string } `json:"RegistryId"`
	SchemaID            *schemaID                                   `json:"SchemaId"`
	SchemaName          string
	DataFormat          string
	Compatibility       string
	SchemaDefinition    *string
	SchemaVersionID     *string `json:"SchemaVersionId"`
	SchemaVersionNumber *struct {
		LatestVersion bool
		VersionNumber *int64
	}
	MetadataKeyValue *struct{ MetadataKey, MetadataValue string }
}

type schemaID struct{ RegistryName, SchemaName, SchemaArn string }

var (
	nameRE = regexp.MustCompile(`^[a-zA-Z0-9-_$#.]{1,255}$`)
	uuidRE = regexp.MustCompile(`^[a-fA-F0-9]{8}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{12}$`)
)

func (h *Handler) arn(kind, registry, name string) string {
	a := fmt.Sprintf("arn:aws:glue:%s:%s:%s/%s", h.cfg.Region, Account, kind, registry)
	if name != "" {
		a += "/" + name
	}
	return a
}

// find returns the schema id names; h.mu is held.
func (h *Handler) find(id *schemaID) (*schema, *apiError) {
	if id == nil {
		return nil, invalid("SchemaId is required")
	}
	registry, name := id.RegistryName, id.SchemaName
	if id.SchemaArn != "" {
		rest, ok := strings.CutPrefix(id.SchemaArn, fmt.Sprintf("arn:aws:glue:%s:%s:schema/", h.cfg.Region, Account))
		r, n, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 {
			return nil, invalid("SchemaArn %q is not a schema ARN of this account and region", id.SchemaArn)
		}
		registry, name = r, n
	}
	if registry == "" {
		registry = DefaultRegistry
	}
	if name == "" {
		return nil, invalid("SchemaId needs SchemaName or SchemaArn")
	}
	s := h.schemas[registry+"/"+name]
	if s == nil {
		return nil, notFound("Schema is not found. RegistryName: %s, SchemaName: %s", registry, name)
	}
	return s, nil
}

func definition(in request) (string, *apiError) {
	if in.SchemaDefinition == nil || *in.SchemaDefinition == "" {
		return "", invalid("SchemaDefinition is required")
	}
	if len(*in.SchemaDefinition) > 170000 {
		return "", invalid("SchemaDefinition is longer than 170000 characters")
	}
	return *in.SchemaDefinition, nil
}

// add makes def the next version of s; h.mu is held.
func (h *Handler) add(s *schema, def string) *version {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	id := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	v := &version{id: id, definition: def, status: "AVAILABLE", number: int64(len(s.versions) + 1), schema: s, created: time.Now().UTC()}
	s.versions = append(s.versions, v)
	h.versions[id] = v
	return v
}

func (h *Handler) createSchema(in request) (any, *apiError) {
	registry := DefaultRegistry
	if in.RegistryID != nil && in.RegistryID.RegistryName != "" {
		registry = in.RegistryID.RegistryName
	}
	if !nameRE.MatchString(registry) || !nameRE.MatchString(in.SchemaName) {
		return nil, invalid("RegistryName and SchemaName must match %s", nameRE)
	}
	switch in.DataFormat {
	case "AVRO", "JSON", "PROTOBUF":
	default:
		return nil, invalid("DataFormat %q is not AVRO, JSON or PROTOBUF", in.DataFormat)
	}
	compat := in.Compatibility
	if compat == "" {
		compat = "BACKWARD"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.schemas[registry+"/"+in.SchemaName] != nil {
		return nil, &apiError{"AlreadyExistsException", fmt.Sprintf("Schema already exists. RegistryName: %s, SchemaName: %s", registry, in.SchemaName)}
	}
	s := &schema{registry: registry, name: in.SchemaName, format: in.DataFormat, compatibility: compat}
	out := map[string]any{
		"RegistryName": registry, "RegistryArn": h.arn("registry", registry, ""),
		"SchemaName": s.name, "SchemaArn": h.arn("schema", registry, s.name),
		"DataFormat": s.format, "Compatibility": compat, "SchemaStatus": "AVAILABLE",
		"SchemaCheckpoint": 1, "LatestSchemaVersion": 0, "NextSchemaVersion": 1,
	}
	if in.SchemaDefinition != nil {
		def, e := definition(in)
		if e != nil {
			return nil, e
		}
		v := h.add(s, def)
		out["SchemaVersionId"], out["SchemaVersionStatus"] = v.id, "AVAILABLE"
		out["LatestSchemaVersion"], out["NextSchemaVersion"] = 1, 2
	}
	h.schemas[registry+"/"+s.name] = s
	return out, nil
}

func (h *Handler) registerSchemaVersion(in request) (any, *apiError) {
	def, e := definition(in)
	if e != nil {
		return nil, e
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, e := h.find(in.SchemaID)
	if e != nil {
		return nil, e
	}
	v := s.byDefinition(def)
	if v == nil {
		v = h.add(s, def)
		switch {
		case h.cfg.PendingChecks > 0:
			v.status, v.checks = "PENDING", h.cfg.PendingChecks
		case h.cfg.Refuse != nil && h.cfg.Refuse(def):
			v.status = "FAILURE"
		}
	}
	return map[string]any{"SchemaVersionId": v.id, "VersionNumber": v.number, "Status": v.status}, nil
}

func (s *schema) byDefinition(def string) *version {
	for _, v := range s.versions {
		if v.definition == def {
			return v
		}
	}
	return nil
}

func (h *Handler) getSchemaByDefinition(in request) (any, *apiError) {
	def, e := definition(in)
	if e != nil {
		return nil, e
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, e := h.find(in.SchemaID)
	if e != nil {
		return nil, e
	}
	v := s.byDefinition(def)
	if v == nil {
		// Glue's message for a schema without this definition. AWS's serde
		// tells it from "Schema is not found." (no schema of that name) by
		// the text, and registers a version rather than creating the schema.
		return nil, notFound("Schema version is not found.")
	}
	return map[string]any{
		"SchemaVersionId": v.id, "SchemaArn": h.arn("schema", s.registry, s.name),
		"DataFormat": s.format, "Status": v.status, "CreatedTime": v.created.Format(time.RFC3339),
	}, nil
}

// getRegistry answers for any well-formed name: registries exist from
// their first use.
func (h *Handler) getRegistry(in request) (any, *apiError) {
	if in.RegistryID == nil || (in.RegistryID.RegistryName == "") == (in.RegistryID.RegistryArn == "") {
		return nil, invalid("RegistryId needs RegistryName or RegistryArn")
	}
	name := in.RegistryID.RegistryName
	if arn := in.RegistryID.RegistryArn; arn != "" {
		var ok bool
		if name, ok = strings.CutPrefix(arn, fmt.Sprintf("arn:aws:glue:%s:%s:registry/", h.cfg.Region, Account)); !ok {
			return nil, invalid("RegistryArn %q is not a registry ARN of this account and region", arn)
		}
	}
	if !nameRE.MatchString(name) {
		return nil, invalid("RegistryName must match %s", nameRE)
	}
	return map[string]any{"RegistryName": name, "RegistryArn": h.arn("registry", name, ""), "Status": "AVAILABLE"}, nil
}

// versionOf returns the version in names, by SchemaVersionId or by
// SchemaId with SchemaVersionNumber; h.mu is held.
func (h *Handler) versionOf(in request) (*version, *apiError) {
	switch {
	case in.SchemaVersionID != nil && (in.SchemaID != nil || in.SchemaVersionNumber != nil):
		return nil, invalid("Either SchemaVersionId or SchemaId with SchemaVersionNumber must be given, not both")
	case in.SchemaVersionID != nil:
		if !uuidRE.MatchString(*in.SchemaVersionID) {
			return nil, invalid("SchemaVersionId %q is not a UUID", *in.SchemaVersionID)
		}
		v := h.versions[strings.ToLower(*in.SchemaVersionID)]
		if v == nil {
			return nil, notFound("Schema version is not found. SchemaVersionId: %s", *in.SchemaVersionID)
		}
		return v, nil
	case in.SchemaID != nil && in.SchemaVersionNumber != nil:
		s, e := h.find(in.SchemaID)
		if e != nil {
			return nil, e
		}
		n := in.SchemaVersionNumber
		switch {
		case n.LatestVersion == (n.VersionNumber != nil):
			return nil, invalid("SchemaVersionNumber needs LatestVersion or VersionNumber, not both")
		case n.LatestVersion && len(s.versions) > 0:
			return s.versions[len(s.versions)-1], nil
		case n.VersionNumber != nil && *n.VersionNumber >= 1 && *n.VersionNumber <= int64(len(s.versions)):
			return s.versions[*n.VersionNumber-1], nil
		}
		return nil, notFound("Schema version is not found.")
	}
	return nil, invalid("SchemaVersionId, or SchemaId with SchemaVersionNumber, is required")
}

func (h *Handler) getSchemaVersion(in request) (any, *apiError) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, e := h.versionOf(in)
	if e != nil {
		return nil, e
	}
	if v.status == "PENDING" {
		if v.checks > 0 {
			v.checks--
		} else {
			v.status = "AVAILABLE"
			if h.cfg.Refuse != nil && h.cfg.Refuse(v.definition) {
				v.status = "FAILURE"
			}
		}
	}
	h.lookup.Add(1)
	s := v.schema
	return map[string]any{
		"SchemaVersionId": v.id, "SchemaDefinition": v.definition, "DataFormat": s.format,
		"SchemaArn": h.arn("schema", s.registry, s.name), "VersionNumber": v.number,
		"Status": v.status, "CreatedTime": v.created.Format(time.RFC3339),
	}, nil
}

// maxMetadata is how many metadata key-value pairs Glue keeps per schema
// version.
const maxMetadata = 10

// putSchemaVersionMetadata adds a key-value pair to a version's metadata,
// as AWS's serde does after registering one (x-amz-meta-transport: the
// topic). A pair the version has already is AlreadyExistsException, as in
// Glue; a key may hold several values.
func (h *Handler) putSchemaVersionMetadata(in request) (any, *apiError) {
	kv := in.MetadataKeyValue
	if kv == nil || len(kv.MetadataKey) < 1 || len(kv.MetadataKey) > 128 || len(kv.MetadataValue) < 1 || len(kv.MetadataValue) > 256 {
		return nil, invalid("MetadataKeyValue needs a MetadataKey of 1 to 128 characters and a MetadataValue of 1 to 256")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	v, e := h.versionOf(in)
	if e != nil {
		return nil, e
	}
	pair := [2]string{kv.MetadataKey, kv.MetadataValue}
	if slices.Contains(v.metadata, pair) {
		return nil, &apiError{"AlreadyExistsException", fmt.Sprintf("Schema version metadata already exists. MetadataKey: %s, MetadataValue: %s", pair[0], pair[1])}
	}
	if len(v.metadata) >= maxMetadata {
		return nil, &apiError{"ResourceNumberLimitExceededException", fmt.Sprintf("a schema version holds at most %d metadata key-value pairs", maxMetadata)}
	}
	v.metadata = append(v.metadata, pair)
	s := v.schema
	return map[string]any{
		"SchemaArn": h.arn("schema", s.registry, s.name), "SchemaName": s.name, "RegistryName": s.registry,
		"LatestVersion": s.versions[len(s.versions)-1] == v, "VersionNumber": v.number, "SchemaVersionId": v.id,
		"MetadataKey": pair[0], "MetadataValue": pair[1],
	}, nil
}
