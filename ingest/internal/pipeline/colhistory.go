package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A column rename is noted in memory when the schema-change record is
// handled, and applied when its table next takes on a new schema, which
// may be long after: the schema topic's committed offset can pass the
// record meanwhile. So that a restart in between does not lose the
// rename, each process reads the schema topic's column renames once from
// its start (up to its last stable offset then) before its tables apply
// any (columnHistory). Noting is idempotent and each table's
// binlake.columns-renamed-at says what it has had, so the renames read
// again are applied only where they are missing.

// columnHistoryTimeout bounds the read of a schema topic's history, and
// columnHistoryIdle ends it when nothing more comes.
const (
	columnHistoryTimeout = 2 * time.Minute
	columnHistoryIdle    = 3 * time.Second
)

// columnHistory is the once-per-schema-topic read of its column renames.
type columnHistory struct {
	mu   sync.Mutex
	done map[string]chan struct{} // closed when the topic's read has ended
}

// awaitColumnHistory reads the column renames of schema topic prefix from
// its start, once per process; other callers wait for that read. A read
// that fails is logged and not retried: the renames noted since the start
// are still followed.
func (p *Pipeline) awaitColumnHistory(ctx context.Context, prefix string) error {
	h := &p.colHistory
	h.mu.Lock()
	if h.done == nil {
		h.done = map[string]chan struct{}{}
	}
	done, started := h.done[prefix]
	if !started {
		done = make(chan struct{})
		h.done[prefix] = done
	}
	h.mu.Unlock()
	if !started {
		start := time.Now()
		n, err := p.readColumnHistory(ctx, prefix)
		close(done)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			p.log.Warn("could not read the schema-change topic's column renames from its start: a rename noted before this process started and not yet applied is lost (its new name becomes a new column)",
				"schema_topic", prefix, "error", err)
			return nil
		}
		p.log.Info("read the schema-change topic's column renames from its start", "schema_topic", prefix, "statements", n, "duration", time.Since(start).Round(time.Millisecond))
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// readColumnHistory notes the column renames of every schema-change
// record of topic prefix below its last stable offsets, read now, and
// returns how many statements renamed columns.
func (p *Pipeline) readColumnHistory(ctx context.Context, prefix string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, columnHistoryTimeout)
	defer cancel()
	adm := kadm.NewClient(p.cl)
	end, err := offsetsOf(ctx, adm.ListCommittedOffsets, prefix)
	if err != nil {
		return 0, err
	}
	start, err := offsetsOf(ctx, adm.ListStartOffsets, prefix)
	if err != nil {
		return 0, err
	}
	parts := map[int32]kgo.Offset{}
	for part, e := range end {
		if s, ok := start[part]; ok && s < e {
			parts[part] = kgo.NewOffset().At(s)
		}
	}
	if len(parts) == 0 {
		return 0, nil
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(p.cfg.Brokers...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{prefix: parts}),
		kgo.KeepControlRecords(), // a transaction marker can be the last record below the end
	}, p.cfg.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, fmt.Errorf("creating the Kafka client for the schema topic %s: %w", prefix, err)
	}
	defer cl.Close()
	n := 0
	for len(parts) > 0 {
		// A partition whose last records below the end were aborted is
		// never read up to it (read_committed drops them): a read that
		// returns nothing for a while has ended.
		pctx, pcancel := context.WithTimeout(ctx, columnHistoryIdle)
		fs := cl.PollFetches(pctx)
		idle := pctx.Err() != nil && fs.NumRecords() == 0
		pcancel()
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("reading the schema topic %s: %w", prefix, err)
		}
		if idle {
			return n, nil
		}
		for _, fe := range fs.Errors() {
			if pctx.Err() != nil && errors.Is(fe.Err, context.DeadlineExceeded) {
				continue
			}
			return n, fmt.Errorf("reading the schema topic %s partition %d: %w", prefix, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if _, ok := parts[rec.Partition]; !ok || rec.Offset >= end[rec.Partition] {
				return
			}
			if rec.Offset+1 >= end[rec.Partition] {
				delete(parts, rec.Partition)
			}
			if rec.Attrs.IsControl() {
				return
			}
			ch, err := p.dec.Decode(ctx, rec.Topic, rec.Partition, rec.Offset, rec.Key, rec.Value)
			if err != nil || ch.SchemaChange == nil {
				return // not a schema change, or one the schema topic's worker reports
			}
			if p.noteColumns(prefix, ch.SchemaChange, false) {
				n++
			}
		})
	}
	return n, nil
}
