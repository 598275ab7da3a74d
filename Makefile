# binlake: `make test` runs every test against a real local stack; `make demo` runs the main job.
SHELL := /bin/bash
STACK := deploy/local/stack.sh
GO    ?= go
# Integration tests run one package at a time against the shared stack.
# make test runs them with -short: the long tests (kill loops, scale-out)
# run shorter versions; make test-full runs them at full length.
INTEGRATION_FLAGS ?= -tags integration -count=1 -p 1 -timeout 50m -short
FULL_FLAGS        ?= -tags integration -count=1 -p 1 -timeout 120m

.PHONY: all build test test-full unit fuzz fuzz-short integration integration-full deploy-check compat chaos chaos-short bench-capture bench-large-txn bench-ingest bench-scan bench-snapshot bench-peer bench-freshness bench-scale bench bench-short demo stack-up stack-down stack-status stack-env stack-logs stack-wipe vet fmt clean

all: build

build:
	$(GO) build -o bin/capture ./capture
	$(GO) build -o bin/ingest ./ingest

## unit: the tests that need no services (what plain `go test ./...` runs).
## make test runs fuzz-short after it, once the stack is up.
unit:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# The fuzz targets, as package:Target. Their seeds and any crasher found
# are committed under each package's testdata/fuzz/<Target>.
FUZZ_TARGETS := \
	./ingest/internal/decode:FuzzDecode \
	./ingest/internal/decode:FuzzDecodeJSON \
	./ingest/internal/decode:FuzzAvro \
	./ingest/internal/schemamap:FuzzMap \
	./capture/internal/binlog:FuzzRowsDecode \
	./schemas/debezium:FuzzParseFrame
# Budgets are execution counts, not durations: with a duration -fuzztime the
# Go 1.26 fuzz coordinator can end a clean run in "context deadline exceeded"
# with no failing input (golang/go#75804, fixed in Go 1.27), which a loaded CI
# machine hit on FuzzDecodeJSON. A count has no deadline to race.
FUZZ_SHORT ?= 100000x
FUZZ_TIME  ?= 3000000x

## fuzz-short: each fuzz target for FUZZ_SHORT executions (100000x: 5 to 20
## seconds a target here; part of make test). fuzz: FUZZ_TIME executions
## (3000000x: a few minutes a target). A crasher fails the run; go test writes
## it to testdata/fuzz/<Target> to be fixed and committed.
fuzz-short:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t##*:}; echo "FUZZ $$fn $$pkg fuzztime=$(FUZZ_SHORT)"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZ_SHORT) -timeout 60m $$pkg; \
	done

fuzz:
	$(MAKE) --no-print-directory fuzz-short FUZZ_SHORT=$(FUZZ_TIME)

## integration: bring the stack up and run the integration-tagged tests against it
## (test/integration.sh: test/e2e in one lane, every other package in another, side
## by side; then the tests that need the server to themselves), and in the second
## lane the pipeline, kill and types tests again with ingest writing through the
## S3 Tables stand-in (BINLAKE_TEST_CATALOG=s3tables: SigV4 verified, S3 Tables'
## rules, managed compaction and expiry on the stand-in's schedule; test/e2e's
## s3tables_integration_test.go). Each prints an S3TABLES line of what landed.
integration: stack-up
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 GO=$(GO) test/integration.sh $(INTEGRATION_FLAGS)

## demo: the main job end to end: a live shop database → capture → Kafka → ingest → Iceberg.
## Ends with: DEMO tables=<n> rows_mariadb=<a> rows_iceberg=<b> equal=<true|false>
demo: stack-up
	eval "$$($(STACK) env)" && $(GO) run ./test/demo

## compat: capture against the real Debezium MariaDB connector, event by event.
## Prints: COMPAT events=<n> fields=<m> mismatches=<k>
compat: stack-up
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 $(GO) test -tags integration -count=1 -run "TestCompat(WithDebezium|RealWorld)" -v ./test/compat | tee /tmp/binlake-compat.log | grep -E "^(COMPAT|ALLOWED|    --- |--- |ok|FAIL)|mismatch"

## deploy-check: the Helm chart, the alert rules and the dashboard. helm and promtool
## come from `stack.sh up tools` (go install into $BINLAKE_STACK_DIR/bin; `stack.sh up`
## starts compiling them in the background, so after `make integration` they are there).
## helm lint of the chart with each ci/ values file, promtool check rules, then the
## chart test (test/helmchart: every manifest rendered from each ci/ values file decodes
## strictly into the Kubernetes API types; capture, ingest, secrets-as-files, probes).
## The dashboard's and rules' metric names are checked by unit tests (TestDeployMetricsExist).
CHART := deploy/helm/binlake
deploy-check:
	$(STACK) up tools
	eval "$$($(STACK) env)" && for f in $(CHART)/ci/*.yaml; do "$$BINLAKE_STACK_DIR/bin/helm" lint --strict $(CHART) -f "$$f" || exit 1; done
	eval "$$($(STACK) env)" && "$$BINLAKE_STACK_DIR/bin/promtool" check rules deploy/prometheus/alerts.yml
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 $(GO) test -tags integration -count=1 ./test/helmchart

## chaos-short: make chaos's short version (15 faults, about 6 minutes), the last
## test step of make test: its faults act on the whole stack, so it runs alone.
chaos-short: stack-up
	eval "$$($(STACK) env)" && $(STACK) up tools && BINLAKE_REQUIRE_STACK=1 BINLAKE_CHAOS=1 $(GO) test $(INTEGRATION_FLAGS) -run '^TestChaos$$' -v ./test/chaos | tee /tmp/binlake-chaos-short.log | grep -E '^(CHAOS|--- |ok|FAIL)| fault [0-9]+/|lost|duplicated|mismatched|crash'; \
	  rc=$${PIPESTATUS[0]}; [[ $$rc == 0 ]] || tail -150 /tmp/binlake-chaos-short.log; exit $$rc

## test: everything CI runs (the long tests in their -short versions). The unit
## tests (compiling: CPU) run beside the stack's installation (downloads, on a
## fresh machine); the short chaos run follows the integration tests.
test:
	$(MAKE) --no-print-directory -j2 -O unit stack-up
	$(MAKE) --no-print-directory fuzz-short integration chaos-short deploy-check
	$(STACK) status

## test-full: every test at full length (20 ingest kills, a 2-minute
## scale-out, a 1,000,000-row concurrent-writes snapshot, four lake
## settings for Debezium's defaults).
test-full:
	$(MAKE) --no-print-directory -j2 -O unit stack-up
	$(MAKE) --no-print-directory integration-full chaos-short deploy-check
	$(STACK) status

integration-full: stack-up
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 GO=$(GO) test/integration.sh $(FULL_FLAGS)

stack-up:
	$(STACK) up
stack-down:
	$(STACK) down
stack-status:
	$(STACK) status
stack-env:
	@$(STACK) env
stack-logs:
	$(STACK) logs
stack-wipe:
	$(STACK) wipe

vet:
	$(GO) vet ./...
	$(GO) vet -tags integration ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin

## chaos: capture and two ingest processes over one multi-table workload while a nemesis injects
## CHAOS_FAULTS faults (default 100) from CHAOS_SEED (default: the clock), then
## every guarantee checked on the topics and in the lake (test/chaos). On a failure it prints the seed
## and the fault log that reproduce it. Prints:
## CHAOS seed=<s> faults=<n> kinds=<k> tables=<t> changes=<c> lost=<l> duplicated=<d> mismatched=<m> seconds=<s>
chaos: stack-up
	eval "$$($(STACK) env)" && $(STACK) up tools && BINLAKE_REQUIRE_STACK=1 BINLAKE_CHAOS=1 $(GO) test -tags integration -count=1 -timeout 150m -run '^TestChaos$$' -v ./test/chaos | tee /tmp/binlake-chaos.log | grep -E '^(CHAOS|--- |ok|FAIL)| fault [0-9]+/|lost|duplicated|mismatched|crash'; \
	  rc=$${PIPESTATUS[0]}; [[ $$rc == 0 ]] || echo "make chaos failed: the whole output is in /tmp/binlake-chaos.log"; exit $$rc

## bench-capture: capture vs the Debezium MariaDB connector on the same backlog.
## Prints: CAPTURE events=<n> seconds=<s> events_per_s=<r> debezium_events_per_s=<d> ratio=<r/d> rss_mib=<m>
bench-capture: stack-up
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 BINLAKE_BENCH=1 $(GO) test -tags integration -count=1 -timeout 60m -run TestBenchCapture -v ./test/bench | grep -E '^(CAPTURE|--- |ok|FAIL)|bench_integration_test'

## bench-large-txn: one 2 GiB source transaction through capture; prints its peak RSS.
## Prints: LARGETXN mb=<n> rows=<r> seconds=<s> rss_mib=<m> max_buffered_mib=<b>
bench-large-txn: stack-up
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 BINLAKE_BENCH=1 $(GO) test -tags integration -count=1 -timeout 60m -run TestBenchLargeTransaction -v ./test/bench | grep -E '^(LARGETXN|--- |ok|FAIL)|bench_integration_test'

## bench-ingest: 1,000,000 Debezium events (70/20/10 % c/u/d) ingested into Iceberg from a topic.
## Prints: INGEST rows=<n> seconds=<s> rows_per_s=<r> commits=<c> rss_mib=<m>
bench-ingest: stack-up
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 BINLAKE_BENCH=1 $(GO) test -tags integration -count=1 -timeout 60m -run TestBenchIngest -v ./test/bench | grep -E '^(INGEST|--- |ok|FAIL)|bench_integration_test'

## bench-peer: ingest (each delete mode) vs the Apache Iceberg Kafka Connect sink 1.12 (append-only) on the same
## 1,000,000-event topic (BINLAKE_PEER_EVENTS), catalog and MinIO; prints bench-ingest's INGEST lines too.
## deploy/local/iceberg-sink.sh assembles the sink from Maven Central once (cached in the stack dir).
bench-peer: stack-up
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 BINLAKE_BENCH=1 $(GO) test -tags integration -count=1 -timeout 90m -run TestBenchPeer -v ./test/bench | grep -E '^(INGEST|PEER|RATIO|--- |ok|FAIL)|bench_integration_test'

## bench-freshness: a steady 20,000 changes/s (BINLAKE_FRESHNESS_RATE) over 8 tables for 300 s (BINLAKE_FRESHNESS_SECONDS)
## through capture and ingest (flush 10 s): per commit, commit time minus the binlog time of its newest change.
bench-freshness: stack-up
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 BINLAKE_BENCH=1 $(GO) test -tags integration -count=1 -timeout 60m -run TestBenchFreshness -v ./test/bench | grep -E '^(FRESHNESS|--- |ok|FAIL)|bench_integration_test'

## bench-scale: CPU-seconds per million events and peak RSS of ingest over 1/4/16 tables x 1/4/12 partitions and of
## capture over 1 and 16 tables, 200,000 events each (BINLAKE_SCALE_EVENTS).
bench-scale: stack-up
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 BINLAKE_BENCH=1 $(GO) test -tags integration -count=1 -timeout 60m -run TestBenchScale -v ./test/bench | grep -E '^(SCALE|--- |ok|FAIL)|bench_integration_test'

## bench: every benchmark in one run (capture, snapshot, large transaction, ingest + its peer, freshness, scale,
## scan), each line printed and kept in bench-report/bench.log between a BENCHRUN line (target, start time,
## commit, load) and a BENCHDONE line (end time, exit status); then test/bench/report writes a Markdown report
## with PNG charts into bench-report/ (git-ignored) and the repository's benchmark page,
## test/bench/BENCHMARKS.md, its charts in test/bench/charts/ (commit them: README.md shows one). bench-peer
## prints bench-ingest's lines, so bench-ingest is not run again. A failing benchmark does not stop the others;
## make bench fails at the end. 52 minutes here on 2026-12-05 (bench-scan 31 of them, in three modes; it now runs
## five, see bench-scan; test/bench/BENCHMARKS.md).
## bench-short: the same plumbing at small counts (about 10 minutes here; figures not comparable), into
## bench-report/short/ only: it never writes the page.
BENCH_TARGETS       := bench-capture bench-snapshot bench-large-txn bench-peer bench-freshness bench-scale bench-scan
BENCH_SHORT_TARGETS := bench-snapshot bench-large-txn bench-peer bench-freshness bench-scale bench-scan
BENCH_SHORT_ENV     := BINLAKE_SNAPSHOT_BENCH_ROWS=100000 BINLAKE_BENCH_TXN_MB=64 BINLAKE_PEER_EVENTS=100000 \
	BINLAKE_FRESHNESS_RATE=2000 BINLAKE_FRESHNESS_SECONDS=30 BINLAKE_SCALE_EVENTS=20000 \
	BINLAKE_SCAN_ROWS=20000 BINLAKE_SCAN_ROUNDS=5
# The lines around each target in the log, which the report credits every figure with (see test/bench/report).
BENCH_RUN_LINE  = echo "BENCHRUN target=$$t start=$$(date -u +%Y-%m-%dT%H:%M:%SZ) commit=$$(git rev-parse --short HEAD 2>/dev/null || echo unknown) load=$$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo unknown)"
BENCH_DONE_LINE = echo "BENCHDONE target=$$t end=$$(date -u +%Y-%m-%dT%H:%M:%SZ) exit=$$rc"
bench: stack-up
	@mkdir -p bench-report && : >bench-report/bench.log
	@fail=; for t in $(BENCH_TARGETS); do \
	  $(BENCH_RUN_LINE) | tee -a bench-report/bench.log; \
	  $(MAKE) --no-print-directory $$t 2>&1 | tee -a bench-report/bench.log; \
	  rc=$${PIPESTATUS[0]}; [[ $$rc == 0 ]] || fail="$$fail $$t"; \
	  $(BENCH_DONE_LINE) | tee -a bench-report/bench.log; \
	done; \
	$(GO) run ./test/bench/report -in bench-report/bench.log -out bench-report -page test/bench/BENCHMARKS.md; \
	if [[ -n $$fail ]]; then echo "bench: failed:$$fail" >&2; exit 1; fi
bench-short: stack-up
	@mkdir -p bench-report/short && : >bench-report/short/bench.log
	@fail=; for t in $(BENCH_SHORT_TARGETS); do \
	  $(BENCH_RUN_LINE) | tee -a bench-report/short/bench.log; \
	  $(BENCH_SHORT_ENV) $(MAKE) --no-print-directory $$t 2>&1 | tee -a bench-report/short/bench.log; \
	  rc=$${PIPESTATUS[0]}; [[ $$rc == 0 ]] || fail="$$fail $$t"; \
	  $(BENCH_DONE_LINE) | tee -a bench-report/short/bench.log; \
	done; \
	$(GO) run ./test/bench/report -title "binlake benchmarks (short counts: plumbing only)" -in bench-report/short/bench.log -out bench-report/short; \
	if [[ -n $$fail ]]; then echo "bench-short: failed:$$fail" >&2; exit 1; fi

## bench-scan: a 1,000,000-row table (BINLAKE_SCAN_ROWS) after 100 upsert commits (BINLAKE_SCAN_ROUNDS) of 10 % of
## its rows, ingested in each delete mode (equality; position and dv each twice: with the in-ingest rewrite on, set
## explicitly to --rewrite-dead-fraction=0.3 --rewrite-delete-files=16 --rewrite-manifests=16 since ingest's
## default is off, and with it off), read by the Java reader and DuckDB before and after `ingest maintain`. Five
## ingest runs where there were three, hence the 150-minute timeout. Prints one line per run:
## SCAN mode=<m> rewrite=<on|off|n/a> ingest_rows_per_s=<r> read_s=<s> read_compacted_s=<c> ratio=<s/c> delete_files=<n> index_mib=<i> rss_mib=<m> duckdb_read_s=... (see TestBenchScan)
bench-scan: stack-up
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 BINLAKE_BENCH=1 $(GO) test -tags integration -count=1 -timeout 150m -run TestBenchScan -v ./test/bench | grep -E '^(SCAN|--- |ok|FAIL)|bench_integration_test'

## bench-snapshot: a 5,000,000-row table (BINLAKE_SNAPSHOT_BENCH_ROWS) snapshotted by capture and by the Debezium MariaDB connector.
## Prints: SNAPSHOT rows=<n> seconds=<s> rows_per_s=<r> debezium_rows_per_s=<d> ratio=<r/d> rss_mib=<m>
## and SNAPSHOT_CPU rows=<n> cpu_s_per_m=<capture's CPU-seconds per million rows>. BINLAKE_SNAPSHOT_PEER=0 skips Debezium
## (no SNAPSHOT line then) and BINLAKE_CAPTURE_PROFILE=<dir> writes capture's CPU profile there (for profiling).
bench-snapshot: stack-up
	eval "$$($(STACK) env)" && BINLAKE_REQUIRE_STACK=1 BINLAKE_BENCH=1 $(GO) test -tags integration -count=1 -timeout 90m -run TestBenchSnapshot -v ./test/bench | grep -E '^(SNAPSHOT|--- |ok|FAIL)|bench_integration_test'
