#!/usr/bin/env bash
# confluent-kafka (librdkafka, from PyPI as run.sh installs it) over TLS and
# SASL: test_secure.py against the secured broker (lib/broker.sh
# start_secure_broker; COMPAT_BROKER=kafka runs it against Apache Kafka 4.4).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../lib/broker.sh"
venv="$here/.venv"
if [ ! -x "$venv/bin/pytest" ] || ! cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi
work="$here/work/secure"; rm -rf "$work"; mkdir -p "$work"
start_secure_broker "$work"
scram_user alice alice-secret >"$work/scram-user.log" 2>&1 || { cat "$work/scram-user.log"; exit 1; }
cd "$here"
STRAIT_SASL_SSL="$BROKER_SASL_SSL" STRAIT_SSL="$BROKER_SSL" STRAIT_CA="$CERTS/ca.pem" \
  "$venv/bin/pytest" -q -p no:cacheprovider --junitxml="$work/junit.xml" test_secure.py "$@"
