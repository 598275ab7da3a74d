#!/usr/bin/env bash
# The integration tests of make test, in two lanes run side by side against
# the one stack, then the tests that must have it to themselves.
#
#   lane e2e:  ./test/e2e (the end-to-end tests, about half the time)
#   lane rest: every other package, then the rename tests of test/e2e
#              (RENAME_TESTS, moved here to even the lanes out: on
#              2026-12-07 the e2e lane took 1690 s with
#              TestScaleOutRenames, about 180 s of it, and the rest
#              lane 1270 s) and the
#              S3 Tables pass of test/e2e
#   then:      the tests in SERIAL_TESTS, alone: they act on the whole
#              server (TestCapturePurgedBinlog purges the binlog up to
#              the current file, which would pull it from under another
#              lane's capture or Debezium)
#
# Every test keeps to a database, topic prefix, consumer group and
# namespace of its own, so the lanes share nothing but the services.
# Each lane's output is printed when the lane ends, with its time; the
# script fails when any lane does. Usage (from the repository root, with
# the stack's environment, as make integration runs it):
#
#   test/integration.sh <go test flags...>
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
flags=("$@")
S3TABLES_TESTS='^(TestIngestPipeline|TestIngestKill|TestIngestBothProducersTypes)$'
SERIAL_TESTS='^(TestCapturePurgedBinlog)$'
RENAME_TESTS='^(TestRenames|TestRenamesKill9|TestRenamesCapture|TestColumnRenamesCapture|TestColumnRenamesDebezium|TestScaleOutRenames)$'

logs=$(mktemp -d /tmp/binlake-integration.XXXXXX)
mapfile -t others < <($GO list ./... | grep -v '/test/e2e$')

lane() { # name, then the commands, each a single string run by bash
	local name=$1 start=$SECONDS rc=0
	shift
	for c in "$@"; do
		bash -c "$c" >>"$logs/$name.log" 2>&1 || rc=1
	done
	echo "$rc $((SECONDS - start))" >"$logs/$name.rc"
}

q() { printf '%q ' "$@"; }

echo "integration: two lanes side by side (logs in $logs)"
lane e2e "$(q "$GO" test "${flags[@]}" -skip "$SERIAL_TESTS|$RENAME_TESTS" ./test/e2e)" &
lane rest "$(q "$GO" test "${flags[@]}" "${others[@]}")" \
	"$(q "$GO" test "${flags[@]}" -run "$RENAME_TESTS" ./test/e2e)" \
	"BINLAKE_TEST_CATALOG=s3tables $(q "$GO" test "${flags[@]}" -run "$S3TABLES_TESTS" ./test/e2e)" &
wait
lane serial "$(q "$GO" test "${flags[@]}" -run "$SERIAL_TESTS" ./test/e2e)"

fail=0
for name in e2e rest serial; do
	read -r rc secs <"$logs/$name.rc"
	echo "=== lane $name: $([[ $rc == 0 ]] && echo ok || echo FAILED) in ${secs}s"
	cat "$logs/$name.log"
	[[ $rc == 0 ]] || fail=1
done
exit $fail
