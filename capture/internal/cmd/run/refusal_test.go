package run

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/resume"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/capture/internal/stream"
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

// flakySource fails its first BinlogHas calls with err, as a pooled
// connection to a server that restarted does.
type flakySource struct {
	fails int
	err   error
	calls int
}

func (f *flakySource) BinlogHas(context.Context, binlog.Position) (bool, error) {
	f.calls++
	if f.calls <= f.fails {
		return false, fmt.Errorf("listing binary logs: %w", f.err)
	}
	return true, nil
}

func (f *flakySource) Tables(context.Context) ([]snapshot.TableID, error) { return nil, nil }

// TestDecideRetriesInvalidConnection: the start decision rides out a
// source that restarted after capture first reached it (the chaos run's
// capture exited with "listing binary logs: invalid connection"), and
// stops at once on a refusal.
func TestDecideRetriesInvalidConnection(t *testing.T) {
	stored, err := stream.MarshalState(stream.State{Position: binlog.Position{Flavor: binlog.FlavorMariaDB, File: "mysql-bin.000002", Pos: 4}})
	if err != nil {
		t.Fatal(err)
	}
	server := binlog.Server{Flavor: binlog.FlavorMariaDB}
	rc := resume.Config{ID: "c", OffsetsTopic: "o", Mode: snapshot.ModeWhenNeeded}
	logger := slog.New(slog.DiscardHandler)

	src := &flakySource{fails: 1, err: mysql.ErrInvalidConn}
	plan, err := decide(t.Context(), logger, time.Minute, rc, stored, true, server, src)
	if err != nil || !plan.Stored || src.calls != 2 {
		t.Errorf("after one invalid connection: plan %+v, err %v, %d calls; want the stored position resumed on the second call", plan, err, src.calls)
	}

	denied := &flakySource{fails: 5, err: &mysql.MySQLError{Number: 1227, Message: "Access denied; you need the BINLOG MONITOR privilege"}}
	if _, err := decide(t.Context(), logger, time.Minute, rc, stored, true, server, denied); err == nil || denied.calls != 1 {
		t.Errorf("refused: err %v after %d calls; want the refusal at once", err, denied.calls)
	}
}
