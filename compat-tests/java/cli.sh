#!/usr/bin/env bash
# Kafka's own CLI tools (the kafka-tools and kafka_2.13 jars from Maven
# Central, fetched by bench/kafka/kafka.sh) against a running broker:
# kafka-topics (incl. --alter --partitions and --delete), kafka-configs (topics,
# brokers, groups),
# kafka-console-producer/-consumer, kafka-consumer-groups, kafka-console-share-consumer,
# kafka-share-groups, kafka-producer-perf-test,
# kafka-consumer-perf-test, kafka-acls, kafka-dump-log (a compression.type=zstd topic),
# kafka-reassign-partitions --throttle (on a two-broker strait cluster),
# kafka-client-metrics, kafka-metadata-quorum, kafka-features, kafka-cluster unregister and
# unregister-controller, kafka-log-dirs --describe and kafka-reassign-partitions
# moving a replica between the log dirs of a JBOD broker (two log.dirs), and
# VerifiableProducer/VerifiableConsumer/VerifiableShareConsumer (the
# tools Kafka's own system tests drive).
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
# Kafka 4.4's columns for eligible leader replicas (KIP-966): empty lists on
# a healthy partition ("N/A" would mean the broker sent none).
check "kafka-topics --describe shows Elr and LastKnownElr" "$out/describe" $'Isr: [0-9]+\tElr: \tLastKnownElr:'
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
configs --alter --entity-type brokers --entity-name 1 --add-config leader.replication.throttled.rate=-1 >"$out/configs-throttle" 2>&1
check "kafka-configs --alter refuses a negative replication throttle (Kafka 4.4's message)" "$out/configs-throttle" \
  "InvalidRequestException: Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"
configs --alter --entity-type groups --entity-name cli-config-group \
  --add-config consumer.session.timeout.ms=50000 >"$out/configs-group" 2>&1
configs --describe --entity-type groups --entity-name cli-config-group >>"$out/configs-group" 2>&1
check "kafka-configs --alter and --describe group (before the group exists)" "$out/configs-group" \
  "consumer.session.timeout.ms=50000 sensitive=false synonyms=\{DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000\}"
configs --describe --entity-type groups >"$out/configs-groups" 2>&1
check "kafka-configs --describe groups lists the groups with configs" "$out/configs-groups" \
  "^Dynamic configs for group cli-config-group are:$"
configs --alter --entity-type groups --entity-name cli-config-group \
  --add-config consumer.heartbeat.interval.ms=1000 >"$out/configs-group-invalid" 2>&1
check "kafka-configs --alter refuses a group config out of the broker's bounds" "$out/configs-group-invalid" \
  "InvalidConfigurationException: consumer.heartbeat.interval.ms must be in the range [0-9]+ to [0-9]+ inclusive."
configs --alter --entity-type groups --entity-name cli-config-group --delete-config consumer.session.timeout.ms >/dev/null 2>&1
configs --describe --entity-type groups --entity-name cli-config-group >"$out/configs-group-deleted" 2>&1
check "kafka-configs --alter --delete-config group" "$out/configs-group-deleted" \
  "The group 'cli-config-group' doesn't exist and doesn't have dynamic config."

# Log levels at run time (BROKER_LOGGER, KIP-412): the broker's root logger.
configs --alter --entity-type broker-loggers --entity-name 1 --add-config root=DEBUG >"$out/loggers-alter" 2>&1
check "kafka-configs --alter broker-loggers root=DEBUG" "$out/loggers-alter" "Completed updating config for broker-logger 1"
configs --describe --entity-type broker-loggers --entity-name 1 >"$out/loggers-describe" 2>&1
check "kafka-configs --describe broker-loggers shows the new level" "$out/loggers-describe" "root=DEBUG"
configs --alter --entity-type broker-loggers --entity-name 1 --add-config root=INFO >/dev/null 2>&1
configs --alter --entity-type broker-loggers --entity-name 1 --add-config root=LOUD >"$out/loggers-invalid" 2>&1
check "kafka-configs --alter broker-loggers refuses an unknown level" "$out/loggers-invalid" "not a supported log level"

# Client quotas (AlterClientQuotas / DescribeClientQuotas), printed as Kafka 4.4 prints them.
configs --alter --add-config producer_byte_rate=1048576 --entity-type users --entity-name alice >"$out/quota-user" 2>&1
check "kafka-configs --alter user quota" "$out/quota-user" "^Completed updating config for user alice\.$"
configs --describe --entity-type users >"$out/quota-users" 2>&1
check "kafka-configs --describe --entity-type users" "$out/quota-users" \
  "^Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0$"
configs --alter --add-config consumer_byte_rate=2048,request_percentage=12.5 --entity-type clients --entity-default >"$out/quota-clients" 2>&1
configs --describe --entity-type clients >>"$out/quota-clients" 2>&1
check "kafka-configs --alter and --describe default client-id quota" "$out/quota-clients" \
  "^Quota configs for the default client-id are (consumer_byte_rate=2048.0, request_percentage=12.5|request_percentage=12.5, consumer_byte_rate=2048.0)$"
configs --alter --add-config producer_byte_rate=1.5 --entity-type users --entity-name alice >"$out/quota-bad" 2>&1
check "kafka-configs --alter refuses a fractional byte rate" "$out/quota-bad" "producer_byte_rate cannot be a fractional value"
configs --alter --delete-config producer_byte_rate --entity-type users --entity-name alice >/dev/null 2>&1
configs --alter --delete-config consumer_byte_rate,request_percentage --entity-type clients --entity-default >/dev/null 2>&1
configs --describe --entity-type users >"$out/quota-gone" 2>&1
if grep -q "user-principal 'alice'" "$out/quota-gone"; then echo still-set; else echo removed; fi >"$out/quota-gone-verdict"
check "kafka-configs --alter --delete-config user quota" "$out/quota-gone-verdict" "^removed$"

seq 1 100 | run org.apache.kafka.tools.ConsoleProducer --topic cli-topic >"$out/produce" 2>&1
run org.apache.kafka.tools.consumer.ConsoleConsumer --topic cli-topic --from-beginning --max-messages 100 \
  --group cli-group --timeout-ms 30000 >"$out/consume" 2>"$out/consume.err"
check "kafka-console-producer and -consumer (group) round trip" "$out/consume.err" "Processed a total of 100 messages"

# compression.type acts: the console producer's uncompressed batches are
# stored as zstd (kafka-dump-log reads the segment file, in the broker's log
# dir WORKDIR/logs) and the console consumer reads them back.
run org.apache.kafka.tools.TopicCommand --create --topic cli-zstd --partitions 1 --replication-factor 1 \
  --config compression.type=zstd >"$out/zstd-create" 2>&1
seq 1 100 | run org.apache.kafka.tools.ConsoleProducer --topic cli-zstd >"$out/zstd-produce" 2>&1
run org.apache.kafka.tools.consumer.ConsoleConsumer --topic cli-zstd --from-beginning --max-messages 100 \
  --timeout-ms 30000 >"$out/zstd-consume" 2>"$out/zstd-consume.err"
check "kafka-console-consumer reads a compression.type=zstd topic produced uncompressed" "$out/zstd-consume.err" \
  "Processed a total of 100 messages"
java -Dlog4j2.level=error -cp "$cp" org.apache.kafka.tools.DumpLogSegments \
  --files "$work/logs/cli-zstd-0/00000000000000000000.log" >"$out/zstd-dump" 2>&1
if grep -q "compresscodec: zstd" "$out/zstd-dump" && ! grep -q "compresscodec: none" "$out/zstd-dump"; then
  echo all-zstd; else echo not-all-zstd; fi >"$out/zstd-verdict"
check "kafka-dump-log: compression.type=zstd stores uncompressed batches as zstd" "$out/zstd-verdict" "^all-zstd$"

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

# Share groups (KIP-932): kafka-console-share-consumer reads every record
# once, then kafka-share-groups lists, describes, resets and deletes the group.
shares() { run org.apache.kafka.tools.consumer.group.ShareGroupCommand "$@"; }
run org.apache.kafka.tools.TopicCommand --create --topic cli-share --partitions 2 --replication-factor 1 >/dev/null 2>&1
configs --alter --entity-type groups --entity-name cli-share-group --add-config share.auto.offset.reset=earliest >/dev/null 2>&1
seq 1 100 | run org.apache.kafka.tools.ConsoleProducer --topic cli-share >/dev/null 2>&1
run org.apache.kafka.tools.consumer.ConsoleShareConsumer --topic cli-share --group cli-share-group --max-messages 100 \
  --timeout-ms 30000 >"$out/share-consume" 2>"$out/share-consume.err"
sort -n "$out/share-consume" | uniq | wc -l | tr -d ' ' >"$out/share-distinct"
check "kafka-console-share-consumer (share group) reads the 100 records" "$out/share-distinct" "^100$"
shares --list >"$out/share-list" 2>&1
check "kafka-share-groups --list" "$out/share-list" "^cli-share-group$"
shares --describe --group cli-share-group >"$out/share-describe" 2>&1
awk '$1=="cli-share-group" && $2=="cli-share" {s+=$4; l+=$5} END {print s+0, l+0}' "$out/share-describe" >"$out/share-spso"
check "kafka-share-groups --describe: every record acknowledged (start offsets sum to 100, lag 0)" "$out/share-spso" "^100 0$"
shares --reset-offsets --group cli-share-group --topic cli-share --to-earliest --execute >"$out/share-reset" 2>&1
shares --describe --group cli-share-group >>"$out/share-reset" 2>&1
awk '$1=="cli-share-group" && $2=="cli-share" && NF==5 {s+=$4; l+=$5} END {print s+0, l+0}' "$out/share-reset" >"$out/share-reset-sum"
check "kafka-share-groups --reset-offsets --to-earliest (lag back to 100)" "$out/share-reset-sum" "^0 100$"
shares --delete --group cli-share-group >"$out/share-delete" 2>&1
check "kafka-share-groups --delete" "$out/share-delete" "Deletion of requested share groups \('cli-share-group'\) was successful"

# kafka-topics --alter --partitions (CreatePartitions) and --delete.
run org.apache.kafka.tools.TopicCommand --create --topic cli-alter --partitions 1 --replication-factor 1 >"$out/alter" 2>&1
run org.apache.kafka.tools.TopicCommand --alter --topic cli-alter --partitions 4 >>"$out/alter" 2>&1
run org.apache.kafka.tools.TopicCommand --describe --topic cli-alter >>"$out/alter" 2>&1
check "kafka-topics --alter --partitions then --describe topic" "$out/alter" "PartitionCount: 4"
run org.apache.kafka.tools.TopicCommand --alter --topic cli-alter --partitions 2 >"$out/alter-decrease" 2>&1
check "kafka-topics --alter refuses fewer partitions topic" "$out/alter-decrease" \
  "The topic cli-alter currently has 4 partition\(s\); 2 would not be an increase"
run org.apache.kafka.tools.TopicCommand --delete --topic cli-alter >"$out/delete" 2>&1
# Kafka deletes asynchronously, so allow the listing a few tries.
for _ in 1 2 3 4 5; do
  run org.apache.kafka.tools.TopicCommand --list >"$out/delete-list" 2>&1
  grep -q '^cli-alter$' "$out/delete-list" || break
  sleep 1
done
{ grep -q '^cli-topic$' "$out/delete-list" && ! grep -q '^cli-alter$' "$out/delete-list" && echo gone; } >"$out/delete-gone"
check "kafka-topics --delete then --list no longer shows the topic" "$out/delete-gone" "^gone$"

# The perf tools: 50000 records of 100 bytes through the producer, then read
# back by a consumer group.
run org.apache.kafka.tools.TopicCommand --create --topic cli-perf --partitions 3 --replication-factor 1 >/dev/null 2>&1
run org.apache.kafka.tools.ProducerPerformance --topic cli-perf --num-records 50000 --record-size 100 \
  --throughput -1 >"$out/producer-perf" 2>&1
check "kafka-producer-perf-test produce 50000 records" "$out/producer-perf" "^50000 records sent, "
run org.apache.kafka.tools.ConsumerPerformance --topic cli-perf --num-records 50000 --group cli-perf-classic \
  --timeout 30000 >"$out/consumer-perf" 2>&1
# The CSV line's fifth field is data.consumed.in.nMsg.
check "kafka-consumer-perf-test consume 50000 records (classic group)" "$out/consumer-perf" \
  "^[^,]+, [^,]+, [0-9.]+, [0-9.]+, 50000, "
run org.apache.kafka.tools.ConsumerPerformance --topic cli-perf --num-records 50000 --group cli-perf-consumer \
  --command-property group.protocol=consumer --timeout 30000 >"$out/consumer-perf-848" 2>&1
check "kafka-consumer-perf-test consume 50000 records (consumer group protocol)" "$out/consumer-perf-848" \
  "^[^,]+, [^,]+, [0-9.]+, [0-9.]+, 50000, "

# VerifiableProducer and VerifiableConsumer (what Kafka's system tests drive)
# print one JSON event a line; summarize them.
verifiable_summary() { # JSON lines file -> one summary line
  python3 - "$1" <<'EOF'
import json, sys
acked = failed = consumed = commit_failures = 0
committed, tool = {}, {}
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    n = e.get("name")
    if n == "producer_send_success": acked += 1
    elif n == "producer_send_error": failed += 1
    elif n == "tool_data": tool = e
    elif n == "records_consumed": consumed += e["count"]
    elif n == "offsets_committed":
        if not e.get("success"): commit_failures += 1
        for o in e.get("offsets") or []:
            committed[(o["topic"], o["partition"])] = o["offset"]
if tool:
    print("sent %d acked %d failed %d (tool_data acked %d)" % (tool["sent"], acked, failed, tool["acked"]))
else:
    print("consumed %d committed %d commit_failures %d" % (consumed, sum(committed.values()), commit_failures))
EOF
}
run org.apache.kafka.tools.TopicCommand --create --topic cli-verifiable --partitions 3 --replication-factor 1 >/dev/null 2>&1
# Keys spread the records over the three partitions.
run org.apache.kafka.tools.VerifiableProducer --topic cli-verifiable --max-messages 3000 --repeating-keys 30 \
  >"$out/verifiable-producer.json" 2>"$out/verifiable-producer.err"
verifiable_summary "$out/verifiable-producer.json" >"$out/verifiable-producer"
check "VerifiableProducer produce 3000 acked, none failed" "$out/verifiable-producer" \
  "^sent 3000 acked 3000 failed 0 \(tool_data acked 3000\)$"
for protocol in classic consumer; do
  # It would consume until killed without --max-messages; the timeout stops
  # it if it never gets there.
  timeout 120 java -Dlog4j2.level=error -cp "$cp" org.apache.kafka.tools.VerifiableConsumer --bootstrap-server "$broker" \
    --topic cli-verifiable --group-id "cli-verifiable-$protocol" --group-protocol "$protocol" --max-messages 3000 \
    >"$out/verifiable-consumer-$protocol.json" 2>"$out/verifiable-consumer-$protocol.err"
  verifiable_summary "$out/verifiable-consumer-$protocol.json" >"$out/verifiable-consumer-$protocol"
  check "VerifiableConsumer consume 3000 and commit them ($protocol group protocol)" \
    "$out/verifiable-consumer-$protocol" "^consumed 3000 committed 3000 commit_failures 0$"
done
# VerifiableShareConsumer (KIP-932) on the same 3000 records, one share group
# per acknowledgement mode (auto: implicit, acknowledged by the next
# ShareFetch; sync: explicit, commitSync): every record received and
# acknowledged, no acknowledgement failing.
verifiable_share_summary() { # JSON lines file -> one summary line
  python3 - "$1" <<'EOF'
import json, sys
consumed, acked = set(), set()
acked_count = ack_failures = 0
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    n = e.get("name")
    if n == "records_consumed":
        for p in e["partitions"]:
            consumed.update((p["topic"], p["partition"], o) for o in p["offsets"])
    elif n == "offsets_acknowledged":
        if not e.get("success") or e.get("error"):
            ack_failures += 1
        acked_count += e["count"]
        for p in e["partitions"]:
            acked.update((p["topic"], p["partition"], o) for o in p["offsets"])
print("received %d acknowledged %d (counts %d) failures %d" % (len(consumed), len(acked & consumed), acked_count, ack_failures))
EOF
}
for mode in auto sync; do
  timeout -k 5 40 java -Dlog4j2.level=error -cp "$cp" org.apache.kafka.tools.VerifiableShareConsumer --bootstrap-server "$broker" \
    --topic cli-verifiable --group-id "cli-verifiable-share-$mode" --acknowledgement-mode "$mode" \
    --offset-reset-strategy earliest --max-messages 3000 \
    >"$out/verifiable-share-$mode.json" 2>"$out/verifiable-share-$mode.err"
  verifiable_share_summary "$out/verifiable-share-$mode.json" >"$out/verifiable-share-$mode"
  # The counts may exceed 3000 only if a record was delivered again.
  check "VerifiableShareConsumer receives and acknowledges 3000, none failing (--acknowledgement-mode $mode)" \
    "$out/verifiable-share-$mode" "^received 3000 acknowledged 3000 \(counts [0-9]+\) failures 0$"
done

# The metadata quorum (Strait's: the etcd members, DescribeQuorum), the
# finalized features (ApiVersions; UpdateFeatures) and broker unregistration.
# These tools parse their arguments with argparse: the bootstrap server
# comes before the subcommand (kafka-cluster: after it).
sub() { java -Dlog4j2.level=error -cp "$cp" "$1" --bootstrap-server "$broker" "${@:2}"; }
quorum() { sub org.apache.kafka.tools.MetadataQuorumCommand "$@"; }
quorum describe --status >"$out/quorum-status" 2>&1
check "kafka-metadata-quorum describe --status (leader)" "$out/quorum-status" "^LeaderId: +[0-9]+$"
check "kafka-metadata-quorum describe --status (voters)" "$out/quorum-status" '^CurrentVoters: +\[\{"id": [0-9]+, "directoryId": "[A-Za-z0-9_-]+"'
quorum describe --replication >"$out/quorum-replication" 2>&1
check "kafka-metadata-quorum describe --replication" "$out/quorum-replication" \
  "^[0-9]+[[:space:]]+[A-Za-z0-9_-]+[[:space:]]+[0-9]+[[:space:]]+0[[:space:]]+[0-9]+[[:space:]]+[0-9]+[[:space:]]+Leader"
features() { sub org.apache.kafka.tools.FeatureCommand "$@"; }
features describe >"$out/features-describe" 2>&1
check "kafka-features describe (metadata.version of Kafka 4.4)" "$out/features-describe" \
  "^Feature: metadata.version +SupportedMinVersion: 3.3-IV3 +SupportedMaxVersion: 4.4-IV2 +FinalizedVersionLevel: 4.4-IV2"
features upgrade --metadata 4.4-IV2 >"$out/features-upgrade" 2>&1
check "kafka-features upgrade to the level in effect" "$out/features-upgrade" "metadata.version was upgraded to 33"
features downgrade --metadata 4.0-IV3 >"$out/features-downgrade" 2>&1
check "kafka-features downgrade refused as Kafka refuses it" "$out/features-downgrade" \
  "Refusing to perform the requested downgrade because it might delete metadata information"
# A level Kafka accepts is stored (etcd) and reported by describe: ELR is
# turned off, then on again (the level a new Kafka 4.4 cluster has).
features downgrade --feature eligible.leader.replicas.version=0 >"$out/features-downgrade-elr" 2>&1
check "kafka-features downgrade --feature" "$out/features-downgrade-elr" "eligible.leader.replicas.version was downgraded to 0"
features upgrade --feature eligible.leader.replicas.version=1 >"$out/features-upgrade-elr" 2>&1
check "kafka-features upgrade --feature" "$out/features-upgrade-elr" "eligible.leader.replicas.version was upgraded to 1"
features describe >"$out/features-describe-elr" 2>&1
check "kafka-features describe shows the upgraded level" "$out/features-describe-elr" \
  "^Feature: eligible.leader.replicas.version +SupportedMinVersion: 0 +SupportedMaxVersion: 1 +FinalizedVersionLevel: 1"
features upgrade --feature transaction.version=3 >"$out/features-upgrade-invalid" 2>&1
check "kafka-features upgrade beyond the supported range refused" "$out/features-upgrade-invalid" \
  "only supports versions 0-2"
java -Dlog4j2.level=error -cp "$cp" org.apache.kafka.tools.ClusterTool unregister --bootstrap-server "$broker" --id 99 \
  >"$out/cluster-unregister-unknown" 2>&1
check "kafka-cluster unregister of an id nobody holds" "$out/cluster-unregister-unknown" "BrokerIdNotRegisteredException"
java -Dlog4j2.level=error -cp "$cp" org.apache.kafka.tools.ClusterTool unregister-controller --bootstrap-server "$broker" --id 99 \
  >"$out/cluster-unregister-controller" 2>&1
check "kafka-cluster unregister-controller of an id nobody holds" "$out/cluster-unregister-controller" \
  "ControllerIdNotRegisteredException: Controller ID 99 is not currently registered\."

# Without authorizer.class.name (this broker's configuration) Kafka answers
# the ACL APIs with SECURITY_DISABLED; kafka-acls reports it.
acls() { run org.apache.kafka.tools.AclCommand "$@"; }
acls --list >"$out/acls-list" 2>&1
check "kafka-acls --list without an authorizer: SECURITY_DISABLED" "$out/acls-list" \
  "SecurityDisabledException: No Authorizer is configured on the broker"
acls --add --allow-principal User:alice --operation Read --topic cli-topic >"$out/acls-add" 2>&1
check "kafka-acls --add without an authorizer: SECURITY_DISABLED" "$out/acls-add" \
  "SecurityDisabledException: No Authorizer is configured"

# kafka-acls against a second broker with Kafka's StandardAuthorizer
# (User:ANONYMOUS, this PLAINTEXT listener's principal, is a super user so
# it may manage ACLs): add, list and remove, literal and prefixed, allow and
# deny, the producer and consumer convenience options.
acl_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$root/bin/strait" --ephemeral --override listeners=PLAINTEXT://127.0.0.1:$acl_port \
  --override authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer \
  --override super.users=User:ANONYMOUS >"$out/acl-broker.log" 2>&1 &
acl_pid=$!
for _ in $(seq 1 100); do grep -q "strait ready" "$out/acl-broker.log" && break; sleep 0.1; done
aclsa() { java -Dlog4j2.level=error -cp "$cp" org.apache.kafka.tools.AclCommand --bootstrap-server 127.0.0.1:$acl_port "$@"; }
aclsa --add --allow-principal User:alice --operation Read --operation Write --topic orders >"$out/acla-add" 2>&1
aclsa --add --producer --allow-principal User:bob --topic logs --resource-pattern-type prefixed >>"$out/acla-add" 2>&1
aclsa --add --consumer --allow-principal User:carol --topic orders --group billing >>"$out/acla-add" 2>&1
aclsa --add --deny-principal User:mallory --deny-host 10.0.0.1 --operation All --topic '*' >>"$out/acla-add" 2>&1
aclsa --list >"$out/acla-list" 2>&1
check "kafka-acls --add --allow-principal (literal) and --list" "$out/acla-list" \
  "^\s*\(principal=User:alice, host=\*, operation=WRITE, permissionType=ALLOW\)"
check "kafka-acls --add --producer --resource-pattern-type prefixed" "$out/acla-list" \
  "^Current ACLs for resource \`ResourcePattern\(resourceType=TOPIC, name=logs, patternType=PREFIXED\)\`"
check "kafka-acls --add --consumer (group ACL)" "$out/acla-list" \
  "^\s*\(principal=User:carol, host=\*, operation=READ, permissionType=ALLOW\)"
check "kafka-acls --add --deny-principal --deny-host" "$out/acla-list" \
  "^\s*\(principal=User:mallory, host=10.0.0.1, operation=ALL, permissionType=DENY\)"
aclsa --remove --force --consumer --allow-principal User:carol --topic orders --group billing >"$out/acla-remove" 2>&1
aclsa --remove --force --topic logs --resource-pattern-type prefixed >>"$out/acla-remove" 2>&1
aclsa --list >"$out/acla-list-after" 2>&1
if grep -qE "User:carol|name=logs" "$out/acla-list-after"; then echo "carol or logs still listed" >>"$out/acla-list-after"
else echo "removed: carol and logs gone" >>"$out/acla-list-after"; fi
check "kafka-acls --remove (consumer options and a prefixed pattern)" "$out/acla-list-after" "^removed: carol and logs gone$"
# kafka-cluster unregister of a running broker (the ACL broker, done with):
# its registration goes and it registers again, as a Kafka broker does.
java -Dlog4j2.level=error -cp "$cp" org.apache.kafka.tools.ClusterTool unregister --bootstrap-server 127.0.0.1:$acl_port --id 1 \
  >"$out/cluster-unregister" 2>&1
check "kafka-cluster unregister --id of a running broker" "$out/cluster-unregister" "^Broker 1 is no longer registered\.$"
kill $acl_pid 2>/dev/null; wait $acl_pid 2>/dev/null

# kafka-reassign-partitions --throttle on a two-broker `strait cluster`:
# --execute sets the rates on the brokers involved and the topic's throttled
# replicas (the current replica on the leader side, the new one on the
# follower side), --verify removes them once the move has completed.
"$root/bin/strait" cluster -n 2 >"$out/reassign-cluster.log" 2>&1 &
rc_pid=$!
for _ in $(seq 1 300); do grep -q "strait cluster ready" "$out/reassign-cluster.log" && break; sleep 0.1; done
rc_broker=$(sed -n 's/.*strait cluster ready.*bootstrap.servers=\([^ ]*\).*/\1/p' "$out/reassign-cluster.log" | head -1)
rc() { java -Dlog4j2.level=error -cp "$cp" "$@" --bootstrap-server "${rc_broker:-127.0.0.1:1}"; }
rc org.apache.kafka.tools.TopicCommand --create --topic cli-reassign --replica-assignment 1 >"$out/reassign-create" 2>&1
java -Dlog4j2.level=error -cp "$cp" org.apache.kafka.tools.ProducerPerformance --topic cli-reassign --num-records 2000 \
  --record-size 1000 --throughput -1 --producer-props "bootstrap.servers=${rc_broker:-127.0.0.1:1}" acks=all \
  >>"$out/reassign-create" 2>&1
echo '{"version":1,"partitions":[{"topic":"cli-reassign","partition":0,"replicas":[1,2]}]}' >"$out/reassign.json"
rc org.apache.kafka.tools.reassign.ReassignPartitionsCommand --execute --reassignment-json-file "$out/reassign.json" \
  --throttle 1000000 >"$out/reassign-execute" 2>&1
check "kafka-reassign-partitions --execute --throttle" "$out/reassign-execute" \
  "^The inter-broker throttle limit was set to 1000000 B/s$"
rc org.apache.kafka.tools.ConfigCommand --describe --entity-type brokers --entity-name 2 >"$out/reassign-throttles" 2>&1
rc org.apache.kafka.tools.ConfigCommand --describe --entity-type topics --entity-name cli-reassign >>"$out/reassign-throttles" 2>&1
check "kafka-reassign-partitions --throttle sets the broker rates" "$out/reassign-throttles" \
  "leader.replication.throttled.rate=1000000 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=1000000\}"
check "kafka-reassign-partitions --throttle sets the topic's throttled replicas" "$out/reassign-throttles" \
  "follower.replication.throttled.replicas=0:2 sensitive=false"
for _ in $(seq 1 60); do
  rc org.apache.kafka.tools.reassign.ReassignPartitionsCommand --verify --reassignment-json-file "$out/reassign.json" \
    >"$out/reassign-verify" 2>&1
  grep -q "is completed" "$out/reassign-verify" && break
  sleep 1
done
check "kafka-reassign-partitions --verify completes and clears the throttles" "$out/reassign-verify" \
  "^Clearing broker-level throttles on brokers 1,2$"
rc org.apache.kafka.tools.ConfigCommand --describe --entity-type brokers --entity-name 2 >"$out/reassign-cleared" 2>&1
rc org.apache.kafka.tools.ConfigCommand --describe --entity-type topics --entity-name cli-reassign >>"$out/reassign-cleared" 2>&1
if grep -q "throttled" "$out/reassign-cleared"; then echo "throttles still set" >>"$out/reassign-cleared"
else echo "no throttles left" >>"$out/reassign-cleared"; fi
check "kafka-reassign-partitions --verify removed the throttle configs" "$out/reassign-cleared" "^no throttles left$"
kill $rc_pid 2>/dev/null
for _ in $(seq 1 300); do kill -0 $rc_pid 2>/dev/null || break; sleep 0.1; done
kill -9 $rc_pid 2>/dev/null; wait $rc_pid 2>/dev/null

# kafka-client-metrics: CLIENT_METRICS subscriptions (KIP-714).
cm() { run org.apache.kafka.tools.ClientMetricsCommand "$@"; }
cm --alter --name cli-sub --metrics org.apache.kafka.producer. --interval 1000 >"$out/client-metrics-alter" 2>&1
check "kafka-client-metrics --alter" "$out/client-metrics-alter" "^Altered client metrics config for cli-sub\.$"
cm --describe --name cli-sub >"$out/client-metrics-describe" 2>&1
check "kafka-client-metrics --describe" "$out/client-metrics-describe" "^  metrics=org\.apache\.kafka\.producer\.$"
check "kafka-client-metrics --describe (interval)" "$out/client-metrics-describe" "^  interval\.ms=1000$"
cm --list >"$out/client-metrics-list" 2>&1
check "kafka-client-metrics --list" "$out/client-metrics-list" "^cli-sub$"
cm --alter --name cli-sub --interval 10 >"$out/client-metrics-bad" 2>&1
check "kafka-client-metrics --alter refuses an interval under 100 ms (Kafka's message)" "$out/client-metrics-bad" \
  "Invalid value 10 for interval.ms, interval must be between 100 and 3600000 \(1 hour\)"
cm --delete --name cli-sub >"$out/client-metrics-delete" 2>&1
cm --list >>"$out/client-metrics-delete" 2>&1
if grep -q "^cli-sub$" "$out/client-metrics-delete"; then echo "still listed" >>"$out/client-metrics-delete"; else echo "not listed" >>"$out/client-metrics-delete"; fi
check "kafka-client-metrics --delete" "$out/client-metrics-delete" "^not listed$"

# JBOD: a broker of its own with two log.dirs. kafka-log-dirs --describe
# lists both with the partition's size; kafka-reassign-partitions with a
# "log_dirs" entry moves the replica to the other dir (AlterReplicaLogDirs)
# and --verify sees it there (DescribeLogDirs).
jbod="$work/jbod"; mkdir -p "$jbod/logs1" "$jbod/logs2"
jbod_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$root/bin/strait" --override listeners=PLAINTEXT://127.0.0.1:$jbod_port \
  --override log.dirs="$jbod/logs1,$jbod/logs2" --override etcd.data.dir="$jbod/etcd" >"$out/jbod-broker.log" 2>&1 &
jbod_pid=$!
for _ in $(seq 1 300); do grep -q "strait ready" "$out/jbod-broker.log" && break; sleep 0.1; done
jb() { java -Dlog4j2.level=error -cp "$cp" "$@" --bootstrap-server 127.0.0.1:$jbod_port; }
jb org.apache.kafka.tools.TopicCommand --create --topic cli-jbod --partitions 1 --replication-factor 1 >"$out/jbod-create" 2>&1
java -Dlog4j2.level=error -cp "$cp" org.apache.kafka.tools.ProducerPerformance --topic cli-jbod --num-records 500 \
  --record-size 100 --throughput -1 --producer-props "bootstrap.servers=127.0.0.1:$jbod_port" acks=all \
  >>"$out/jbod-create" 2>&1
jb org.apache.kafka.tools.LogDirsCommand --describe --broker-list 1 --topic-list cli-jbod >"$out/log-dirs" 2>&1
check "kafka-log-dirs --describe lists both log dirs" "$out/log-dirs" "\"logDir\":\"$jbod/logs1\".*\"logDir\":\"$jbod/logs2\"|\"logDir\":\"$jbod/logs2\".*\"logDir\":\"$jbod/logs1\""
check "kafka-log-dirs --describe shows the partition with its size" "$out/log-dirs" \
  "\"partition\":\"cli-jbod-0\",\"size\":[1-9][0-9]*,\"offsetLag\":0,\"isFuture\":false"
if [ -d "$jbod/logs1/cli-jbod-0" ]; then jbod_to="$jbod/logs2"; else jbod_to="$jbod/logs1"; fi
echo "{\"version\":1,\"partitions\":[{\"topic\":\"cli-jbod\",\"partition\":0,\"replicas\":[1],\"log_dirs\":[\"$jbod_to\"]}]}" \
  >"$out/jbod-reassign.json"
jb org.apache.kafka.tools.reassign.ReassignPartitionsCommand --execute --reassignment-json-file "$out/jbod-reassign.json" \
  >"$out/jbod-reassign-execute" 2>&1
check "kafka-reassign-partitions --execute with log_dirs starts the log dir move" "$out/jbod-reassign-execute" \
  "Successfully started moving log directory to $jbod_to for replica cli-jbod-0 with broker 1"
for _ in $(seq 1 30); do
  jb org.apache.kafka.tools.reassign.ReassignPartitionsCommand --verify --reassignment-json-file "$out/jbod-reassign.json" \
    >"$out/jbod-reassign-verify" 2>&1
  grep -q "Reassignment of replica cli-jbod-0-1 completed successfully" "$out/jbod-reassign-verify" && break
  sleep 1
done
[ -d "$jbod_to/cli-jbod-0" ] && echo "replica directory is in $jbod_to" >>"$out/jbod-reassign-verify"
check "kafka-reassign-partitions --verify sees the replica in its new log dir" "$out/jbod-reassign-verify" \
  "Reassignment of replica cli-jbod-0-1 completed successfully"
check "the moved replica's directory is in the new log dir" "$out/jbod-reassign-verify" "^replica directory is in "
kill $jbod_pid 2>/dev/null
for _ in $(seq 1 300); do kill -0 $jbod_pid 2>/dev/null || break; sleep 0.1; done
kill -9 $jbod_pid 2>/dev/null; wait $jbod_pid 2>/dev/null

echo "cli: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
