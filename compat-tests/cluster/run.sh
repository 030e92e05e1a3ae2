#!/usr/bin/env bash
# Three bin/strait processes as one cluster on loopback (embedded etcd members
# forming one etcd cluster): kill -9 and restart of each broker under an
# acks=all idempotent producer, a SIGSTOPped follower leaving and rejoining
# the ISR, min.insync.replicas refusals. Writes work/results.md, .json (quoted
# by RELIABILITY.md) and work/results.tsv (for compat-tests/report.py); the
# brokers' logs stay in work/<test>/b<n>/broker.log. About 1.5 minutes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# STRAIT_CLUSTER_SECURE=1 (compat-tests/cluster-secure/run.sh): every
# listener, the inter-broker one included, is SASL_SSL; CLUSTER_WORK moves
# the work directory.
work="${CLUSTER_WORK:-$here/work}"
rm -rf "$work"; mkdir -p "$work"
certs_env=()
if [ "${STRAIT_CLUSTER_SECURE:-0}" = 1 ]; then
  . "$here/../lib/certs.sh"
  make_certs "$work/certs" || exit 1
  certs_env=(STRAIT_CLUSTER_SECURE=1 STRAIT_CLUSTER_CERTS="$work/certs")
fi
(cd "$root" && go build -o bin/strait ./cmd/strait)
[ -x "$root/bin/strait" ] || { echo "bin/strait missing" >&2; exit 1; }
cd "$root"
env "${certs_env[@]}" STRAIT_CLUSTER_TEST=1 STRAIT_BIN="$root/bin/strait" STRAIT_CLUSTER_WORK="$work" \
  go test -count=1 -v -timeout ${CLUSTER_TIMEOUT:-6m} ${CLUSTER_RUN:+-run "$CLUSTER_RUN"} ./compat-tests/cluster/ 2>&1 | tee "$work/test.log"
status=${PIPESTATUS[0]}
[ -f "$work/results.md" ] && cat "$work/results.md"
exit $status
