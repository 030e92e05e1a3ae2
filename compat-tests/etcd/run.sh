#!/usr/bin/env bash
# External etcd (etcd.endpoints): an etcd server from Debian's etcd-server
# package on loopback, two bin/strait processes pointed at it instead of
# embedding one (distinct node.id, listeners and log.dirs), then
# etcd_test.go: both brokers in Metadata and registered in that etcd, an
# RF=2 topic, acks=all writes read back. Writes work/results.tsv (client
# "external etcd", test, pass|fail); the logs stay in work/.
#
# The etcd binary: $ETCD if set, else etcd on the PATH, else the package
# fetched with `apt-get download etcd-server` and unpacked with dpkg -x into
# compat-tests/etcd/.deb/ (no root needed, nothing installed; as root an
# `apt-get update` is tried first when the download fails).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$here/work"
rm -rf "$work"; mkdir -p "$work"
client="external etcd"
touch "$work/results.tsv"
record() { # name, status (0 = pass)
  if [ "$2" -eq 0 ]; then echo "ok   $1"; printf '%s\t%s\tpass\n' "$client" "$1" >>"$work/results.tsv"
  else echo "FAIL $1"; printf '%s\t%s\tfail\n' "$client" "$1" >>"$work/results.tsv"; fi
}
failures() { grep -c $'\tfail$' "$work/results.tsv"; }
# finish counts the rows of results.tsv (this script's and etcd_test.go's).
finish() {
  local pass; pass=$(grep -c $'\tpass$' "$work/results.tsv")
  echo "external etcd: $pass passed, $(failures) failed"
  [ "$(failures)" -eq 0 ] && [ "$pass" -gt 0 ]
  exit $?
}

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_for <seconds> <command...>: retries the command every 0.1 s.
wait_for() {
  local n=$(( $1 * 10 )); shift
  for _ in $(seq 1 "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

find_etcd() {
  if [ -n "${ETCD:-}" ]; then echo "$ETCD"; return 0; fi
  if command -v etcd >/dev/null; then command -v etcd; return 0; fi
  local deb="$here/.deb"
  if [ ! -x "$deb/usr/bin/etcd" ]; then
    mkdir -p "$deb"
    echo "fetching etcd-server from Debian (apt-get download, dpkg -x into $deb)" >&2
    if ! (cd "$deb" && apt-get download etcd-server >&2); then
      [ "$(id -u)" -eq 0 ] || { echo "apt-get download etcd-server failed" >&2; return 1; }
      apt-get update -qq >&2 && (cd "$deb" && apt-get download etcd-server >&2) || return 1
    fi
    dpkg -x "$(ls -t "$deb"/etcd-server_*.deb | head -1)" "$deb" || return 1
  fi
  echo "$deb/usr/bin/etcd"
}

(cd "$root" && go build -o bin/strait ./cmd/strait) || { echo "building bin/strait failed" >&2; exit 1; }
# The test binary is built before anything starts, so compiling does not
# compete with the brokers for the CPU.
(cd "$root" && go test -c -o "$work/etcd.test" ./compat-tests/etcd/) || { echo "building the test failed" >&2; exit 1; }

etcd="$(find_etcd)"
if [ -z "$etcd" ] || ! "$etcd" --version >"$work/etcd-version.txt" 2>&1; then
  record "etcd server from Debian's etcd-server package starts" 1
  finish
fi
echo "etcd: $etcd ($(head -1 "$work/etcd-version.txt"))"

cport=$(free_port); pport=$(free_port)
endpoint="http://127.0.0.1:$cport"
"$etcd" --name strait-compat --data-dir "$work/etcd-data" \
  --listen-client-urls "$endpoint" --advertise-client-urls "$endpoint" \
  --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
  --initial-cluster "strait-compat=http://127.0.0.1:$pport" --initial-cluster-state new \
  >"$work/etcd.log" 2>&1 &
etcd_pid=$!
pids+=("$etcd_pid")
healthy() { curl -fsS "$endpoint/health" | grep -q '"health":"true"'; }
wait_for 20 healthy
record "etcd server from Debian's etcd-server package starts" $?
[ "$(failures)" -eq 0 ] || { tail -20 "$work/etcd.log"; finish; }

# Two brokers on that etcd: no etcd.* key but etcd.endpoints.
declare -A bpid bport
for id in 1 2; do
  bport[$id]=$(free_port)
  mkdir -p "$work/b$id"
  "$root/bin/strait" --override node.id=$id \
    --override listeners=PLAINTEXT://127.0.0.1:${bport[$id]} \
    --override log.dirs="$work/b$id/logs" \
    --override etcd.endpoints="$endpoint" \
    >"$work/b$id/broker.log" 2>&1 &
  bpid[$id]=$!
  pids+=("${bpid[$id]}")
done
for id in 1 2; do
  wait_for 30 grep -q "strait ready" "$work/b$id/broker.log"
  st=$?
  [ $st -eq 0 ] || tail -20 "$work/b$id/broker.log"
  record "broker $id starts with etcd.endpoints" $st
done
[ "$(failures)" -eq 0 ] || finish
for id in 1 2; do
  # The controller's ready line says which etcd it uses, and no embedded
  # member wrote a data directory (etcd.data.dir defaults to <log dir>/etcd).
  grep -q "controller ready.*embedded.etcd=false" "$work/b$id/broker.log" && [ ! -e "$work/b$id/logs/etcd" ]
  record "broker $id uses the external etcd, embeds none" $?
done

STRAIT_ETCD_TEST=1 STRAIT_ETCD_BROKERS="127.0.0.1:${bport[1]},127.0.0.1:${bport[2]}" \
  STRAIT_ETCD_ENDPOINT="$endpoint" STRAIT_ETCD_RESULTS="$work/results.tsv" \
  "$work/etcd.test" -test.v -test.count=1 -test.timeout 5m 2>&1 | tee "$work/test.log"
go_status=${PIPESTATUS[0]}
# etcd_test.go writes a row per check; a failure before its first check
# (a panic, a bad environment) leaves none.
if [ "$go_status" -ne 0 ] && [ "$(failures)" -eq 0 ]; then
  record "etcd_test.go runs" 1
fi

# SIGTERM: each broker shuts down cleanly (leaves etcd, closes its logs)
# and exits 0.
for id in 1 2; do
  kill -TERM "${bpid[$id]}"
  if timeout 30 tail --pid="${bpid[$id]}" -f /dev/null; then
    wait "${bpid[$id]}"
    st=$?
  else
    kill -KILL "${bpid[$id]}"; wait "${bpid[$id]}" 2>/dev/null
    st=1
  fi
  record "broker $id shuts down cleanly on SIGTERM" $st
done
kill -TERM "$etcd_pid"; wait "$etcd_pid" 2>/dev/null
finish
