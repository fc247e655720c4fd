#!/usr/bin/env bash
# The heap profiler's overhead on an allocation-heavy program (bench/heap_sampled_workload.cpp):
# native, the sampled mode and the full mode, side by side, rounds interleaved so that a noisy
# machine affects each alike. Prints the best and median CPU time (user + system: less disturbed
# than wall time when other jobs share the machine), the median wall time and the peak RSS.
#   bench/heap_sampled.sh [BUILD_DIR] [REPEATS]
# BUILD_DIR holds src/libhotscope-preload.so (default build-sampled); REPEATS defaults to 7.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$repo/build-sampled}" && pwd)"
repeats="${2:-7}"
preload="$build/src/libhotscope-preload.so"
[[ -f "$preload" ]] || { echo "no $preload: build the hotscope_preload target first" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
g++ -std=c++20 -O2 -g -o "$work/workload" "$repo/bench/heap_sampled_workload.cpp"

# Allocations the workload makes, counted by the full mode.
HOTSCOPE_OUT="$work/count" HOTSCOPE_HEAP_SUMMARY=1 LD_PRELOAD="$preload" "$work/workload" \
  >/dev/null 2>"$work/count.err"
grep -o 'Total: .*' "$work/count.err" | sed 's/^/workload: /'

configs=(native sampled full)
run() { # config -> "cpu_seconds wall_seconds peak_kib"
  local env=()
  case "$1" in
    sampled) env=(HOTSCOPE_HEAP_MODE=sampled LD_PRELOAD="$preload") ;;
    full) env=(LD_PRELOAD="$preload") ;;
  esac
  /usr/bin/time -f '%U %S %e %M' -o "$work/time" env HOTSCOPE_OUT="$work/$1" HOTSCOPE_HEAP_SUMMARY=0 \
    "${env[@]}" "$work/workload" >/dev/null
  awk '{printf "%.2f %s %s\n", $1 + $2, $3, $4}' "$work/time"
}
for ((round = 0; round < repeats; ++round)); do
  for config in "${configs[@]}"; do
    run "$config" >>"$work/$config.times"
  done
done

stat() { # file column -> "best median"
  sort -n -k"$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {printf "%s %s\n", v[1], v[int((NR+1)/2)]}'
}
read -r _ native_median < <(stat "$work/native.times" 1)
printf '%-8s %9s %11s %10s %12s %10s\n' run "CPU best" "CPU median" "× native" "wall median" "peak RSS"
for config in "${configs[@]}"; do
  read -r best median < <(stat "$work/$config.times" 1)
  read -r _ wall < <(stat "$work/$config.times" 2)
  read -r _ peak < <(stat "$work/$config.times" 3)
  printf '%-8s %8ss %10ss %10s %11ss %6s MiB\n' "$config" "$best" "$median" \
    "$(awk -v a="$median" -v b="$native_median" 'BEGIN {printf "%.2f", a / b}')" "$wall" \
    "$(awk -v k="$peak" 'BEGIN {printf "%.1f", k / 1024}')"
done
echo "($repeats interleaved runs each; × native compares CPU medians; wall and RSS are medians)"
