// Package source dials the MySQL/MariaDB server for every connection
// capture makes: the SQL pools of the stream, the snapshot and capture
// status, and the binlog connections. They all go through one
// mysqltls.Dialer, so that TLS (mysql-tls and its files) and the password
// guard apply to all of them alike.
package source

import (
	"database/sql"

	"github.com/go-sql-driver/mysql"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/mysqltls"
)

// Config is where the source is and how to log in to it.
type Config struct {
	Addr     string // host:port (mysql-addr)
	User     string
	Password string
	TLS      mysqltls.Config
}

// Source dials the source server with one Config and one Dialer.
type Source struct {
	cfg    Config
	dialer *mysqltls.Dialer
}

// New makes the Source of cfg; it fails on TLS files it cannot read.
func New(cfg Config) (*Source, error) {
	d, err := mysqltls.NewDialer(cfg.TLS)
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, dialer: d}, nil
}

// TLSMode is the TLS mode the connections are dialled with.
func (s *Source) TLSMode() mysqltls.Mode { return s.dialer.Mode() }

// OpenDB opens a pool with the session parameters params. The driver's
// own TLS stays off: the dialer negotiates it (mysqltls' package comment).
func (s *Source) OpenDB(params map[string]string, interpolate bool) (*sql.DB, error) {
	mcfg := mysql.NewConfig()
	mcfg.Net, mcfg.Addr, mcfg.User, mcfg.Passwd = "tcp", s.cfg.Addr, s.cfg.User, s.cfg.Password
	mcfg.Params = params
	mcfg.InterpolateParams = interpolate
	mcfg.DialFunc = s.dialer.DialContext
	mcfg.AllowCleartextPasswords = false
	conn, err := mysql.NewConnector(mcfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// BinlogConfig is the binlog connection's configuration with the source's
// address, credentials and dialer; the caller fills the rest.
func (s *Source) BinlogConfig(c binlog.Config) binlog.Config {
	c.Addr, c.User, c.Password, c.Dial = s.cfg.Addr, s.cfg.User, s.cfg.Password, s.dialer.DialContext
	return c
}
