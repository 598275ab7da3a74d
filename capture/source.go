package main

import (
	"database/sql"

	"github.com/go-sql-driver/mysql"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/mysqltls"
)

// source dials the MySQL/MariaDB server for every connection capture makes
// (the SQL pools of stream1, the snapshot and capture status, and the
// binlog connections): one mysqltls.Dialer, so that TLS (mysql-tls and its
// files) and the password guard apply to all of them alike.
type source struct {
	cfg    *Config
	dialer *mysqltls.Dialer
}

func newSource(cfg *Config) (*source, error) {
	d, err := mysqltls.NewDialer(cfg.MySQLTLS)
	if err != nil {
		return nil, err
	}
	return &source{cfg: cfg, dialer: d}, nil
}

// openDB opens a pool with the session parameters params. The driver's
// own TLS stays off: the dialer negotiates it (mysqltls' package comment).
func (s *source) openDB(params map[string]string, interpolate bool) (*sql.DB, error) {
	mcfg := mysql.NewConfig()
	mcfg.Net, mcfg.Addr, mcfg.User, mcfg.Passwd = "tcp", s.cfg.MySQLAddr, s.cfg.MySQLUser, s.cfg.MySQLPassword
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

// binlogConfig is the binlog connection's configuration with the source's
// address, credentials and dialer; the caller fills the rest.
func (s *source) binlogConfig(c binlog.Config) binlog.Config {
	c.Addr, c.User, c.Password, c.Dial = s.cfg.MySQLAddr, s.cfg.MySQLUser, s.cfg.MySQLPassword, s.dialer.DialContext
	return c
}
