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
# RackTest's cluster: brokers 1-3 in racks rack-a, rack-b, rack-c, their
# embedded etcd members forming one cluster, with the rack-aware replica
# selector (-Drack.bootstrap.servers).
RACK_PIDS=""
rack_initial="" rack_bootstrap=""
declare -a rack_port rack_peer
for i in 1 2 3; do
  rack_port[$i]=$(free_port) rack_peer[$i]=$(free_port)
  rack_initial="$rack_initial${rack_initial:+,}b$i=http://127.0.0.1:${rack_peer[$i]}"
  rack_bootstrap="$rack_bootstrap${rack_bootstrap:+,}127.0.0.1:${rack_port[$i]}"
done
for i in 1 2 3; do
  rack=$(echo abc | cut -c"$i")
  "$root/bin/strait" --ephemeral --override node.id=$i \
    --override listeners=PLAINTEXT://127.0.0.1:${rack_port[$i]} \
    --override etcd.name=b$i --override etcd.initial.cluster="$rack_initial" \
    --override etcd.listen.peer.urls=http://127.0.0.1:${rack_peer[$i]} \
    --override broker.rack=rack-$rack \
    --override replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector \
    >"$work/rack-broker-$i.log" 2>&1 &
  RACK_PIDS="$RACK_PIDS $!"
done
trap 'kill $BROKER_PID $ACL_PID $RACK_PIDS 2>/dev/null || true; wait $BROKER_PID $ACL_PID $RACK_PIDS 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q "strait ready" "$work/acl-broker.log" && break; sleep 0.1; done
grep -q "strait ready" "$work/acl-broker.log" || { cat "$work/acl-broker.log"; echo "authorizer broker not ready" >&2; exit 1; }
for i in 1 2 3; do
  for _ in $(seq 1 300); do grep -q "strait ready" "$work/rack-broker-$i.log" && break; sleep 0.1; done
  grep -q "strait ready" "$work/rack-broker-$i.log" || { cat "$work/rack-broker-$i.log"; echo "rack broker $i not ready" >&2; exit 1; }
done
cd "$here"
status=0
mvn -B -q -Dbootstrap.servers="$BROKER" -Dhttp.address="$BROKER_HTTP" -Dacl.bootstrap.servers=127.0.0.1:$acl_port \
  -Drack.bootstrap.servers="$rack_bootstrap" test "$@" || status=1
if [ $# -eq 0 ]; then
  "$here/cli.sh" "$BROKER" "$work" || status=1
fi
exit $status
