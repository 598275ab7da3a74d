// Package status is the `capture status` command: it reports the
// position a capture stored against the end of the server's binlog (the
// lag in bytes and in seconds), the snapshots' progress and the signal
// offset. It reads Kafka and the server alone: the running capture is not
// asked and not disturbed.
package status

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/config"
	"github.com/binlake/binlake/capture/internal/publish"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/capture/internal/source"
	"github.com/binlake/binlake/capture/internal/stream"
)

// ErrStale reports that capture status found the capture behind --max-lag
// or --max-lag-bytes (or with nothing stored): capture exits 3 on it, which
// tells cron and alerting.
var ErrStale = errors.New("stale")

// Report is what capture status prints; its JSON form is --format=json.
type Report struct {
	ID string `json:"id"`
	// Stored is the position capture committed last; Server the end of
	// the server's binlog now.
	Stored binlog.Position `json:"stored"`
	Server binlog.Position `json:"server"`
	// LagBytes is how much binlog lies between them, LagSeconds how long
	// the oldest event capture has not committed has waited (its binlog
	// time; 0 when capture is at the end).
	LagBytes   int64   `json:"lag_bytes"`
	LagSeconds float64 `json:"lag_seconds"`
	// Snapshot is the initial snapshot's progress (absent: none running),
	// Incremental an ad-hoc snapshot's.
	Snapshot     *SnapshotStatus `json:"snapshot,omitempty"`
	Incremental  *SnapshotStatus `json:"incremental_snapshot,omitempty"`
	SignalOffset *int64          `json:"signal_offset,omitempty"`
	Stale        bool            `json:"stale,omitempty"`
}

// SnapshotStatus is a snapshot's progress.
type SnapshotStatus struct {
	Tables     int    `json:"tables"`
	TableIndex int    `json:"table_index"` // of the table being read; = tables when done
	Table      string `json:"table,omitempty"`
	Rows       int64  `json:"rows"`
	Paused     bool   `json:"paused,omitempty"`
}

func snapStatus(p *snapshot.Progress, paused bool) *SnapshotStatus {
	if p == nil {
		return nil
	}
	s := &SnapshotStatus{Tables: len(p.Tables), TableIndex: p.Table, Rows: p.Rows, Paused: paused}
	if p.Table < len(p.Tables) {
		s.Table = p.Tables[p.Table].String()
	}
	return s
}

// Config is what capture status compares.
type Config struct {
	// Capture is the capture's configuration, validated
	// (config.Config.Validate): its Kafka settings, id and offsets topic,
	// and the source.
	Capture config.Config
	// MaxLag and MaxLagBytes make the capture stale when the oldest
	// change not yet committed is older, or when more binlog lies past
	// the stored position (0: never).
	MaxLag      time.Duration
	MaxLagBytes int64
}

// Run reads the position the capture stored (from Kafka) and the end of
// the server's binlog, and reports the lag between them. When the capture
// is stale (behind MaxLag or MaxLagBytes) Run returns the report and an
// error wrapping ErrStale; when it has stored no position, only that
// error.
func Run(ctx context.Context, c Config) (*Report, error) {
	cfg := &c.Capture
	opts, err := cfg.Kafka.ClientOpts(ctx, "binlake-capture-status")
	if err != nil {
		return nil, err
	}
	rd, err := publish.NewReader(strings.Split(cfg.KafkaBrokers, ","), opts)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	b, found, err := rd.LoadPosition(ctx, cfg.OffsetsTopic, cfg.ID)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		// No offsets topic yet: no capture with these settings started.
		found, err = false, nil
	}
	if err != nil {
		// A broker refusing the security settings: name the setting.
		err, _ = cfg.Kafka.Explain(err)
		return nil, fmt.Errorf("reading the stored position of %s in %s: %w", cfg.ID, cfg.OffsetsTopic, err)
	}
	if !found {
		return nil, fmt.Errorf("%w: capture %s has stored no position in %s (never started, or another id or offsets-topic)", ErrStale, cfg.ID, cfg.OffsetsTopic)
	}
	st, err := stream.UnmarshalState(b)
	if err != nil {
		return nil, fmt.Errorf("the stored position of %s: %w", cfg.ID, err)
	}
	src, err := source.New(cfg.Source())
	if err != nil {
		return nil, err
	}
	db, err := src.OpenDB(nil, false)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	server, err := binlog.Inspect(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w (check mysql-addr, mysql-user and CAPTURE_MYSQL_PASSWORD)", cfg.MySQLAddr, err)
	}
	rep := &Report{ID: cfg.ID, Stored: st.Position, Server: server.Current,
		Snapshot: snapStatus(st.Snapshot, false), Incremental: snapStatus(st.Incremental, st.IncrementalPaused), SignalOffset: st.SignalOffset}
	if rep.LagBytes, err = lagBytes(ctx, db, st.Position, server.Current); err != nil {
		return nil, err
	}
	if rep.LagBytes != 0 {
		// The oldest event not committed: the first with a time after the
		// stored position, read over a replication connection of its own
		// (a random server id, so that the running capture's is not
		// taken over).
		ts, err := firstEventTime(ctx, src, server.Flavor, st.Position)
		if err != nil {
			return nil, err
		}
		if !ts.IsZero() {
			rep.LagSeconds = max(0, time.Since(ts).Seconds())
		}
	}
	rep.Stale = (c.MaxLag > 0 && rep.LagSeconds > c.MaxLag.Seconds()) || (c.MaxLagBytes > 0 && rep.LagBytes > c.MaxLagBytes)
	if rep.Stale {
		return rep, fmt.Errorf("%w: capture %s is %d bytes and %.1f s behind (max-lag %s, max-lag-bytes %d)", ErrStale, cfg.ID, rep.LagBytes, rep.LagSeconds, c.MaxLag, c.MaxLagBytes)
	}
	return rep, nil
}

// Write writes the report as format: table (for people) or json.
func (r *Report) Write(w io.Writer, format string) error {
	if format != "json" {
		printCaptureStatus(w, *r)
		return nil
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// lagBytes is the binlog between stored and current: the rest of stored's
// file, the files after it and current's offset in its file (-1: unknown,
// a position stored as a GTID set alone).
func lagBytes(ctx context.Context, db *sql.DB, stored, current binlog.Position) (int64, error) {
	if stored.File == "" {
		return -1, nil
	}
	if stored.File == current.File {
		return max(0, int64(current.Pos)-int64(stored.Pos)), nil
	}
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return 0, fmt.Errorf("listing binary logs (needs the REPLICATION CLIENT / BINLOG MONITOR grant): %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	var total int64
	in, seen := false, false
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return 0, err
		}
		name := string(vals[0])
		size, _ := strconv.ParseInt(string(vals[1]), 10, 64)
		switch {
		case name == stored.File:
			in, seen = true, true
			total += size - int64(stored.Pos)
		case name == current.File:
			total += int64(current.Pos)
			in = false
		case in:
			total += size
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if !seen {
		return 0, fmt.Errorf("%w: the stored file %s is not in SHOW BINARY LOGS", binlog.ErrPurged, stored.File)
	}
	return total, nil
}

// firstEventTime is the binlog time of the first event after p that
// carries one (zero: none came within 10 s).
func firstEventTime(ctx context.Context, src *source.Source, flavor binlog.Flavor, p binlog.Position) (time.Time, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := binlog.Open(rctx, src.BinlogConfig(binlog.Config{
		Flavor: flavor, ServerID: 1<<31 + rand.Uint32N(1<<30), HeartbeatPeriod: time.Second, EventBuffer: 4,
		Logger: slog.New(slog.DiscardHandler)}), p)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the binlog after the stored position: %w", err)
	}
	defer r.Close()
	for {
		ev, err := r.Next(rctx)
		if errors.Is(err, context.DeadlineExceeded) {
			return time.Time{}, nil
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("reading the binlog after the stored position: %w", err)
		}
		if ev.Kind != binlog.KindHeartbeat && ev.Timestamp > 0 {
			return time.Unix(int64(ev.Timestamp), 0), nil
		}
	}
}

func printCaptureStatus(w io.Writer, s Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	pos := func(p binlog.Position) string {
		out := fmt.Sprintf("%s:%d", p.File, p.Pos)
		if p.GTIDSet != "" {
			out += " gtid " + p.GTIDSet
		}
		return out
	}
	fmt.Fprintf(tw, "capture\t%s\n", s.ID)
	fmt.Fprintf(tw, "stored position\t%s\n", pos(s.Stored))
	fmt.Fprintf(tw, "server position\t%s\n", pos(s.Server))
	if s.LagBytes < 0 {
		fmt.Fprintf(tw, "lag\tunknown bytes (a GTID-only position), %.1f s\n", s.LagSeconds)
	} else {
		fmt.Fprintf(tw, "lag\t%d bytes, %.1f s\n", s.LagBytes, s.LagSeconds)
	}
	snap := func(name string, p *SnapshotStatus) {
		switch {
		case p == nil:
			fmt.Fprintf(tw, "%s\tnone\n", name)
		case p.TableIndex >= p.Tables:
			fmt.Fprintf(tw, "%s\tdone: %d tables, %d rows\n", name, p.Tables, p.Rows)
		default:
			paused := ""
			if p.Paused {
				paused = " (paused)"
			}
			fmt.Fprintf(tw, "%s\ttable %d of %d (%s), %d rows emitted%s\n", name, p.TableIndex+1, p.Tables, p.Table, p.Rows, paused)
		}
	}
	snap("snapshot", s.Snapshot)
	snap("ad-hoc snapshot", s.Incremental)
	if s.SignalOffset != nil {
		fmt.Fprintf(tw, "signal offset\t%d\n", *s.SignalOffset)
	}
	if s.Stale {
		fmt.Fprintf(tw, "stale\tyes\n")
	}
	_ = tw.Flush()
}
