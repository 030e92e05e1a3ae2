#!/usr/bin/env bash
# CPU and allocation profiles of Strait under a produce load: runs the broker
# in-process under runtime/pprof (bench/strait-pprof; the broker itself has no
# pprof endpoint), warms it up, profiles the produce
# phase (PROFILE_SECONDS, default 10) of SCENARIO (default
# bench/scenarios/01-baseline.json) driven by
# strait-bench from another process, and writes to bench/results:
#   cpu-produce.pprof, mem-produce.pprof   the profiles (go tool pprof bin/strait-pprof FILE)
#   profile-produce.txt                    pprof -top of both, and the broker's
#                                          CPU seconds per GB produced
# PROFILE_RATE=n profiles the fixed-rate latency phase at n records/s instead
# (linger 1 ms: small, frequent requests, with a consumer alongside) into
# cpu-latency.pprof, mem-latency.pprof and profile-latency.txt; the 1 s
# produce phase before it is profiled too, and the CPU-per-GB line is only
# of the produce phase's bytes, so ignore it there.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
scenario="${SCENARIO:-bench/scenarios/01-baseline.json}"
seconds="${PROFILE_SECONDS:-10}"
"$GO" build -o bin/strait-pprof ./bench/strait-pprof
"$GO" build -o bin/strait-bench ./cmd/strait-bench
out=bench/results; mkdir -p "$out" bench/work
name=produce
[ -n "${PROFILE_RATE:-}" ] && name=latency
work="$(mktemp -d "$PWD/bench/work/pprof-XXXXXX")"
bin/strait-pprof -addr 127.0.0.1:0 -dir "$work/data" \
  -cpuprofile "$out/cpu-$name.pprof" -memprofile "$out/mem-$name.pprof" >"$work/out" 2>"$work/err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 200); do grep -q '^ready ' "$work/out" && break; sleep 0.05; done
addr="$(sed -n 's/^ready //p' "$work/out")"
[ -n "$addr" ] || { cat "$work/err" >&2; exit 1; }
ticks() { awk '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$pid/stat"; }

bin/strait-bench run -brokers "$addr" -scenarios "$scenario" -consume=false -rate -1 -duration 3s >/dev/null 2>&1 # warm-up
phase=(-consume=false -rate -1 -duration "${seconds}s")
if [ -n "${PROFILE_RATE:-}" ]; then
  phase=(-consume=false -rate "$PROFILE_RATE" -duration 1s -latency-duration "${seconds}s")
fi
kill -USR1 "$pid"
t0="$(ticks)"
bin/strait-bench run -brokers "$addr" -scenarios "$scenario" "${phase[@]}" -json "$work/run.json" 2>&1 |
  tee "$work/run.txt"
t1="$(ticks)"
kill -USR2 "$pid"
sleep 0.5
bytes="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["produce"]["bytes"])' "$work/run.json")"
{
  echo "# Strait under the $name phase of $scenario"
  cat "$work/run.txt"
  python3 -c 'import sys; t, b = int(sys.argv[1]), int(sys.argv[2]); print("broker CPU: %.2f s for %.2f GB produced: %.2f CPU s per GB" % (t / 100, b / 1e9, t / 100 / (b / 1e9)))' "$((t1 - t0))" "$bytes"
  echo; echo "## CPU, flat"; "$GO" tool pprof -top -nodecount=40 bin/strait-pprof "$out/cpu-$name.pprof" 2>/dev/null
  echo; echo "## CPU, cumulative"; "$GO" tool pprof -top -cum -nodecount=40 bin/strait-pprof "$out/cpu-$name.pprof" 2>/dev/null
  echo; echo "## allocations (bytes), flat"; "$GO" tool pprof -sample_index=alloc_space -top -nodecount=25 bin/strait-pprof "$out/mem-$name.pprof" 2>/dev/null
} >"$out/profile-$name.txt"
echo "wrote $out/profile-$name.txt"
