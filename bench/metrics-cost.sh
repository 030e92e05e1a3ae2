#!/usr/bin/env bash
# make bench-metrics-cost: the cost of Strait's metrics on the produce and
# fetch path (issue 21). Runs `strait-bench compare -targets strait` PAIRS
# times without and PAIRS times with -scrape-metrics (/metrics read every
# second), interleaved as ABBA... so that a drift of the machine's load
# falls on both modes, then `strait-bench metrics-cost` tables both modes'
# medians of throughput and of the broker's CPU seconds per GB, with a
# bootstrap interval of their ratio. On a shared machine CPU per GB is the
# figure to read: throughput spreads with whatever else runs.
#
# Then (PROFILE=0 skips it) a CPU profile of the broker under one scraped
# produce and consume run of each scenario (bench/strait-pprof: the broker in-process under
# runtime/pprof, its HTTP listener on) and the share of its samples whose
# stack passes through the metrics code: the Prometheus client library,
# package metrics, and broker/metrics*.go (the request observer, the
# scrape-time collector and the lag lookup).
#
#   PAIRS=n       runs of each mode (default 4; 0: the profile only)
#   ROUNDS=n      rounds per run (default 3): PAIRS*ROUNDS samples per mode
#   SCENARIOS=a,b scenario files (default 01-baseline and 02-small-records)
#   PROFILE_SECONDS=n  produce phase of the profiled run (default 30), cut
#                 at PROFILE_BYTES (default 4e9) of values written
#
# Writes bench/results/metrics-cost.md (the table, the machine's load before
# and after, the profile's share). About 1 minute per pair on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
pairs="${PAIRS:-4}"
rounds="${ROUNDS:-3}"
IFS=, read -ra scen <<<"${SCENARIOS:-bench/scenarios/01-baseline.json,bench/scenarios/02-small-records.json}"
"$GO" build -o bin/strait ./cmd/strait
"$GO" build -o bin/strait-bench ./cmd/strait-bench
"$GO" build -o bin/strait-pprof ./bench/strait-pprof
mkdir -p bench/work bench/results
work="$(mktemp -d "$PWD/bench/work/metrics-cost-XXXXXX")"
out=bench/results/metrics-cost.md
sargs=()
for s in "${scen[@]}"; do sargs+=(-scenarios "$s"); done

# The brokers' data is deleted after each run and at exit; each run is
# bounded (a compare run writes 2 s per round and scenario, a profiled run
# at most PROFILE_BYTES), and none starts with less than 10 GB free.
pid=""
cleanup() {
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  rm -rf "$work/data" "$work"/pprof-*/data
}
trap cleanup EXIT
need_space() {
  local avail
  avail="$(df -Pk "$work" | awk 'NR == 2 { print $4 }')"
  if [ "$avail" -lt $((10 * 1024 * 1024)) ]; then
    echo "bench-metrics-cost: under 10 GB free on $(df -P "$work" | awk 'NR == 2 { print $6 }'); stopping" >&2
    exit 1
  fi
}

conditions() {
  echo "- $1: $(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $(ps -e --no-headers | wc -l) processes"
}
{
  echo "# The cost of the metrics"
  echo
  echo "\`make bench-metrics-cost\` (PAIRS=$pairs ROUNDS=$rounds), scenarios: ${scen[*]}, $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo
  conditions "before"
} >"$out.head"

run() { # $1 index, $2 off|on
  local flags=(-targets strait -rounds "$rounds" -skip startup,connections,headtail,scaling "${sargs[@]}" -out "$work/$1-$2" -work "$work/data")
  [ "$2" = on ] && flags+=(-scrape-metrics)
  echo "== run $1, metrics scraped: $2" >&2
  need_space
  bin/strait-bench compare "${flags[@]}" 2>>"$work/compare.log" >/dev/null
  rm -rf "$work/data"
}
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) = 1 ]; then run "$i" off; run "$i" on; else run "$i" on; run "$i" off; fi
done
conditions "after the campaign" >>"$out.head"

profile_one() { # $1 index, $2 scenario file: appends to $work/profile.md
  local sc="$2" pdir="$work/pprof-$1"; mkdir -p "$pdir"
  need_space
  # -records bounds what the run writes (PROFILE_BYTES, default 4 GB).
  local records
  records="$(python3 -c 'import json, sys; print(int(float(sys.argv[2]) / json.load(open(sys.argv[1])).get("record_size", 1024)))' "$sc" "${PROFILE_BYTES:-4e9}")"
  bin/strait-pprof -addr 127.0.0.1:0 -dir "$pdir/data" -set strait.http.listener=127.0.0.1:0 \
    -cpuprofile "$pdir/cpu.pprof" -memprofile "$pdir/mem.pprof" >"$pdir/out" 2>"$pdir/err" &
  pid=$!
  for _ in $(seq 1 200); do grep -q '^ready ' "$pdir/out" && break; sleep 0.05; done
  addr="$(sed -n 's/^ready //p' "$pdir/out")"
  http="$(sed -n 's/^http //p' "$pdir/out")"
  [ -n "$addr" ] && [ -n "$http" ] || { cat "$pdir/err" >&2; exit 1; }
  bin/strait-bench run -brokers "$addr" -scenarios "$sc" -rate -1 -duration 3s >/dev/null 2>&1 # warm-up
  ( n=0; while kill -0 $pid 2>/dev/null; do curl -sf -o /dev/null "http://$http/metrics" && n=$((n + 1)) && echo $n >"$pdir/scrapes"; sleep 1; done ) &
  scraper=$!
  kill -USR1 "$pid"
  bin/strait-bench run -brokers "$addr" -scenarios "$sc" -rate -1 -duration "${seconds}s" -records "$records" >"$pdir/run.txt" 2>&1
  kill -USR2 "$pid"
  sleep 1
  kill "$scraper" 2>/dev/null || true
  kill "$pid"; wait "$pid" 2>/dev/null || true
  pid=""
  rm -rf "$pdir/data"
  focus='github\.com/prometheus/|strait/strait/metrics\.|strait/broker\.stateCollector|strait/broker\.\(\*Server\)\.(observeRequest|groupOffsets|partitionEnds|remoteEnds|askLeaders|listLatest|localPartitions)'
  # "Showing nodes accounting for X, P% of T total": with every node shown,
  # X is the focused samples' total and T the whole profile's.
  shown() { "$GO" tool pprof -top -nodecount=1000000 "$@" 2>/dev/null | sed -n 's/^Showing nodes accounting for \([^,]*\), [^ ]* of \(.*\) total.*/\1 \2/p'; }
  read -r cpu_metrics cpu_total <<<"$(shown -focus="$focus" bin/strait-pprof "$pdir/cpu.pprof")"
  # Serving /metrics: the handler, and the goroutines Gather starts to collect.
  read -r cpu_scrape _ <<<"$(shown -focus='promhttp|prometheus\.\(\*Registry\)\.Gather|broker\.stateCollector' bin/strait-pprof "$pdir/cpu.pprof")"
  read -r cpu_gc _ <<<"$(shown -focus='runtime\.gcBgMarkWorker|runtime\.gcAssistAlloc|runtime\.bgsweep' bin/strait-pprof "$pdir/cpu.pprof")"
  read -r alloc_metrics alloc_total <<<"$(shown -sample_index=alloc_space -focus="$focus" bin/strait-pprof "$pdir/mem.pprof")"
  scrapes="$(cat "$pdir/scrapes" 2>/dev/null || echo 0)"
  python3 - "$cpu_metrics" "$cpu_total" "$cpu_scrape" "$cpu_gc" "$alloc_metrics" "$alloc_total" "$scrapes" "$sc" "$seconds" <<'PY' >>"$work/profile.md"
import math, re, sys
def dur(v):  # pprof's durations: 1.23s, 450ms, 0
    m = re.fullmatch(r'([0-9.]+)(ms|s|us|min|h)?', v or '0')
    if not m: return 0.0
    return float(m.group(1)) * {'ms': 1e-3, 's': 1, 'us': 1e-6, 'min': 60, 'h': 3600, None: 1}[m.group(2)]
def size(v):  # 1.20GB, 300MB, 12kB, 0
    m = re.fullmatch(r'([0-9.]+)([kMGT]?B)?', v or '0')
    if not m: return 0.0
    return float(m.group(1)) * {'B': 1, 'kB': 1e3, 'MB': 1e6, 'GB': 1e9, 'TB': 1e12, None: 1}[m.group(2)]
metrics, total, scrape, gc = (dur(x) for x in sys.argv[1:5])
am, at = size(sys.argv[5]), size(sys.argv[6])
scrapes, scen, secs = int(sys.argv[7]), sys.argv[8], sys.argv[9]
n, k = round(total / 0.01), round(metrics / 0.01)  # samples at 100 Hz
p = k / n if n else 0.0
z = 1.96  # Wilson interval of a binomial share
c = (p + z*z/(2*n)) / (1 + z*z/n) if n else 0
h = z * math.sqrt(p*(1-p)/n + z*z/(4*n*n)) / (1 + z*z/n) if n else 0
ks = round(scrape / 0.01)
print(f"CPU profile of the broker under one scraped produce and consume run of {scen} (produce for up to {secs} s or the byte cap, then consume; "
      f"/metrics read every second, {scrapes} scrapes): {n} samples ({total:.2f} CPU s), {k} of them with the metrics code on the stack: "
      f"**{100*p:.2f}%** (95% interval {100*max(c-h,0):.2f}-{100*(c+h):.2f}%): {ks} serving /metrics (the handler and Gather's collectors"
      + (f", {1000*scrape/scrapes:.1f} ms of CPU per scrape" if scrapes else "") + f"), {k-ks} on the request path ({100*(k-ks)/n if n else 0:.2f}%). "
      f"Not in that share: the garbage collector's work on what the metrics code allocates; it allocated {100*am/at if at else 0:.2f}% "
      f"of the bytes allocated (whole run) and the collector took {100*gc/total if total else 0:.1f}% of the CPU, so about "
      f"{100*(am/at if at else 0)*(gc/total if total else 0):.2f}% more.")
PY
  "$GO" tool pprof -top -cum -nodecount=25 -focus="$focus" bin/strait-pprof "$pdir/cpu.pprof" >"$pdir/metrics-top.txt" 2>/dev/null || true
  { echo; echo '```'; sed -n '/^Showing/,$p' "$pdir/metrics-top.txt" | head -20; echo '```'; echo; } >>"$work/profile.md"
}

if [ "${PROFILE:-1}" != 0 ]; then
  seconds="${PROFILE_SECONDS:-30}"
  for i in "${!scen[@]}"; do profile_one "$i" "${scen[$i]}"; done
  conditions "after the profiles" >>"$out.head"
fi

{
  cat "$out.head"
  echo
  [ "$pairs" -gt 0 ] && bin/strait-bench metrics-cost "$work"/*-off "$work"/*-on
  if [ -s "$work/profile.md" ]; then
    echo
    cat "$work/profile.md"
  fi
} >"$out"
rm -f "$out.head"
cat "$out"
echo "runs and profile: $work" >&2
