package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Server is what capture needs to know about the source server.
type Server struct {
	Flavor   Flavor
	Version  string
	ServerID uint32
	// Settings, as the server reports them.
	LogBin, Format, RowImage, RowMetadata string
	// RowValueOptions is MySQL 8's binlog_row_value_options ("" elsewhere).
	RowValueOptions string
	// Current is the end of the binlog now.
	Current Position
}

// Inspect queries the server's flavor, binlog settings and current position.
func Inspect(ctx context.Context, db *sql.DB) (Server, error) {
	var s Server
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION(), @@server_id, @@log_bin, @@binlog_format, @@binlog_row_image").
		Scan(&version, &s.ServerID, &s.LogBin, &s.Format, &s.RowImage); err != nil {
		return s, fmt.Errorf("querying server settings: %w", err)
	}
	s.Version = version
	s.Flavor = FlavorMySQL
	if strings.Contains(strings.ToLower(version), "mariadb") {
		s.Flavor = FlavorMariaDB
	}
	// binlog_row_metadata exists on MySQL 8.0.1+ and MariaDB 10.5+.
	if err := db.QueryRowContext(ctx, "SELECT @@binlog_row_metadata").Scan(&s.RowMetadata); err != nil {
		s.RowMetadata = "UNSUPPORTED"
	}
	if s.Flavor == FlavorMySQL {
		// MySQL 8.0.3+; older servers and MariaDB have no such variable.
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.binlog_row_value_options").Scan(&s.RowValueOptions); err != nil {
			s.RowValueOptions = ""
		}
	}
	var gtidQuery string
	if s.Flavor == FlavorMariaDB {
		gtidQuery = "SELECT @@gtid_binlog_pos"
	} else {
		gtidQuery = "SELECT @@gtid_executed"
	}
	s.Current.Flavor = s.Flavor
	if err := db.QueryRowContext(ctx, gtidQuery).Scan(&s.Current.GTIDSet); err != nil {
		return s, fmt.Errorf("querying the executed GTID set: %w", err)
	}
	s.Current.GTIDSet = strings.ReplaceAll(strings.TrimSpace(s.Current.GTIDSet), "\n", "")
	file, pos, err := masterStatus(ctx, db)
	if err != nil {
		return s, err
	}
	s.Current.File, s.Current.Pos = file, pos
	return s, nil
}

func masterStatus(ctx context.Context, db *sql.DB) (string, uint32, error) {
	rows, err := db.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		// MySQL 8.4 renamed it.
		rows, err = db.QueryContext(ctx, "SHOW BINARY LOG STATUS")
		if err != nil {
			return "", 0, fmt.Errorf("reading the binlog position (needs the REPLICATION CLIENT / BINLOG MONITOR grant): %w", err)
		}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", 0, err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return "", 0, err
		}
		return "", 0, fmt.Errorf("%w: SHOW MASTER STATUS is empty: the binlog is off; start the server with log_bin", ErrNotReady)
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return "", 0, err
	}
	var pos uint32
	if _, err := fmt.Sscanf(string(vals[1]), "%d", &pos); err != nil {
		return "", 0, fmt.Errorf("parsing binlog position %q: %w", vals[1], err)
	}
	return string(vals[0]), pos, rows.Err()
}

// Check returns one error per setting that stops change capture, each
// naming the problem and the fix.
func (s Server) Check() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrNotReady}, args...)...))
	}
	if s.LogBin != "1" && !strings.EqualFold(s.LogBin, "ON") {
		bad("the binary log is off; start the server with log_bin (on RDS/Aurora: enable automated backups / binlog)")
	}
	if !strings.EqualFold(s.Format, "ROW") {
		bad("binlog_format is %s; set binlog_format=ROW", s.Format)
	}
	if !strings.EqualFold(s.RowImage, "FULL") {
		bad("binlog_row_image is %s; set binlog_row_image=FULL so updates and deletes carry whole rows", s.RowImage)
	}
	if !strings.EqualFold(s.RowMetadata, "FULL") {
		bad("binlog_row_metadata is %s; set binlog_row_metadata=FULL (MySQL 8.0.1+, MariaDB 10.5+) so each row event names its columns", s.RowMetadata)
	}
	if strings.Contains(strings.ToUpper(s.RowValueOptions), "PARTIAL_JSON") {
		bad("binlog_row_value_options is %s; set binlog_row_value_options='' so JSON updates carry whole documents (Debezium requires the same)", s.RowValueOptions)
	}
	return errors.Join(errs...)
}
