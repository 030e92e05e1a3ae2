#!/usr/bin/env bash
# The Kafka Streams suite (Maven, kafka-streams from Maven Central): a word-count
# topology with exactly_once_v2 against the built broker, including a restart
# that restores its state from the changelog topic. Maven downloads what it
# needs on first use. Arguments go to Maven (e.g. -Dtest=WordCountTest#...).
# Streams' own log (INFO) ends up in target/surefire-reports/*-output.txt, the
# broker's in work/broker.log. StreamsProtocolWordCountTest runs the same cases
# with group.protocol=streams (KIP-1071) and Kafka's kafka-streams-groups tool
# (--list, --describe --members/--state/--offsets/--topology) from the jars
# bench/kafka/kafka.sh fetches; the broker's group.streams.min.*
# bounds are lowered so the group configs can give it a 6 s session, and it
# keeps topology descriptions (KIP-1331) with Kafka's in-memory plugin.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../lib/broker.sh"
work="$here/work"; rm -rf "$work"
root="$(cd "$here/../.." && pwd)"
"$root/bench/kafka/kafka.sh" fetch || exit 1
start_broker "$work" --override group.streams.min.session.timeout.ms=6000 \
  --override group.streams.min.heartbeat.interval.ms=1000 \
  --override group.streams.topology.description.plugin.class=org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin \
  || exit 1
cd "$here"
mvn -B -q -Dbootstrap.servers="$BROKER" -Dkafka.cli.classpath="$root/bench/kafka/lib/*" test "$@"
