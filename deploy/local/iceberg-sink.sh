#!/usr/bin/env bash
# deploy/local/iceberg-sink.sh: the Apache Iceberg Kafka Connect sink (1.12.0), ingest's peer in
# `make bench-peer`, on a standalone Kafka Connect worker against the stack of deploy/local/stack.sh.
#
#   iceberg-sink.sh install                   assemble the plugin from Maven Central (once; cached)
#   iceberg-sink.sh run <dir> <connector.properties>
#                                             run a standalone worker with that connector in the
#                                             foreground (exec: the caller's child is the JVM itself,
#                                             so its pid, start time and RSS are the sink's)
#
# Files: the plugin under $BINLAKE_STACK_DIR/iceberg-sink/plugins (built by
# test/bench/ikc/pom-iceberg-sink.xml); the Kafka Connect runtime and the Apicurio Avro converter
# are deploy/local/debezium.sh's (it installs them). <dir> gets worker.properties, offsets and the log
# configuration; the connector properties are the caller's (test/bench/ikc/iceberg-peer.properties
# with the run's topic, names and ports).
# Environment: BINLAKE_KAFKA_BROKERS (127.0.0.1:19092), BINLAKE_ICEBERG_SINK_PORT (REST port,
# 18084 + BINLAKE_PORT_OFFSET), BINLAKE_ICEBERG_SINK_HEAP (-Xmx1g).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STACK=${BINLAKE_STACK_DIR:-$REPO/.stack}
SINK=$STACK/iceberg-sink
CONNECT=$STACK/connect
IKC=$REPO/test/bench/ikc
ICEBERG_VERSION=1.12.0 # also in test/bench/ikc/pom-iceberg-sink.xml
OFF=${BINLAKE_PORT_OFFSET:-0}
BROKERS=${BINLAKE_KAFKA_BROKERS:-127.0.0.1:$((19092 + OFF))}
REST_PORT=${BINLAKE_ICEBERG_SINK_PORT:-$((18084 + OFF))}
HEAP=${BINLAKE_ICEBERG_SINK_HEAP:--Xmx1g}

log() { printf '%s iceberg-sink: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

cmd_install() {
  bash "$REPO/deploy/local/debezium.sh" install
  # plugin.path lists directories of plugin directories: the converter joins the sink's by a link
  # (not the whole of debezium.sh's plugins, which the worker would scan too).
  mkdir -p "$SINK/plugins"
  ln -sfn "$CONNECT/plugins/apicurio-converter" "$SINK/plugins/apicurio-converter"
  local lib=$SINK/plugins/iceberg-sink/lib
  if [[ -f $lib/iceberg-kafka-connect-$ICEBERG_VERSION.jar ]]; then return; fi
  command -v mvn >/dev/null || die "maven (mvn) is needed: apt-get install maven"
  log "assembling the Iceberg Kafka Connect sink $ICEBERG_VERSION plugin (Maven Central)"
  rm -rf "$SINK/build" "$lib"
  mkdir -p "$SINK/build"
  cp "$IKC/pom-iceberg-sink.xml" "$SINK/build/pom.xml"
  (cd "$SINK/build" && mvn -q -B package "-Dplugin.dir=$lib.tmp") >"$SINK/maven.log" 2>&1 ||
    die "assembling the plugin failed (log: $SINK/maven.log)"
  mv "$lib.tmp" "$lib"
  [[ -f $lib/iceberg-kafka-connect-$ICEBERG_VERSION.jar ]] || die "unexpected plugin layout in $lib"
  log "installed: $(ls "$lib" | wc -l) jars in $lib"
}

cmd_run() {
  [[ $# -eq 2 ]] || usage
  local dir=$1 props=$2
  [[ -f $props ]] || die "no connector properties file $props"
  cmd_install
  mkdir -p "$dir/run"
  cp "$IKC/log4j2.properties" "$dir/log4j2.properties"
  # The reference worker file with this run's directory, plugins, broker and port.
  sed -e "s#\$PEER_DIR/plugins#$SINK/plugins#" -e "s#\$PEER_DIR#$dir#g" -e "s#^bootstrap.servers=.*#bootstrap.servers=$BROKERS#" \
    -e "s#^listeners=.*#listeners=http://127.0.0.1:$REST_PORT#" \
    "$IKC/worker-standalone.properties" >"$dir/worker.properties"
  # MinIO: the same checksum settings the stack's REST catalog runs with.
  export AWS_REQUEST_CHECKSUM_CALCULATION=WHEN_REQUIRED AWS_RESPONSE_CHECKSUM_VALIDATION=WHEN_REQUIRED
  # The default JIT on purpose (no -XX:TieredStopAtLevel=1): a fair peer keeps its optimizing compiler.
  exec java "$HEAP" -XX:+UseParallelGC "-Dlog4j2.configurationFile=file:$dir/log4j2.properties" \
    -cp "$CONNECT/lib/*" org.apache.kafka.connect.cli.ConnectStandalone "$dir/worker.properties" "$props"
}

case ${1:-} in
install) cmd_install ;;
run) shift; cmd_run "$@" ;;
*) usage ;;
esac
