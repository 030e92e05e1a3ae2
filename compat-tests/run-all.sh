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
failed=()
for s in "${suites[@]}"; do
  echo "=== compat suite: $s"
  start=$(date +%s)
  script="$here/$s/run.sh"
  [ -x "$script" ] || script="$here/${s%-secure}/secure.sh"
  if "$script"; then echo "=== $s: ok ($(( $(date +%s) - start )) s)"
  else echo "=== $s: FAILED ($(( $(date +%s) - start )) s)"; failed+=("$s"); fi
done
python3 "$here/report.py" "$here/REPORT.md"
report=$?
if [ ${#failed[@]} -gt 0 ]; then echo "failed compat suites: ${failed[*]}"; exit 1; fi
exit $report
