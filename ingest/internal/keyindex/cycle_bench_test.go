package keyindex

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCommitCycle is the key index's work in one positional commit of
// bench-scan's workload at 1,000,000 rows: a tenth of the keys (every
// tenth id, as a round updates them) looked up, then the commit applied
// (their entries moved to a new file). It reports the process's CPU time
// per cycle (cpu-ms/op), Pebble's background flushes and compactions
// included, with wall time: `go test -run - -bench CommitCycle
// ./ingest/internal/keyindex`.
func BenchmarkCommitCycle(b *testing.B) {
	const keys, per = 1_000_000, 100_000
	_, x := openTable(b, b.TempDir(), "00000000-0000-0000-0000-0000000000bb")
	key := func(id int) []byte { return binary.BigEndian.AppendUint64([]byte{0x01}, uint64(id)) }
	apply := func(deleted [][]byte, removedFrom map[string]int, added []Added) {
		if err := x.Apply(next(x), deleted, removedFrom, added, nil); err != nil {
			b.Fatal(err)
		}
	}
	// The table: ten files of a tenth of the keys each.
	for f := range 10 {
		var ks [][]byte
		for id := f * per; id < (f+1)*per; id++ {
			ks = append(ks, key(id))
		}
		apply(nil, nil, []Added{{File: dataFile(b, fmt.Sprint(f), per), Keys: ks}})
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	b.ResetTimer()
	for i := range b.N {
		r := rng.IntN(10)
		var ks [][]byte
		for id := r; id < keys; id += 10 {
			ks = append(ks, key(id))
		}
		// A batch arrives in source order, not key order.
		shuffled := slices.Clone(ks)
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		locs, found, err := x.LookupAll(shuffled)
		if err != nil {
			b.Fatal(err)
		}
		removed := map[string]int{}
		for j, l := range locs {
			if found[j] {
				removed[l.File.FilePath()]++
			}
		}
		apply(shuffled, removed, []Added{{File: dataFile(b, fmt.Sprint(100+i), int64(len(ks))), Keys: ks}})
	}
	b.StopTimer()
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "wall-ms/op")
}
