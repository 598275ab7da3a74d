// Package gluereg looks the schemas of Glue-framed records up in AWS Glue
// Schema Registry: a decode.GlueRegistry over aws-sdk-go-v2's Glue client
// (GetSchemaVersion by SchemaVersionId), with AWS's default credential
// chain and a bounded cache of the versions it fetched.
//
// Its errors carry decode's meanings: the registry's own "no such version"
// (EntityNotFoundException) wraps decode.ErrGlueNotFound, a fact about
// the record; a refusal of the caller (credentials, signature, IAM
// permission) wraps decode.ErrRegistryUnavailable and names the settings
// to check; anything else (unreachable, throttled, 5xx, after the SDK's own
// retries) is returned as is, for the decoder to retry.
package gluereg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/aws/smithy-go"

	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/envflag"
)

// CacheVersions is how many schema versions a Client keeps; beyond it the
// oldest fetched is dropped (and fetched again when met).
const CacheVersions = 1024

// Config is the Glue Schema Registry settings. Glue is off while Region
// is empty.
type Config struct {
	// Region is the AWS region of the registry; setting it turns Glue
	// Schema Registry lookups on.
	Region string
	// Endpoint overrides the Glue endpoint (a VPC endpoint, or a test
	// stand-in); empty: AWS's for Region.
	Endpoint string
}

// Bind adds the settings to f.
func (c *Config) Bind(f *envflag.Set) {
	f.String(&c.Region, "glue-registry-region", "", "AWS region of an AWS Glue Schema Registry to read Glue-framed Avro records with (schemas looked up by version id with GetSchemaVersion, AWS default credential chain); Confluent-framed records still use schema-registry-url (empty: Glue off)")
	f.String(&c.Endpoint, "glue-registry-endpoint", "", "Glue endpoint URL with glue-registry-region, e.g. a VPC endpoint (empty: AWS's for the region)")
}

// Enabled reports whether Glue lookups are configured.
func (c Config) Enabled() bool { return c.Region != "" }

// Validate checks the settings against each other.
func (c Config) Validate() error {
	if c.Endpoint != "" && c.Region == "" {
		return errors.New("glue-registry-endpoint is set without glue-registry-region")
	}
	if c.Endpoint != "" && !strings.HasPrefix(c.Endpoint, "https://") && !strings.HasPrefix(c.Endpoint, "http://") {
		return fmt.Errorf("glue-registry-endpoint %q is not an http(s) URL", c.Endpoint)
	}
	return nil
}

// Client is a decode.GlueRegistry. It is safe for concurrent use.
type Client struct {
	api *glue.Client
	max int // CacheVersions

	mu    sync.Mutex
	cache map[decode.GlueID]decode.GlueSchema
	order []decode.GlueID // insertion order, oldest first
}

var _ decode.GlueRegistry = (*Client)(nil)

// New returns a Client for cfg, with credentials from AWS's default chain
// (environment, shared files, web identity, container or instance role).
func New(ctx context.Context, cfg Config) (*Client, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.Region))
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration for glue-registry-region %s: %w", cfg.Region, err)
	}
	return NewFromConfig(awsCfg, cfg), nil
}

// NewFromConfig returns a Client over awsCfg (its region overridden by
// cfg.Region, its endpoint by cfg.Endpoint).
func NewFromConfig(awsCfg aws.Config, cfg Config) *Client {
	api := glue.NewFromConfig(awsCfg, func(o *glue.Options) {
		o.Region = cfg.Region
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return &Client{api: api, max: CacheVersions, cache: map[decode.GlueID]decode.GlueSchema{}}
}

// refusals are the error codes of a caller AWS will not serve as it is:
// waiting does not mend them.
var refusals = map[string]bool{
	"AccessDeniedException":               true,
	"UnrecognizedClientException":         true,
	"InvalidSignatureException":           true,
	"IncompleteSignatureException":        true,
	"MissingAuthenticationTokenException": true,
	"ExpiredTokenException":               true,
	"InvalidClientTokenId":                true,
	"SignatureDoesNotMatch":               true,
	"InvalidInputException":               true,
}

// GlueSchemaVersion returns schema version id's definition and data
// format, from the cache or GetSchemaVersion.
func (c *Client) GlueSchemaVersion(ctx context.Context, id decode.GlueID) (decode.GlueSchema, error) {
	c.mu.Lock()
	s, ok := c.cache[id]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	out, err := c.api.GetSchemaVersion(ctx, &glue.GetSchemaVersionInput{SchemaVersionId: aws.String(id.String())})
	if err != nil {
		var nf *types.EntityNotFoundException
		var ae smithy.APIError
		switch {
		case errors.As(err, &nf):
			return decode.GlueSchema{}, fmt.Errorf("%w: %s: %w", decode.ErrGlueNotFound, id, err)
		case errors.As(err, &ae) && refusals[ae.ErrorCode()]:
			return decode.GlueSchema{}, fmt.Errorf("%w: AWS Glue Schema Registry refused GetSchemaVersion %s with %s (check glue-registry-region, glue-registry-endpoint, the AWS credentials the default chain finds, the clock, and glue:GetSchemaVersion in their IAM policy): %w",
				decode.ErrRegistryUnavailable, id, ae.ErrorCode(), err)
		}
		return decode.GlueSchema{}, fmt.Errorf("asking AWS Glue Schema Registry for schema version %s: %w", id, err)
	}
	s = decode.GlueSchema{Definition: aws.ToString(out.SchemaDefinition), DataFormat: string(out.DataFormat)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cache[id]; !ok {
		if len(c.order) >= c.max {
			delete(c.cache, c.order[0])
			c.order = c.order[1:]
		}
		c.cache[id] = s
		c.order = append(c.order, id)
	}
	return s, nil
}
