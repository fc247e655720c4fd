#!/usr/bin/env bash
# What keeping the slowest calls costs the collector (docs/performance.md, "The slowest calls"):
# first the Aggregator alone on hand-made batches (hotscope-aggregator-bench: CPU time per
# batch of about 100,000 records, K = 0 and 4); then the same runs with HOTSCOPE_SLOWEST=0 (off)
# and with the default K = 4, alternated: empty scopes at 10 M records/s on one thread
# (hotscope-throughput), then hotscope-demo at its default rate; each run's collector CPU per
# record kept, and the records dropped.
#   bench/slow_calls.sh                  3 runs of each, 10 s each (about 4 minutes)
#   bench/slow_calls.sh --seconds 5 --runs 5
# BUILD=DIR uses another build tree with both programs (default build-bench, configured here).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds=10
runs=3
while (($#)); do
  case "$1" in
  --seconds) seconds="$2"; shift 2 ;;
  --runs) runs="$2"; shift 2 ;;
  *) echo "usage: bench/slow_calls.sh [--seconds N] [--runs R]" >&2; exit 2 ;;
  esac
done

build="${BUILD:-$repo/build-bench}"
if [[ -z "${BUILD:-}" ]]; then
  # shellcheck source=scripts/lib.sh
  source "$repo/scripts/lib.sh"
  install_packages "$repo/scripts/packages.txt"
  install_packages <(printf '%s\n' jq)
  configure_bench_build "$build" -DHOTSCOPE_BUILD_EXAMPLES=ON
  cmake --build "$build" --target hotscope-aggregator-bench hotscope-throughput hotscope-demo \
    >/dev/null
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export HOTSCOPE_AGENT=0

# The CPU time (ns) of process $1's collector thread, "" once it is gone.
collector_cpu() {
  local task
  for task in /proc/"$1"/task/*; do
    if [[ "$(cat "$task/comm" 2>/dev/null)" == hotscope-drain ]]; then
      awk '{ print $1 }' "$task/schedstat" 2>/dev/null
      return 0
    fi
  done
  return 0 # not started yet, or gone: not a failure under `set -e`
}

# demo_case K RUN: the demo for $seconds s; its collector's CPU read every 50 ms until it exits (the
# last reading misses only the drain at exit), its records from its stats.json.
demo_case() {
  local out="$work/demo-$1-$2" cpu="" now
  HOTSCOPE_SLOWEST="$1" HOTSCOPE_OUT="$out" "$build/examples/hotscope-demo" \
    --seconds "$seconds" >/dev/null &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    now="$(collector_cpu "$pid")"
    [[ -n "$now" ]] && cpu="$now"
    sleep 0.05
  done
  wait "$pid"
  jq -r --arg k "$1" --argjson cpu "${cpu:-0}" '.records as $r |
    "| demo | \($k) | \($r.written / 1e6 * 100 | round / 100) M | \($r.dropped) | " +
    "\($cpu / 1e6 | round) ms | \($cpu / $r.kept * 10 | round / 10) |"' "$out/stats.json"
}

"$build/bench/hotscope-aggregator-bench" --benchmark_repetitions=7 \
  --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true |
  grep median
echo
echo "| case | HOTSCOPE_SLOWEST | records written | dropped | collector CPU | ns per record |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for ((run = 0; run < runs; ++run)); do
  for k in 0 4; do
    HOTSCOPE_SLOWEST="$k" HOTSCOPE_OUT="$work/throughput" \
      "$build/bench/hotscope-throughput" --threads 1 --rate 10e6 --seconds "$seconds" |
      awk -v k="$k" -F'|' '{ printf "| throughput 1 x 10 M/s | %s |%s|%s|%s|%s|\n", k, $4, $6, $7, $8 }'
  done
done
for ((run = 0; run < runs; ++run)); do
  for k in 0 4; do
    demo_case "$k" "$run"
  done
done
