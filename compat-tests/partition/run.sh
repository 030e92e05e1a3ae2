#!/usr/bin/env bash
# Network partitions: three bin/strait processes, one per network namespace
# (root needed), under a seeded schedule of faults; writes work/results.md,
# .json (quoted by RELIABILITY.md) and .tsv; the brokers' logs stay in
# work/<test>/b<n>/broker.log. PARTITION_STEPS (default 9: each fault once,
# about 3 minutes), PARTITION_SEED (default: the time), PARTITION_RUN (a -run
# pattern). Fails, not skips, when not root or without ip/tc.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${PARTITION_WORK:-$here/work}"
rm -rf "$work"; mkdir -p "$work"
(cd "$root" && go build -o bin/strait ./cmd/strait)
cd "$root"
env STRAIT_PARTITION_TEST=1 STRAIT_BIN="$root/bin/strait" STRAIT_PARTITION_WORK="$work" \
  STRAIT_PARTITION_STEPS="${PARTITION_STEPS:-9}" STRAIT_PARTITION_SEED="${PARTITION_SEED:-}" \
  go test -count=1 -v -timeout "${PARTITION_TIMEOUT:-10m}" ${PARTITION_RUN:+-run "$PARTITION_RUN"} ./compat-tests/partition/ 2>&1 | tee "$work/test.log"
status=${PIPESTATUS[0]}
[ -f "$work/results.md" ] && cat "$work/results.md"
exit $status
