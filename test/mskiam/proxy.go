package mskiam

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Proxy is the IAM check in front of a real Kafka broker (the stack's):
// each client connection is TLS, its SaslHandshake and SaslAuthenticate
// are answered here exactly as every Check answers them (Verify), and every
// other request of an authenticated connection goes to the broker over a
// plaintext connection of its own, with the answer relayed back. The
// broker's own address never reaches the client: Metadata, FindCoordinator
// and DescribeCluster answers name the proxy instead, so every connection
// a client opens (to the group and transaction coordinators too) is
// checked. One broker behind one proxy: the stack's single node.
type Proxy struct {
	b        *Check
	ln       net.Listener
	upstream string
	tls      *tls.Config
	host     string
	port     int32

	mu    sync.Mutex
	conns []net.Conn
}

// StartProxy listens on 127.0.0.1 with TLS from tlsCfg in front of the
// broker at upstream (host:port), and stops when t ends. cfg.Topics is
// ignored: the topics are the broker's.
func StartProxy(t testing.TB, cfg Config, tlsCfg *tls.Config, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mskiam proxy: %v", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	n, _ := strconv.Atoi(port)
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	p := &Proxy{b: NewCheck(cfg), ln: ln, upstream: upstream, tls: tlsCfg, host: host, port: int32(n)}
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return net.JoinHostPort(p.host, strconv.Itoa(int(p.port))) }

// Auths returns the SaslAuthenticate exchanges so far, in order.
func (p *Proxy) Auths() []Auth { return p.b.Auths() }

// Admitted returns the admitted exchanges so far.
func (p *Proxy) Admitted() []Auth { return p.b.Admitted() }

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

func (p *Proxy) accept() {
	for {
		raw, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(raw)
		go p.serve(raw)
	}
}

// keyVersion is what an answer is decoded by: the request's key and
// version, by correlation id.
type keyVersion struct{ key, version int16 }

func (p *Proxy) serve(raw net.Conn) {
	defer raw.Close()
	c := p.b.Server(raw, p.tls).(*conn)
	up, err := net.DialTimeout("tcp", p.upstream, 10*time.Second)
	if err != nil {
		return
	}
	p.track(up)
	defer up.Close()
	var mu sync.Mutex
	inFlight := map[int32]keyVersion{}
	go func() {
		defer up.Close()
		defer raw.Close()
		for {
			frame, err := c.next()
			if err != nil {
				return
			}
			corr := int32(binary.BigEndian.Uint32(frame[8:]))
			mu.Lock()
			inFlight[corr] = keyVersion{int16(binary.BigEndian.Uint16(frame[4:])), int16(binary.BigEndian.Uint16(frame[6:]))}
			mu.Unlock()
			if _, err := up.Write(frame); err != nil {
				return
			}
		}
	}()
	for {
		frame, err := readFrame(up)
		if err != nil || len(frame) < 8 {
			return
		}
		corr := int32(binary.BigEndian.Uint32(frame[4:]))
		mu.Lock()
		kv, ok := inFlight[corr]
		delete(inFlight, corr)
		mu.Unlock()
		if ok {
			if frame, err = p.rewrite(kv, frame); err != nil {
				return
			}
		}
		if _, err := c.Write(frame); err != nil {
			return
		}
	}
}

// rewrite points the broker addresses of an answer at the proxy.
func (p *Proxy) rewrite(kv keyVersion, frame []byte) ([]byte, error) {
	switch kmsg.Key(kv.key) {
	case kmsg.Metadata, kmsg.FindCoordinator, kmsg.DescribeCluster:
	default:
		return frame, nil
	}
	resp := kmsg.ResponseForKey(kv.key)
	resp.SetVersion(kv.version)
	body := frame[8:]
	var header []byte
	if resp.IsFlexible() {
		n, err := tagsLen(body)
		if err != nil {
			return nil, err
		}
		header, body = body[:n], body[n:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("mskiam proxy: decoding answer key %d v%d: %w", kv.key, kv.version, err)
	}
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			r.Brokers[i].Host, r.Brokers[i].Port = p.host, p.port
		}
	case *kmsg.FindCoordinatorResponse:
		if r.Host != "" {
			r.Host, r.Port = p.host, p.port
		}
		for i := range r.Coordinators {
			if r.Coordinators[i].Host != "" {
				r.Coordinators[i].Host, r.Coordinators[i].Port = p.host, p.port
			}
		}
	case *kmsg.DescribeClusterResponse:
		for i := range r.Brokers {
			r.Brokers[i].Host, r.Brokers[i].Port = p.host, p.port
		}
	}
	out := append([]byte{0, 0, 0, 0}, frame[4:8]...)
	out = append(out, header...)
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out, nil
}

// tagsLen is the length of the tagged-field section at the start of b (a
// flexible response header's).
func tagsLen(b []byte) (int, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, errors.New("mskiam proxy: bad tagged fields")
	}
	off := n
	for range count {
		_, n := binary.Uvarint(b[off:])
		if n <= 0 {
			return 0, errors.New("mskiam proxy: bad tagged field")
		}
		off += n
		size, n := binary.Uvarint(b[off:])
		if n <= 0 || uint64(len(b)-off-n) < size {
			return 0, errors.New("mskiam proxy: bad tagged field")
		}
		off += n + int(size)
	}
	return off, nil
}

// ListenAddrs is Addr as a seed broker list.
func (p *Proxy) ListenAddrs() []string { return []string{p.Addr()} }
