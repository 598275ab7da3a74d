// Package mskiam is a broker-side check of Amazon MSK's IAM access control
// (the AWS_MSK_IAM SASL mechanism) for tests: a Check that terminates TLS
// and answers SaslHandshake and SaslAuthenticate itself, verifying the
// signed payload the way MSK does, before any other request reaches the
// broker. Proxy puts it in front of a broker: the stack's real Kafka in
// integration tests, a kfake broker a unit test starts itself.
//
// The exchange (AWS's aws-msk-iam-auth README and its signer, and franz-go's
// pkg/sasl/aws, which binlake uses): the client sends SaslHandshake naming
// AWS_MSK_IAM, then one SaslAuthenticate whose bytes are a JSON object of
// lower-cased keys: version "2020_10_22", host, user-agent, action
// "kafka-cluster:Connect", and the query parameters of a SigV4 presigned
// URL for GET / on that host (x-amz-algorithm AWS4-HMAC-SHA256,
// x-amz-credential <key>/<date>/<region>/kafka-cluster/aws4_request,
// x-amz-date, x-amz-expires, x-amz-signedheaders "host", optionally
// x-amz-security-token, and x-amz-signature). Verify recomputes the
// signature from the key pair it knows (its own SigV4 code, independent of
// the client's) and checks the host (the name the client dialled), the
// action, the scope (region, service, date), the clock skew and expiry.
//
// A refusal is answered as a broker does: SASL_AUTHENTICATION_FAILED with a
// message, then the connection is closed. A success answers a non-empty
// JSON and a session lifetime (KIP-368): the shorter of SessionLifetime and
// the time left before the signature expires, after which franz-go
// re-authenticates on the same connection with a fresh signature.
//
// The broker advertises Host in its metadata. MSK names carry the region
// (b-1.<cluster>.kafka.<region>.amazonaws.com), which does not resolve
// here: a test that uses such a name dials it through its own kgo.Dialer.
// With Host empty the broker advertises 127.0.0.1 and the client must take
// the region from AWS_REGION (what binlake does for brokers without an AWS
// name), which lets the binaries' own code paths run unchanged.
package mskiam

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Mechanism is the SASL mechanism name MSK's IAM listener takes.
const Mechanism = "AWS_MSK_IAM"

// Action is the IAM action the signed payload names.
const Action = "kafka-cluster:Connect"

// Service is the SigV4 signing name of MSK's IAM authentication.
const Service = "kafka-cluster"

// MaxSkew is how far x-amz-date may be ahead of the broker's clock.
const MaxSkew = 5 * time.Minute

// Config is the broker's view of the one IAM principal it admits.
type Config struct {
	AccessKey, SecretKey string
	// SessionToken, when set, must be the payload's x-amz-security-token.
	SessionToken string
	// Region is the region the broker is in (the signing scope).
	Region string
	// Host is the name the broker advertises and the payload's host must
	// be (default 127.0.0.1).
	Host string
	// SessionLifetime bounds each authenticated session (default: until
	// the signature expires).
	SessionLifetime time.Duration
	// Now is the broker's clock (default time.Now).
	Now func() time.Time
	// Topics are created at start, one partition each.
	Topics []string
}

// Auth is one SaslAuthenticate the broker answered.
type Auth struct {
	Host, AccessKey, Date, Signature, UserAgent string
	// Err is nil for an admitted exchange, else the refusal.
	Err error
}

// Check is the broker side of the IAM sign-in: the one principal it
// admits (Config) and a record of every exchange it answered. Server puts
// it on a connection; a Proxy serves the connections.
type Check struct {
	cfg Config

	mu    sync.Mutex
	auths []Auth
}

// NewCheck returns the check of cfg (Now defaults to time.Now).
func NewCheck(cfg Config) *Check {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Check{cfg: cfg}
}

// Host is the name clients must dial and sign for ("" for 127.0.0.1).
func (b *Check) Host() string { return b.cfg.Host }

// Server terminates TLS from tlsCfg on raw and answers its SASL requests;
// reading it yields the connection's other requests, ApiVersions at any
// time and the rest only once authenticated.
func (b *Check) Server(raw net.Conn, tlsCfg *tls.Config) net.Conn {
	return &conn{Conn: tls.Server(raw, tlsCfg), b: b}
}

// Auths returns the SaslAuthenticate exchanges so far, in order.
func (b *Check) Auths() []Auth {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Auth(nil), b.auths...)
}

// Admitted returns the admitted exchanges so far.
func (b *Check) Admitted() []Auth {
	var ok []Auth
	for _, a := range b.Auths() {
		if a.Err == nil {
			ok = append(ok, a)
		}
	}
	return ok
}

// Loopback dials every broker name at 127.0.0.1 over TLS, the port kept:
// MSK's names do not resolve here (franz-go takes either a Dialer or a TLS
// configuration, so the dialer does TLS itself).
func Loopback(tc *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := tls.Dialer{Config: tc}
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
	}
}

// conn hands the server (kfake, or the proxy's relay) the requests of an
// authenticated connection and answers the SASL requests itself. franz-go (like Kafka's clients) sends the SASL
// requests only with no other request in flight on the connection, so the
// answers cannot interleave with the server's.
type conn struct {
	net.Conn
	b       *Check
	wmu     sync.Mutex
	pending []byte // a request frame for the server, partly read
	authed  bool
	mech    bool // the handshake named AWS_MSK_IAM
}

func (c *conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.Conn.Write(p)
}

func (c *conn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		frame, err := c.next()
		if err != nil {
			return 0, err
		}
		c.pending = frame
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// next answers the SASL requests of the connection and returns its next
// other request frame (size prefix included): ApiVersions at any time,
// anything else only once authenticated.
func (c *conn) next() ([]byte, error) {
	for {
		frame, err := readFrame(c.Conn)
		if err != nil {
			return nil, err
		}
		if len(frame) < 12 {
			return nil, errors.New("mskiam: short request")
		}
		key := int16(binary.BigEndian.Uint16(frame[4:]))
		switch kmsg.Key(key) {
		case kmsg.SASLHandshake, kmsg.SASLAuthenticate:
			if err := c.sasl(frame); err != nil {
				c.Conn.Close()
				return nil, err
			}
		case kmsg.ApiVersions:
			return frame, nil
		default:
			if !c.authed {
				// A broker closes a connection that skips authentication.
				c.Conn.Close()
				return nil, fmt.Errorf("mskiam: request key %d before SASL authentication", key)
			}
			return frame, nil
		}
	}
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<26 {
		return nil, fmt.Errorf("mskiam: request of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// sasl answers one SaslHandshake or SaslAuthenticate frame; an error closes
// the connection (after the answer, for a refused authentication).
func (c *conn) sasl(frame []byte) error {
	key := int16(binary.BigEndian.Uint16(frame[4:]))
	version := int16(binary.BigEndian.Uint16(frame[6:]))
	corr := int32(binary.BigEndian.Uint32(frame[8:]))
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	body, err := skipHeader(frame[12:], req.IsFlexible())
	if err != nil {
		return err
	}
	if err := req.ReadFrom(body); err != nil {
		return fmt.Errorf("mskiam: decoding request key %d: %w", key, err)
	}
	var refused error
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		hr := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
		hr.SupportedMechanisms = []string{Mechanism}
		if r.Mechanism != Mechanism {
			hr.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			refused = fmt.Errorf("mskiam: mechanism %q", r.Mechanism)
		}
		c.mech = refused == nil
		resp = hr
	case *kmsg.SASLAuthenticateRequest:
		ar := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp = ar
		if !c.mech {
			ar.ErrorCode = kerr.IllegalSaslState.Code
			refused = errors.New("mskiam: SaslAuthenticate without a handshake")
			break
		}
		c.mech = false
		a, expires := c.b.Verify(r.SASLAuthBytes)
		c.b.mu.Lock()
		c.b.auths = append(c.b.auths, a)
		c.b.mu.Unlock()
		if a.Err != nil {
			ar.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := a.Err.Error()
			ar.ErrorMessage = &msg
			refused = a.Err
			break
		}
		c.authed = true
		life := expires.Sub(c.b.cfg.Now())
		if l := c.b.cfg.SessionLifetime; l > 0 && l < life {
			life = l
		}
		ar.SessionLifetimeMillis = life.Milliseconds()
		ar.SASLAuthBytes = []byte(`{"version":"2020_10_22","request-id":"mskiam-` + strconv.Itoa(len(c.b.Auths())) + `"}`)
	}
	out := []byte{0, 0, 0, 0, 0, 0, 0, 0}
	if resp.IsFlexible() {
		out = append(out, 0) // no tagged fields in the response header
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	binary.BigEndian.PutUint32(out[4:], uint32(corr))
	if _, err := c.Write(out); err != nil {
		return err
	}
	return refused
}

// skipHeader skips a request header's client id and, in flexible versions,
// its tagged fields.
func skipHeader(b []byte, flexible bool) ([]byte, error) {
	if len(b) < 2 {
		return nil, errors.New("mskiam: short header")
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n > 0 {
		if int(n) > len(b) {
			return nil, errors.New("mskiam: short client id")
		}
		b = b[n:]
	}
	if !flexible {
		return b, nil
	}
	tags, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("mskiam: bad tagged fields")
	}
	b = b[k:]
	for range tags {
		_, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errors.New("mskiam: bad tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errors.New("mskiam: bad tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// Verify checks one AWS_MSK_IAM payload as MSK does, returning what it
// holds (Err set on a refusal) and when its signature expires.
func (b *Check) Verify(payload []byte) (Auth, time.Time) {
	var m map[string]string
	if err := json.Unmarshal(payload, &m); err != nil {
		return Auth{Err: fmt.Errorf("the payload is not a JSON object of strings: %w", err)}, time.Time{}
	}
	a := Auth{Host: m["host"], Date: m["x-amz-date"], Signature: m["x-amz-signature"], UserAgent: m["user-agent"]}
	exp, err := b.verify(m, &a)
	a.Err = err
	return a, exp
}

func (b *Check) verify(m map[string]string, a *Auth) (time.Time, error) {
	cfg := b.cfg
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	switch {
	case m["version"] != "2020_10_22":
		return time.Time{}, fmt.Errorf("version %q, want 2020_10_22", m["version"])
	case m["action"] != Action:
		return time.Time{}, fmt.Errorf("action %q, want %s", m["action"], Action)
	case m["host"] != host:
		return time.Time{}, fmt.Errorf("signed for host %q, this broker is %q", m["host"], host)
	case m["x-amz-algorithm"] != "AWS4-HMAC-SHA256":
		return time.Time{}, fmt.Errorf("algorithm %q", m["x-amz-algorithm"])
	case m["x-amz-signedheaders"] != "host":
		return time.Time{}, fmt.Errorf("signed headers %q, want host", m["x-amz-signedheaders"])
	case m["x-amz-signature"] == "":
		return time.Time{}, errors.New("no signature")
	}
	scope := strings.Split(m["x-amz-credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return time.Time{}, fmt.Errorf("credential %q is not <key>/<date>/<region>/<service>/aws4_request", m["x-amz-credential"])
	}
	a.AccessKey = scope[0]
	signed, err := time.Parse("20060102T150405Z", m["x-amz-date"])
	if err != nil {
		return time.Time{}, fmt.Errorf("x-amz-date %q: %w", m["x-amz-date"], err)
	}
	expires, err := strconv.Atoi(m["x-amz-expires"])
	if err != nil || expires <= 0 || expires > 7*24*3600 {
		return time.Time{}, fmt.Errorf("x-amz-expires %q", m["x-amz-expires"])
	}
	until := signed.Add(time.Duration(expires) * time.Second)
	now := cfg.Now()
	switch {
	case scope[0] != cfg.AccessKey:
		return time.Time{}, fmt.Errorf("the access key %q is not known", scope[0])
	case scope[1] != m["x-amz-date"][:8]:
		return time.Time{}, fmt.Errorf("credential date %s differs from x-amz-date %s", scope[1], m["x-amz-date"])
	case scope[2] != cfg.Region:
		return time.Time{}, fmt.Errorf("credential scoped to region %q, this cluster is in %q", scope[2], cfg.Region)
	case scope[3] != Service:
		return time.Time{}, fmt.Errorf("credential scoped to service %q, want %s", scope[3], Service)
	case signed.After(now.Add(MaxSkew)):
		return time.Time{}, fmt.Errorf("signed at %s, in the future of the broker's %s", signed.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case !now.Before(until):
		return time.Time{}, fmt.Errorf("the signature expired at %s (signed %s for %ds)", until.Format(time.RFC3339), signed.Format(time.RFC3339), expires)
	case cfg.SessionToken != "" && m["x-amz-security-token"] != cfg.SessionToken:
		return time.Time{}, errors.New("the security token is not valid")
	}
	want := Sign(cfg.SecretKey, m)
	if subtle.ConstantTimeCompare([]byte(want), []byte(m["x-amz-signature"])) != 1 {
		return time.Time{}, errors.New("the request signature does not match the one calculated from the secret key")
	}
	return until, nil
}

// queryNames are the signed query parameters as the presigned URL spells
// them, keyed by their lower-cased payload names.
var queryNames = map[string]string{
	"action":               "Action",
	"x-amz-algorithm":      "X-Amz-Algorithm",
	"x-amz-credential":     "X-Amz-Credential",
	"x-amz-date":           "X-Amz-Date",
	"x-amz-expires":        "X-Amz-Expires",
	"x-amz-security-token": "X-Amz-Security-Token",
	"x-amz-signedheaders":  "X-Amz-SignedHeaders",
}

// Sign computes the SigV4 signature of payload m (whose x-amz-signature is
// ignored) with secret: the presigned GET / on m["host"], the signed query
// parameters in canonical order, the host the one signed header, an empty
// body; the key derived from date, region and service of the credential.
func Sign(secret string, m map[string]string) string {
	var params []string
	for k, name := range queryNames {
		if v, ok := m[k]; ok {
			params = append(params, uriEncode(name)+"="+uriEncode(v))
		}
	}
	sort.Strings(params)
	empty := sha256.Sum256(nil)
	canonical := "GET\n/\n" + strings.Join(params, "&") + "\nhost:" + m["host"] + "\n\nhost\n" + hex.EncodeToString(empty[:])
	scope := strings.SplitN(m["x-amz-credential"], "/", 2)
	scopeRest := ""
	if len(scope) == 2 {
		scopeRest = scope[1]
	}
	ch := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + m["x-amz-date"] + "\n" + scopeRest + "\n" + hex.EncodeToString(ch[:])
	key := []byte("AWS4" + secret)
	for _, part := range strings.Split(scopeRest, "/") {
		key = hmacSHA256(key, part)
	}
	return hex.EncodeToString(hmacSHA256(key, toSign))
}

func hmacSHA256(key []byte, s string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(s))
	return h.Sum(nil)
}

// uriEncode is SigV4's encoding: unreserved characters as they are, every
// other byte %XX in upper case.
func uriEncode(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	return sb.String()
}
