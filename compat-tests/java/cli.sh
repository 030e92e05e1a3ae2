#!/usr/bin/env bash
# Kafka's own CLI tools (the kafka-tools and kafka_2.13 jars from Maven
# Central, fetched by bench/kafka/kafka.sh) against a running broker:
# kafka-topics, kafka-configs, kafka-console-producer/-consumer,
# kafka-consumer-groups.
# Usage: cli.sh HOST:PORT WORKDIR; appends results to WORKDIR/results.tsv.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
broker="$1" work="$2"
"$root/bench/kafka/kafka.sh" fetch
cp="$root/bench/kafka/lib/*"
run() { java -Dlog4j2.level=error -cp "$cp" "$@" --bootstrap-server "$broker"; }
pass=0 failed=0
check() { # name, command output file, grep pattern
  if grep -qE "$3" "$2"; then pass=$((pass+1)); echo "ok   $1"; printf 'Kafka CLI tools\t%s\tpass\n' "$1" >>"$work/results.tsv"
  else failed=$((failed+1)); echo "FAIL $1 (no /$3/ in:)"; sed 's/^/    /' "$2" | head -20; printf 'Kafka CLI tools\t%s\tfail\n' "$1" >>"$work/results.tsv"; fi
}
out="$work/cli"; mkdir -p "$out"

run org.apache.kafka.tools.TopicCommand --create --topic cli-topic --partitions 3 --replication-factor 1 >"$out/create" 2>&1
check "kafka-topics --create topic" "$out/create" "Created topic cli-topic"
run org.apache.kafka.tools.TopicCommand --describe --topic cli-topic >"$out/describe" 2>&1
check "kafka-topics --describe topic" "$out/describe" "PartitionCount: 3"
run org.apache.kafka.tools.TopicCommand --list >"$out/list" 2>&1
check "kafka-topics --list topic" "$out/list" "^cli-topic$"

configs() { run org.apache.kafka.tools.ConfigCommand "$@"; }
configs --alter --entity-type topics --entity-name cli-topic \
  --add-config 'retention.ms=86400000,cleanup.policy=[compact,delete]' >"$out/configs-alter" 2>&1
check "kafka-configs --alter topic" "$out/configs-alter" "Completed updating config for topic cli-topic"
configs --describe --entity-type topics --entity-name cli-topic >"$out/configs-describe" 2>&1
check "kafka-configs --describe topic (dynamic config)" "$out/configs-describe" \
  "retention.ms=86400000 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:retention.ms=86400000\}"
check "kafka-configs --describe topic (list config with its broker default)" "$out/configs-describe" \
  "cleanup.policy=compact,delete sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete\}"
run org.apache.kafka.tools.TopicCommand --describe --topic cli-topic >"$out/describe-configs" 2>&1
check "kafka-topics --describe topic shows its configs" "$out/describe-configs" "Configs: .*retention.ms=86400000"
configs --alter --entity-type topics --entity-name cli-topic --delete-config retention.ms,cleanup.policy >"$out/configs-delete" 2>&1
configs --describe --entity-type topics --entity-name cli-topic >>"$out/configs-delete" 2>&1
check "kafka-configs --alter --delete-config topic" "$out/configs-delete" "^Dynamic configs for topic cli-topic are:$"
configs --alter --entity-type brokers --entity-default --add-config log.retention.ms=604800000 >"$out/configs-broker" 2>&1
configs --describe --entity-type brokers --entity-default >>"$out/configs-broker" 2>&1
check "kafka-configs --alter and --describe cluster-wide broker default" "$out/configs-broker" \
  "log.retention.ms=604800000 sensitive=false synonyms=\{DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=604800000\}"
configs --alter --entity-type brokers --entity-default --delete-config log.retention.ms >/dev/null 2>&1
configs --describe --entity-type brokers --entity-name 1 --all >"$out/configs-broker-all" 2>&1
check "kafka-configs --describe --all broker" "$out/configs-broker-all" \
  "log.segment.bytes=1073741824 sensitive=false synonyms=\{DEFAULT_CONFIG:log.segment.bytes=1073741824\}"
configs --alter --entity-type brokers --entity-name 1 --add-config num.partitions=3 >"$out/configs-readonly" 2>&1
check "kafka-configs --alter refuses a read-only broker config" "$out/configs-readonly" \
  "Cannot update these configs dynamically: \[num.partitions\]"

seq 1 100 | run org.apache.kafka.tools.ConsoleProducer --topic cli-topic >"$out/produce" 2>&1
run org.apache.kafka.tools.consumer.ConsoleConsumer --topic cli-topic --from-beginning --max-messages 100 \
  --group cli-group --timeout-ms 30000 >"$out/consume" 2>"$out/consume.err"
check "kafka-console-producer and -consumer (group) round trip" "$out/consume.err" "Processed a total of 100 messages"

seq 101 150 | run org.apache.kafka.tools.ConsoleProducer --topic cli-topic >>"$out/produce" 2>&1
run org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --describe --group cli-group >"$out/groups" 2>&1
check "kafka-consumer-groups --describe group with lag" "$out/groups" "cli-group +cli-topic +[0-2] +[0-9]+ +[0-9]+ +[0-9]+"
total_lag=$(awk '$1=="cli-group" && $2=="cli-topic" {s+=$6} END {print s+0}' "$out/groups")
echo "$total_lag" >"$out/lag"
check "kafka-consumer-groups lag group counts the 50 new records" "$out/lag" "^50$"
run org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --list >"$out/glist" 2>&1
check "kafka-consumer-groups --list group" "$out/glist" "^cli-group$"
run org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --reset-offsets --group cli-group --topic cli-topic \
  --to-earliest --execute >"$out/reset" 2>&1
check "kafka-consumer-groups --reset-offsets commit group" "$out/reset" "cli-topic +[0-2] +0"

echo "cli: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
