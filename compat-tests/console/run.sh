#!/usr/bin/env bash
# The web console in a headless Chromium (console_test.go): a broker with a
# topic and a consumer group made by the test, each console page rendered
# (scripts run) and checked for their names, partition count and lag;
# screenshots in work/*.png. Writes work/results.tsv for
# compat-tests/report.py. About 30 seconds once Chromium is installed.
#
# Chromium: $CHROMIUM if set, else chromium on the PATH, else Debian's
# chromium package installed with apt-get (as root; its libraries cannot be
# unpacked beside it as etcd's and Prometheus's binaries are).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$here/work"
rm -rf "$work"; mkdir -p "$work"

find_chromium() {
  if [ -n "${CHROMIUM:-}" ]; then echo "$CHROMIUM"; return 0; fi
  if command -v chromium >/dev/null; then command -v chromium; return 0; fi
  [ "$(id -u)" -eq 0 ] || { echo "chromium missing and not root: install Debian's chromium package" >&2; return 1; }
  echo "installing chromium from Debian (apt-get install chromium)" >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >"$work/apt.log" 2>&1; then
    apt-get update -qq >>"$work/apt.log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >>"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log" >&2; return 1; }
  fi
  command -v chromium
}

chromium="$(find_chromium)"
if [ -z "$chromium" ]; then
  printf 'Web console (Chromium)\tChromium from Debian is installed\tfail\n' >>"$work/results.tsv"
  exit 1
fi
echo "chromium: $chromium"
cd "$root"
STRAIT_CHROMIUM="$chromium" STRAIT_CONSOLE_WORK="$work" STRAIT_CONSOLE_RESULTS="$work/results.tsv" \
  go test -count=1 -v -timeout 5m ./compat-tests/console/ 2>&1 | grep -v '^time=\|log.go:[0-9]*: level=' | tee "$work/test.log"
status=${PIPESTATUS[0]}
[ -s "$work/results.tsv" ] || { printf 'Web console (Chromium)\tthe test ran\tfail\n' >>"$work/results.tsv"; status=1; }
exit $status
