#!/usr/bin/env bash
# kafkajs (npm) with node's test runner against the built broker.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../lib/broker.sh"
cd "$here"
[ -d node_modules/kafkajs ] || npm install --no-audit --no-fund --silent
work="$here/work"; rm -rf "$work"
start_broker "$work"
mkdir -p "$work"
STRAIT_BOOTSTRAP="$BROKER" node --test --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=junit --test-reporter-destination="$work/junit.xml" "${@:-kafkajs.test.js}"
