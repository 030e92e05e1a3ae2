#!/usr/bin/env bash
# Runs franz-go's own kgo integration suite (from the module cache, at the
# version in go.mod) against the built Strait binary, writes RESULTS.md with
# passed/failed/skipped counts and the failing tests, and exits non-zero when
# a test fails that expected-failures.txt does not list (a regression) or a
# listed test now passes (the list is stale: shorten it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$root/bin/strait"
work="$here/work"
rm -rf "$work"; mkdir -p "$work"

[ -x "$bin" ] || (cd "$root" && go build -o bin/strait ./cmd/strait)

# KGO_BROKERS=3 runs the suite against three brokers whose embedded etcd
# members form one cluster, with KGO_TEST_RF=3 (issue 7); results then go to
# RESULTS-rf3.md.
brokers=${KGO_BROKERS:-1}
results="$here/RESULTS.md"
[ "$brokers" -gt 1 ] && results="$here/RESULTS-rf$brokers.md"
# KGO_SECURE=1 (the default) gives each broker the secured listeners of
# lib/broker.sh (secure_properties: PLAINTEXT, SASL_SSL, SSL with client
# certificates required, SASL_PLAINTEXT with PLAIN, SCRAM and unsecured
# OAUTHBEARER) and runs the suite over the SSL listener with a client
# certificate (KGO_TEST_TLS), TestSCRAMAuth and TestSCRAMAuthBadCredentials
# over SASL_PLAINTEXT with SCRAM-SHA-512 (KGO_TEST_SCRAM_SEEDS; the user is
# made first with kafka-configs) and TestOAuthAuth over SASL_PLAINTEXT
# (KGO_TEST_OAUTH_SEEDS). KGO_SECURE=0: PLAINTEXT only, those three skip.
# COMPAT_BROKER=kafka runs against one Apache Kafka 4.4 broker instead
# (lib/broker.sh start_secure_broker), to prove the configuration.
. "$here/../lib/broker.sh"
secure=${KGO_SECURE:-1}
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ports=() peers=() pids=() initial="" tlsseeds="" saslseeds=""
if [ "${COMPAT_BROKER:-strait}" = kafka ]; then
  [ "$brokers" -eq 1 ] || { echo "COMPAT_BROKER=kafka runs one broker" >&2; exit 1; }
  [ "$secure" = 1 ] || { echo "COMPAT_BROKER=kafka needs KGO_SECURE=1" >&2; exit 1; }
  start_secure_broker "$work/kafka"
  ports=("${BROKER##*:}") tlsseeds=$BROKER_SSL saslseeds=$BROKER_SASL_PLAINTEXT
  results="$work/RESULTS-kafka.md"
else
  for i in $(seq 1 "$brokers"); do
    ports+=("$(freeport)"); peers+=("$(freeport)")
    initial="${initial:+$initial,}b$i=http://127.0.0.1:${peers[$((i-1))]}"
  done
  trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
  [ "$secure" = 1 ] && { make_certs "$work/certs" || exit 1; }
  for i in $(seq 1 "$brokers"); do
    args=(--override node.id=$i --override log.dirs="$work/logs$i")
    if [ "$secure" = 1 ]; then
      sslport=$(freeport) saslport=$(freeport)
      secure_properties "$work/broker$i.properties" "$work/certs" "${ports[$((i-1))]}" "$(freeport)" "$sslport" "$saslport"
      args=("$work/broker$i.properties" "${args[@]}")
      tlsseeds="${tlsseeds:+$tlsseeds,}127.0.0.1:$sslport" saslseeds="${saslseeds:+$saslseeds,}127.0.0.1:$saslport"
    else
      args+=(--override listeners=PLAINTEXT://127.0.0.1:${ports[$((i-1))]})
    fi
    if [ "$brokers" -gt 1 ]; then
      args+=(--override etcd.name=b$i --override etcd.initial.cluster="$initial"
             --override etcd.listen.peer.urls=http://127.0.0.1:${peers[$((i-1))]})
    fi
    "$bin" "${args[@]}" >"$work/broker$i.log" 2>&1 &
    pids+=($!)
  done
  for i in $(seq 1 "$brokers"); do
    for _ in $(seq 1 300); do
      grep -q "strait ready" "$work/broker$i.log" && break
      kill -0 ${pids[$((i-1))]} 2>/dev/null || { cat "$work/broker$i.log"; echo "broker $i exited"; exit 1; }
      sleep 0.1
    done
    grep -q "strait ready" "$work/broker$i.log" || { echo "broker $i not ready"; exit 1; }
  done
fi
seeds=$(for p in "${ports[@]}"; do printf '127.0.0.1:%s,' "$p"; done); seeds=${seeds%,}
port=${ports[0]}
secure_env=()
if [ "$secure" = 1 ]; then
  certs=${CERTS:-$work/certs}
  BROKER=127.0.0.1:$port scram_user alice alice-secret >"$work/scram-user.log" 2>&1 || { cat "$work/scram-user.log"; exit 1; }
  secure_env=(KGO_TEST_TLS="ca:$certs/ca.pem,cert:$certs/client.pem,key:$certs/client.key"
    KGO_TEST_SCRAM=alice:alice-secret:512 KGO_TEST_SCRAM_SEEDS="$saslseeds" KGO_TEST_OAUTH_SEEDS="$saslseeds")
  seeds=$tlsseeds
fi

version=$(cd "$root" && go list -m -f '{{.Version}}' github.com/twmb/franz-go)
echo "running franz-go $version kgo suite against $seeds (replication factor $brokers${secure_env:+, mTLS; SCRAM and OAUTHBEARER on $saslseeds})"
# Tests that hang against Strait today (they would stall the whole run until
# the timeout) are not run; skip.txt says why, and RESULTS.md lists them.
# Over TLS, skip-tls.txt's tests are not run either.
skipfile="$here/skip.txt"
if [ "$secure" = 1 ]; then
  skipfile="$work/skip.txt"; cat "$here/skip.txt" "$here/skip-tls.txt" >"$skipfile"
fi
skip=$(sed 's/#.*//' "$skipfile" | tr -s ' \n' '\n' | grep -v '^$' | paste -sd'|' || true)
set +e
(cd "$root" && env "${secure_env[@]}" KGO_SEEDS=$seeds KGO_TEST_RF=$brokers KGO_TEST_RECORDS=${KGO_TEST_RECORDS:-50000} KGO_LOG_LEVEL=none \
  go test -json -count=1 -timeout ${KGO_TIMEOUT:-15m} ${KGO_RUN:+-run "$KGO_RUN"} ${skip:+-skip "^($skip)\$"} github.com/twmb/franz-go/pkg/kgo) >"$work/test.json" 2>"$work/test.stderr"
# A failed test listed in flaky.txt (its own logic races on a cluster) is run
# again by itself, twice at most; summarize.py reports every rerun. Which
# tests failed or passed is read from the JSON events by summarize.py.
flaky=$(sed 's/#.*//' "$here/flaky.txt" | tr -s ' \n' '\n' | grep -v '^$' || true)
failed=$(python3 "$here/summarize.py" --failed "$work/test.json")
: >"$work/rerun.json"
for t in $flaky; do
  grep -qxF "$t" <<<"$failed" || continue
  for attempt in 1 2; do
    echo "rerunning $t (listed in flaky.txt), attempt $attempt"
    (cd "$root" && env "${secure_env[@]}" KGO_SEEDS=$seeds KGO_TEST_RF=$brokers KGO_LOG_LEVEL=none \
      go test -json -count=1 -timeout 5m -run "^$t\$" github.com/twmb/franz-go/pkg/kgo) >"$work/rerun-$t.json" 2>>"$work/test.stderr"
    cat "$work/rerun-$t.json" >>"$work/rerun.json"
    grep -qxF "$t" <<<"$(python3 "$here/summarize.py" --passed "$work/rerun-$t.json")" && break
  done
done
set -e

set +e
python3 "$here/summarize.py" "$work/test.json" "$here/expected-failures.txt" "$results" "$version" "$skipfile" "$work/rerun.json" "$here/flaky.txt"
status=$?
if [ "$secure" = 1 ]; then
  printf '\nSecured run (KGO_SECURE=1): the suite over the SSL listeners with a client certificate (KGO_TEST_TLS, mTLS); TestSCRAMAuth (SCRAM-SHA-512, the user made first with kafka-configs) and TestSCRAMAuthBadCredentials (SCRAM-SHA-256, an unknown user) over SASL_PLAINTEXT (KGO_TEST_SCRAM_SEEDS); TestOAuthAuth over SASL_PLAINTEXT with unsecured OAUTHBEARER (KGO_TEST_OAUTH_SEEDS).\n' >>"$results"
fi
exit $status
