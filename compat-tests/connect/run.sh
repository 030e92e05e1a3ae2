#!/usr/bin/env bash
# Kafka Connect 4.4 (connect-runtime from Maven Central, fetched with the
# broker jars by bench/kafka/kafka.sh) as a distributed worker against the
# built broker: its config, offset and status topics must be created
# compacted, the worker must join its group (protocol type "connect"), and a
# FileStreamSource -> topic -> FileStreamSink pipeline must copy a file
# exactly. Then the worker restarts: it reads its connectors back from the
# config topic, the source resumes from its offsets in the offset topic and
# the sink from its group's committed offsets, so lines appended meanwhile
# are copied once, with no duplicates. Last a second worker joins the group,
# the rebalance spreads the connectors and tasks over both, and the copy
# still has no gap and no duplicate.
# Results go to work/results.tsv (client "Kafka Connect"); the workers' logs
# are work/worker-1.log and worker-2.log, the broker's work/broker.log.
# CONNECT_BOOTSTRAP=host:port runs the same against another broker (e.g. real
# Kafka from bench/kafka/kafka.sh start) instead, in work-external/.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$here/../lib/broker.sh"
work="$here/work"
[ -n "${CONNECT_BOOTSTRAP:-}" ] && work="$here/work-external"
rm -rf "$work"; mkdir -p "$work"

"$root/bench/kafka/kafka.sh" fetch || exit 1
# The FileStream connectors: connect-file 4.4.0 is not on Maven Central as this
# machine reaches it, and the newest there (4.3.1, see pom.xml) imports
# AppInfoParser from where 4.4.0's kafka-clients no longer has it
# (o.a.k.common.utils.internals now). So its sources jar is compiled against
# the 4.4.0 jars with that one import moved.
connect_file="$here/lib/connect-file-for-4.4.0.jar"
if [ ! -f "$connect_file" ]; then
  echo "building $connect_file from org.apache.kafka:connect-file's sources jar"
  build="$here/build"; rm -rf "$build" "$here/lib"; mkdir -p "$build/src" "$build/classes" "$here/lib"
  (cd "$here" && mvn -q -B dependency:copy-dependencies -Dclassifier=sources \
    -DincludeArtifactIds=connect-file -DoutputDirectory="$build") || exit 1
  (cd "$build/src" && unzip -q ../connect-file-*-sources.jar && rm -f META-INF/MANIFEST.MF) || exit 1
  sed -i 's/org\.apache\.kafka\.common\.utils\.AppInfoParser/org.apache.kafka.common.utils.internals.AppInfoParser/' \
    "$build"/src/org/apache/kafka/connect/file/*.java
  javac -nowarn -d "$build/classes" -cp "$root/bench/kafka/lib/*" "$build"/src/org/apache/kafka/connect/file/*.java || exit 1
  cp -r "$build/src/META-INF" "$build/src/LICENSE" "$build/src/NOTICE" "$build/classes/"
  jar cf "$connect_file.tmp" -C "$build/classes" . && mv "$connect_file.tmp" "$connect_file" || exit 1
  rm -rf "$build"
fi

if [ -n "${CONNECT_BOOTSTRAP:-}" ]; then
  BROKER="$CONNECT_BOOTSTRAP"
else
  start_broker "$work" || exit 1
fi
cp="$root/bench/kafka/lib/*:$here/lib/*"
# Short-lived JVMs on a 2-core machine: C1 only and the serial collector start
# (and, for the tools, finish) faster.
jvm=(java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC)
tool() { "${jvm[@]}" -Dlog4j2.level=error -cp "$cp" "$@" --bootstrap-server "$BROKER"; }

pass=0 failed=0
check() { # name, file with the output, grep -E pattern
  if grep -qE "$3" "$2"; then
    pass=$((pass+1)); echo "ok   $1"; printf 'Kafka Connect\t%s\tpass\n' "$1" >>"$work/results.tsv"
  else
    failed=$((failed+1)); echo "FAIL $1 (no /$3/ in:)"; sed 's/^/    /' "$2" | head -20
    printf 'Kafka Connect\t%s\tfail\n' "$1" >>"$work/results.tsv"
  fi
}
out="$work/out"; mkdir -p "$out"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
group=strait-connect
topic=connect-file-lines
# Worker N (1 or 2) has its own REST port, properties and log (worker-N.log);
# both are in group $group and share its three topics.
declare -A PORT PID
for n in 1 2; do
  PORT[$n]=$(free_port)
  cat >"$work/worker-$n.properties" <<EOF
bootstrap.servers=$BROKER
group.id=$group
config.storage.topic=$group-configs
offset.storage.topic=$group-offsets
status.storage.topic=$group-status
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.storage.StringConverter
offset.flush.interval.ms=500
listeners=http://127.0.0.1:${PORT[$n]}
rest.advertised.host.name=127.0.0.1
rest.advertised.port=${PORT[$n]}
plugin.discovery=service_load
EOF
  cat >"$work/log4j2-$n.properties" <<EOF
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = $work/worker-$n.log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
logger.reflections.name = org.reflections
logger.reflections.level = error
logger.clients.name = org.apache.kafka.clients
logger.clients.level = warn
logger.clientsgroup.name = org.apache.kafka.clients.consumer.internals
logger.clientsgroup.level = info
logger.common.name = org.apache.kafka.common
logger.common.level = warn
EOF
done
rest="http://127.0.0.1:${PORT[1]}"

start_worker() { # N
  "${jvm[@]}" -Xmx512m -Dlog4j2.configurationFile="$work/log4j2-$1.properties" -cp "$cp" \
    org.apache.kafka.connect.cli.ConnectDistributed "$work/worker-$1.properties" >>"$work/worker-$1.out" 2>&1 &
  PID[$1]=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:${PORT[$1]}/connectors" >/dev/null 2>&1 && return 0
    kill -0 "${PID[$1]}" 2>/dev/null || { tail -30 "$work/worker-$1.out" "$work/worker-$1.log"; echo "worker $1 exited" >&2; return 1; }
    sleep 0.1
  done
  echo "worker $1's REST API not up after 60 s" >&2; return 1
}
stop_worker() { # N: SIGTERM (a clean shutdown commits offsets), SIGKILL after 30 s
  [ -n "${PID[$1]:-}" ] || return 0
  kill "${PID[$1]}" 2>/dev/null
  for _ in $(seq 1 300); do kill -0 "${PID[$1]}" 2>/dev/null || break; sleep 0.1; done
  kill -9 "${PID[$1]}" 2>/dev/null; wait "${PID[$1]}" 2>/dev/null; PID[$1]=
}
cleanup() {
  stop_worker 2; stop_worker 1
  if [ -n "${BROKER_PID:-}" ]; then kill "$BROKER_PID" 2>/dev/null; wait "$BROKER_PID" 2>/dev/null; fi
}
trap cleanup EXIT

# put_connector NAME JSON-CONFIG: PUT /connectors/NAME/config, retried while
# the worker is still joining its group (409 until it has an assignment).
put_connector() {
  local code
  for _ in $(seq 1 120); do
    code=$(curl -s -o "$out/put-$1" -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
      --data "$2" "$rest/connectors/$1/config")
    case "$code" in 200|201) return 0 ;; 409|000) ;; *) break ;; esac
    sleep 0.5
  done
  echo "PUT $1 failed: $code $(cat "$out/put-$1")" >&2; return 1
}
# wait_running NAME FILE: waits up to 30 s for the connector and its task to be
# RUNNING; leaves "connector=STATE tasks=STATE,..." in FILE.
wait_running() {
  for _ in $(seq 1 60); do
    curl -s "$rest/connectors/$1/status" | python3 -c '
import json, sys
try:
    s = json.load(sys.stdin)
    print("connector=%s tasks=%s" % (s["connector"]["state"], ",".join(t["state"] for t in s["tasks"]) or "none"))
except Exception as e:
    print("no status: %s" % e)' >"$2"
    grep -qE '^connector=RUNNING tasks=RUNNING$' "$2" && return 0
    sleep 0.5
  done
}
# wait_lines FILE N: waits up to 60 s for FILE to have N lines.
wait_lines() {
  for _ in $(seq 1 120); do
    [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0
    sleep 0.5
  done
}

seq -f 'line %05g: copied by Kafka Connect from a FileStreamSource to a FileStreamSink' 1 5000 >"$work/input.txt"
: >"$work/output.txt"

start_worker 1 || exit 1
put_connector file-source "{\"connector.class\":\"org.apache.kafka.connect.file.FileStreamSourceConnector\",
  \"tasks.max\":\"1\",\"file\":\"$work/input.txt\",\"topic\":\"$topic\",
  \"topic.creation.default.partitions\":\"1\",\"topic.creation.default.replication.factor\":\"1\"}"
put_connector file-sink "{\"connector.class\":\"org.apache.kafka.connect.file.FileStreamSinkConnector\",
  \"tasks.max\":\"1\",\"file\":\"$work/output.txt\",\"topics\":\"$topic\"}"

wait_running file-source "$out/status-source"
check "FileStreamSource connector and task RUNNING (produce)" "$out/status-source" '^connector=RUNNING tasks=RUNNING$'
wait_running file-sink "$out/status-sink"
check "FileStreamSink connector and task RUNNING (consume)" "$out/status-sink" '^connector=RUNNING tasks=RUNNING$'

wait_lines "$work/output.txt" 5000
cmp "$work/input.txt" "$work/output.txt" >"$out/cmp" 2>&1 && echo identical >>"$out/cmp"
check "source produce -> topic -> sink consume copies the file line for line" "$out/cmp" '^identical$'

tool org.apache.kafka.tools.TopicCommand --describe --topic "$group-.*" >"$out/topics" 2>&1
for t in configs offsets status; do
  check "worker created the $t topic compacted" "$out/topics" "^Topic: $group-$t\s.*Configs: (.*,)?cleanup.policy=compact(,|$)"
done
check "config topic has one partition" "$out/topics" "^Topic: $group-configs\s.*PartitionCount: 1\s"
tool org.apache.kafka.tools.GroupsCommand --list --protocol connect >"$out/groups" 2>&1
check "worker joined group $group with protocol type connect" "$out/groups" "^$group +Classic +connect *$"

# The sink task commits its consumer group's offsets every offset.flush.interval.ms.
for _ in $(seq 1 10); do
  tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --describe --group connect-file-sink >"$out/sink-group" 2>&1
  grep -qE "^connect-file-sink +$topic +0 +5000 +5000 +0 " "$out/sink-group" && break
  sleep 1
done
check "sink group commit covers every record (lag 0)" "$out/sink-group" "^connect-file-sink +$topic +0 +5000 +5000 +0 "

# Restart: lines appended while the worker is down are copied once.
stop_worker 1
seq -f 'line %05g: appended while the worker was stopped' 5001 6000 >>"$work/input.txt"
start_worker 1 || exit 1
wait_running file-source "$out/status-source-2"
wait_running file-sink "$out/status-sink-2"
{ echo "source: $(cat "$out/status-source-2")"; echo "sink: $(cat "$out/status-sink-2")"; } >"$out/status-2"
grep -c 'connector=RUNNING tasks=RUNNING$' "$out/status-2" >>"$out/status-2"
check "restart: connectors read back from the config topic (consume) and RUNNING" "$out/status-2" '^2$'
wait_lines "$work/output.txt" 6000
sleep 2 # anything duplicated would arrive after the last new line
cmp "$work/input.txt" "$work/output.txt" >"$out/cmp-2" 2>&1 && echo identical >>"$out/cmp-2"
check "restart: source produces from its offset topic position, sink consumes from its group commit: no duplicates" "$out/cmp-2" '^identical$'

# A second worker joins: the leader's incremental cooperative rebalance moves
# half of the connectors and tasks to it, and the copy goes on without a gap
# or a duplicate.
start_worker 2 || exit 1
for _ in $(seq 1 60); do
  curl -s "$rest/connectors?expand=status" | python3 -c '
import json, sys
try:
    units = [u for c in json.load(sys.stdin).values() for u in [c["status"]["connector"]] + c["status"]["tasks"]]
    print("units=%d running=%d workers=%d" % (len(units), sum(u["state"] == "RUNNING" for u in units),
                                              len({u["worker_id"] for u in units})))
except Exception as e:
    print("no status: %s" % e)' >"$out/spread"
  grep -qE '^units=4 running=4 workers=2$' "$out/spread" && break
  sleep 0.5
done
check "second worker joins the group: rebalance spreads connectors and tasks over both" "$out/spread" \
  '^units=4 running=4 workers=2$'
seq -f 'line %05g: appended after the second worker joined' 6001 7000 >>"$work/input.txt"
wait_lines "$work/output.txt" 7000
sleep 2
cmp "$work/input.txt" "$work/output.txt" >"$out/cmp-3" 2>&1 && echo identical >>"$out/cmp-3"
check "after the group rebalance: produce -> consume copies appended lines once" "$out/cmp-3" '^identical$'

# The source's position is a record in the offset topic, keyed by connector
# and file (JsonConverter, as Connect stores its own offsets). --timeout-ms
# counts from the start: the JVM, a group join and 25 partitions' first
# fetches took over 5 s once on a busy CI machine (0 records read).
tool org.apache.kafka.tools.consumer.ConsoleConsumer --topic "$group-offsets" --from-beginning \
  --property print.key=true --property key.separator=' ' --timeout-ms 20000 >"$out/offsets-topic" 2>&1
check "offset topic read back (consume) holds the source's position" "$out/offsets-topic" \
  "^\[\"file-source\",\{\"filename\":\"$work/input.txt\"\}\] \{\"position\":$(stat -c %s "$work/input.txt")\}$"
# kafka-consumer-groups --describe refuses a group whose protocol type is not
# "consumer"; the Admin client's describeClassicGroups describes it.
"${jvm[@]}" -Dlog4j2.level=error -cp "$cp" "$here/DescribeGroup.java" "$BROKER" "$group" >"$out/describe-group" 2>&1
check "describe group: two workers, Stable, type connect, Connect's sessioned protocol" "$out/describe-group" \
  "^group=$group state=Stable protocol=connect protocolData=sessioned members=2$"

echo "connect: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
