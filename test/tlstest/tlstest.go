// Package tlstest makes throw-away certificate authorities for tests of TLS
// connections: a CA, a server certificate for 127.0.0.1 and localhost, and a
// client certificate, as PEM files in a test's temporary directory.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a CA with one server and one client certificate.
type PKI struct {
	// CAFile, ServerCertFile, ServerKeyFile, ClientCertFile and
	// ClientKeyFile are PEM files.
	CAFile                        string
	ServerCertFile, ServerKeyFile string
	ClientCertFile, ClientKeyFile string
	// Pool holds the CA.
	Pool *x509.CertPool
	// Server and Client are the key pairs.
	Server, Client tls.Certificate
}

// ServerName is the DNS name, besides 127.0.0.1, in the server certificate.
const ServerName = "broker.binlake.test"

// New makes a PKI whose files live in t.TempDir().
func New(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	caKey := key(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "binlake test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p := &PKI{Pool: x509.NewCertPool()}
	p.Pool.AddCert(ca)
	p.CAFile = write(t, dir, "ca.pem", "CERTIFICATE", caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage, server bool) (string, string) {
		k := key(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if server {
			tmpl.DNSNames = []string{ServerName, "localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(t, dir, name+".pem", "CERTIFICATE", der), write(t, dir, name+"-key.pem", "PRIVATE KEY", kb)
	}
	p.ServerCertFile, p.ServerKeyFile = issue("server", 2, x509.ExtKeyUsageServerAuth, true)
	p.ClientCertFile, p.ClientKeyFile = issue("client", 3, x509.ExtKeyUsageClientAuth, false)
	p.Server, err = tls.LoadX509KeyPair(p.ServerCertFile, p.ServerKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	p.Client, err = tls.LoadX509KeyPair(p.ClientCertFile, p.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ServerConfig is a server TLS configuration; with mutual set, clients
// must present a certificate signed by the CA.
func (p *PKI) ServerConfig(mutual bool) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{p.Server}}
	if mutual {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, p.Pool
	}
	return c
}

// ClientConfig is a client TLS configuration that trusts the CA; with
// withCert, it presents the client certificate (mutual TLS).
func (p *PKI) ClientConfig(withCert bool) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.Pool}
	if withCert {
		c.Certificates = []tls.Certificate{p.Client}
	}
	return c
}

func key(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func write(t testing.TB, dir, name, typ string, der []byte) string {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
