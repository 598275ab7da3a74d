// Package lake opens ingest's Iceberg catalog from its settings: a REST
// catalog (plain, OAuth2 or bearer token, or SigV4-signed for S3 Tables and
// Glue) or, without catalog-uri, the embedded catalog (iceberg-go's SQL
// catalog on a SQLite file in the state directory, see embedded.go). Every
// command of ingest (run, status, maintain, replay) shares CatalogConfig.
package lake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/binlake/binlake/ingest/internal/envflag"
	"github.com/binlake/binlake/ingest/internal/startup"
)

// CatalogConfig is the Iceberg catalog and its storage; ingest, ingest
// status, ingest maintain and ingest replay share it. With CatalogURI set
// it is a REST catalog; empty, it is the embedded catalog: iceberg-go's
// SQL catalog on the SQLite file <StateDir>/catalog.db with a warehouse on
// the local filesystem (see openEmbedded).
type CatalogConfig struct {
	CatalogURI        string // REST catalog URI ("": the embedded catalog)
	CatalogName       string
	Warehouse         string // warehouse location, or the S3 Tables bucket ARN
	CatalogCredential string // secret: INGEST_CATALOG_CREDENTIAL (OAuth2 client_id:secret)
	CatalogToken      string // secret: INGEST_CATALOG_TOKEN (bearer token)
	SigV4             bool   // sign catalog requests with SigV4 (S3 Tables)
	SigV4Service      string
	S3Endpoint        string
	S3Region          string
	// S3AccessKeyID and S3SecretAccessKey are keys for the data files only
	// (secrets: INGEST_S3_ACCESS_KEY_ID, INGEST_S3_SECRET_ACCESS_KEY), for
	// S3-compatible storage whose keys are not the AWS ones SigV4 signs
	// with (MinIO behind a SigV4 catalog in tests). Default: unset, and the
	// data files use the AWS default chain like the catalog.
	S3AccessKeyID     string
	S3SecretAccessKey string
	// StateDir is ingest's local directory: the key index (see IndexBase)
	// and, without CatalogURI, the embedded catalog and its warehouse.
	// "" is a temporary key index, and refused by the embedded catalog.
	StateDir string
}

// Bind adds the settings to f.
func (c *CatalogConfig) Bind(f *envflag.Set) {
	f.String(&c.CatalogURI, "catalog-uri", "", "Iceberg REST catalog URI (S3 Tables: https://s3tables.<region>.amazonaws.com/iceberg); empty: the embedded catalog, iceberg-go's SQL catalog on the SQLite file <state-dir>/catalog.db with a local warehouse, for trying ingest, one node and tests (needs state-dir)")
	f.String(&c.CatalogName, "catalog-name", "ingest", "name of the catalog in logs")
	f.String(&c.Warehouse, "warehouse", "", "catalog warehouse: a location such as s3://bucket/, or the S3 Tables table bucket ARN; with the embedded catalog a local directory (empty: <state-dir>/warehouse)")
	f.Secret(&c.CatalogCredential, "catalog-credential", "OAuth2 client credentials of the REST catalog, <client id>:<secret>")
	f.Secret(&c.CatalogToken, "catalog-token", "bearer token of the REST catalog")
	f.Bool(&c.SigV4, "sigv4", false, "sign catalog requests with AWS SigV4 (S3 Tables); credentials come from the AWS default chain")
	f.String(&c.SigV4Service, "sigv4-service", "s3tables", "SigV4 signing name with -sigv4 (s3tables, or glue)")
	f.String(&c.S3Endpoint, "s3-endpoint", "", "S3 endpoint for data files, e.g. MinIO (default: AWS); credentials come from AWS_* variables or the AWS default chain")
	f.String(&c.S3Region, "s3-region", "", "S3 and SigV4 region (default: AWS_REGION)")
	f.Secret(&c.S3AccessKeyID, "s3-access-key-id", "access key for the data files only, when they are not the AWS credentials (e.g. MinIO); default: the AWS default chain")
	f.Secret(&c.S3SecretAccessKey, "s3-secret-access-key", "secret key paired with INGEST_S3_ACCESS_KEY_ID")
	f.String(&c.StateDir, "state-dir", "", "local directory of ingest's state: in keyindex/ the per-table primary-key index that delete-mode auto, position and dv keep (a cache: rebuilt from the tables when missing; a corrupt one is moved aside to keyindex.corrupt-<time>), and without catalog-uri the embedded catalog (catalog.db, warehouse/); one per ingest process; never removed; empty: the index in a new temporary directory, removed on exit, so every start rebuilds it by reading the tables' key columns")
}

// Validate checks the settings against each other.
func (c *CatalogConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.CatalogURI == "" {
		errs = append(errs, c.validateEmbedded()...)
	} else if u, err := url.Parse(c.CatalogURI); err != nil || u.Scheme == "" || u.Host == "" {
		bad("catalog-uri %q is not a URL", RedactURL(c.CatalogURI))
	}
	if c.SigV4 && c.S3Region == "" {
		bad("sigv4 needs s3-region (or AWS_REGION)")
	}
	if (c.S3AccessKeyID == "") != (c.S3SecretAccessKey == "") {
		bad("set both INGEST_S3_ACCESS_KEY_ID and INGEST_S3_SECRET_ACCESS_KEY, or neither")
	}
	if c.CatalogCredential != "" && c.CatalogToken != "" {
		bad("set only one of INGEST_CATALOG_CREDENTIAL and INGEST_CATALOG_TOKEN")
	}
	return errors.Join(errs...)
}

// AWSAnalyticsCatalog reports whether the catalog is S3 Tables or Glue: by
// the SigV4 signing name, the catalog URI's host or an S3 Tables bucket
// ARN as the warehouse.
func (c *CatalogConfig) AWSAnalyticsCatalog() bool {
	if c.SigV4 && (c.SigV4Service == "s3tables" || c.SigV4Service == "glue") {
		return true
	}
	if strings.HasPrefix(c.Warehouse, "arn:aws:s3tables:") {
		return true
	}
	if u, err := url.Parse(c.CatalogURI); err == nil {
		h := strings.ToLower(u.Hostname())
		if strings.HasSuffix(h, ".amazonaws.com") && (strings.HasPrefix(h, "s3tables.") || strings.HasPrefix(h, "glue.")) {
			return true
		}
	}
	return false
}

// S3Tables reports whether the catalog is S3 Tables, whose managed
// compaction rewrites the tables' files itself: by the SigV4 signing name,
// the catalog URI's host or a table bucket ARN as the warehouse (as
// AWSAnalyticsCatalog tells S3 Tables, without Glue).
func (c *CatalogConfig) S3Tables() bool {
	if c.SigV4 && c.SigV4Service == "s3tables" {
		return true
	}
	if strings.HasPrefix(c.Warehouse, "arn:aws:s3tables:") {
		return true
	}
	if u, err := url.Parse(c.CatalogURI); err == nil {
		h := strings.ToLower(u.Hostname())
		if strings.HasSuffix(h, ".amazonaws.com") && strings.HasPrefix(h, "s3tables.") {
			return true
		}
	}
	return false
}

// ErrCatalogRefused is a catalog answering 401 or 403 while ingest
// connects: the credentials (or, with SigV4, the signing setup or the
// clock) are wrong, and retrying will not help.
var ErrCatalogRefused = errors.New("the Iceberg catalog refused ingest's credentials")

// Open connects to the REST catalog: plain (local fixture, Polaris,
// Nessie…) or SigV4-signed (S3 Tables, warehouse = table bucket ARN); or,
// without catalog-uri, opens the embedded catalog in the state directory
// and logs that it does. Close releases it. With SigV4 the signing
// credentials come from the AWS default chain; the data files use the same
// chain unless INGEST_S3_ACCESS_KEY_ID is set.
func Open(ctx context.Context, cfg CatalogConfig, logger *slog.Logger) (catalog.Catalog, error) {
	if cfg.Embedded() {
		return openEmbedded(ctx, cfg, logger)
	}
	props := iceberg.Properties{}
	if cfg.S3Endpoint != "" {
		props[icebergio.S3EndpointURL] = cfg.S3Endpoint
	}
	if cfg.S3Region != "" {
		props[icebergio.S3Region] = cfg.S3Region
	}
	if cfg.S3AccessKeyID != "" {
		props[icebergio.S3AccessKeyID] = cfg.S3AccessKeyID
		props[icebergio.S3SecretAccessKey] = cfg.S3SecretAccessKey
	}
	opts := []rest.Option{rest.WithAdditionalProps(props)}
	if cfg.Warehouse != "" {
		opts = append(opts, rest.WithWarehouseLocation(cfg.Warehouse))
	}
	var awsCfg aws.Config
	if cfg.SigV4 {
		var err error
		awsCfg, err = awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.S3Region))
		if err != nil {
			return nil, fmt.Errorf("loading the AWS configuration for SigV4: %w (check AWS_PROFILE and the shared config files)", err)
		}
		opts = append(opts, rest.WithAwsConfig(awsCfg), rest.WithSigV4RegionSvc(cfg.S3Region, cfg.SigV4Service))
	}
	if cfg.CatalogCredential != "" {
		opts = append(opts, rest.WithCredential(cfg.CatalogCredential))
	}
	if cfg.CatalogToken != "" {
		opts = append(opts, rest.WithOAuthToken(cfg.CatalogToken))
	}
	cat, err := rest.NewCatalog(ctx, cfg.CatalogName, cfg.CatalogURI, opts...)
	if err != nil {
		uri := RedactURL(cfg.CatalogURI)
		if errors.Is(err, rest.ErrForbidden) || errors.Is(err, rest.ErrUnauthorized) {
			if cfg.SigV4 {
				return nil, fmt.Errorf("%w: connecting to %s: %w (%s)", ErrCatalogRefused, uri, err, sigV4Hint(ctx, awsCfg, cfg))
			}
			return nil, fmt.Errorf("%w: connecting to %s: %w (check INGEST_CATALOG_CREDENTIAL or INGEST_CATALOG_TOKEN)", ErrCatalogRefused, uri, err)
		}
		return nil, fmt.Errorf("connecting to the Iceberg catalog %s: %w (check catalog-uri, warehouse and the catalog credentials)", uri, err)
	}
	return cat, nil
}

// Refusal reports whether an error opening the catalog is final:
// an answer refusing ingest (credentials, a 4xx) or a setting that cannot
// work, where a catalog not answering or answering 5xx may be one
// restarting.
func Refusal(err error) bool {
	if errors.Is(err, ErrCatalogRefused) {
		return true
	}
	if errors.Is(err, rest.ErrServiceUnavailable) || errors.Is(err, rest.ErrServerError) {
		return false
	}
	if errors.Is(err, rest.ErrRESTError) {
		return true
	}
	return !startup.Unreachable(err)
}

// sigV4Hint names what to check when a SigV4-signed catalog refuses
// ingest: where the credentials came from (never the credentials
// themselves), the signing name and region, and the clock.
func sigV4Hint(ctx context.Context, awsCfg aws.Config, cfg CatalogConfig) string {
	source := "the AWS default credential chain"
	if awsCfg.Credentials != nil {
		if creds, err := awsCfg.Credentials.Retrieve(ctx); err == nil {
			source = credentialSource(creds.Source)
		}
	}
	return fmt.Sprintf("the request was signed with credentials from %s for sigv4-service %s in s3-region %s; "+
		"check those credentials and that this host's clock is within 5 minutes of AWS's", source, cfg.SigV4Service, cfg.S3Region)
}

// credentialSource names, for an operator, the setting behind an
// aws.Credentials Source.
func credentialSource(source string) string {
	switch {
	case strings.HasPrefix(source, "EnvConfigCredentials"):
		return "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)"
	case strings.HasPrefix(source, "SharedConfigCredentials"):
		return "the shared credentials file (" + strings.TrimSpace(strings.TrimPrefix(source, "SharedConfigCredentials:")) + "; profile AWS_PROFILE, default \"default\")"
	case source == "":
		return "the AWS default credential chain"
	default:
		return "the AWS default credential chain (" + source + ": AWS_PROFILE, web identity, container or instance role)"
	}
}

// RedactURL hides user info in a URL.
func RedactURL(u string) string {
	if at := strings.LastIndex(u, "@"); at >= 0 {
		if scheme := strings.Index(u, "://"); scheme >= 0 && scheme < at {
			return u[:scheme+3] + "REDACTED@" + u[at+1:]
		}
	}
	return u
}
