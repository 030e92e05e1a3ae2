#!/usr/bin/env bash
# Runs every compat suite (each starts the built broker on a free port with a
# temp dir and stops it), then writes REPORT.md from their results; franz-go
# and franz-go-rf3 run over mTLS with SCRAM and OAUTHBEARER (KGO_SECURE=0:
# plaintext). Exits non-zero if any suite failed; the report is written
# either way.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# A NAME-secure suite is NAME/secure.sh (TLS and SASL against the secured
# broker; after NAME, whose run.sh clears NAME/work) unless NAME-secure/run.sh
# exists.
suites=(kcat kcat-secure java java-secure streams connect js js-secure python python-secure franz-go franz-go-rf3
        cluster cluster-secure etcd prometheus console partition)
[ $# -gt 0 ] && suites=("$@")
failed=() tails=()
for s in "${suites[@]}"; do
  echo "=== compat suite: $s"
  start=$(date +%s)
  script="$here/$s/run.sh"
  [ -x "$script" ] || script="$here/${s%-secure}/secure.sh"
  # Each suite's output is also kept, so that the end of this run can repeat
  # the last lines of those that failed (a CI log is often read from its end).
  log=$(mktemp)
  if "$script" 2>&1 | tee "$log"; [ "${PIPESTATUS[0]}" -eq 0 ]; then echo "=== $s: ok ($(( $(date +%s) - start )) s)"
  else echo "=== $s: FAILED ($(( $(date +%s) - start )) s)"; failed+=("$s"); tail -n 15 "$log" >"$log.tail"; tails+=("$s:$log.tail"); fi
  rm -f "$log"
done
python3 "$here/report.py" "$here/REPORT.md"
report=$?
for t in "${tails[@]}"; do
  echo "--- the last lines of failed suite ${t%%:*}:"; cat "${t#*:}"; rm -f "${t#*:}"
done
if [ ${#failed[@]} -gt 0 ]; then echo "failed compat suites: ${failed[*]}"; exit 1; fi
exit $report
