// Package bench holds the side-by-side benchmarks of binlake against the
// reference peers on the same machine and stack (build tag integration,
// run only with BINLAKE_BENCH=1: `make bench-capture`).
package bench
