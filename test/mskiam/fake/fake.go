// Package fake is the IAM check of package mskiam in front of kfake, an
// in-process broker: for unit tests only. Integration and end-to-end tests
// put the same check in front of the stack's real Kafka (mskiam.Proxy).
package fake

import (
	"crypto/tls"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/binlake/binlake/test/mskiam"
)

// Broker is a kfake cluster of one broker behind the IAM check.
type Broker struct {
	*kfake.Cluster
	*mskiam.Check
}

// Start starts the broker with TLS from tlsCfg and stops it when t ends.
// The broker advertises cfg.Host (default 127.0.0.1) in its metadata.
func Start(t testing.TB, cfg mskiam.Config, tlsCfg *tls.Config) *Broker {
	t.Helper()
	b := &Broker{Check: mskiam.NewCheck(cfg)}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err != nil {
				return nil, err
			}
			return &listener{Listener: ln, check: b.Check, tls: tlsCfg}, nil
		}),
	}
	if len(cfg.Topics) > 0 {
		opts = append(opts, kfake.SeedTopics(1, cfg.Topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("starting the MSK IAM broker: %v", err)
	}
	t.Cleanup(c.Close)
	b.Cluster = c
	return b
}

// listener puts the check on every connection. Its address names the
// check's Host, which kfake advertises in metadata.
type listener struct {
	net.Listener
	check *mskiam.Check
	tls   *tls.Config
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.check.Server(c, l.tls), nil
}

type hostAddr struct {
	net.Addr
	s string
}

func (a hostAddr) String() string { return a.s }

func (l *listener) Addr() net.Addr {
	if l.check.Host() == "" {
		return l.Listener.Addr()
	}
	_, port, _ := net.SplitHostPort(l.Listener.Addr().String())
	return hostAddr{l.Listener.Addr(), net.JoinHostPort(l.check.Host(), port)}
}
