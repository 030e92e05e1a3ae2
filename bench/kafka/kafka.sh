#!/usr/bin/env bash
# Apache Kafka 4.x from its Maven Central jars, as a single KRaft node in
# combined mode (broker and controller in one JVM), for side-by-side benchmarks.
#
#   kafka.sh fetch                  download the jars into bench/kafka/lib (once)
#   kafka.sh format DIR [PORT]      write DIR/server.properties (Kafka's shipped
#                                   single-node config, log dirs under DIR) and
#                                   format the storage with a fresh cluster id
#   kafka.sh run DIR                exec the broker in the foreground (the
#                                   process is the JVM, so its pid is Kafka's)
#   kafka.sh start DIR [PORT]       fetch, format if needed, start in the
#                                   background, wait until it answers
#                                   ApiVersions, print host:port
#   kafka.sh stop DIR               SIGTERM, then SIGKILL after 30 s
#
# PORT defaults to a free loopback port; the controller listener takes another.
# The JVM gets kafka-server-start.sh's defaults: a 1 GiB heap (-Xmx1G -Xms1G,
# override with KAFKA_HEAP_OPTS) and G1 with MaxGCPauseMillis=20. Logging goes
# to DIR/kafka.log at WARN (Kafka's own default is INFO into several files).
# KAFKA_VERSION picks another release than the pom's. For format (and start),
# KAFKA_EXTRA_LISTENERS adds listeners beside PLAINTEXT (e.g.
# "SASL_SSL://127.0.0.1:9094,SSL://127.0.0.1:9093", advertised as such) and
# KAFKA_EXTRA_PROPERTIES names a file of key=value lines appended to
# server.properties (their ssl.* and sasl.* settings).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib="$here/lib"
version="${KAFKA_VERSION:-$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")}"

die() { echo "kafka.sh: $*" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cmd_fetch() {
  if [ -f "$lib/kafka_2.13-$version.jar" ] && [ -f "$lib/.complete-$version" ]; then
    return
  fi
  command -v mvn >/dev/null || die "mvn is needed to download Kafka's jars (apt-get install maven)"
  echo "kafka.sh: downloading org.apache.kafka:kafka_2.13:$version and its runtime dependencies into $lib" >&2
  rm -rf "$lib"
  (cd "$here" && mvn -q -B dependency:copy-dependencies -Dkafka.version="$version" \
    -DoutputDirectory=lib -DincludeScope=runtime) >&2
  touch "$lib/.complete-$version"
}

java_cmd() { # main class and arguments follow
  # shellcheck disable=SC2086 # the option variables are word lists, as in kafka-run-class.sh
  echo java ${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G} \
    -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
    -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true
}

cmd_format() {
  local dir="${1:?usage: kafka.sh format DIR [PORT]}" port="${2:-}"
  cmd_fetch
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  [ -n "$port" ] || port="$(free_port)"
  local cport; cport="$(free_port)"
  local extra="${KAFKA_EXTRA_LISTENERS:+,$KAFKA_EXTRA_LISTENERS}"
  # Kafka 4.x's config/server.properties, with the ports and log dir changed.
  cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port$extra,CONTROLLER://127.0.0.1:$cport
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://127.0.0.1:$port$extra,CONTROLLER://127.0.0.1:$cport
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=$dir/data
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.retention.check.interval.ms=300000
EOF
  if [ -n "${KAFKA_EXTRA_PROPERTIES:-}" ]; then
    cat "$KAFKA_EXTRA_PROPERTIES" >>"$dir/server.properties"
  fi
  cat >"$dir/log4j2.properties" <<EOF
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/kafka.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
EOF
  echo "127.0.0.1:$port" >"$dir/address"
  # A cluster id as StorageTool random-uuid makes it, without a second JVM start.
  local id
  # Like Kafka's Uuid.randomUuid, never one starting with "-" (the tool's
  # argument parser would take it for an option: 1 run in 64 failed so).
  id="$(python3 -c '
import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"):
        print(s)
        break
')"
  # shellcheck disable=SC2046
  $(java_cmd) -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$lib/*" \
    kafka.tools.StorageTool format --standalone -t "$id" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
    { cat "$dir/format.log" >&2; die "format failed"; }
}

cmd_run() {
  local dir="${1:?usage: kafka.sh run DIR}"
  [ -f "$dir/server.properties" ] || die "$dir is not formatted (kafka.sh format $dir)"
  dir="$(cd "$dir" && pwd)"
  # shellcheck disable=SC2046
  exec $(java_cmd) -Dlog4j2.configurationFile="$dir/log4j2.properties" -Dkafka.logs.dir="$dir" \
    -cp "$lib/*" kafka.Kafka "$dir/server.properties"
}

# answers sends ApiVersions v0 and reads the response's length: true once the
# broker serves requests (its port accepts connections a little earlier).
answers() {
  local host="${1%:*}" port="${1##*:}"
  timeout 2 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff" >&3
    [ "$(head -c 4 <&3 | wc -c)" -eq 4 ]' "$host" "$port" 2>/dev/null
}

cmd_start() {
  local dir="${1:?usage: kafka.sh start DIR [PORT]}" port="${2:-}"
  [ -f "$dir/server.properties" ] || cmd_format "$dir" "$port"
  dir="$(cd "$dir" && pwd)"
  local addr; addr="$(cat "$dir/address")"
  "$0" run "$dir" >>"$dir/kafka.out" 2>&1 &
  echo $! >"$dir/kafka.pid"
  for _ in $(seq 1 600); do
    if answers "$addr"; then echo "$addr"; return; fi
    kill -0 "$(cat "$dir/kafka.pid")" 2>/dev/null || { tail -20 "$dir/kafka.out" "$dir/kafka.log" >&2; die "Kafka exited"; }
    sleep 0.1
  done
  die "Kafka did not answer on $addr within 60 s"
}

cmd_stop() {
  local dir="${1:?usage: kafka.sh stop DIR}"
  [ -f "$dir/kafka.pid" ] || return 0
  local pid; pid="$(cat "$dir/kafka.pid")"
  kill -TERM "$pid" 2>/dev/null || { rm -f "$dir/kafka.pid"; return 0; }
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$dir/kafka.pid"; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/kafka.pid"
}

case "${1:-}" in
fetch) cmd_fetch ;;
format) shift; cmd_format "$@" ;;
run) shift; cmd_run "$@" ;;
start) shift; cmd_start "$@" ;;
stop) shift; cmd_stop "$@" ;;
*) sed -n '2,24s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
