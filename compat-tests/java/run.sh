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
# AclUiTest's second broker: the StandardAuthorizer, SASL/PLAIN users admin
# (a super user) and alice on SASL_PLAINTEXT (-Dacl.bootstrap.servers).
root="$(cd "$here/../.." && pwd)"
acl_port=$(free_port) acl_plain=$(free_port)
"$root/bin/strait" --ephemeral \
  --override listeners=PLAINTEXT://127.0.0.1:$acl_plain,SASL_PLAINTEXT://127.0.0.1:$acl_port \
  --override authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer \
  --override "super.users=User:admin;User:ANONYMOUS" --override sasl.enabled.mechanisms=PLAIN \
  --override 'listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw" user_alice="alice-pw";' \
  >"$work/acl-broker.log" 2>&1 &
ACL_PID=$!
trap 'kill $BROKER_PID $ACL_PID 2>/dev/null || true; wait $BROKER_PID $ACL_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q "strait ready" "$work/acl-broker.log" && break; sleep 0.1; done
grep -q "strait ready" "$work/acl-broker.log" || { cat "$work/acl-broker.log"; echo "authorizer broker not ready" >&2; exit 1; }
cd "$here"
status=0
mvn -B -q -Dbootstrap.servers="$BROKER" -Dhttp.address="$BROKER_HTTP" -Dacl.bootstrap.servers=127.0.0.1:$acl_port test "$@" || status=1
if [ $# -eq 0 ]; then
  "$here/cli.sh" "$BROKER" "$work" || status=1
fi
exit $status
