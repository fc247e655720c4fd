#!/usr/bin/env bash
# CPU samples (docs/performance.md, "CPU samples"): accuracy against perf, and cost.
#  1. Accuracy: tests/cpu's known-share program (four hot functions: one in a shared library
#     without frame pointers, qsort's comparator, one in a scope, one on a thread that sleeps half
#     its time) runs once under `perf record -e cpu-clock -F HZ` while hotscope samples it at the
#     same rate: the same execution, measured by both. Prints each function's share of the
#     samples (innermost frame) by perf and by hotscope's cpu.folded, and the difference.
#  2. Cost: hotscope-demo at a fixed offered rate, with HOTSCOPE_CPU_HZ=0, 99 and 999, rounds
#     interleaved: CPU seconds (user + system) per 1,000 requests served, and the ratio to 0 Hz.
#   bench/cpu.sh [--build DIR] [--rounds N] [--hz N] [--seconds N]
# --build: a CMake build dir of this tree (default build/release, configured by the release
# preset); --rounds: cost rounds (default 5); --hz: the accuracy run's rate (default 499);
# --seconds: each cost run (default 5).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build/release"
rounds=5
hz=499
seconds=5
while (($#)); do
  case "$1" in
  --build) build="$2"; shift 2 ;;
  --rounds) rounds="$2"; shift 2 ;;
  --hz) hz="$2"; shift 2 ;;
  --seconds) seconds="$2"; shift 2 ;;
  *) echo "bench/cpu.sh: unknown argument '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
install_packages "$repo/scripts/packages.txt"
install_packages <(printf '%s\n' linux-perf time bc)
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake --preset release -S "$repo" >/dev/null
fi
cmake --build "$build" --target cpu_shares_program hotscope-demo >/dev/null

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== accuracy: the known-share program at $hz Hz, perf and hotscope on the same run =="
perf record -q -e cpu-clock -F "$hz" -o "$work/perf.data" -- \
  env HOTSCOPE_CPU_HZ="$hz" HOTSCOPE_OUT="$work/out" "$build/tests/cpu/cpu_shares_program" 4 \
  >/dev/null
perf report -i "$work/perf.data" --stdio --no-children --sort symbol 2>/dev/null |
  grep -v '^#' >"$work/perf.txt"
python3 - "$work/perf.txt" "$work/out/cpu.folded" <<'PY'
import re, sys
perf = {}
for line in open(sys.argv[1]):
    match = re.match(r"\s*([\d.]+)%\s+\[[.k]\]\s+(\S+)", line)
    if match:
        perf[match.group(2)] = perf.get(match.group(2), 0) + float(match.group(1))
# perf counts a sample by the function symbol holding its address; cpu.folded names the scopes
# and the functions inlined there too: the program's scopes and its `spin`, inlined into each hot
# function, are left out of the innermost frame here.
not_symbols = {"scoped_work", "sleepy_loop", "spin"}
counts, total = {}, 0
for line in open(sys.argv[2]):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    leaf = [frame for frame in stack.split(";") if frame not in not_symbols][-1]
    counts[leaf] = counts.get(leaf, 0) + int(count)
    total += int(count)
print(f"{'function':32} {'perf %':>8} {'hotscope %':>11} {'difference':>11}")
worst = 0
for name in ["hotscope_shares_in_library", "hotscope_shares_compare", "hotscope_shares_scoped",
             "hotscope_shares_sleepy"]:
    ours = 100.0 * counts.get(name, 0) / max(total, 1)
    theirs = perf.get(name, 0.0)
    worst = max(worst, abs(ours - theirs))
    print(f"{name:32} {theirs:8.1f} {ours:11.1f} {ours - theirs:+11.1f}")
print(f"hotscope samples: {total}; largest difference {worst:.1f} points (goal: within 3)")
PY

echo
echo "== cost: hotscope-demo, CPU seconds per 1,000 requests, $rounds rounds of ${seconds} s =="
declare -A cpu_total served_total
for ((round = 0; round < rounds; ++round)); do
  for rate in 0 99 999; do
    out="$work/demo-$rate-$round"
    HOTSCOPE_CPU_HZ=$rate HOTSCOPE_AGENT=0 /usr/bin/time -f '%U %S' -o "$out.time" \
      "$build/examples/hotscope-demo" --seconds "$seconds" >"$out.txt"
    read -r user system <"$out.time"
    served=$(sed -n 's/^served \([0-9]*\) of.*/\1/p' "$out.txt")
    cpu_total[$rate]=$(echo "${cpu_total[$rate]:-0} + $user + $system" | bc -l)
    served_total[$rate]=$(( ${served_total[$rate]:-0} + served ))
  done
done
base=$(echo "${cpu_total[0]} * 1000 / ${served_total[0]}" | bc -l)
for rate in 0 99 999; do
  per=$(echo "${cpu_total[$rate]} * 1000 / ${served_total[$rate]}" | bc -l)
  printf '%4s Hz: %.4f CPU s per 1,000 requests (%d served), %.3f x the 0 Hz runs\n' "$rate" \
    "$per" "${served_total[$rate]}" "$(echo "$per / $base" | bc -l)"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
