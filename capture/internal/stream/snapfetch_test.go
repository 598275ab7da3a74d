package stream

import (
	"testing"
	"time"
)

// TestFetcherWakesEveryWaiter checks that the channel next returns is
// closed when a chunk is queued, whoever else waited on it.
func TestFetcherWakesEveryWaiter(t *testing.T) {
	f := &chunkFetcher{out: make(chan *fetchedChunk, 1), queued: make(chan struct{})}
	fc, wait := f.next()
	if fc != nil || wait == nil {
		t.Fatal("next with nothing queued")
	}
	// A waiter that stopped waiting cannot take the wake-up from the next.
	for range 2 {
		select {
		case <-wait:
			t.Fatal("woken before a chunk was queued")
		default:
		}
	}
	f.queue(t.Context(), &fetchedChunk{done: make(chan struct{})})
	for i := range 2 {
		select {
		case <-wait:
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter %d not woken by the queued chunk", i)
		}
	}
	if fc, wait := f.next(); fc != nil || wait == nil {
		t.Fatal("a chunk not converted yet was handed out")
	}
}
