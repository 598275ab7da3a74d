package mysqltls

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"database/sql"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-sql-driver/mysql"
)

const password = "s3cret-password"

// fakeServer is a man in the middle as far as the client can tell: it
// greets with plugin, answers the client's handshake with the packets of
// script (each sent after reading one client packet), and records every
// byte the client sent.
type fakeServer struct {
	ln       net.Listener
	received chan []byte
}

func startFake(t *testing.T, plugin string, script ...[]byte) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{ln: ln, received: make(chan []byte, 1)}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		var got bytes.Buffer
		defer func() { f.received <- got.Bytes() }()
		seq := byte(0)
		send := func(payload []byte) {
			h := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}
			_, _ = c.Write(append(h, payload...))
			seq++
		}
		read := func() bool {
			h := make([]byte, 4)
			if _, err := io.ReadFull(c, h); err != nil {
				return false
			}
			p := make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16)
			if _, err := io.ReadFull(c, p); err != nil {
				return false
			}
			got.Write(p)
			seq = h[3] + 1
			return true
		}
		send(greeting(plugin))
		for _, p := range script {
			if !read() {
				return
			}
			send(p)
		}
		read()
	}()
	return f
}

func greeting(plugin string) []byte {
	var p []byte
	p = append(p, 10)
	p = append(p, "5.5.5-10.11.6-MariaDB\x00"...)
	p = append(p, 1, 0, 0, 0)
	p = append(p, "abcdefgh"...)
	p = append(p, 0)
	p = append(p, 0x0f, 0xa2) // long password, found rows, long flag, with db, 4.1, transactions, secure connection
	p = append(p, 33, 2, 0)
	p = append(p, 0x3a, 0x00) // multi results, plugin auth, connect attrs, lenenc auth data
	p = append(p, 21)
	p = append(p, make([]byte, 10)...)
	p = append(p, "ijklmnopqrst\x00"...)
	p = append(p, plugin...)
	return append(p, 0)
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

// sawPassword reports whether the password reached the fake server in a
// form it can read (clear text); an RSA-encrypted one with the fake's key
// counts too, which the caller checks by asking for one at all.
func (f *fakeServer) got(t *testing.T) []byte {
	t.Helper()
	select {
	case b := <-f.received:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("the fake server did not finish")
		return nil
	}
}

func dialer(t *testing.T, cfg Config) *Dialer {
	t.Helper()
	d, err := NewDialer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestClearPasswordRefused: a server (or a man in the middle) that asks
// go-mysql, the binlog connection's client, to switch to
// mysql_clear_password gets the password in clear without the guard, and
// nothing with it.
func TestClearPasswordRefused(t *testing.T) {
	switchClear := append([]byte{0xfe}, "mysql_clear_password\x00"...)
	connect := func(dial client.Dialer, addr string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		c, err := client.ConnectWithDialer(ctx, "tcp", addr, "binlake_capture", password, "", dial)
		if err == nil {
			c.Close()
		}
		return err
	}
	t.Run("unguarded", func(t *testing.T) {
		f := startFake(t, "mysql_native_password", switchClear)
		_ = connect((&net.Dialer{}).DialContext, f.addr())
		if !bytes.Contains(f.got(t), []byte(password)) {
			t.Fatal("the unguarded client did not send the password in clear: the fake server is wrong")
		}
	})
	for _, mode := range []Mode{Disabled, Preferred} {
		t.Run(string(mode), func(t *testing.T) {
			f := startFake(t, "mysql_native_password", switchClear)
			err := connect(dialer(t, Config{Mode: mode}).DialContext, f.addr())
			if err == nil || !strings.Contains(err.Error(), "mysql-allow-insecure-auth") {
				t.Fatalf("connect: %v, want a refusal naming mysql-allow-insecure-auth", err)
			}
			if got := f.got(t); bytes.Contains(got, []byte(password)) {
				t.Fatalf("the password reached the server: %q", got)
			}
		})
	}
	t.Run("allowed", func(t *testing.T) {
		f := startFake(t, "mysql_native_password", switchClear)
		_ = connect(dialer(t, Config{Mode: Disabled, AllowInsecureAuth: true}).DialContext, f.addr())
		if !bytes.Contains(f.got(t), []byte(password)) {
			t.Fatal("with mysql-allow-insecure-auth the clear password was not sent")
		}
	})
}

// TestServerKeyRefused: caching_sha2_password's full authentication
// without verified TLS makes go-sql-driver (the SQL connections) encrypt
// the password with an RSA key the server sends, which a man in the
// middle would have made: the guard refuses the key.
func TestServerKeyRefused(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	key := append([]byte{0x01}, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})...)
	fullAuth := []byte{0x01, 0x04}
	connect := func(d *Dialer, addr string) error {
		cfg := mysql.NewConfig()
		cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", addr, "binlake_capture", password
		if d != nil {
			cfg.DialFunc = d.DialContext
		}
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(conn)
		defer db.Close()
		db.SetMaxIdleConns(0)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		c, err := db.Conn(ctx)
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	t.Run("unguarded", func(t *testing.T) {
		f := startFake(t, "caching_sha2_password", fullAuth, key)
		_ = connect(nil, f.addr())
		// The handshake response, the key request (0x02) and 256 bytes of
		// password encrypted with the fake's key.
		if got := f.got(t); len(got) < 256 {
			t.Fatalf("the unguarded driver sent %d bytes: the fake server is wrong", len(got))
		}
	})
	f := startFake(t, "caching_sha2_password", fullAuth, key)
	err = connect(dialer(t, Config{Mode: Preferred}), f.addr())
	t.Log(err)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || !strings.Contains(me.Message, "RSA key") || !strings.Contains(me.Message, "mysql-tls=verify_identity") {
		t.Fatalf("connect: %v, want a refusal of the key naming mysql-tls", err)
	}
	if got := f.got(t); len(got) >= 256 {
		t.Fatalf("the driver sent %d bytes: the encrypted password reached the server", len(got))
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{
		"disabled": Disabled, "preferred": Preferred, "REQUIRED": Required, "verify_ca": VerifyCA,
		"verify-ca": VerifyCA, "verify_identity": VerifyIdentity, "verify-full": VerifyIdentity,
	} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("true"); !errors.Is(err, ErrConfig) {
		t.Errorf("ParseMode(true): %v, want ErrConfig", err)
	}
	for _, c := range []Config{
		{Mode: Disabled, CAFile: "ca.pem"},
		{Mode: Required, ServerName: "db"},
		{Mode: VerifyIdentity, CertFile: "c.pem"},
	} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: Validate() = %v, want ErrConfig", c, err)
		}
	}
}
