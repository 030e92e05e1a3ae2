#!/usr/bin/env bash
# End-to-end latency of Strait at a fixed rate, for before/after comparisons
# of tail-latency work (BENCHMARKS.md, "Tail latency"). Runs a broker binary
# built from bench/strait-pprof (STRAIT_PPROF, default: built from this
# tree) on a fresh data directory, drives SCENARIO (default
# bench/scenarios/05-acks-1.json) with strait-bench's latency phase at RATE
# records/s (default 40000) for PHASE_SECONDS (default 10), prints p50/p99/p99.9/max
# of the end-to-end and ack latencies, and deletes the data. With TRACE=file,
# the broker also writes a runtime/trace execution trace of the phase and
# strait-bench its per-record latency trace to file.lat.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
scenario="${SCENARIO:-bench/scenarios/05-acks-1.json}"
rate="${RATE:-40000}"
seconds="${PHASE_SECONDS:-10}"
bin="${STRAIT_PPROF:-}"
if [ -z "$bin" ]; then
  "$GO" build -o bin/strait-pprof ./bench/strait-pprof
  bin=bin/strait-pprof
fi
[ -x bin/strait-bench ] || "$GO" build -o bin/strait-bench ./cmd/strait-bench
mkdir -p bench/work
work="$(mktemp -d "$PWD/bench/work/latency-XXXXXX")"
traceargs=()
latargs=()
if [ -n "${TRACE:-}" ]; then
  traceargs=(-trace "$TRACE")
  latargs=(-latency-trace "$TRACE.lat")
fi
"$bin" -addr 127.0.0.1:0 -dir "$work/data" -cpuprofile "$work/cpu.pprof" -memprofile "$work/mem.pprof" \
  "${traceargs[@]}" >"$work/out" 2>"$work/err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 200); do grep -q '^ready ' "$work/out" && break; sleep 0.05; done
addr="$(sed -n 's/^ready //p' "$work/out")"
[ -n "$addr" ] || { cat "$work/err" >&2; exit 1; }
kill -USR1 "$pid"
bin/strait-bench run -brokers "$addr" -scenarios "$scenario" -consume=false -rate "$rate" \
  -duration 1s -latency-duration "${seconds}s" "${latargs[@]}" -json "$work/run.json" >/dev/null 2>"$work/bench.err" ||
  { cat "$work/bench.err" >&2; exit 1; }
kill -USR2 "$pid"
sleep 0.5
python3 - "$work/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))[0]["latency"]
print("rate %.0f achieved %.0f records %d: e2e p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms; ack p50 %.2f p99 %.2f ms" % (
    r["rate"], r["achieved"], r["records"], r["p50_ms"], r["p99_ms"], r["p999_ms"], r["max_ms"], r["ack_p50_ms"], r["ack_p99_ms"]))
PY
