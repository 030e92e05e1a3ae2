#!/usr/bin/env bash
# make bench-compare: Strait beside Apache Kafka 4.x (from Maven Central) and
# franz-go's kfake on this machine, every scenario in bench/scenarios against
# each in turn, ratios as medians of the rounds; writes bench/results/latest.md
# and latest.json. Takes about 11 minutes on 2 cores.
#
#   QUICK=1       one round, half-length phases, 3 start-ups, 500 MB
#                 head/tail log (about 6 minutes)
#   ROUNDS=n      rounds of the scenarios (default 3)
#   TARGETS=a,b   brokers among kafka,strait,kfake (default all three)
#   SCENARIOS=p   scenario files or directories, comma-separated (default
#                 bench/scenarios; bench/matrix/full.json is the 72-scenario
#                 cross product)
#   SKIP=a,b      phases to leave out: startup, connections, scenarios,
#                 headtail, scaling
#   SCALE=list    partitions per scaling step (default 1,100,1000;
#                 1,100,1000,10000 adds about 10 minutes: 7 on Kafka)
#   SCALE_PARTITIONER=p  the scaling load's partitioner: sticky (default:
#                 16 KiB to a partition, then the next, as the Java client
#                 and kafka-producer-perf-test batch records without a
#                 key) or round-robin (a record to each partition in turn:
#                 batches of 1-2 records at 10,000 partitions)
#   BENCH_ARGS    more strait-bench compare flags (-h lists them)
#
# Scenarios with "security" (09-sasl-ssl.json: SASL_SSL with SCRAM-SHA-512,
# 10-ssl.json: SSL) run over a secured listener that Kafka and Strait open
# beside PLAINTEXT, with the same keys and keystore (PKCS12; BENCH_ARGS=
# "-keystore-type PEM" or JKS for another; "-ssl-cipher-suites
# TLS_AES_128_GCM_SHA256" to give Kafka the suite Go picks: by default each
# broker picks its own, and the report names it), certificates made by
# openssl and keytool in bench/work/tls; kfake has no TLS (n/a). The two add
# about 1.5 minutes (QUICK=1: under 1); the report sets each beside its
# plaintext twin (01) on the same broker (the cost of TLS) and times new
# clients on each listener (TLS handshake, SASL exchange).
#
# Needs Go, a JDK 17+ (java, keytool), Maven (mvn) and openssl:
# apt-get install openjdk-17-jre-headless maven openssl.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
for tool in java mvn keytool openssl; do
  command -v "$tool" >/dev/null || { echo "bench-compare: $tool is needed (apt-get install openjdk-17-jre-headless maven openssl)" >&2; exit 1; }
done
"$GO" build -o bin/strait ./cmd/strait
"$GO" build -o bin/strait-bench ./cmd/strait-bench
"$GO" build -o bin/kfake-bench ./bench/kfake
bench/kafka/kafka.sh fetch

args=()
[ "${QUICK:-0}" != 0 ] && args+=(-quick)
[ -n "${ROUNDS:-}" ] && args+=(-rounds "$ROUNDS")
[ -n "${TARGETS:-}" ] && args+=(-targets "$TARGETS")
if [ -n "${SCENARIOS:-}" ]; then
  IFS=, read -ra files <<<"$SCENARIOS"
  for f in "${files[@]}"; do args+=(-scenarios "$f"); done
fi
[ -n "${SKIP:-}" ] && args+=(-skip "$SKIP")
[ -n "${SCALE:-}" ] && args+=(-scale "$SCALE")
[ -n "${SCALE_PARTITIONER:-}" ] && args+=(-scale-partitioner "$SCALE_PARTITIONER")
# shellcheck disable=SC2206 # BENCH_ARGS is a list of flags
args+=(${BENCH_ARGS:-})
mkdir -p bench/work bench/results
bin/strait-bench compare "${args[@]}"
echo "broker logs of this run: bench/work/"
