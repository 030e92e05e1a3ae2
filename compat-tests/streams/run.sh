#!/usr/bin/env bash
# The Kafka Streams suite (Maven, kafka-streams from Maven Central): a word-count
# topology with exactly_once_v2 against the built broker, including a restart
# that restores its state from the changelog topic. Maven downloads what it
# needs on first use. Arguments go to Maven (e.g. -Dtest=WordCountTest#...).
# Streams' own log (INFO) ends up in target/surefire-reports/*-output.txt, the
# broker's in work/broker.log.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../lib/broker.sh"
work="$here/work"; rm -rf "$work"
start_broker "$work" || exit 1
cd "$here"
mvn -B -q -Dbootstrap.servers="$BROKER" test "$@"
