#!/usr/bin/env bash
# The Java client suite (Maven, kafka-clients from Maven Central) against the
# built broker. Maven downloads what it needs on first use.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../lib/broker.sh"
work="$here/work"; rm -rf "$work"
start_broker "$work"
cd "$here"
mvn -B -q -Dbootstrap.servers="$BROKER" test "$@"
