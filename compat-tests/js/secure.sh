#!/usr/bin/env bash
# kafkajs over TLS and SASL (secure.test.js) against the secured broker
# (lib/broker.sh start_secure_broker; COMPAT_BROKER=kafka runs it against
# Apache Kafka 4.4).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../lib/broker.sh"
cd "$here"
[ -d node_modules/kafkajs ] || npm install --no-audit --no-fund --silent
work="$here/work/secure"; rm -rf "$work"; mkdir -p "$work"
start_secure_broker "$work"
scram_user alice alice-secret >"$work/scram-user.log" 2>&1 || { cat "$work/scram-user.log"; exit 1; }
STRAIT_SASL_SSL="$BROKER_SASL_SSL" STRAIT_CA="$CERTS/ca.pem" node --test --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=junit --test-reporter-destination="$work/junit.xml" "${@:-secure.test.js}"
