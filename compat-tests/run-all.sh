#!/usr/bin/env bash
# Runs every compat suite (each starts the built broker on a free port with a
# temp dir and stops it), then writes REPORT.md from their results. Exits
# non-zero if any suite failed; the report is written either way.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
suites=(kcat java streams connect js python franz-go franz-go-rf3 cluster etcd)
[ $# -gt 0 ] && suites=("$@")
failed=()
for s in "${suites[@]}"; do
  echo "=== compat suite: $s"
  start=$(date +%s)
  if "$here/$s/run.sh"; then echo "=== $s: ok ($(( $(date +%s) - start )) s)"
  else echo "=== $s: FAILED ($(( $(date +%s) - start )) s)"; failed+=("$s"); fi
done
python3 "$here/report.py" "$here/REPORT.md"
report=$?
if [ ${#failed[@]} -gt 0 ]; then echo "failed compat suites: ${failed[*]}"; exit 1; fi
exit $report
