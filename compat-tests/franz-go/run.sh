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

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" --override listeners=PLAINTEXT://127.0.0.1:$port --override log.dirs="$work/logs" \
  >"$work/broker.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  grep -q "strait ready" "$work/broker.log" && break
  kill -0 $pid 2>/dev/null || { cat "$work/broker.log"; echo "broker exited"; exit 1; }
  sleep 0.1
done

version=$(cd "$root" && go list -m -f '{{.Version}}' github.com/twmb/franz-go)
echo "running franz-go $version kgo suite against 127.0.0.1:$port"
# Tests that hang against Strait today (they would stall the whole run until
# the timeout) are not run; skip.txt says why, and RESULTS.md lists them.
skip=$(sed 's/#.*//' "$here/skip.txt" | tr -s ' \n' '\n' | grep -v '^$' | paste -sd'|' || true)
set +e
(cd "$root" && KGO_SEEDS=127.0.0.1:$port KGO_TEST_RF=1 KGO_TEST_RECORDS=${KGO_TEST_RECORDS:-50000} KGO_LOG_LEVEL=none \
  go test -json -count=1 -timeout ${KGO_TIMEOUT:-15m} ${skip:+-skip "^($skip)\$"} github.com/twmb/franz-go/pkg/kgo) >"$work/test.json" 2>"$work/test.stderr"
set -e

python3 "$here/summarize.py" "$work/test.json" "$here/expected-failures.txt" "$here/RESULTS.md" "$version" "$here/skip.txt"
