// Package kafkasec holds ingest's Kafka security settings (TLS, SASL
// and Amazon MSK IAM): their flags and variables, their validation, the
// franz-go options they make, and the hints that name the setting to
// change when a broker refuses them. Both binaries hold this package, kept
// equal with the names changed (TestKafkaSecurityMatchesCapture).
package kafkasec

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	saslaws "github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/binlake/binlake/ingest/internal/envflag"
)

// SASLMechanism names how ingest authenticates to Kafka.
type SASLMechanism string

// SASL mechanisms (flag values; Kafka's own spellings such as SCRAM-SHA-512
// or AWS_MSK_IAM are accepted too).
const (
	SASLNone        SASLMechanism = "none"
	SASLPlain       SASLMechanism = "plain"
	SASLScramSHA256 SASLMechanism = "scram-sha-256"
	SASLScramSHA512 SASLMechanism = "scram-sha-512"
	// SASLAWSMSKIAM is Amazon MSK's IAM access control: requests are signed
	// with credentials from the AWS default chain. It needs TLS.
	SASLAWSMSKIAM SASLMechanism = "aws-msk-iam"
)

// MSKConnectAction is the IAM action MSK checks when a client authenticates
// with aws-msk-iam (the other kafka-cluster: actions are checked per
// request; see deploy/README.md).
const MSKConnectAction = "kafka-cluster:Connect"

// KafkaSecurity is how the Kafka connection is encrypted and authenticated
// (Amazon MSK: TLS on 9094, SASL/SCRAM on 9096, IAM on 9098). The zero
// value is a plaintext, unauthenticated connection.
type KafkaSecurity struct {
	// TLS encrypts the connection; the server is verified against the
	// system roots, or TLSCAFile when set.
	TLS bool
	// TLSCAFile is a PEM bundle of the CAs the brokers' certificates chain
	// to (default: the system roots).
	TLSCAFile string
	// TLSCertFile and TLSKeyFile are a PEM client certificate and key for
	// mutual TLS (both or neither).
	TLSCertFile, TLSKeyFile string
	// TLSServerName overrides the name checked in the brokers' certificates
	// (default: each broker's host name).
	TLSServerName string
	// SASLMechanism is none, plain, scram-sha-256, scram-sha-512 or
	// aws-msk-iam (default none).
	SASLMechanism SASLMechanism
	// SASLUsername and SASLPassword authenticate plain and SCRAM. The
	// password is a secret: env or file only.
	SASLUsername string
	SASLPassword string

	// awsRegionEnv is AWS_REGION (or AWS_DEFAULT_REGION) as read at bind
	// time: MSK IAM signs for it when the broker names hold no region.
	awsRegionEnv string
	// awsCredentials replaces the AWS default chain (tests).
	awsCredentials aws.CredentialsProvider
}

// Bind adds the settings to f.
func (k *KafkaSecurity) Bind(f *envflag.Set) {
	f.Bool(&k.TLS, "kafka-tls", false, "connect to Kafka over TLS (MSK: port 9094, and 9096 SCRAM / 9098 IAM which need it)")
	f.String(&k.TLSCAFile, "kafka-tls-ca-file", "", "PEM file of the CAs that sign the brokers' certificates (default: the system roots)")
	f.String(&k.TLSCertFile, "kafka-tls-cert-file", "", "PEM client certificate for mutual TLS (with kafka-tls-key-file)")
	f.String(&k.TLSKeyFile, "kafka-tls-key-file", "", "PEM private key of kafka-tls-cert-file")
	f.String(&k.TLSServerName, "kafka-tls-server-name", "", "name expected in the brokers' certificates (default: each broker's host name)")
	f.String((*string)(&k.SASLMechanism), "kafka-sasl-mechanism", string(SASLNone), "Kafka SASL mechanism: none, plain, scram-sha-256, scram-sha-512 or aws-msk-iam (credentials from the AWS default chain)")
	f.String(&k.SASLUsername, "kafka-sasl-username", "", "SASL user for plain and scram-*; the password comes from INGEST_KAFKA_SASL_PASSWORD or INGEST_KAFKA_SASL_PASSWORD_FILE")
	f.Secret(&k.SASLPassword, "kafka-sasl-password", "the Kafka SASL password (plain, scram-*)")
	k.awsRegionEnv = f.Getenv("AWS_REGION")
	if k.awsRegionEnv == "" {
		k.awsRegionEnv = f.Getenv("AWS_DEFAULT_REGION")
	}
}

// Validate checks the settings against each other and against the brokers
// they are for, and reads the TLS files so a bad one fails at start.
func (k *KafkaSecurity) Validate(brokers []string) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	k.SASLMechanism = normalizeMechanism(k.SASLMechanism)
	if !k.TLS {
		for name, v := range map[string]string{
			"kafka-tls-ca-file": k.TLSCAFile, "kafka-tls-cert-file": k.TLSCertFile,
			"kafka-tls-key-file": k.TLSKeyFile, "kafka-tls-server-name": k.TLSServerName,
		} {
			if v != "" {
				bad("%s is set but kafka-tls is off: add --kafka-tls (INGEST_KAFKA_TLS=true)", name)
			}
		}
	}
	if (k.TLSCertFile == "") != (k.TLSKeyFile == "") {
		bad("kafka-tls-cert-file and kafka-tls-key-file go together: set both for mutual TLS, or neither")
	}
	if k.TLS {
		if _, err := k.tlsConfig(); err != nil {
			errs = append(errs, err)
		}
	}
	switch k.SASLMechanism {
	case SASLNone:
		if k.SASLUsername != "" || k.SASLPassword != "" {
			bad("a Kafka SASL user or password is set but kafka-sasl-mechanism is none: choose plain, scram-sha-256 or scram-sha-512")
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if k.SASLUsername == "" {
			bad("kafka-sasl-mechanism %s needs kafka-sasl-username (INGEST_KAFKA_SASL_USERNAME)", k.SASLMechanism)
		}
		if k.SASLPassword == "" {
			bad("kafka-sasl-mechanism %s needs a password in INGEST_KAFKA_SASL_PASSWORD or the file named by INGEST_KAFKA_SASL_PASSWORD_FILE", k.SASLMechanism)
		}
		if k.SASLMechanism == SASLPlain && !k.TLS {
			bad("kafka-sasl-mechanism plain sends the password in clear: add --kafka-tls (or use scram-sha-512)")
		}
	case SASLAWSMSKIAM:
		if !k.TLS {
			bad("kafka-sasl-mechanism aws-msk-iam needs --kafka-tls: MSK's IAM listener (port 9098) only accepts TLS")
		}
		if k.SASLUsername != "" || k.SASLPassword != "" {
			bad("kafka-sasl-mechanism aws-msk-iam takes its credentials from the AWS default chain (AWS_*, IRSA, instance role): unset the Kafka SASL user and password")
		}
		if k.awsRegionEnv == "" {
			for _, b := range brokers {
				if !hostNamesRegion(b) {
					bad("kafka-sasl-mechanism aws-msk-iam signs for the region in the broker name (b-1.<cluster>.kafka.<region>.amazonaws.com); broker %q has none: set AWS_REGION", b)
					break
				}
			}
		}
	default:
		bad("kafka-sasl-mechanism %q: want none, plain, scram-sha-256, scram-sha-512 or aws-msk-iam", k.SASLMechanism)
	}
	return errors.Join(errs...)
}

// normalizeMechanism accepts Kafka's spellings (SCRAM-SHA-256, AWS_MSK_IAM).
func normalizeMechanism(m SASLMechanism) SASLMechanism {
	s := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(string(m))), "_", "-")
	if s == "" {
		return SASLNone
	}
	return SASLMechanism(s)
}

// regionSuffixes are the AWS domain suffixes behind which franz-go's MSK
// IAM signer finds the region label (franz-go pkg/sasl/aws, identifyRegion).
var regionSuffixes = []string{".amazonaws.com", ".amazonaws.com.cn", ".api.aws", ".api.amazonwebservices.com.cn", ".amazonaws.eu", ".api.amazonwebservices.eu"}

// hostNamesRegion reports whether a broker address is an AWS name that
// holds a region (loosely: an AWS suffix and a label like us-east-1).
func hostNamesRegion(broker string) bool {
	host := strings.TrimSpace(broker)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, suf := range regionSuffixes {
		if prefix, ok := strings.CutSuffix(host, suf); ok {
			for _, label := range strings.Split(prefix, ".") {
				if parts := strings.Split(label, "-"); len(parts) >= 3 && isDigits(parts[len(parts)-1]) {
					return true
				}
			}
		}
	}
	return false
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Explain adds to a Kafka connection error the setting to check when the
// broker refused these security settings (credentials, client certificate,
// CA, server name, TLS on a plaintext port); refused is false for any other
// error, which is returned as is.
func (k *KafkaSecurity) Explain(err error) (_ error, refused bool) {
	var (
		op       *net.OpError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		notTLS   tls.RecordHeaderError
		hint     string
	)
	switch {
	case err == nil:
		return nil, false
	case errors.Is(err, kerr.SaslAuthenticationFailed) && k.SASLMechanism == SASLAWSMSKIAM:
		hint = "MSK IAM authentication refused: check the AWS credentials (default chain: AWS_*, IRSA, instance role), that they are current, and that their role may " + MSKConnectAction + " on this cluster; setting kafka-sasl-mechanism (aws-msk-iam)"
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		hint = fmt.Sprintf("the broker refused the SASL credentials: check kafka-sasl-username (%q) and the password in INGEST_KAFKA_SASL_PASSWORD or the file named by INGEST_KAFKA_SASL_PASSWORD_FILE", k.SASLUsername)
	case errors.Is(err, kerr.UnsupportedSaslMechanism), errors.Is(err, kerr.IllegalSaslState):
		hint = fmt.Sprintf("the broker does not take kafka-sasl-mechanism %s on this port: check the mechanism against the port (see Kafka and MSK in deploy/README.md)", k.SASLMechanism)
	case errors.As(err, &unknown):
		hint = "the broker's certificate is signed by a CA not trusted here: set kafka-tls-ca-file to its CA bundle"
	case errors.As(err, &hostname):
		hint = "the broker's certificate does not hold the name dialled: set kafka-tls-server-name to a name it holds"
	case errors.As(err, &notTLS):
		hint = "the broker does not speak TLS on this port: use its TLS port, or unset kafka-tls"
	case errors.As(err, &op) && op.Op == "remote error" && k.TLSCertFile == "":
		// A TLS alert from the broker: with no certificate sent, the
		// usual cause is a listener that requires one (ssl.client.auth).
		hint = "the broker refused the TLS handshake; a listener requiring mutual TLS needs a client certificate: set kafka-tls-cert-file and kafka-tls-key-file"
	case errors.As(err, &op) && op.Op == "remote error":
		hint = "the broker refused the TLS handshake: check that kafka-tls-cert-file is a client certificate signed by a CA the broker trusts"
	default:
		return err, false
	}
	return fmt.Errorf("%w (%s)", err, hint), true
}

// Refusal reports whether err is final at start-up: the broker refusing
// these security settings (see Explain), or answering with an error that
// retrying cannot clear (an authorization, a fenced producer, a setting it
// rejects). Any other error may be a broker not reachable yet.
func (k *KafkaSecurity) Refusal(err error) bool {
	if _, refused := k.Explain(err); refused {
		return true
	}
	var ke *kerr.Error
	return errors.As(err, &ke) && !ke.Retriable
}

// tlsConfig builds the client TLS configuration from the files.
func (k *KafkaSecurity) tlsConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: k.TLSServerName}
	if k.TLSCAFile != "" {
		pool, err := LoadCAs("kafka-tls-ca-file", k.TLSCAFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if k.TLSCertFile != "" && k.TLSKeyFile != "" {
		cert, err := tls.LoadX509KeyPair(k.TLSCertFile, k.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading kafka-tls-cert-file and kafka-tls-key-file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// LoadCAs reads the PEM bundle of CAs in file, named setting in errors.
func LoadCAs(setting, file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", setting, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s %s holds no PEM certificate", setting, file)
	}
	return pool, nil
}

// ClientOpts are the franz-go options for these settings (none for the zero
// value). Call Validate first. With aws-msk-iam, the AWS default chain is
// loaded here and its credentials are fetched (and refreshed) per connection.
func (k *KafkaSecurity) ClientOpts(ctx context.Context, userAgent string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if k.TLS {
		c, err := k.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(c))
	}
	var m sasl.Mechanism
	switch normalizeMechanism(k.SASLMechanism) {
	case SASLNone:
	case SASLPlain:
		m = plain.Auth{User: k.SASLUsername, Pass: k.SASLPassword}.AsMechanism()
	case SASLScramSHA256:
		m = scram.Auth{User: k.SASLUsername, Pass: k.SASLPassword}.AsSha256Mechanism()
	case SASLScramSHA512:
		m = scram.Auth{User: k.SASLUsername, Pass: k.SASLPassword}.AsSha512Mechanism()
	case SASLAWSMSKIAM:
		creds := k.awsCredentials
		if creds == nil {
			cfg, err := awsconfig.LoadDefaultConfig(ctx)
			if err != nil {
				return nil, fmt.Errorf("loading the AWS default configuration for MSK IAM: %w", err)
			}
			creds = cfg.Credentials
		}
		if creds == nil {
			return nil, errors.New("kafka-sasl-mechanism aws-msk-iam: the AWS default chain found no credentials")
		}
		m = saslaws.ManagedStreamingIAM(func(ctx context.Context) (saslaws.Auth, error) {
			c, err := creds.Retrieve(ctx)
			if err != nil {
				return saslaws.Auth{}, fmt.Errorf("retrieving AWS credentials for MSK IAM: %w", err)
			}
			return saslaws.Auth{AccessKey: c.AccessKeyID, SecretKey: c.SecretAccessKey, SessionToken: c.SessionToken, UserAgent: userAgent}, nil
		})
	default:
		return nil, fmt.Errorf("kafka-sasl-mechanism %q: want none, plain, scram-sha-256, scram-sha-512 or aws-msk-iam", k.SASLMechanism)
	}
	if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}
