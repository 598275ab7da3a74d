package run

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/sr"
)

func TestSourceRefusal(t *testing.T) {
	for _, c := range []struct {
		err   error
		final bool
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
		{fmt.Errorf("querying server settings: %w", driver.ErrBadConn), false},
		{mysql.ErrInvalidConn, false},
		{&mysql.MySQLError{Number: 1053, Message: "Server shutdown in progress"}, false},
		{&mysql.MySQLError{Number: 1040, Message: "Too many connections"}, false},
		{fmt.Errorf("querying server settings: %w", &mysql.MySQLError{Number: 1045, Message: "Access denied for user"}), true},
		{&mysql.MySQLError{Number: 1227, Message: "Access denied; you need the REPLICATION CLIENT privilege"}, true},
		{errors.New("binlog_format is STATEMENT: set it to ROW"), true},
	} {
		if got := sourceRefusal(c.err); got != c.final {
			t.Errorf("sourceRefusal(%v) = %v, want %v", c.err, got, c.final)
		}
	}
}

func TestRegistryRefusal(t *testing.T) {
	for _, c := range []struct {
		err   error
		final bool
	}{
		{fmt.Errorf("reaching the schema registry: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), false},
		{fmt.Errorf("reaching the schema registry: %w", &sr.ResponseError{StatusCode: 503}), false},
		{fmt.Errorf("reaching the schema registry: %w", &sr.ResponseError{StatusCode: 404}), true},
		{fmt.Errorf("reaching the schema registry: %w", &sr.ResponseError{StatusCode: 401}), true},
	} {
		if got := registryRefusal(c.err); got != c.final {
			t.Errorf("registryRefusal(%v) = %v, want %v", c.err, got, c.final)
		}
	}
}
