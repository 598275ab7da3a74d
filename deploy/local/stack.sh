#!/usr/bin/env bash
# deploy/local/stack.sh: the local binlake stack, as plain processes on loopback.
#
#   stack.sh up [component...]   install what is missing, start what is not running
#                     (idempotent; all components, or only those named); with none named
#                     it also starts installing the tools in the background
#   stack.sh up tools install helm and promtool (or wait for the background install)
#   stack.sh down     stop every component (data is kept)
#   stack.sh stop <component>    stop one component (data is kept; `up <component>` starts it)
#   stack.sh pause|resume <component>   SIGSTOP / SIGCONT its processes (the chaos test's frozen broker)
#   stack.sh wipe     stop and delete all data, downloads and logs under the stack folder
#   stack.sh status   print each component as healthy or not; exit 1 if any is not
#   stack.sh env      print the endpoints as shell exports (eval "$(stack.sh env)")
#   stack.sh logs [component]   tail the logs
#
# Components: MariaDB 10.11 (Debian package), Apache Kafka 4.x in KRaft mode and the
# Apicurio Registry 3.x and the Iceberg REST catalog (Maven Central), MinIO (go install);
# tools: helm and promtool (go install), which check deploy/ (make deploy-check).
# Everything lives under $BINLAKE_STACK_DIR (default: <repo>/.stack, git-ignored).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STACK=${BINLAKE_STACK_DIR:-$REPO/.stack}
MAVEN_DIR=$REPO/deploy/local/maven

# Versions. Change here only.
KAFKA_VERSION=4.3.0            # also in maven/kafka/pom.xml
ICEBERG_REST_VERSION=1.10.1    # last release whose iceberg-open-api main jar is the runnable fixture
APICURIO_VERSION=3.3.3         # needs Java 21+; 3.0.9 runs on Java 17 (fallback below)
APICURIO_VERSION_JAVA17=3.0.9
MINIO_MODULE=github.com/minio/minio@latest
# Tools of make deploy-check: <name> <module> <version> <package in the module> [build tags].
# promtool without service discovery (remove_all_sd): check rules needs none of it, and
# it compiles in about a third of the time.
TOOLS=(
  "helm helm.sh/helm/v3 v3.22.0 cmd/helm"
  "promtool github.com/prometheus/prometheus v0.316.0 cmd/promtool remove_all_sd"
  "toxiproxy-server github.com/Shopify/toxiproxy/v2 v2.12.0 cmd/server"
)
PYICEBERG_VERSION=0.12.0       # test reader (PyPI), installed in a venv under $STACK/python
DUCKDB_VERSION=1.5.5           # test reader (PyPI duckdb and its packaged iceberg, avro, httpfs extensions), same venv
PYSPARK_VERSION=4.1.4          # test reader (PyPI pyspark), same venv; its Iceberg runtime jars: test/icebergreader/spark/pom.xml

# Ports (fixed, non-default, loopback only).
# BINLAKE_PORT_OFFSET shifts every port (e.g. 1000: MariaDB 14306, Kafka 20092), so a
# second stack with its own BINLAKE_STACK_DIR runs beside the first one.
OFF=${BINLAKE_PORT_OFFSET:-0}
[[ $OFF =~ ^[0-9]+$ ]] || { echo "BINLAKE_PORT_OFFSET must be a number, not '$OFF'" >&2; exit 2; }
MARIADB_PORT=${BINLAKE_MARIADB_PORT:-$((13306 + OFF))}
KAFKA_PORT=$((19092 + OFF))
KAFKA_CONTROLLER_PORT=$((19093 + OFF))
REGISTRY_PORT=$((18081 + OFF))
REGISTRY_MGMT_PORT=$((19001 + OFF))
ICEBERG_PORT=$((18181 + OFF))
MINIO_PORT=$((19900 + OFF))
MINIO_CONSOLE_PORT=$((19901 + OFF))
# Two more Kafka listeners for the chaos test (test/chaos): each advertises the
# port of a TCP proxy (toxiproxy) in front of it, one for capture and one for
# ingest, so that every connection of that binary to the broker goes through
# its proxy. Nothing else uses them; without the proxies they are unreachable.
KAFKA_CAPTURE_PORT=$((19094 + OFF))
KAFKA_CAPTURE_PROXY_PORT=$((19194 + OFF))
KAFKA_INGEST_PORT=$((19095 + OFF))
KAFKA_INGEST_PROXY_PORT=$((19195 + OFF))

# Local-only credentials of the development stack (never used outside loopback).
MINIO_USER=binlake
MINIO_PASSWORD=binlake-secret
WAREHOUSE_BUCKET=warehouse
MARIADB_ADMIN_USER=binlake_admin
MARIADB_ADMIN_PASSWORD=binlake-admin
MARIADB_CAPTURE_USER=binlake_capture
MARIADB_CAPTURE_PASSWORD=binlake-capture
MARIADB_DEBEZIUM_USER=debezium
MARIADB_DEBEZIUM_PASSWORD=dbz

COMPONENTS=(mariadb minio kafka registry iceberg)

log() { printf '%s stack: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

pidfile() { echo "$STACK/run/$1.pid"; }
logfile() { echo "$STACK/logs/$1.log"; }

running() { # running <component>: its recorded process is alive
  local f; f=$(pidfile "$1")
  [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

port_free() { # port_free <component> <port>...: fail if a process this stack did not start holds a port
  local name=$1 p; shift
  for p in "$@"; do
    port_open "$p" && die "cannot start $name: port $p is taken by another process (another stack under a different BINLAKE_STACK_DIR? stop it first)"
  done
  return 0
}

start_bg() { # start_bg <component> <cmd...>: run detached, record pid, log to file
  local name=$1; shift
  mkdir -p "$STACK/run" "$STACK/logs"
  log "starting $name"
  setsid nohup "$@" >>"$(logfile "$name")" 2>&1 </dev/null &
  echo $! >"$(pidfile "$name")"
}

wait_for() { # wait_for <component> <seconds> <check-fn>
  local name=$1 secs=$2 fn=$3 i
  for ((i = 0; i < secs * 4; i++)); do
    if "$fn"; then [[ ${4:-} == quiet ]] || log "$name is up"; return 0; fi
    if ! running "$name"; then
      tail -n 40 "$(logfile "$name")" >&2 || true
      die "$name exited during start-up (log: $(logfile "$name"))"
    fi
    sleep 0.25
  done
  tail -n 40 "$(logfile "$name")" >&2 || true
  die "$name not healthy after ${secs}s (log: $(logfile "$name"))"
}

stop_one() {
  local name=$1 f pid i
  f=$(pidfile "$name")
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping $name"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 120; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name did not stop in 30s; killing"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$f"
}

# ---------------------------------------------------------------- Java

java_major() { "$1" -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'; }

find_java() { # find_java <min-major>: print a java binary of at least that version
  local min=$1 j
  for j in "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
    [[ -n $j && -x $j ]] || continue
    if (($(java_major "$j") >= min)); then echo "$j"; return 0; fi
  done
  return 1
}

need_tools() {
  local missing=()
  command -v curl >/dev/null || missing+=(curl)
  command -v mvn >/dev/null || missing+=(maven)
  find_java 17 >/dev/null || missing+=(openjdk-17-jre-headless)
  command -v mariadbd >/dev/null || missing+=(mariadb-server mariadb-client)
  if ((${#missing[@]})); then
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
    log "installing ${missing[*]} (apt-get)"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  command -v go >/dev/null || die "go is not on PATH (Go 1.26 is required)"
}

mvn_copy() { # mvn_copy <group:artifact:version[:type[:classifier]]> <dir>
  mkdir -p "$2"
  mvn -q -B dependency:copy "-Dartifact=$1" "-DoutputDirectory=$2" >"$(logfile maven)" 2>&1 ||
    die "downloading $1 from Maven Central failed"
}

# ---------------------------------------------------------------- MariaDB

MARIADB_DIR=$STACK/mariadb
mariadb_sock() { echo "$MARIADB_DIR/mariadbd.sock"; }
mariadb_root() { mariadb --no-defaults --socket="$(mariadb_sock)" -uroot "$@"; }
mariadb_ok() { mariadb-admin --no-defaults --socket="$(mariadb_sock)" -uroot ping >/dev/null 2>&1; }

# The server runs as the invoking user, so that its data can live under the
# clone wherever that is: as root (which mariadbd refuses without saying so)
# --user=root; dropping to the mysql user instead failed in any directory
# that user cannot enter (a clone under /root, or a mode 0700 mktemp -d).
mariadb_user_args() { if [[ $(id -u) == 0 ]]; then echo --user=root; fi; }

mariadb_up() {
  if running mariadb && mariadb_ok; then log "mariadb already running"; mariadb_plugins; return; fi
  mkdir -p "$MARIADB_DIR"
  local fresh=0
  if [[ ! -d $MARIADB_DIR/db/mysql ]]; then
    log "initialising mariadb datadir"
    # shellcheck disable=SC2046 # mariadb_user_args prints zero or one word
    if ! mariadb-install-db --no-defaults $(mariadb_user_args) --datadir="$MARIADB_DIR/db" \
      --auth-root-authentication-method=normal --skip-test-db >"$(logfile mariadb-install)" 2>&1; then
      tail -n 15 "$(logfile mariadb-install)" >&2 || true
      if grep -qi "permission denied" "$(logfile mariadb-install)"; then
        die "mariadb-install-db cannot write $MARIADB_DIR/db as $(id -un): set BINLAKE_STACK_DIR to a directory this user owns"
      fi
      die "mariadb-install-db failed (the lines above; log: $(logfile mariadb-install))"
    fi
    fresh=1
  fi
  # The settings a CDC reader needs (deploy/README.md, "The local stack"): ROW images with full
  # metadata, GTID strict mode, no annotate events.
  port_free mariadb $MARIADB_PORT
  # shellcheck disable=SC2046
  start_bg mariadb mariadbd --no-defaults $(mariadb_user_args) --datadir="$MARIADB_DIR/db" \
    --socket="$(mariadb_sock)" --pid-file="$MARIADB_DIR/mariadbd.pid" \
    --port=$MARIADB_PORT --bind-address=127.0.0.1 --skip-name-resolve \
    --server-id=1 --log-bin="$MARIADB_DIR/db/mysql-bin" --binlog-format=ROW \
    --binlog-row-image=FULL --binlog-row-metadata=FULL --gtid-strict-mode=ON \
    --binlog-annotate-row-events=OFF --log-bin-compress=OFF --expire-logs-days=7 \
    --max-allowed-packet=256M --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
    --innodb-buffer-pool-size=512M --innodb-flush-log-at-trx-commit=2 --sync-binlog=0 \
    --max-connections=300 --log-error="$(logfile mariadb-server)"
  wait_for mariadb 60 mariadb_ok
  if ((fresh)) || ! mariadb_root -N -e "SELECT 1 FROM mysql.user WHERE user='$MARIADB_CAPTURE_USER'" | grep -q 1; then
    log "creating mariadb users"
    # capture needs: REPLICATION SLAVE (read the binlog), BINLOG MONITOR (= REPLICATION
    # CLIENT: SHOW MASTER STATUS, SHOW BINARY LOGS, the GTID position), SELECT (snapshot
    # reads and information_schema), SHOW DATABASES (discover included databases).
    # No RELOAD or LOCK TABLES: binlake never takes FLUSH TABLES WITH READ LOCK.
    mariadb_root <<SQL
CREATE USER IF NOT EXISTS '$MARIADB_ADMIN_USER'@'%' IDENTIFIED BY '$MARIADB_ADMIN_PASSWORD';
GRANT ALL PRIVILEGES ON *.* TO '$MARIADB_ADMIN_USER'@'%' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS '$MARIADB_CAPTURE_USER'@'%' IDENTIFIED BY '$MARIADB_CAPTURE_PASSWORD';
GRANT SELECT, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '$MARIADB_CAPTURE_USER'@'%';
CREATE USER IF NOT EXISTS '$MARIADB_DEBEZIUM_USER'@'%' IDENTIFIED BY '$MARIADB_DEBEZIUM_PASSWORD';
GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT, LOCK TABLES ON *.* TO '$MARIADB_DEBEZIUM_USER'@'%';
FLUSH PRIVILEGES;
SQL
  fi
  mariadb_plugins
}

# information_schema.METADATA_LOCK_INFO, through which the snapshot tests check that capture
# takes no locks (the plugin ships with the server package; INSTALL persists in mysql.plugin).
mariadb_plugins() {
  if ! mariadb_root -N -e "SELECT 1 FROM information_schema.PLUGINS WHERE PLUGIN_NAME='METADATA_LOCK_INFO' AND PLUGIN_STATUS='ACTIVE'" | grep -q 1; then
    mariadb_root -e "INSTALL SONAME 'metadata_lock_info'" || log "warning: the metadata_lock_info plugin is not available; lock checks fall back to the process list"
  fi
}

# ---------------------------------------------------------------- MinIO

MINIO_BIN=$STACK/bin/minio
minio_ok() { curl -sf -o /dev/null "http://127.0.0.1:$MINIO_PORT/minio/health/live"; }

minio_up() {
  if running minio && minio_ok; then log "minio already running"; else
    if [[ ! -x $MINIO_BIN ]]; then
      log "installing minio with go install (about two minutes the first time)"
      mkdir -p "$STACK/bin"
      GOBIN="$STACK/bin" GOFLAGS=-mod=mod go install "$MINIO_MODULE" >"$(logfile minio-install)" 2>&1 ||
        die "go install $MINIO_MODULE failed (log: $(logfile minio-install))"
    fi
    mkdir -p "$STACK/minio/data"
    port_free minio $MINIO_PORT $MINIO_CONSOLE_PORT
    MINIO_ROOT_USER=$MINIO_USER MINIO_ROOT_PASSWORD=$MINIO_PASSWORD MINIO_BROWSER=off \
      MINIO_UPDATE=off start_bg minio "$MINIO_BIN" server "$STACK/minio/data" \
      --address "127.0.0.1:$MINIO_PORT" --console-address "127.0.0.1:$MINIO_CONSOLE_PORT" --quiet
    wait_for minio 60 minio_ok
  fi
  # Create the warehouse bucket (idempotent: 409 BucketAlreadyOwnedByYou is fine).
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" \
    --user "$MINIO_USER:$MINIO_PASSWORD" "http://127.0.0.1:$MINIO_PORT/$WAREHOUSE_BUCKET")
  [[ $code == 200 || $code == 409 ]] || die "creating bucket $WAREHOUSE_BUCKET failed: HTTP $code"
}

# ---------------------------------------------------------------- tools (helm, promtool, toxiproxy-server)

# tool_current <binary> <module> <version>: the binary exists and was built from that
# module version (go version -m reads the build info go install records).
tool_current() {
  [[ -x $1 ]] && go version -m "$1" 2>/dev/null | awk '$1 == "mod" {print $2, $3}' | grep -qxF "$2 $3"
}

tools_current() {
  local spec name module version pkg tags
  for spec in "${TOOLS[@]}"; do
    read -r name module version pkg tags <<<"$spec"
    tool_current "$STACK/bin/$name" "$module" "$version" || return 1
  done
}

# tools_install compiles each missing tool with go install into $STACK/bin, one at a
# time (each takes minutes from a cold build cache; cached runs skip it).
tools_install() {
  local spec name module version pkg tags
  for spec in "${TOOLS[@]}"; do
    read -r name module version pkg tags <<<"$spec"
    tool_current "$STACK/bin/$name" "$module" "$version" && continue
    log "installing $name $version with go install"
    GOBIN="$STACK/bin" GOFLAGS=-mod=mod go install ${tags:+-tags "$tags"} "$module/$pkg@$version" >"$(logfile "$name-install")" 2>&1 ||
      die "go install $module/$pkg@$version failed (log: $(logfile "$name-install"))"
    # go install names the binary after the package's folder (toxiproxy's is "server").
    [[ ${pkg##*/} == "$name" ]] || mv -f "$STACK/bin/${pkg##*/}" "$STACK/bin/$name"
  done
}

# tools_start starts tools_install in the background at the lowest CPU priority, so
# that on a fresh machine it compiles while the services start and the tests run
# instead of before them; tools_up (and testenv.Tool) wait for it.
tools_start() {
  tools_current && return 0
  running tools && return 0
  mkdir -p "$STACK/run" "$STACK/logs"
  log "installing the tools (helm, promtool, toxiproxy-server) in the background (log: $(logfile tools))"
  setsid nohup nice -n 19 bash "${BASH_SOURCE[0]}" install-tools >>"$(logfile tools)" 2>&1 </dev/null &
  echo $! >"$(pidfile tools)"
}

tools_up() {
  if running tools; then
    log "waiting for the background tool install (log: $(logfile tools))"
    while running tools; do sleep 1; done
  fi
  tools_current || tools_install
  tools_current || die "the tools are not installed (logs: $STACK/logs/*-install.log)"
  log "tools ready: $(printf '%s ' "${TOOLS[@]%% *}")in $STACK/bin"
}

# ---------------------------------------------------------------- Kafka

KAFKA_DIR=$STACK/kafka
kafka_ok() { port_open $KAFKA_PORT && go_check kafka >/dev/null 2>&1; }
kafka_port_ok() { port_open $KAFKA_PORT; }

kafka_up() {
  if running kafka && kafka_ok; then log "kafka already running"; return; fi
  local java; java=$(find_java 17) || die "Kafka needs Java 17+"
  if [[ ! -f $KAFKA_DIR/lib/kafka_2.13-$KAFKA_VERSION.jar ]]; then
    log "downloading Kafka $KAFKA_VERSION jars (Maven Central)"
    rm -rf "$KAFKA_DIR/lib"
    (cd "$MAVEN_DIR/kafka" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime \
      "-DoutputDirectory=$KAFKA_DIR/lib" >"$(logfile maven)" 2>&1) || die "resolving Kafka jars failed"
  fi
  mkdir -p "$KAFKA_DIR/data"
  cat >"$KAFKA_DIR/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,CAPTURE_PROXY://127.0.0.1:$KAFKA_CAPTURE_PORT,INGEST_PROXY://127.0.0.1:$KAFKA_INGEST_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CAPTURE_PROXY://127.0.0.1:$KAFKA_CAPTURE_PROXY_PORT,INGEST_PROXY://127.0.0.1:$KAFKA_INGEST_PROXY_PORT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CAPTURE_PROXY:PLAINTEXT,INGEST_PROXY:PLAINTEXT
log.dirs=$KAFKA_DIR/data
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
message.max.bytes=16777216
log.retention.hours=-1
EOF
  cat >"$KAFKA_DIR/log4j2.properties" <<'EOF'
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = WARN
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
EOF
  if [[ ! -f $KAFKA_DIR/data/meta.properties ]]; then
    local id
    # A base64url UUID; one starting with '-' would be read as an option.
    while [[ ! -s $KAFKA_DIR/cluster.id || $(head -c1 "$KAFKA_DIR/cluster.id") == - ]]; do
      head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n' >"$KAFKA_DIR/cluster.id"
    done
    id=$(cat "$KAFKA_DIR/cluster.id")
    log "formatting Kafka storage (cluster $id)"
    "$java" -cp "$KAFKA_DIR/lib/*" kafka.tools.StorageTool format "--cluster-id=$id" \
      -c "$KAFKA_DIR/server.properties" -g >"$(logfile kafka-format)" 2>&1 ||
      die "formatting Kafka storage failed (log: $(logfile kafka-format))"
  fi
  port_free kafka $KAFKA_PORT $KAFKA_CONTROLLER_PORT $KAFKA_CAPTURE_PORT $KAFKA_INGEST_PORT
  start_bg kafka "$java" -Xms512m -Xmx1g -XX:+UseG1GC \
    "-Dlog4j2.configurationFile=file:$KAFKA_DIR/log4j2.properties" "-Dkafka.logs.dir=$STACK/logs" \
    -cp "$KAFKA_DIR/lib/*" kafka.Kafka "$KAFKA_DIR/server.properties"
  wait_for kafka 120 kafka_port_ok quiet
  wait_for kafka 60 kafka_ok
}

# ---------------------------------------------------------------- Apicurio Registry

REGISTRY_DIR=$STACK/apicurio
registry_ok() { curl -sf -o /dev/null "http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7/subjects"; }

registry_up() {
  if running registry && registry_ok; then log "registry already running"; return; fi
  local java version jar
  if java=$(find_java 21); then version=$APICURIO_VERSION; else
    java=$(find_java 17) || die "Apicurio Registry needs Java 17+"
    version=$APICURIO_VERSION_JAVA17
    log "no Java 21+ found: using Apicurio Registry $version, the last release that runs on Java 17"
  fi
  local dir=$REGISTRY_DIR/$version
  if [[ ! -f $dir/.unpacked ]]; then
    log "downloading Apicurio Registry $version (Maven Central)"
    rm -rf "$dir"; mkdir -p "$dir"
    mvn_copy "io.apicurio:apicurio-registry-app:$version:tar.gz:all" "$REGISTRY_DIR/dl"
    tar xzf "$REGISTRY_DIR/dl/apicurio-registry-app-$version-all.tar.gz" -C "$dir"
    touch "$dir/.unpacked"
  fi
  jar=$(find "$dir" -maxdepth 3 \( -name quarkus-run.jar -o -name '*-runner.jar' \) | head -1)
  [[ -n $jar ]] || die "no runnable jar in the Apicurio archive ($dir)"
  # In-memory (H2) SQL storage, the registry's default: schemas live as long as the process.
  # The chaos test's registry restart exports every schema and imports them again: Apicurio's
  # import refuses an export of over 10,000 entries or 100 MiB by default, which a long-lived
  # stack's registry outgrows (about five entries a subject), so both limits are raised.
  port_free registry $REGISTRY_PORT $REGISTRY_MGMT_PORT
  start_bg registry "$java" -Xmx512m \
    -Dquarkus.http.host=127.0.0.1 "-Dquarkus.http.port=$REGISTRY_PORT" \
    -Dquarkus.management.host=127.0.0.1 "-Dquarkus.management.port=$REGISTRY_MGMT_PORT" \
    -Djava.util.logging.manager=org.jboss.logmanager.LogManager \
    -Dapicurio.rest.deletion.artifact.enabled=true -Dapicurio.rest.deletion.artifact-version.enabled=true \
    -Dapicurio.import.zip.max-entry-count=1000000 -Dapicurio.import.zip.max-total-size=1073741824 \
    -jar "$jar"
  wait_for registry 120 registry_ok
}

# ---------------------------------------------------------------- Iceberg REST catalog

ICEBERG_DIR=$STACK/iceberg-rest
iceberg_ok() { curl -sf -o /dev/null "http://127.0.0.1:$ICEBERG_PORT/v1/config"; }

iceberg_up() {
  if running iceberg && iceberg_ok; then log "iceberg catalog already running"; return; fi
  local java jar=$ICEBERG_DIR/iceberg-open-api-$ICEBERG_REST_VERSION.jar
  java=$(find_java 17) || die "the Iceberg REST catalog needs Java 17+"
  if [[ ! -f $jar ]]; then
    log "downloading the Iceberg REST catalog $ICEBERG_REST_VERSION (Maven Central, about 200 MB)"
    mvn_copy "org.apache.iceberg:iceberg-open-api:$ICEBERG_REST_VERSION" "$ICEBERG_DIR"
  fi
  port_free iceberg $ICEBERG_PORT
  # RESTCatalogServer reads only CATALOG_* variables: __ becomes -, _ becomes '.'.
  CATALOG_REST_PORT=$ICEBERG_PORT \
    CATALOG_CATALOG__IMPL=org.apache.iceberg.jdbc.JdbcCatalog \
    CATALOG_URI="jdbc:sqlite:$ICEBERG_DIR/catalog.db?busy_timeout=30000" CATALOG_CLIENTS=1 \
    CATALOG_JDBC_USER=user CATALOG_JDBC_PASSWORD=password CATALOG_JDBC_STRICT__MODE=true \
    CATALOG_WAREHOUSE="s3://$WAREHOUSE_BUCKET/" \
    CATALOG_IO__IMPL=org.apache.iceberg.aws.s3.S3FileIO \
    CATALOG_S3_ENDPOINT="http://127.0.0.1:$MINIO_PORT" \
    CATALOG_S3_PATH__STYLE__ACCESS=true \
    CATALOG_S3_ACCESS__KEY__ID=$MINIO_USER CATALOG_S3_SECRET__ACCESS__KEY=$MINIO_PASSWORD \
    CATALOG_CLIENT_REGION=us-east-1 \
    AWS_REQUEST_CHECKSUM_CALCULATION=WHEN_REQUIRED AWS_RESPONSE_CHECKSUM_VALIDATION=WHEN_REQUIRED \
    start_bg iceberg "$java" -Xmx512m -jar "$jar"
  wait_for iceberg 120 iceberg_ok
}

# ---------------------------------------------------------------- checks, env

# go_check runs test/stackcheck, which speaks each component's own protocol.
STACKCHECK=$STACK/bin/stackcheck
go_check() {
  if [[ ! -x $STACKCHECK || -n $(find "$REPO/test/stackcheck" -newer "$STACKCHECK" -name '*.go' 2>/dev/null) ]]; then
    (cd "$REPO" && go build -o "$STACKCHECK" ./test/stackcheck) || return 1
  fi
  (eval "$(env_exports)" && "$STACKCHECK" "$@")
}

env_exports() {
  cat <<EOF
export BINLAKE_STACK_DIR='$STACK'
export BINLAKE_MARIADB_ADDR='127.0.0.1:$MARIADB_PORT'
export BINLAKE_MARIADB_ADMIN_USER='$MARIADB_ADMIN_USER'
export BINLAKE_MARIADB_ADMIN_PASSWORD='$MARIADB_ADMIN_PASSWORD'
export BINLAKE_MARIADB_CAPTURE_USER='$MARIADB_CAPTURE_USER'
export BINLAKE_MARIADB_CAPTURE_PASSWORD='$MARIADB_CAPTURE_PASSWORD'
export BINLAKE_MARIADB_DEBEZIUM_USER='$MARIADB_DEBEZIUM_USER'
export BINLAKE_MARIADB_DEBEZIUM_PASSWORD='$MARIADB_DEBEZIUM_PASSWORD'
export BINLAKE_KAFKA_BROKERS='127.0.0.1:$KAFKA_PORT'
export BINLAKE_KAFKA_CAPTURE_PROXY='127.0.0.1:$KAFKA_CAPTURE_PORT 127.0.0.1:$KAFKA_CAPTURE_PROXY_PORT'
export BINLAKE_KAFKA_INGEST_PROXY='127.0.0.1:$KAFKA_INGEST_PORT 127.0.0.1:$KAFKA_INGEST_PROXY_PORT'
export BINLAKE_SCHEMA_REGISTRY_URL='http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7'
export BINLAKE_ICEBERG_URI='http://127.0.0.1:$ICEBERG_PORT'
export BINLAKE_ICEBERG_WAREHOUSE='s3://$WAREHOUSE_BUCKET/'
export BINLAKE_S3_ENDPOINT='http://127.0.0.1:$MINIO_PORT'
export BINLAKE_S3_BUCKET='$WAREHOUSE_BUCKET'
export AWS_ACCESS_KEY_ID='$MINIO_USER'
export AWS_SECRET_ACCESS_KEY='$MINIO_PASSWORD'
export AWS_REGION='us-east-1'
export BINLAKE_PYTHON='$STACK/python/bin/python'
EOF
  # A shifted stack's Kafka Connect workers (deploy/local/debezium.sh) shift too.
  if ((OFF != 0)); then echo "export BINLAKE_CONNECT_PORT='$((18083 + OFF))'"; fi
}

# python_up installs the Python test readers (pyiceberg; DuckDB with its
# iceberg, avro and httpfs extensions, packaged on PyPI because DuckDB cannot
# download extensions here; pyspark, whose Iceberg runtime jars
# test/icebergreader resolves from Maven Central) in a venv under
# $STACK/python; the tests run it as $BINLAKE_PYTHON.
python_up() {
  local venv=$STACK/python
  if [[ -x $venv/bin/python ]] && "$venv/bin/python" -c "
import sys, pyiceberg, pyarrow, duckdb, duckdb_extension_iceberg, duckdb_extension_avro, duckdb_extension_httpfs, pyspark
sys.exit(pyiceberg.__version__ != '$PYICEBERG_VERSION' or duckdb.__version__ != '$DUCKDB_VERSION' or pyspark.__version__ != '$PYSPARK_VERSION')" 2>/dev/null; then
    return
  fi
  command -v python3 >/dev/null || die "python3 is needed for the pyiceberg, DuckDB and Spark test readers"
  log "installing pyiceberg $PYICEBERG_VERSION, DuckDB $DUCKDB_VERSION and pyspark $PYSPARK_VERSION into $venv"
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv" || die "python3 -m venv $venv failed (Debian: apt-get install python3-venv)"
  "$venv/bin/pip" install -q --disable-pip-version-check "pyiceberg[pyarrow]==$PYICEBERG_VERSION" "duckdb==$DUCKDB_VERSION" \
    "duckdb-extension-iceberg==$DUCKDB_VERSION" "duckdb-extension-avro==$DUCKDB_VERSION" "duckdb-extension-httpfs==$DUCKDB_VERSION" \
    "pyspark==$PYSPARK_VERSION" >"$STACK/logs/pip.log" 2>&1 ||
    die "pip install of pyiceberg $PYICEBERG_VERSION, duckdb $DUCKDB_VERSION (with extensions) and pyspark $PYSPARK_VERSION failed; see $STACK/logs/pip.log"
}

# space_check warns when the disk under $STACK is short: the downloads, the
# Python readers and a make test's binlogs and lake take about 8 GiB, and a full
# disk shows up later as a failed pip install or "build failed" from go test.
space_check() {
  local need_kib=$((8 * 1024 * 1024)) have_kib
  have_kib=$(df -Pk "$STACK" 2>/dev/null | awk 'NR == 2 {print $4}')
  [[ $have_kib =~ ^[0-9]+$ ]] || return 0
  if ((have_kib < need_kib)); then
    log "warning: $((have_kib / 1024)) MiB free under $STACK; the stack and a make test need about 8 GiB (free some, or set BINLAKE_STACK_DIR elsewhere)"
  fi
}

cmd_up() { # cmd_up [component...]: all of them (and the Python readers) when none is named
  local t0=$SECONDS c
  local want=("$@")
  for c in "${want[@]}"; do
    [[ " ${COMPONENTS[*]} python tools " == *" $c "* ]] || die "unknown component $c (components: ${COMPONENTS[*]} python tools)"
  done
  if [[ ${want[*]} == tools ]]; then # binaries only: no services, no apt
    mkdir -p "$STACK/run" "$STACK/logs" "$STACK/bin"
    tools_up
    return
  fi
  if ((${#want[@]} == 0)); then
    want=("${COMPONENTS[@]}" python)
    # The tools compile in the background while everything else starts and the
    # integration tests run; make deploy-check (stack.sh up tools) waits for them.
    mkdir -p "$STACK/run" "$STACK/logs" "$STACK/bin"
    tools_start
  fi
  need_tools
  mkdir -p "$STACK/run" "$STACK/logs" "$STACK/bin"
  space_check
  go_check none >/dev/null || die "building test/stackcheck failed"
  for c in "${want[@]}"; do "${c}_up"; done
  log "stack up in $((SECONDS - t0))s"
}

cmd_down() {
  local i
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do stop_one "${COMPONENTS[i]}"; done
}

cmd_wipe() {
  cmd_down
  stop_one tools
  log "deleting $STACK"
  rm -rf "$STACK"
}

cmd_status() { go_check all; }

cmd_logs() {
  if [[ $# -gt 0 ]]; then tail -n 100 -f "$(logfile "$1")"; else tail -n 20 -f "$STACK"/logs/*.log; fi
}

case ${1:-} in
up) shift; cmd_up "$@" ;;
down) cmd_down ;;
stop) shift; [[ $# -eq 1 && " ${COMPONENTS[*]} " == *" $1 "* ]] || die "usage: stack.sh stop <component> (components: ${COMPONENTS[*]})"; stop_one "$1" ;;
pause | resume)
  sig=STOP; [[ $1 == resume ]] && sig=CONT
  shift; [[ $# -eq 1 && -f $(pidfile "${1:-}") ]] || die "usage: stack.sh pause|resume <running component>"
  kill -"$sig" -- "-$(cat "$(pidfile "$1")")" ;;
wipe) cmd_wipe ;;
status) cmd_status ;;
env) env_exports ;;
install-tools) mkdir -p "$STACK/bin" "$STACK/logs"; tools_install ;; # what tools_start runs
logs) shift; cmd_logs "$@" ;;
*)
  sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
