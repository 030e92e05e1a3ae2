#!/usr/bin/env bash
# A real Prometheus scrapes three in-process brokers (prometheus_test.go):
# bytes in, consumer lag and under-replicated partitions queried with PromQL
# against what the test produced, committed and stopped. Writes
# work/results.tsv for compat-tests/report.py. About 30 seconds.
#
# The prometheus binary: $PROMETHEUS if set, else prometheus on the PATH,
# else Debian's prometheus package fetched with `apt-get download` and
# unpacked with dpkg -x into compat-tests/prometheus/.deb/ (no root needed,
# nothing installed; as root an `apt-get update` is tried first when the
# download fails).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$here/work"
rm -rf "$work"; mkdir -p "$work"

find_prometheus() {
  if [ -n "${PROMETHEUS:-}" ]; then echo "$PROMETHEUS"; return 0; fi
  if command -v prometheus >/dev/null; then command -v prometheus; return 0; fi
  local deb="$here/.deb"
  if [ ! -x "$deb/usr/bin/prometheus" ]; then
    mkdir -p "$deb"
    echo "fetching prometheus from Debian (apt-get download, dpkg -x into $deb)" >&2
    if ! (cd "$deb" && apt-get download prometheus >&2); then
      [ "$(id -u)" -eq 0 ] || { echo "apt-get download prometheus failed" >&2; return 1; }
      apt-get update -qq >&2 && (cd "$deb" && apt-get download prometheus >&2) || return 1
    fi
    dpkg -x "$(ls -t "$deb"/prometheus_*.deb | head -1)" "$deb" || return 1
  fi
  echo "$deb/usr/bin/prometheus"
}

prom="$(find_prometheus)"
if [ -z "$prom" ] || ! "$prom" --version >"$work/prometheus-version.txt" 2>&1; then
  printf 'Prometheus\tthe prometheus server from Debian starts\tfail\n' >>"$work/results.tsv"
  echo "no prometheus binary" >&2
  exit 1
fi
echo "prometheus: $prom ($(head -1 "$work/prometheus-version.txt"))"
cd "$root"
STRAIT_PROMETHEUS="$prom" STRAIT_PROMETHEUS_RESULTS="$work/results.tsv" \
  go test -count=1 -v -timeout 5m ./compat-tests/prometheus/ 2>&1 | grep -v '^time=\|log.go:[0-9]*: level=' | tee "$work/test.log"
status=${PIPESTATUS[0]}
[ -s "$work/results.tsv" ] || { printf 'Prometheus\tthe test ran\tfail\n' >>"$work/results.tsv"; status=1; }
exit $status
