#!/usr/bin/env bash
# Re-records the client sessions the conformance harness replays
# (testdata/recorded/*.jsonl, format in compat-tests/internal/recorder):
# Apache Kafka 4.4 from Maven Central (bench/kafka/kafka.sh, as the harness
# starts it, with the harness's settings), then through the recording proxy
# first the franz-go session (compat-tests/internal/recorder/cmd/record),
# then the Java CLI session (record-java.sh). Both go to the same Kafka, in
# that order, as the harness replays them. About a minute; `make
# record-conformance`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
kafka="$root/bench/kafka/kafka.sh"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$root/bench/kafka/pom.xml")"
work="$(mktemp -d)"
trap '"$kafka" stop "$work/kafka" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$kafka" format "$work/kafka" >/dev/null
# brokerSettings and conformanceSettings of the harness (reference_test.go,
# conformance_test.go); keep them in step.
cat >>"$work/kafka/server.properties" <<PROPS
log.retention.check.interval.ms=500
log.cleaner.backoff.ms=100
log.segment.delete.delay.ms=0
log.initial.task.delay.ms=0
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
num.partitions=1
log.retention.hours=168
group.streams.initial.rebalance.delay.ms=0
PROPS
addr="$("$kafka" start "$work/kafka")"
echo "Kafka $version at $addr"
(cd "$root" && go build -o "$work/record" ./compat-tests/internal/recorder/cmd/record)
out="$here/testdata/recorded"
mkdir -p "$out"
"$work/record" -upstream "$addr" -upstream-name "Apache Kafka $version" -session franz-go -out "$out/franz-go.jsonl"
"$work/record" -upstream "$addr" -upstream-name "Apache Kafka $version" -session java-cli -out "$out/java-cli.jsonl" -- "$here/record-java.sh"
