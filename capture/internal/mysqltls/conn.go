package mysqltls

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"
)

// Protocol constants (MySQL client/server protocol, connection phase).
const (
	clientSSL        = 0x0800
	clientProtocol41 = 0x0200
	headerLen        = 4
	sslRequestLen    = 32 // capabilities, max packet size, charset, filler
	handshakeTimeout = 30 * time.Second

	// Error codes of the packets the conn makes up: the client library
	// codes CR_SSL_CONNECTION_ERROR and CR_AUTH_PLUGIN_ERR.
	codeTLS  = 2026
	codeAuth = 2061
	// erSecureTransportRequired is the server's refusal of a plain
	// connection under require_secure_transport=ON (MySQL and MariaDB).
	erSecureTransportRequired = 3159
	// erAccessDenied is ER_ACCESS_DENIED_ERROR.
	erAccessDenied = 1045
)

// conn relays the driver's connection phase (see the package comment),
// then passes bytes through.
type conn struct {
	raw  net.Conn // TCP: Close and the deadlines
	c    net.Conn // raw, or TLS over it once negotiated
	d    *Dialer
	host string
	addr string

	// offered: the server offers TLS; useTLS: it is used; verified: the
	// certificate was checked.
	offered, useTLS, verified bool
	// authDone is set once the server ended authentication (OK or
	// error): from then on Read and Write pass bytes through.
	authDone atomic.Bool
	first    bool   // the driver's next packet is its handshake response
	shift    byte   // added to the driver's sequence numbers (1 after TLS)
	seq      byte   // the sequence number the driver expects next
	in       []byte // server bytes not yet parsed
	out      []byte // bytes ready for the driver
	wbuf     []byte // driver bytes not yet a whole packet
	failed   bool   // a refusal was queued: then EOF
}

func newConn(ctx context.Context, raw net.Conn, d *Dialer, host, addr string) (*conn, error) {
	c := &conn{raw: raw, c: raw, d: d, host: host, addr: addr, first: true}
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetReadDeadline(dl)
	} else {
		_ = raw.SetReadDeadline(time.Now().Add(30 * time.Second))
	}
	greeting, err := c.readPacket()
	_ = raw.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, fmt.Errorf("reading the greeting of %s: %w", addr, err)
	}
	c.out = greeting
	payload := greeting[headerLen:]
	if len(payload) == 0 || payload[0] == 0xff {
		// The server refused at once (too many connections, host
		// blocked): the driver reports its error.
		c.authDone.Store(true)
		return c, nil
	}
	caps, ok := greetingCaps(payload)
	if !ok {
		return nil, fmt.Errorf("reading the greeting of %s: malformed packet", addr)
	}
	c.offered = caps&clientSSL != 0
	switch d.cfg.Mode {
	case Disabled:
	case Preferred:
		c.useTLS = c.offered
	default:
		if !c.offered {
			return nil, fmt.Errorf("mysql-tls=%s: the server %s does not offer TLS (configure ssl_cert and ssl_key on it, or set mysql-tls=preferred or disabled)", d.cfg.Mode, addr)
		}
		c.useTLS = true
	}
	c.verified = c.useTLS && d.cfg.Mode.Verified()
	return c, nil
}

// greetingCaps returns the lower capability flags of a greeting payload.
func greetingCaps(p []byte) (uint16, bool) {
	// protocol version, server version NUL-terminated, connection id (4),
	// auth data part 1 (8), filler (1), capabilities (2).
	i := bytes.IndexByte(p[1:], 0)
	if i < 0 {
		return 0, false
	}
	pos := 1 + i + 1 + 4 + 8 + 1
	if len(p) < pos+2 {
		return 0, false
	}
	return binary.LittleEndian.Uint16(p[pos:]), true
}

// readPacket reads one whole packet (header and payload) from c.c.
func (c *conn) readPacket() ([]byte, error) {
	for {
		if p, ok := c.nextPacket(); ok {
			return p, nil
		}
		buf := make([]byte, 4096)
		n, err := c.c.Read(buf)
		c.in = append(c.in, buf[:n]...)
		if err != nil && n == 0 {
			return nil, err
		}
	}
}

// nextPacket takes a whole packet from c.in.
func (c *conn) nextPacket() ([]byte, bool) {
	if len(c.in) < headerLen {
		return nil, false
	}
	n := headerLen + (int(c.in[0]) | int(c.in[1])<<8 | int(c.in[2])<<16)
	if len(c.in) < n {
		return nil, false
	}
	p := append([]byte(nil), c.in[:n]...)
	c.in = c.in[n:]
	return p, true
}

func (c *conn) Read(b []byte) (int, error) {
	for len(c.out) == 0 {
		if c.failed {
			return 0, io.EOF
		}
		if c.authDone.Load() {
			if len(c.in) > 0 {
				n := copy(b, c.in)
				c.in = c.in[n:]
				return n, nil
			}
			return c.c.Read(b)
		}
		p, err := c.readPacket()
		if err != nil {
			return 0, err
		}
		c.fromServer(p)
	}
	n := copy(b, c.out)
	c.out = c.out[n:]
	return n, nil
}

// fromServer inspects a packet of the authentication exchange and queues
// it (or a refusal in its place) for the driver.
func (c *conn) fromServer(p []byte) {
	p[3] -= c.shift
	c.seq = p[3] + 1
	payload := p[headerLen:]
	allowed := c.verified || c.d.cfg.AllowInsecureAuth
	switch {
	case len(payload) == 0:
	case payload[0] == 0x00:
		c.authDone.Store(true)
	case payload[0] == 0xff:
		c.authDone.Store(true)
		if c.useTLS || len(payload) < 3 {
			break
		}
		msg, code := string(errMessage(payload)), binary.LittleEndian.Uint16(payload[1:])
		switch {
		case code == erSecureTransportRequired || strings.Contains(msg, "secure transport"):
			// MySQL says why.
			c.refuse(p[3], code, fmt.Sprintf("%s (mysql-tls=%s: the server %s requires TLS; set mysql-tls=verify_identity with mysql-tls-ca-file)", msg, c.d.cfg.Mode, c.addr))
			return
		case code == erAccessDenied && c.offered:
			// MariaDB refuses a plain connection under
			// require_secure_transport=ON as a wrong password.
			c.refuse(p[3], code, fmt.Sprintf("%s (mysql-tls=%s: the server %s offers TLS; if it requires it (require_secure_transport=ON, or a user created with REQUIRE SSL), set mysql-tls=verify_identity with mysql-tls-ca-file)", msg, c.d.cfg.Mode, c.addr))
			return
		}
	case payload[0] == 0xfe && len(payload) > 1 && !allowed:
		plugin, _, _ := bytes.Cut(payload[1:], []byte{0})
		switch string(plugin) {
		case "mysql_clear_password", "dialog":
			c.refuse(p[3], codeAuth, fmt.Sprintf("the server %s asked for the password in clear (%s) over %s; refused: use mysql-tls=verify_identity (or verify_ca), or allow it with mysql-allow-insecure-auth", c.addr, plugin, c.what()))
			return
		}
	case payload[0] == 0x01 && len(payload) == 2 && payload[1] == 0x04 && !allowed:
		// caching_sha2_password's full authentication: over what the
		// driver takes for a plain connection it asks for the server's RSA
		// key next. Refused here, where both drivers read an error packet.
		c.refuse(p[3], codeAuth, fmt.Sprintf("the server %s asked for caching_sha2_password's full authentication, which sends the password encrypted with an RSA key the server sends, over %s, and nothing vouches for that key; refused: use mysql-tls=verify_identity (or verify_ca), or allow it with mysql-allow-insecure-auth", c.addr, c.what()))
		return
	case payload[0] == 0x01 && bytes.HasPrefix(payload[1:], []byte("-----BEGIN")) && !allowed:
		c.refuse(p[3], codeAuth, fmt.Sprintf("the server %s sent an RSA public key to encrypt the password with (sha256_password or caching_sha2_password full authentication) over %s, and nothing vouches for that key; refused: use mysql-tls=verify_identity (or verify_ca), or allow it with mysql-allow-insecure-auth", c.addr, c.what()))
		return
	}
	c.out = append(c.out, p...)
}

// what describes the connection for an error.
func (c *conn) what() string {
	if c.useTLS {
		return fmt.Sprintf("TLS whose certificate is not verified (mysql-tls=%s)", c.d.cfg.Mode)
	}
	return fmt.Sprintf("a connection without TLS (mysql-tls=%s)", c.d.cfg.Mode)
}

// errMessage is the message of an error packet's payload.
func errMessage(p []byte) []byte {
	m := p[3:]
	if len(m) >= 6 && m[0] == '#' {
		m = m[6:]
	}
	return m
}

// refuse queues an error packet with sequence number seq for the driver
// and closes the connection to the server.
func (c *conn) refuse(seq byte, code uint16, msg string) {
	payload := make([]byte, 0, 9+len(msg))
	payload = append(payload, 0xff)
	payload = binary.LittleEndian.AppendUint16(payload, code)
	payload = append(payload, "#HY000"...)
	payload = append(payload, msg...)
	c.out = append(c.out, byte(len(payload)), byte(len(payload)>>8), byte(len(payload)>>16), seq)
	c.out = append(c.out, payload...)
	c.failed = true
	c.authDone.Store(true)
	_ = c.raw.Close()
}

func (c *conn) Write(b []byte) (int, error) {
	if c.failed {
		return 0, net.ErrClosed
	}
	if c.authDone.Load() {
		return c.c.Write(b)
	}
	c.wbuf = append(c.wbuf, b...)
	for len(c.wbuf) >= headerLen {
		n := headerLen + (int(c.wbuf[0]) | int(c.wbuf[1])<<8 | int(c.wbuf[2])<<16)
		if len(c.wbuf) < n {
			break
		}
		p := append([]byte(nil), c.wbuf[:n]...)
		c.wbuf = c.wbuf[n:]
		if err := c.toServer(p); err != nil {
			return 0, err
		}
		if c.failed {
			break
		}
	}
	return len(b), nil
}

// toServer sends a packet of the driver's, after the TLS handshake when
// it is the first and TLS is to be used.
func (c *conn) toServer(p []byte) error {
	c.seq = p[3] + 1
	if c.first {
		c.first = false
		if c.useTLS {
			if len(p) < headerLen+sslRequestLen || binary.LittleEndian.Uint32(p[headerLen:])&clientProtocol41 == 0 {
				c.refuse(c.seq, codeTLS, "mysql-tls: the driver's handshake is not protocol 4.1")
				return nil
			}
			p[headerLen+1] |= clientSSL >> 8
			req := make([]byte, 0, headerLen+sslRequestLen)
			req = append(req, sslRequestLen, 0, 0, p[3])
			req = append(req, p[headerLen:headerLen+sslRequestLen]...)
			if _, err := c.raw.Write(req); err != nil {
				return err
			}
			tc := tls.Client(c.raw, c.d.tlsConfig(c.host))
			_ = c.raw.SetDeadline(time.Now().Add(handshakeTimeout))
			err := tc.Handshake()
			_ = c.raw.SetDeadline(time.Time{})
			if err != nil {
				c.refuse(c.seq, codeTLS, c.explainTLS(err))
				return nil
			}
			c.c, c.shift = tc, 1
		}
	}
	p[3] += c.shift
	_, err := c.c.Write(p)
	return err
}

// explainTLS names the setting behind a failed TLS handshake.
func (c *conn) explainTLS(err error) string {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verr     *tls.CertificateVerificationError
	)
	hint := "check mysql-tls, mysql-tls-cert-file and mysql-tls-key-file"
	switch {
	case errors.As(err, &unknown):
		hint = "the server's certificate is not signed by a CA of mysql-tls-ca-file (or of the system roots when it is empty)"
	case errors.As(err, &hostname):
		hint = "the server's certificate does not name the server: set mysql-tls-server-name to a name it carries"
		if c.d.cfg.ServerName != "" {
			hint = fmt.Sprintf("the server's certificate does not name mysql-tls-server-name %q", c.d.cfg.ServerName)
		}
	case errors.As(err, &invalid):
		hint = "the server's certificate is not valid (expired, or not for a server); check it and mysql-tls-ca-file"
	case errors.As(err, &verr):
		hint = "the server's certificate failed verification; check mysql-tls-ca-file"
	}
	return fmt.Sprintf("mysql-tls=%s: TLS handshake with %s failed: %v (%s)", c.d.cfg.Mode, c.addr, err, strings.TrimSpace(hint))
}

func (c *conn) Close() error                       { return c.raw.Close() }
func (c *conn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *conn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *conn) SetDeadline(t time.Time) error      { return c.raw.SetDeadline(t) }
func (c *conn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }
