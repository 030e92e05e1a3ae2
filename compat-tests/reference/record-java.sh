#!/usr/bin/env bash
# The Java session record.sh records: Kafka's CLI tools (the kafka-tools
# jars bench/kafka/kafka.sh fetched) against $STRAIT_RECORD_BOOTSTRAP, the
# recording proxy. kafka-topics (create, describe, list, alter partitions,
# delete), kafka-configs (alter and describe a topic, describe the broker
# defaults), kafka-console-producer (idempotent, then acks=0),
# kafka-console-consumer in a KIP-848 group (group.protocol=consumer) and in a
# classic one, kafka-consumer-groups (describe, list, reset offsets, delete),
# kafka-get-offsets, kafka-delete-records and kafka-transactions
# describe-producers.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bs="${STRAIT_RECORD_BOOTSTRAP:?run by record.sh through the recording proxy}"
cp="$root/bench/kafka/lib/*"
run() { java -Dlog4j2.level=error -cp "$cp" "$@" --bootstrap-server "$bs"; }
run org.apache.kafka.tools.TopicCommand --create --topic rec-java --partitions 2 --replication-factor 1
run org.apache.kafka.tools.TopicCommand --create --topic rec-java-tmp --partitions 1 --replication-factor 1
run org.apache.kafka.tools.TopicCommand --describe --topic rec-java
run org.apache.kafka.tools.TopicCommand --list
run org.apache.kafka.tools.ConfigCommand --alter --entity-type topics --entity-name rec-java --add-config retention.ms=86400000
run org.apache.kafka.tools.ConfigCommand --describe --entity-type topics --entity-name rec-java
seq 1 20 | run org.apache.kafka.tools.ConsoleProducer --topic rec-java
run org.apache.kafka.tools.consumer.ConsoleConsumer --topic rec-java --group rec-java-group --from-beginning \
  --max-messages 20 --timeout-ms 30000 --consumer-property group.protocol=consumer >/dev/null
run org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --describe --group rec-java-group
run org.apache.kafka.tools.TopicCommand --alter --topic rec-java --partitions 3
echo "unacknowledged" | run org.apache.kafka.tools.ConsoleProducer --topic rec-java --producer-property acks=0
run org.apache.kafka.tools.consumer.ConsoleConsumer --topic rec-java --group rec-java-classic --from-beginning \
  --max-messages 21 --timeout-ms 30000 --consumer-property group.protocol=classic >/dev/null
run org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --list
run org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --describe --group rec-java-classic
run org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --reset-offsets --group rec-java-classic --topic rec-java \
  --to-earliest --execute
run org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --delete --group rec-java-classic
run org.apache.kafka.tools.GetOffsetShell --topic rec-java
offsets="$(mktemp)"; trap 'rm -f "$offsets"' EXIT
echo '{"partitions":[{"topic":"rec-java","partition":1,"offset":5}],"version":1}' >"$offsets"
run org.apache.kafka.tools.DeleteRecordsCommand --offset-json-file "$offsets"
java -Dlog4j2.level=error -cp "$cp" org.apache.kafka.tools.TransactionsCommand --bootstrap-server "$bs" \
  describe-producers --topic rec-java --partition 1
run org.apache.kafka.tools.ConfigCommand --describe --entity-type brokers --entity-default
run org.apache.kafka.tools.TopicCommand --delete --topic rec-java-tmp
