#!/usr/bin/env bash
# The Java client suite (Maven, kafka-clients from Maven Central) against the
# built broker, then Kafka's CLI tools (cli.sh) against the same broker.
# Maven downloads what it needs on first use. Arguments go to Maven (e.g.
# -Dtest=AdminConfigsTest) and skip the CLI tools.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../lib/broker.sh"
work="$here/work"; rm -rf "$work"
start_broker "$work" || exit 1
cd "$here"
status=0
mvn -B -q -Dbootstrap.servers="$BROKER" test "$@" || status=1
if [ $# -eq 0 ]; then
  "$here/cli.sh" "$BROKER" "$work" || status=1
fi
exit $status
