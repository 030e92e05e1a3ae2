#!/usr/bin/env bash
# Python clients (confluent-kafka over librdkafka, kafka-python) from PyPI, in
# a virtualenv under work/, against the built broker.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../lib/broker.sh"
venv="$here/.venv"
if [ ! -x "$venv/bin/pytest" ] || ! cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi
work="$here/work"; rm -rf "$work"
start_broker "$work"
cd "$here"
STRAIT_BOOTSTRAP="$BROKER" "$venv/bin/pytest" -q -p no:cacheprovider --junitxml="$work/junit.xml" --ignore=test_secure.py "$@"
