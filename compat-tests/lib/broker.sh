# Shared by the compat suites: start_broker starts bin/strait on a free port
# with its data in $1, waits for its ready line and sets BROKER (host:port)
# and BROKER_PID; the broker is stopped when the calling script exits.
start_broker() {
  local dir="$1"
  local root; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  [ -x "$root/bin/strait" ] || (cd "$root" && go build -o bin/strait ./cmd/strait)
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$dir"
  "$root/bin/strait" --override listeners=PLAINTEXT://127.0.0.1:$port --override log.dirs="$dir/logs" \
    >"$dir/broker.log" 2>&1 &
  BROKER_PID=$!
  BROKER=127.0.0.1:$port
  trap 'kill $BROKER_PID 2>/dev/null || true; wait $BROKER_PID 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do
    grep -q "strait ready" "$dir/broker.log" && return 0
    kill -0 $BROKER_PID 2>/dev/null || { cat "$dir/broker.log"; echo "broker exited" >&2; return 1; }
    sleep 0.1
  done
  echo "broker not ready after 10 s" >&2
  return 1
}
