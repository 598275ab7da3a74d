#!/usr/bin/env bash
# deploy/local/debezium.sh: the real Debezium MariaDB connector on a local Kafka Connect
# worker (standalone mode), the reference that capture's events are compared with.
#
#   debezium.sh install                       download what is missing (idempotent)
#   debezium.sh install-glue                  the same, with AWS's Glue converter required
#   debezium.sh run <name> <connector.properties>
#                                             start a standalone worker running that connector
#   debezium.sh stop <name>                   stop it (offsets and history are kept)
#   debezium.sh reset <name>                  stop it, delete its offsets and history (log kept as <name>.last.log)
#   debezium.sh status <name>                 exit 0 when the connector and its task are RUNNING
#   debezium.sh wait <name> [seconds]         wait until the connector streams from the binlog
#   debezium.sh logs <name>                   tail the worker log
#
# Uses the stack of deploy/local/stack.sh (MariaDB, Kafka, Apicurio Registry), which must
# be up. Files live under $BINLAKE_STACK_DIR/connect (default <repo>/.stack/connect):
#   lib/        Kafka Connect runtime jars    plugins/   Debezium and the Apicurio converter
#                                             (and Debezium's JDBC sink, fetched by install or
#                                             by the first run of a JdbcSinkConnector)
#   plugins-glue/  AWS's Glue Schema Registry converter (fetched by install, install-glue or the
#               first run of a connector that names AWSKafkaAvroConverter; on plugin.path only
#               for those, so the other workers do not scan its 57 MB jar)
#   <name>/     worker.properties, connector.properties, offsets.dat, schema-history.dat,
#               connect.log, connect.pid
# In connector.properties, the text @DIR@ is replaced with the absolute path of <name>/.
# One worker per REST port: 18083, or $BINLAKE_CONNECT_PORT (a sink worker beside a source one).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STACK=${BINLAKE_STACK_DIR:-$REPO/.stack}
CONNECT=$STACK/connect
MAVEN_DIR=$REPO/deploy/local/maven

# Versions. Change here only.
KAFKA_VERSION=4.3.0 # also in maven/connect/pom.xml
# The Maven mirror this project reaches does not serve debezium-connector-mariadb 3.6.x (nor
# 3.5.1/3.5.2): 3.5.0.Final is the newest served release. Set DEBEZIUM_VERSION=3.6.1.Final
# where it is served. schemas/testdata/debezium/README.md lists what differs between them.
DEBEZIUM_VERSION=${DEBEZIUM_VERSION:-3.5.0.Final}
# Apicurio converter: io.apicurio:apicurio-registry-utils-converter 3.0.9 is the only served
# release of it (no connect-converter distribution is served). Its 3.0.9 serde modules are served
# but not its parent POM, so they are copied one by one; apicurio-registry-java-sdk 3.0.9 is not
# served, 3.0.7 is. See maven/apicurio-converter/pom.xml for the third-party jars.
APICURIO_CONVERTER_VERSION=3.0.9
APICURIO_SDK_VERSION=3.0.7
# AWS's Glue Schema Registry converter: software.amazon.glue:schema-registry-kafkaconnect-converter
# is one shaded jar (AWS SDK, Avro, its own copy of Kafka's client, whose org.apache.kafka classes
# the worker's own shadow). 1.1.9 is the only release the mirror serves (maven-metadata lists no
# other), so it is also the newest Maven resolves here. It has no ServiceLoader manifest for its
# converter, so its workers scan plugins (hybrid_warn, the default here); the scan logs "Failed to
# get plugin version for class org.apache.kafka.connect.storage.StringConverter" for the shaded copy
# of Kafka's StringConverter in the jar, which nothing uses.
GLUE_CONVERTER_VERSION=${GLUE_CONVERTER_VERSION:-1.1.9}
GLUE_CONVERTER_CLASS=com.amazonaws.services.schemaregistry.kafkaconnect.AWSKafkaAvroConverter

BROKERS=${BINLAKE_KAFKA_BROKERS:-127.0.0.1:19092}
REST_PORT=${BINLAKE_CONNECT_PORT:-18083}
CONNECT_HEAP=${BINLAKE_CONNECT_HEAP:--Xmx768m}
# hybrid_warn scans every plugin jar reflectively (about a minute on a loaded machine with the
# JDBC sink's drivers); service_load reads only their ServiceLoader manifests, which all of
# these plugins have (the worker says so).
PLUGIN_DISCOVERY=${BINLAKE_CONNECT_PLUGIN_DISCOVERY:-hybrid_warn}

log() { printf '%s debezium: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() { sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# ---------------------------------------------------------------- Java 17

java_major() { "$1" -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'; }

find_java17() { # Connect and Debezium are run on Java 17 exactly, as in production images
  local j
  for j in "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
    [[ -n $j && -x $j ]] || continue
    if [[ $(java_major "$j") == 17 ]]; then echo "$j"; return 0; fi
  done
  return 1
}

# ---------------------------------------------------------------- install

mvn_log() { echo "$CONNECT/maven.log"; }

mvn_copy() { # mvn_copy <group:artifact:version[:type[:classifier]]> <dir>: one artifact, no deps
  mkdir -p "$2"
  mvn -q -B dependency:copy "-Dartifact=$1" -Dtransitive=false "-DoutputDirectory=$2" >"$(mvn_log)" 2>&1 ||
    die "downloading $1 from Maven Central failed (log: $(mvn_log))"
}

mvn_deps() { # mvn_deps <pom dir> <dir>: the runtime dependencies of a resolution-only pom
  rm -rf "$2.tmp"
  (cd "$1" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime \
    "-DoutputDirectory=$2.tmp" >"$(mvn_log)" 2>&1) || die "resolving $1/pom.xml failed (log: $(mvn_log))"
  rm -rf "$2"
  mv "$2.tmp" "$2"
}

install_runtime() {
  if [[ -f $CONNECT/lib/connect-runtime-$KAFKA_VERSION.jar ]]; then return; fi
  log "downloading Kafka Connect $KAFKA_VERSION jars (Maven Central)"
  mvn_deps "$MAVEN_DIR/connect" "$CONNECT/lib"
}

install_debezium() {
  local dir=$CONNECT/plugins/debezium-connector-mariadb
  if [[ -f $dir/debezium-connector-mariadb-$DEBEZIUM_VERSION.jar ]]; then return; fi
  log "downloading the Debezium MariaDB connector $DEBEZIUM_VERSION plugin (Maven Central)"
  mvn_copy "io.debezium:debezium-connector-mariadb:$DEBEZIUM_VERSION:tar.gz:plugin" "$CONNECT/dl"
  rm -rf "$dir"
  mkdir -p "$CONNECT/plugins"
  tar xzf "$CONNECT/dl/debezium-connector-mariadb-$DEBEZIUM_VERSION-plugin.tar.gz" -C "$CONNECT/plugins"
  # The archive carries the Kafka client and Connect API it was built with; the worker's own
  # copies must win, so drop them (Connect would load org.apache.kafka from the parent anyway).
  rm -f "$dir"/kafka-clients-*.jar "$dir"/connect-api-*.jar "$dir"/connect-runtime-*.jar \
    "$dir"/connect-json-*.jar "$dir"/connect-transforms-*.jar
  [[ -f $dir/debezium-connector-mariadb-$DEBEZIUM_VERSION.jar ]] || die "unexpected plugin layout in $dir"
}

install_converter() {
  local dir=$CONNECT/plugins/apicurio-converter a
  if [[ -f $dir/.complete ]]; then return; fi
  log "downloading the Apicurio Avro converter (Maven Central)"
  # Third-party jars (Avro, Kiota, Vert.x, Netty, Jackson) from the newest serde release that
  # resolves as a whole, then the Apicurio jars themselves from the converter's own line (3.0.x):
  # the 3.0.9 converter does not link against the 3.1 serde (KafkaSerializer moved package).
  mvn_deps "$MAVEN_DIR/apicurio-converter" "$dir"
  rm -f "$dir"/apicurio-registry-*.jar
  for a in utils-converter avro-serde-kafka serde-kafka-common serde-common serde-common-avro schema-resolver common; do
    mvn_copy "io.apicurio:apicurio-registry-$a:$APICURIO_CONVERTER_VERSION" "$dir"
  done
  mvn_copy "io.apicurio:apicurio-registry-java-sdk:$APICURIO_SDK_VERSION" "$dir"
  touch "$dir/.complete"
}

install_glue_converter() { # AWS's Glue converter, in a plugin directory of its own
  local dir=$CONNECT/plugins-glue/aws-glue-converter
  if [[ -f $dir/schema-registry-kafkaconnect-converter-$GLUE_CONVERTER_VERSION.jar ]]; then return; fi
  log "downloading AWS's Glue Schema Registry converter $GLUE_CONVERTER_VERSION (Maven Central)"
  rm -rf "$dir.tmp"
  mvn_copy "software.amazon.glue:schema-registry-kafkaconnect-converter:$GLUE_CONVERTER_VERSION" "$dir.tmp"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
}

JDBC_SINK_CLASS=io.debezium.connector.jdbc.JdbcSinkConnector

install_jdbc_sink() { # Debezium's JDBC sink connector: a third-party consumer of capture's topics
  local dir=$CONNECT/plugins/debezium-connector-jdbc
  if [[ -f $dir/debezium-connector-jdbc-$DEBEZIUM_VERSION.jar ]]; then return; fi
  log "downloading the Debezium JDBC sink connector $DEBEZIUM_VERSION plugin (Maven Central)"
  mvn_copy "io.debezium:debezium-connector-jdbc:$DEBEZIUM_VERSION:tar.gz:plugin" "$CONNECT/dl"
  rm -rf "$dir"
  mkdir -p "$CONNECT/plugins"
  tar xzf "$CONNECT/dl/debezium-connector-jdbc-$DEBEZIUM_VERSION-plugin.tar.gz" -C "$CONNECT/plugins"
  rm -f "$CONNECT/dl/debezium-connector-jdbc-$DEBEZIUM_VERSION-plugin.tar.gz"
  # As for the MariaDB connector: the worker's Kafka client and Connect API win.
  rm -f "$dir"/kafka-clients-*.jar "$dir"/connect-api-*.jar "$dir"/connect-runtime-*.jar \
    "$dir"/connect-json-*.jar "$dir"/connect-transforms-*.jar
  [[ -f $dir/debezium-connector-jdbc-$DEBEZIUM_VERSION.jar ]] || die "unexpected plugin layout in $dir"
}

install_log4j() {
  cat >"$CONNECT/log4j2.properties" <<'EOF'
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = org.apache.kafka
logger.kafka.level = WARN
logger.connect.name = org.apache.kafka.connect.runtime.WorkerSourceTask
logger.connect.level = INFO
logger.apicurio.name = io.apicurio
logger.apicurio.level = INFO
logger.debezium.name = io.debezium
logger.debezium.level = INFO
EOF
}

cmd_install() { # cmd_install [jdbc] [glue]: the runtime, the MariaDB connector, the converter (and the JDBC sink, AWS's Glue converter)
  command -v mvn >/dev/null || die "maven (mvn) is needed: apt-get install maven"
  find_java17 >/dev/null || die "Java 17 is needed: apt-get install openjdk-17-jre-headless"
  mkdir -p "$CONNECT"
  # One installer (and one Maven run of the tests, test/testenv.MavenLockPath) at a time:
  # workers started side by side (test/integration.sh's lanes) share these files and ~/.m2.
  exec 9>"${TMPDIR:-/tmp}/binlake-maven.lock"
  flock 9
  install_runtime
  install_debezium
  install_converter
  local a
  for a in "$@"; do
    case $a in
    jdbc) install_jdbc_sink ;;
    glue) install_glue_converter ;;
    esac
  done
  install_log4j
  flock -u 9
  exec 9>&-
  local what="Kafka Connect $KAFKA_VERSION, Debezium MariaDB $DEBEZIUM_VERSION, Apicurio converter"
  if [[ -f $CONNECT/plugins-glue/aws-glue-converter/schema-registry-kafkaconnect-converter-$GLUE_CONVERTER_VERSION.jar ]]; then
    what+=", AWS Glue converter $GLUE_CONVERTER_VERSION"
  fi
  log "installed: $what"
}

# ---------------------------------------------------------------- run, stop, status

name_dir() { # name_dir <name>: validate the name and print its directory
  [[ ${1:-} =~ ^[A-Za-z0-9._-]+$ ]] || die "bad worker name '${1:-}'"
  echo "$CONNECT/$1"
}

running() { local f=$1/connect.pid; [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null; }

rest() { curl -sf --max-time 5 "http://127.0.0.1:$REST_PORT$1"; }

connector_name() { sed -n 's/^[[:space:]]*name[[:space:]]*=[[:space:]]*//p' "$1/connector.properties" | head -1; }

cmd_run() {
  [[ $# -eq 2 ]] || usage
  local dir props=$2 java
  dir=$(name_dir "$1")
  [[ -f $props ]] || die "no connector properties file $props"
  running "$dir" && die "worker $1 is already running (pid $(cat "$dir/connect.pid"))"
  if rest / >/dev/null 2>&1; then die "another Kafka Connect worker already listens on port $REST_PORT"; fi
  # The JDBC sink plugin (55 MB) only for the workers that run it.
  local extras=() plugins=$CONNECT/plugins
  if grep -q "^connector.class=$JDBC_SINK_CLASS" "$props"; then extras+=(jdbc); fi
  # AWS's Glue converter only for the workers whose connector uses it.
  if grep -q "converter=$GLUE_CONVERTER_CLASS" "$props"; then extras+=(glue); plugins+=",$CONNECT/plugins-glue"; fi
  cmd_install "${extras[@]}"
  java=$(find_java17)
  mkdir -p "$dir"
  sed "s#@DIR@#$dir#g" "$props" >"$dir/connector.properties"
  cat >"$dir/worker.properties" <<EOF
bootstrap.servers=$BROKERS
listeners=http://127.0.0.1:$REST_PORT
plugin.path=$plugins
plugin.discovery=$PLUGIN_DISCOVERY
offset.storage.file.filename=$dir/offsets.dat
offset.flush.interval.ms=1000
# Defaults for connectors that do not choose converters (the binlake ones always do).
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
# The broker does not auto-create topics: connectors set topic.creation.default.*.
topic.creation.enable=true
EOF
  log "starting Kafka Connect worker $1 ($(connector_name "$dir"), log $dir/connect.log)"
  setsid nohup "$java" $CONNECT_HEAP -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    "-Dlog4j2.configurationFile=file:$CONNECT/log4j2.properties" \
    -cp "$CONNECT/lib/*" org.apache.kafka.connect.cli.ConnectStandalone \
    "$dir/worker.properties" "$dir/connector.properties" >>"$dir/connect.log" 2>&1 </dev/null &
  echo $! >"$dir/connect.pid"
  local i
  for ((i = 0; i < 240; i++)); do
    if status_ok "$dir"; then log "worker $1 is RUNNING"; return 0; fi
    if failed "$dir"; then
      rest "/connectors/$(connector_name "$dir")/status" | jq -r '.. | .trace? // empty' | head -n 20 >&2 || true
      die "the connector of worker $1 FAILED (log: $dir/connect.log); it is still running: debezium.sh stop $1"
    fi
    if ! running "$dir"; then
      tail -n 40 "$dir/connect.log" >&2 || true
      die "worker $1 exited during start-up (log: $dir/connect.log)"
    fi
    sleep 0.5
  done
  tail -n 40 "$dir/connect.log" >&2 || true
  die "connector of worker $1 not RUNNING after 120s (log: $dir/connect.log)"
}

status_ok() { # status_ok <dir>: connector and every task RUNNING, at least one task
  local json name
  name=$(connector_name "$1")
  json=$(rest "/connectors/$name/status" 2>/dev/null) || return 1
  [[ $(jq -r '.connector.state' <<<"$json") == RUNNING ]] || return 1
  jq -e '(.tasks | length) > 0 and all(.tasks[]; .state == "RUNNING")' <<<"$json" >/dev/null
}

failed() { # failed <dir>: the connector or a task is FAILED
  local json
  json=$(rest "/connectors/$(connector_name "$1")/status" 2>/dev/null) || return 1
  jq -e '.connector.state == "FAILED" or any(.tasks[]; .state == "FAILED")' <<<"$json" >/dev/null
}

cmd_status() {
  [[ $# -eq 1 ]] || usage
  local dir name
  dir=$(name_dir "$1")
  running "$dir" || { echo "$1: not running"; return 1; }
  name=$(connector_name "$dir")
  rest "/connectors/$name/status" | jq -c . || { echo "$1: REST API not answering"; return 1; }
  status_ok "$dir"
}

streaming() { # the binlog client is connected (BinlogStreamingChangeEventSource logs this)
  grep -q -E 'Connected to (MariaDB|MySQL) binlog at|Keepalive thread is running' "$1/connect.log"
}

cmd_wait() {
  [[ $# -ge 1 ]] || usage
  local dir secs=${2:-120} i
  dir=$(name_dir "$1")
  for ((i = 0; i < secs * 4; i++)); do
    if streaming "$dir" && status_ok "$dir"; then log "worker $1 is streaming"; return 0; fi
    if failed "$dir"; then die "the connector of worker $1 FAILED (log: $dir/connect.log)"; fi
    if ! running "$dir"; then
      tail -n 40 "$dir/connect.log" >&2 || true
      die "worker $1 is not running (log: $dir/connect.log)"
    fi
    sleep 0.25
  done
  tail -n 40 "$dir/connect.log" >&2 || true
  die "worker $1 not streaming after ${secs}s (log: $dir/connect.log)"
}

cmd_stop() {
  [[ $# -eq 1 ]] || usage
  local dir pid i
  dir=$(name_dir "$1")
  [[ -f $dir/connect.pid ]] || return 0
  pid=$(cat "$dir/connect.pid")
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping worker $1"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 120; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then
      log "worker $1 did not stop in 30s; killing"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$dir/connect.pid"
}

cmd_reset() {
  [[ $# -eq 1 ]] || usage
  local dir
  dir=$(name_dir "$1")
  cmd_stop "$1"
  # Keep the last log for post-mortems: $CONNECT/<name>.last.log.
  if [[ -f $dir/connect.log ]]; then mv "$dir/connect.log" "$CONNECT/$1.last.log"; fi
  rm -rf "$dir"
}

cmd_logs() {
  [[ $# -eq 1 ]] || usage
  tail -n 100 -f "$(name_dir "$1")/connect.log"
}

case ${1:-} in
install)
  cmd_install jdbc
  # AWS's Glue converter is only for test/e2e's TestDebeziumGlueConverter, which skips without it:
  # a machine where it does not resolve still gets everything else.
  (cmd_install glue) || log "warning: AWS's Glue converter did not install (see above); the rest did"
  ;;
install-glue) cmd_install glue ;;
run) shift; cmd_run "$@" ;;
stop) shift; cmd_stop "$@" ;;
reset) shift; cmd_reset "$@" ;;
status) shift; cmd_status "$@" ;;
wait) shift; cmd_wait "$@" ;;
logs) shift; cmd_logs "$@" ;;
*) usage ;;
esac
