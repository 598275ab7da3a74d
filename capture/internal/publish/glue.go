package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/aws/smithy-go"

	"github.com/binlake/binlake/capture/internal/envflag"
)

// ErrGlueRefused reports that AWS Glue Schema Registry refused capture as
// a caller (credentials, signature, IAM permission, region): retrying
// does not mend it.
var ErrGlueRefused = errors.New("publish: AWS Glue Schema Registry refused the call")

// ErrGlueSchemaMissing reports a schema (or schema version) absent from
// the Glue registry while glue-schema-auto-registration is off.
var ErrGlueSchemaMissing = errors.New("publish: schema not registered in AWS Glue Schema Registry and auto-registration is off")

// ErrGlueRegistryMissing reports that the registry glue-registry-name
// names does not exist in the region.
var ErrGlueRegistryMissing = errors.New("publish: no such AWS Glue Schema Registry registry")

// ErrGlueVersionFailed reports a schema version Glue would not make
// available (its compatibility check failed).
var ErrGlueVersionFailed = errors.New("publish: AWS Glue Schema Registry did not make the schema version available")

// GlueCompatibilities are the compatibility modes Glue accepts for a new
// schema (AWS's converter property compatibility).
var GlueCompatibilities = []string{"NONE", "DISABLED", "BACKWARD", "BACKWARD_ALL", "FORWARD", "FORWARD_ALL", "FULL", "FULL_ALL"}

// GlueConfig is the AWS Glue Schema Registry settings, named after the
// properties of AWS's Kafka converter (registry.name,
// schemaAutoRegistrationEnabled, compatibility, compression). Glue is off
// while Region is empty.
type GlueConfig struct {
	// Region is the AWS region of the registry; setting it makes capture
	// register its schemas in Glue and frame records as AWS's serde does,
	// in place of the Confluent registry.
	Region string
	// Endpoint overrides the Glue endpoint (a VPC endpoint, or a test
	// stand-in); empty: AWS's for Region.
	Endpoint string
	// RegistryName is registry.name. Default default-registry.
	RegistryName string
	// AutoRegistration is schemaAutoRegistrationEnabled: create schemas
	// and versions that are missing. Default true.
	AutoRegistration bool
	// Compatibility is compatibility: the mode of schemas capture
	// creates. Default BACKWARD.
	Compatibility string
	// Compression is compression: none or zlib (the record body; case
	// does not matter). Default none.
	Compression string
}

// Bind adds the settings to f.
func (c *GlueConfig) Bind(f *envflag.Set) {
	f.String(&c.Region, "glue-registry-region", "", "AWS region of an AWS Glue Schema Registry to register schemas in and frame records for (Glue framing: header version 3, compression byte, schema version UUID), in place of schema-registry-url; credentials from the AWS default chain (empty: Glue off)")
	f.String(&c.Endpoint, "glue-registry-endpoint", "", "Glue endpoint URL with glue-registry-region, e.g. a VPC endpoint (empty: AWS's for the region)")
	f.String(&c.RegistryName, "glue-registry-name", "default-registry", "Glue registry holding capture's schemas (AWS converter property registry.name); it must exist")
	f.Bool(&c.AutoRegistration, "glue-schema-auto-registration", true, "create missing schemas and schema versions in the Glue registry (AWS converter property schemaAutoRegistrationEnabled); false: a missing one stops capture")
	f.String(&c.Compatibility, "glue-compatibility", "BACKWARD", "compatibility mode of the Glue schemas capture creates (AWS converter property compatibility): "+strings.Join(GlueCompatibilities, ", "))
	f.String(&c.Compression, "glue-compression", "none", "compression of Glue-framed record bodies (AWS converter property compression): none or zlib (NONE and ZLIB, as AWS spells them, too)")
}

// Enabled reports whether Glue is configured.
func (c GlueConfig) Enabled() bool { return c.Region != "" }

// Validate checks the settings against each other.
func (c GlueConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Endpoint != "" && c.Region == "" {
		bad("glue-registry-endpoint is set without glue-registry-region")
	}
	if c.Endpoint != "" && !strings.HasPrefix(c.Endpoint, "https://") && !strings.HasPrefix(c.Endpoint, "http://") {
		bad("glue-registry-endpoint %q is not an http(s) URL", c.Endpoint)
	}
	if c.RegistryName == "" {
		bad("glue-registry-name is empty")
	}
	ok := false
	for _, m := range GlueCompatibilities {
		ok = ok || m == c.Compatibility
	}
	if !ok {
		bad("glue-compatibility %q: want one of %s", c.Compatibility, strings.Join(GlueCompatibilities, ", "))
	}
	if !strings.EqualFold(c.Compression, "none") && !strings.EqualFold(c.Compression, "zlib") {
		bad("glue-compression %q: want none or zlib", c.Compression)
	}
	return errors.Join(errs...)
}

// GlueRegistry registers Avro schemas in AWS Glue Schema Registry through
// aws-sdk-go-v2's Glue client, each subject (<topic>-key, <topic>-value)
// as the Glue schema of that name, and frames records as AWS's serde
// does. A schema version id is cached per subject and definition, so each
// is registered once per process. It is safe for concurrent use.
type GlueRegistry struct {
	api *glue.Client
	cfg GlueConfig

	mu    sync.Mutex
	cache map[string]Frame // subject + "\x00" + definition
	poll  time.Duration    // how often a PENDING version is asked about; tests shorten it
}

// NewGlueRegistry returns a GlueRegistry for cfg, with credentials from
// AWS's default chain (environment, shared files, web identity, container
// or instance role).
func NewGlueRegistry(ctx context.Context, cfg GlueConfig) (*GlueRegistry, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.Region))
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration for glue-registry-region %s: %w", cfg.Region, err)
	}
	return NewGlueRegistryFromConfig(awsCfg, cfg), nil
}

// NewGlueRegistryFromConfig returns a GlueRegistry over awsCfg (its region
// overridden by cfg.Region, its endpoint by cfg.Endpoint).
func NewGlueRegistryFromConfig(awsCfg aws.Config, cfg GlueConfig) *GlueRegistry {
	api := glue.NewFromConfig(awsCfg, func(o *glue.Options) {
		o.Region = cfg.Region
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return &GlueRegistry{api: api, cfg: cfg, cache: map[string]Frame{}, poll: time.Second}
}

// glueRefusals are the error codes of a caller AWS will not serve as it
// is: waiting does not mend them.
var glueRefusals = map[string]bool{
	"AccessDeniedException":               true,
	"UnrecognizedClientException":         true,
	"InvalidSignatureException":           true,
	"IncompleteSignatureException":        true,
	"MissingAuthenticationTokenException": true,
	"ExpiredTokenException":               true,
	"InvalidClientTokenId":                true,
	"SignatureDoesNotMatch":               true,
}

// explain names the settings behind a refusal.
func (r *GlueRegistry) explain(op, subject string, err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) && glueRefusals[ae.ErrorCode()] {
		return fmt.Errorf("%w: %s%s in registry %s answered %s (check glue-registry-region %s, glue-registry-endpoint, the AWS credentials the default chain finds, the clock, and glue:GetRegistry, glue:GetSchemaByDefinition, glue:CreateSchema, glue:RegisterSchemaVersion and glue:GetSchemaVersion in their IAM policy): %w",
			ErrGlueRefused, op, ofSchema(subject), r.cfg.RegistryName, ae.ErrorCode(), r.cfg.Region, err)
	}
	return fmt.Errorf("calling AWS Glue Schema Registry %s%s in registry %s: %w", op, ofSchema(subject), r.cfg.RegistryName, err)
}

// Ping checks that Glue answers for the registry with these credentials
// (GetRegistry): a refusal wraps ErrGlueRefused, a missing registry
// ErrGlueRegistryMissing.
func (r *GlueRegistry) Ping(ctx context.Context) error {
	_, err := r.api.GetRegistry(ctx, &glue.GetRegistryInput{RegistryId: &types.RegistryId{RegistryName: aws.String(r.cfg.RegistryName)}})
	var nf *types.EntityNotFoundException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return fmt.Errorf("%w: %s in glue-registry-region %s: create it, or set glue-registry-name: %w", ErrGlueRegistryMissing, r.cfg.RegistryName, r.cfg.Region, err)
	}
	return r.explain("GetRegistry", "", err)
}

// Final reports whether an error of Ping or Frame is one that retrying
// does not mend: a refusal, a missing registry or schema, a version Glue
// would not make available, or an input Glue calls invalid.
func (r *GlueRegistry) Final(err error) bool {
	var ae smithy.APIError
	return errors.Is(err, ErrGlueRefused) || errors.Is(err, ErrGlueRegistryMissing) || errors.Is(err, ErrGlueSchemaMissing) ||
		errors.Is(err, ErrGlueVersionFailed) || (errors.As(err, &ae) && ae.ErrorCode() == "InvalidInputException")
}

func ofSchema(subject string) string {
	if subject == "" {
		return ""
	}
	return " of schema " + subject
}

// Frame registers schema as a version of the Glue schema named subject
// (unless it is one already) and returns the framing of its records.
func (r *GlueRegistry) Frame(ctx context.Context, subject string, schema []byte) (Frame, error) {
	k := subject + "\x00" + string(schema)
	r.mu.Lock()
	f, ok := r.cache[k]
	r.mu.Unlock()
	if ok {
		return f, nil
	}
	id, err := r.register(ctx, subject, string(schema))
	if err != nil {
		return Frame{}, err
	}
	uuid, err := parseUUID(id)
	if err != nil {
		return Frame{}, fmt.Errorf("reading the schema version id of %s that Glue answered: %w", subject, err)
	}
	f = GlueFrame(uuid, strings.EqualFold(r.cfg.Compression, "zlib"))
	r.mu.Lock()
	r.cache[k] = f
	r.mu.Unlock()
	return f, nil
}

// register returns the schema version id of def under the schema named
// subject: looked up by definition first, created (schema or version)
// when missing and auto-registration is on.
func (r *GlueRegistry) register(ctx context.Context, subject, def string) (string, error) {
	sid := &types.SchemaId{RegistryName: aws.String(r.cfg.RegistryName), SchemaName: aws.String(subject)}
	got, err := r.api.GetSchemaByDefinition(ctx, &glue.GetSchemaByDefinitionInput{SchemaId: sid, SchemaDefinition: aws.String(def)})
	var nf *types.EntityNotFoundException
	switch {
	case err == nil:
		return r.available(ctx, subject, aws.ToString(got.SchemaVersionId), got.Status)
	case !errors.As(err, &nf):
		return "", r.explain("GetSchemaByDefinition", subject, err)
	case !r.cfg.AutoRegistration:
		return "", fmt.Errorf("%w: schema %s in registry %s has no version with capture's definition; register it, or set glue-schema-auto-registration (CAPTURE_GLUE_SCHEMA_AUTO_REGISTRATION) to true: %w",
			ErrGlueSchemaMissing, subject, r.cfg.RegistryName, err)
	}
	created, err := r.api.CreateSchema(ctx, &glue.CreateSchemaInput{
		RegistryId:       &types.RegistryId{RegistryName: aws.String(r.cfg.RegistryName)},
		SchemaName:       aws.String(subject),
		DataFormat:       types.DataFormatAvro,
		Compatibility:    types.Compatibility(r.cfg.Compatibility),
		SchemaDefinition: aws.String(def),
	})
	var exists *types.AlreadyExistsException
	switch {
	case err == nil:
		return r.available(ctx, subject, aws.ToString(created.SchemaVersionId), created.SchemaVersionStatus)
	case !errors.As(err, &exists):
		if errors.As(err, &nf) {
			return "", fmt.Errorf("creating schema %s: %w (does glue-registry-name %s name an existing registry in glue-registry-region %s?)",
				subject, r.explain("CreateSchema", subject, err), r.cfg.RegistryName, r.cfg.Region)
		}
		return "", r.explain("CreateSchema", subject, err)
	}
	// The schema exists (without this definition): a new version.
	reg, err := r.api.RegisterSchemaVersion(ctx, &glue.RegisterSchemaVersionInput{SchemaId: sid, SchemaDefinition: aws.String(def)})
	if err != nil {
		return "", r.explain("RegisterSchemaVersion", subject, err)
	}
	return r.available(ctx, subject, aws.ToString(reg.SchemaVersionId), reg.Status)
}

// available waits, as AWS's serde does, while Glue checks a new version's
// compatibility (PENDING), and returns id once it is AVAILABLE.
func (r *GlueRegistry) available(ctx context.Context, subject, id string, status types.SchemaVersionStatus) (string, error) {
	for tries := 0; ; tries++ {
		switch status {
		case types.SchemaVersionStatusAvailable, "":
			return id, nil
		case types.SchemaVersionStatusPending:
		default:
			return "", fmt.Errorf("%w: version %s of schema %s in registry %s is %s (a definition its compatibility mode refuses? see glue-compatibility)",
				ErrGlueVersionFailed, id, subject, r.cfg.RegistryName, status)
		}
		if tries >= 30 {
			return "", fmt.Errorf("%w: version %s of schema %s in registry %s still PENDING after %d checks", ErrGlueVersionFailed, id, subject, r.cfg.RegistryName, tries)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(r.poll):
		}
		v, err := r.api.GetSchemaVersion(ctx, &glue.GetSchemaVersionInput{SchemaVersionId: aws.String(id)})
		if err != nil {
			return "", r.explain("GetSchemaVersion", subject, err)
		}
		status = v.Status
	}
}

// parseUUID reads a UUID in its 8-4-4-4-12 hex form.
func parseUUID(s string) ([16]byte, error) {
	var id [16]byte
	h := strings.ReplaceAll(s, "-", "")
	if len(s) != 36 || len(h) != 32 {
		return id, fmt.Errorf("%q is not a UUID", s)
	}
	for i := range 16 {
		var b byte
		for _, c := range h[2*i : 2*i+2] {
			b <<= 4
			switch {
			case c >= '0' && c <= '9':
				b |= byte(c - '0')
			case c >= 'a' && c <= 'f':
				b |= byte(c - 'a' + 10)
			case c >= 'A' && c <= 'F':
				b |= byte(c - 'A' + 10)
			default:
				return id, fmt.Errorf("%q is not a UUID", s)
			}
		}
		id[i] = b
	}
	return id, nil
}
