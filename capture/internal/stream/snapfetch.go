package stream

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/binlake/binlake/capture/internal/binlog"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/schemas/debezium"
)

// chunkFetcher reads the primary-key chunks of one table ahead of the
// stream loop, so that the loop only reconciles, encodes and produces.
//
// One goroutine issues the SELECTs, one after another in key order (each
// chunk starts after the last key of the one before), and takes each
// chunk's high watermark; every chunk is then converted to Debezium values
// on a goroutine of its own, so several chunks are converted at once while
// the next is read. Chunks are handed to the loop in key order. At most
// readAhead chunks wait for the loop, which bounds the memory the snapshot
// holds to about (readAhead + 2) × chunk rows.
//
// Before each SELECT the fetcher samples the loop's count of binlog
// transactions read (seq). A chunk's reconciliation window starts at the
// sample taken before the previous SELECT, not its own: a transaction
// already in the binlog but not yet committed in the engine can be
// invisible to a SELECT (the binlog is written before the engine commit),
// and the margin of one SELECT keeps such a change in the window.
type chunkFetcher struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	out    chan *fetchedChunk
	head   *fetchedChunk // received from out, maybe not converted yet
	// queued is closed when a chunk is queued, then replaced: a close
	// wakes every waiter and, unlike a token, cannot be taken by a waiter
	// that has stopped waiting.
	mu     sync.Mutex
	queued chan struct{}

	start int64 // seq when the fetcher started
}

var _ chunkSource = (*chunkFetcher)(nil)

// fetchedChunk is one chunk read and converted by a chunkFetcher.
type fetchedChunk struct {
	done       chan struct{} // closed when rows (or err) are set
	startAfter [][]byte      // the key the chunk starts after (nil: first)
	keys       [][][]byte    // primary key of each row, as the source returned it
	rows       []debezium.Struct
	last       bool
	low        int64 // changes of a key with seq > low invalidate its row
	tableLow   int64 // a TRUNCATE or DDL with seq > tableLow invalidates the chunk
	high       binlog.Position
	err        error
}

type fetchConfig struct {
	db        *sql.DB
	t         *table
	after     [][]byte
	chunkRows int
	readAhead int
	flavor    binlog.Flavor
	seq       *atomic.Int64
	low0      int64 // the first chunk's low mark: the previous chunk's, so the margin holds across fetchers
	rowsRead  prometheus.Counter
	convert   func(t *table, dst debezium.Struct, row []any) (debezium.Struct, error)
}

func startFetcher(ctx context.Context, cfg fetchConfig) *chunkFetcher {
	ctx, cancel := context.WithCancel(ctx)
	f := &chunkFetcher{cancel: cancel, out: make(chan *fetchedChunk, max(cfg.readAhead, 1)),
		queued: make(chan struct{}), start: cfg.seq.Load()}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.read(ctx, cfg)
	}()
	return f
}

func (f *chunkFetcher) read(ctx context.Context, cfg fetchConfig) {
	t := cfg.t
	cols := columnNames(t)
	after := cfg.after
	prev := min(cfg.low0, f.start)
	for ctx.Err() == nil {
		// A DDL or TRUNCATE is in the binlog only once done, so the chunk's
		// own sample bounds those; key changes get the margin of one SELECT.
		own := cfg.seq.Load()
		fc := &fetchedChunk{done: make(chan struct{}), startAfter: after, low: min(prev, own), tableLow: own}
		prev = own
		ch, err := snapshot.ReadChunk(ctx, cfg.db, t.Def.DB, t.Def.Table, cols, t.Def.PrimaryKey, after, cfg.chunkRows)
		if err == nil {
			fc.high, err = snapshot.Watermark(ctx, cfg.db, cfg.flavor)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			fc.err = err
			close(fc.done)
			f.queue(ctx, fc)
			return
		}
		cfg.rowsRead.Add(float64(len(ch.Rows)))
		fc.keys, fc.last = ch.Keys, ch.Last
		if len(ch.Rows) > 0 {
			after = ch.Keys[len(ch.Rows)-1]
		}
		if !f.queue(ctx, fc) {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer close(fc.done)
			fc.rows = make([]debezium.Struct, len(ch.Rows))
			// The chunk's converted values share one allocation: a row's
			// Struct is its part of it, with no room to grow into the next.
			// Nothing reuses it: records and their error descriptions may
			// refer to a row until Kafka acknowledges it.
			n := len(t.Conv.Fields())
			vals := make([]any, n*len(ch.Rows))
			for i, row := range ch.Rows {
				if i%1024 == 0 && ctx.Err() != nil {
					fc.err = ctx.Err()
					return
				}
				conv, err := cfg.convert(t, vals[i*n:i*n:(i+1)*n], row)
				if err != nil {
					fc.err = err
					return
				}
				fc.rows[i] = conv
				ch.Rows[i] = nil // let the raw row go
			}
		}()
		if ch.Last {
			return
		}
	}
}

// queue hands fc to the loop, waiting while readAhead chunks wait already.
func (f *chunkFetcher) queue(ctx context.Context, fc *fetchedChunk) bool {
	select {
	case f.out <- fc:
	case <-ctx.Done():
		return false
	}
	f.mu.Lock()
	close(f.queued)
	f.queued = make(chan struct{})
	f.mu.Unlock()
	return true
}

// next returns the next chunk in key order if it is ready; if not, it
// returns a channel that is closed when the loop should look again.
func (f *chunkFetcher) next() (*fetchedChunk, <-chan struct{}) {
	if f.head == nil {
		f.mu.Lock()
		queued := f.queued // taken before looking at out: a chunk queued after the look closes it
		f.mu.Unlock()
		select {
		case fc := <-f.out:
			f.head = fc
		default:
			return nil, queued
		}
	}
	select {
	case <-f.head.done:
		fc := f.head
		f.head = nil
		return fc, nil
	default:
		return nil, f.head.done
	}
}

// stop ends the fetcher's goroutines and drops what it read.
func (f *chunkFetcher) stop() {
	f.cancel()
	f.wg.Wait()
	f.head = nil
	for {
		select {
		case <-f.out:
		default:
			return
		}
	}
}
