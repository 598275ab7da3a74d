// Package mysqltls secures capture's connections to MySQL and MariaDB: the
// SQL connections (go-sql-driver/mysql) and the binlog connection
// (go-mysql) dial through one Dialer, which applies TLS by Debezium's
// database.ssl.mode and guards the password exchange.
//
// The Dialer, not the drivers, negotiates TLS: it reads the server's
// greeting, and when TLS is to be used it sends the SSL request and makes
// the TLS handshake itself, then relays the driver's handshake with the
// packet sequence numbers shifted by one. Both drivers therefore speak a
// plain connection, and the Dialer sees every packet of the authentication
// exchange in clear, whatever the mode. Its guarantees:
//
//   - disabled never uses TLS; preferred uses it when the server offers
//     it, without checking the certificate; required insists on TLS,
//     without checking the certificate; verify_ca also checks that the
//     certificate chains to the CA file (or the system roots);
//     verify_identity also checks that it names the server
//     (ServerName, default the host of the address).
//   - Unless the connection is TLS with a verified certificate (verify_ca
//     or verify_identity), or Config.AllowInsecureAuth is set, the password
//     is never sent where a man in the middle could read it: a request to
//     switch to a cleartext plugin (mysql_clear_password, dialog) and an
//     RSA public key sent by the server (sha256_password, the full
//     authentication of caching_sha2_password: a key nobody vouches for)
//     end the connection with an error before the driver answers.
//   - Every refusal reaches the driver as a MySQL error packet (code 2026
//     for TLS, 2061 for authentication) whose message names the setting to
//     change, so that the caller sees it as a final error, not a retryable
//     network one.
package mysqltls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// Mode is Debezium's database.ssl.mode.
type Mode string

// The modes, with Debezium's names and meanings.
const (
	// Disabled never uses TLS.
	Disabled Mode = "disabled"
	// Preferred uses TLS when the server offers it, without verifying the
	// certificate, and a plain connection otherwise. Debezium's default.
	Preferred Mode = "preferred"
	// Required insists on TLS but does not verify the certificate.
	Required Mode = "required"
	// VerifyCA insists on TLS with a certificate signed by a trusted CA.
	VerifyCA Mode = "verify_ca"
	// VerifyIdentity is VerifyCA plus a certificate naming the server.
	VerifyIdentity Mode = "verify_identity"
)

// ErrConfig reports an invalid TLS setting.
var ErrConfig = errors.New("invalid mysql-tls setting")

// ParseMode reads a mode: Debezium's names, in either case, and the
// hyphenated libpq-style aliases verify-ca and verify-full.
func ParseMode(s string) (Mode, error) {
	switch m := strings.ToLower(strings.TrimSpace(s)); m {
	case "disabled", "preferred", "required", "verify_ca", "verify_identity":
		return Mode(m), nil
	case "verify-ca":
		return VerifyCA, nil
	case "verify-full", "verify_full", "verify-identity":
		return VerifyIdentity, nil
	default:
		return "", fmt.Errorf("%w: mysql-tls %q: want disabled, preferred, required, verify_ca or verify_identity", ErrConfig, s)
	}
}

// Verified reports whether the mode checks the server's certificate.
func (m Mode) Verified() bool { return m == VerifyCA || m == VerifyIdentity }

// Config configures a Dialer.
type Config struct {
	// Mode is the TLS mode (default Preferred).
	Mode Mode
	// CAFile is a PEM file of the CAs that sign the server's certificate
	// (default: the system roots). Only verify_ca and verify_identity use it.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// servers that require one (REQUIRE X509); both or neither.
	CertFile, KeyFile string
	// ServerName is the name verify_identity expects in the certificate
	// (default: the host of the address dialled).
	ServerName string
	// AllowInsecureAuth lets the password go where a man in the middle
	// could read it: in clear (mysql_clear_password) or encrypted with an
	// RSA key the server sent, over a connection whose certificate is not
	// verified. Default false.
	AllowInsecureAuth bool
}

// Validate checks the settings against each other and parses the mode.
func (c *Config) Validate() error {
	if c.Mode == "" {
		c.Mode = Preferred
	}
	m, err := ParseMode(string(c.Mode))
	if err != nil {
		return err
	}
	c.Mode = m
	if (c.CertFile == "") != (c.KeyFile == "") {
		return fmt.Errorf("%w: mysql-tls-cert-file and mysql-tls-key-file go together", ErrConfig)
	}
	if c.Mode == Disabled && (c.CAFile != "" || c.CertFile != "" || c.ServerName != "") {
		return fmt.Errorf("%w: mysql-tls=disabled, but mysql-tls-ca-file, -cert-file or -server-name is set", ErrConfig)
	}
	if c.ServerName != "" && c.Mode != VerifyIdentity {
		return fmt.Errorf("%w: mysql-tls-server-name is only checked with mysql-tls=verify_identity (mysql-tls=%s)", ErrConfig, c.Mode)
	}
	return nil
}

// Dialer dials MySQL/MariaDB with TLS and the password-exchange guard. Its
// DialContext suits go-sql-driver's Config.DialFunc and go-mysql's
// BinlogSyncerConfig.Dialer.
type Dialer struct {
	cfg   Config
	roots *x509.CertPool // nil: the system roots
	certs []tls.Certificate
	net   net.Dialer
}

// NewDialer validates cfg and loads its files.
func NewDialer(cfg Config) (*Dialer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Dialer{cfg: cfg}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: reading mysql-tls-ca-file: %w", ErrConfig, err)
		}
		d.roots = x509.NewCertPool()
		if !d.roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: mysql-tls-ca-file %s holds no PEM certificate", ErrConfig, cfg.CAFile)
		}
	}
	if cfg.CertFile != "" {
		kp, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: loading mysql-tls-cert-file and mysql-tls-key-file: %w", ErrConfig, err)
		}
		d.certs = []tls.Certificate{kp}
	}
	return d, nil
}

// Mode is the dialer's TLS mode.
func (d *Dialer) Mode() Mode { return d.cfg.Mode }

// tlsConfig is the client TLS configuration for host.
func (d *Dialer) tlsConfig(host string) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: d.certs}
	switch d.cfg.Mode {
	case VerifyIdentity:
		c.RootCAs, c.ServerName = d.roots, host
		if d.cfg.ServerName != "" {
			c.ServerName = d.cfg.ServerName
		}
	case VerifyCA:
		// The chain, not the name: Go verifies both or neither, so the
		// chain is checked here.
		c.InsecureSkipVerify = true
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: d.roots, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	default:
		c.InsecureSkipVerify = true
	}
	return c
}

// DialContext connects to addr and reads the server's greeting; the TLS
// handshake follows the driver's first packet.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("parsing address %q: %w", addr, err)
	}
	raw, err := d.net.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c, err := newConn(ctx, raw, d, host, addr)
	if err != nil {
		_ = raw.Close()
		return nil, err
	}
	return c, nil
}
