package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/batch"

	"github.com/binlake/binlake/ingest/internal/decode"
)

// TestNameMark: a table's name mark round-trips through its property and
// orders renames by binlog position, then by their record's offset (one
// record per pair of a statement), so a swap's third pair (tmp TO s2) is
// after its first (s1 TO tmp).
func TestNameMark(t *testing.T) {
	pos := func(f string, p int64) decode.SourcePos { return decode.SourcePos{File: f, Pos: p} }
	a := nameMark{pos("mysql-bin.000002", 41523), 17, 0}
	b := nameMark{pos("mysql-bin.000002", 41523), 19, 0}
	c := nameMark{pos("mysql-bin.000010", 4), -1, 0}
	for _, m := range []nameMark{a, b, c} {
		got, ok := namedSince(iceberg.Properties{NameSinceProperty: m.String()})
		if !ok || got != m {
			t.Errorf("%q parsed as %v, %v; want %v", m.String(), got, ok, m)
		}
	}
	if a.compare(b) >= 0 || b.compare(a) <= 0 || b.compare(c) >= 0 || a.compare(a) != 0 {
		t.Errorf("order of %v %v %v wrong", a, b, c)
	}
	for _, bad := range []string{"", "x", "f:1", "f:1:2", ":1:2:3", "f:x:1:2", "f:1:y:2", "f:1:2:z"} {
		if m, ok := parseNameMark(bad); ok {
			t.Errorf("%q parsed as %v", bad, m)
		}
	}
}

// TestRenameStoppedWithTheProcess: a stop (SIGTERM) while the follower
// reads the old topic up to a rename's cut ends the rename as stopped, not
// failed, and the worker holding records for it goes on to its final
// commit instead of failing the process. make test's TestScaleOutRenames
// saw an ingest exit 1 after SIGTERM: the cancelled read was reported as
// "partitions … not read in 20 s", the job carried that error and the
// worker returned it.
func TestRenameStoppedWithTheProcess(t *testing.T) {
	t.Run("the read up to the cut reports the stop", func(t *testing.T) {
		p := &Pipeline{log: slog.New(slog.DiscardHandler), cfg: Config{Brokers: []string{"127.0.0.1:1"}}}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := p.firstChanges(ctx, "p.db.t", map[int32]int64{0: 3}, map[int32]int64{0: 9})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("firstChanges after a stop: %v, want context.Canceled", err)
		}
	})
	for _, c := range []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"stopped", fmt.Errorf("%w (%w)", errRenameStopped, context.Canceled), false},
		{"failed", errors.New("renaming the table: the catalog refused"), true},
	} {
		t.Run("a worker holding records for a rename "+c.name, func(t *testing.T) {
			p := &Pipeline{log: slog.New(slog.DiscardHandler), ren: newRenamer()}
			w := &worker{p: p, topic: "p.db.t", in: make(chan msg, 1), log: p.log}
			w.buf = batch.NewAppend([]string{"v"}, batch.Limits{})
			if err := w.buf.Add(batch.Event{Op: batch.OpCreate, Row: []any{1}, Partition: 0, Offset: 4}, time.Now()); err != nil {
				t.Fatal(err)
			}
			job := &renameJob{cut: map[int32]int64{0: 9}, held: map[int32]int64{0: 6},
				later: []msg{{rec: &kgo.Record{Topic: w.topic, Offset: 6}}}, renamed: make(chan struct{})}
			w.job = job
			job.err = c.err
			close(job.renamed)
			err := w.checkRename(t.Context())
			if c.wantErr {
				if err == nil {
					t.Fatal("checkRename after a failed rename: nil, want its error")
				}
				return
			}
			if err != nil {
				t.Fatalf("checkRename after a stopped rename: %v, want nil", err)
			}
			if w.job != job || len(w.held) != 0 || len(job.later) != 1 {
				t.Fatalf("after a stopped rename: job kept %v, %d records let out, %d held; want the job kept and its record held", w.job == job, len(w.held), len(job.later))
			}
			if w.buf == nil || w.buf.Len() != 1 {
				t.Fatal("after a stopped rename: the batch before the rename was dropped, want it kept for the final commit")
			}
			if w.jobRenamed() != nil {
				t.Fatal("after a stopped rename: jobRenamed is ready, want never (the worker's loop would spin on it)")
			}
		})
	}
}
