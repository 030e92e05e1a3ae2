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
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ports=() peers=() pids=() initial=""
for i in $(seq 1 "$brokers"); do
  ports+=("$(freeport)"); peers+=("$(freeport)")
  initial="${initial:+$initial,}b$i=http://127.0.0.1:${peers[$((i-1))]}"
done
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
for i in $(seq 1 "$brokers"); do
  args=(--override node.id=$i --override listeners=PLAINTEXT://127.0.0.1:${ports[$((i-1))]}
        --override log.dirs="$work/logs$i")
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
seeds=$(for p in "${ports[@]}"; do printf '127.0.0.1:%s,' "$p"; done); seeds=${seeds%,}
port=${ports[0]}

version=$(cd "$root" && go list -m -f '{{.Version}}' github.com/twmb/franz-go)
echo "running franz-go $version kgo suite against $seeds (replication factor $brokers)"
# Tests that hang against Strait today (they would stall the whole run until
# the timeout) are not run; skip.txt says why, and RESULTS.md lists them.
skip=$(sed 's/#.*//' "$here/skip.txt" | tr -s ' \n' '\n' | grep -v '^$' | paste -sd'|' || true)
set +e
(cd "$root" && KGO_SEEDS=$seeds KGO_TEST_RF=$brokers KGO_TEST_RECORDS=${KGO_TEST_RECORDS:-50000} KGO_LOG_LEVEL=none \
  go test -json -count=1 -timeout ${KGO_TIMEOUT:-15m} ${KGO_RUN:+-run "$KGO_RUN"} ${skip:+-skip "^($skip)\$"} github.com/twmb/franz-go/pkg/kgo) >"$work/test.json" 2>"$work/test.stderr"
set -e

python3 "$here/summarize.py" "$work/test.json" "$here/expected-failures.txt" "$results" "$version" "$here/skip.txt"
