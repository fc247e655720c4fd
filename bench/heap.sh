#!/usr/bin/env bash
# The heap profiler's overhead on an allocation-heavy program (bench/heap_workload.cpp), side by
# side in one run: native, hotscope full, heaptrack, valgrind DHAT and hotscope sampled, rounds
# interleaved so that a noisy machine affects each alike. Prints, per tool, the median wall time
# and CPU time (user + system of every process the tool starts), each with its ratio to native, the
# profiled process's peak RSS at the end of main, and the peak RSS of the largest process the
# tool ran (GNU time %M: with hotscope that includes writing the report; with heaptrack it is
# the larger of the program and heaptrack_interpret).
# Then the sampled mode's steady state apart from its fixed cost: native and sampled at R and 4R
# rounds (R = --rounds), interleaved, medians; the steady-state ratio is
# (sampled(4R) - sampled(R)) / (native(4R) - native(R)), and the fixed cost (loading the preload
# library, writing the report at exit) is what the sampled run adds beyond that line at 0 rounds.
# With --callgrind, the same two sizes counted in instructions by valgrind's callgrind (a fixed
# sample seed: reproducible even on a loaded machine).
#   bench/heap.sh [--build DIR] [--against DIR] [--repeats N] [--rounds N] [--quick] [--no-dhat]
#                 [--callgrind R]
# --build: a CMake build dir that has (or will get) the hotscope_preload target; default
#          build-bench (configured as scripts/bench.sh does).
# --against: another build dir with a libhotscope-preload.so built (another commit's: a change's
#          before and after): its full and sampled modes are measured in the same rounds.
# --repeats: interleaved runs of each tool (default 5); --rounds: the workload's rounds (default
# 40, about 3.9 million allocations); --quick: 3 repeats of 4 rounds, a smoke test of the script;
# --no-dhat: leave valgrind out (it takes a minute per run at the default size); --callgrind R:
# also count instructions at R and 4R rounds (R = 4: about a minute).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-bench"
repeats=5
rounds=40
dhat=1
callgrind=0
against=""
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --against) against="$2/src/libhotscope-preload.so"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --quick) repeats=3; rounds=4; shift ;;
    --no-dhat) dhat=0; shift ;;
    --callgrind) callgrind="$2"; shift 2 ;;
    *) echo "bench/heap.sh: unknown argument '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
install_packages "$repo/scripts/packages.txt"
install_packages <(printf '%s\n' heaptrack valgrind time)

configure_bench_build "$build"
cmake --build "$build" --target hotscope_preload >/dev/null
preload="$build/src/libhotscope-preload.so"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Built as a distribution would build it: -O2, no frame pointers kept.
g++ -std=c++20 -O2 -g -o "$work/workload" "$repo/bench/heap_workload.cpp"

# What the workload allocates, counted by the full mode.
HOTSCOPE_OUT="$work/count" LD_PRELOAD="$preload" "$work/workload" "$rounds" >/dev/null \
  2>"$work/count.err"
grep -o 'Total: .*' "$work/count.err" | sed 's/^/workload: /'

tools=(native full heaptrack dhat sampled)
if ((!dhat)); then
  tools=(native full heaptrack sampled)
fi
declare -A label=([native]="native" [full]="hotscope full" [heaptrack]="heaptrack"
  [dhat]="valgrind DHAT" [sampled]="hotscope sampled" [against_full]="full, --against"
  [against_sampled]="sampled, --against")
if [[ -n "$against" ]]; then
  [[ -f "$against" ]] || { echo "bench/heap.sh: no $against (build hotscope_preload there)" >&2; exit 2; }
  tools+=(against_full against_sampled)
fi

run() { # tool [rounds] -> "wall_s cpu_s program_peak_kib largest_peak_kib"
  local out="$work/out-$1" command=() size="${2:-$rounds}"
  rm -rf "$out" && mkdir -p "$out"
  case "$1" in
    native) command=() ;;
    full) command=(env LD_PRELOAD="$preload" HOTSCOPE_OUT="$out" HOTSCOPE_HEAP_SUMMARY=0) ;;
    sampled) command=(env LD_PRELOAD="$preload" HOTSCOPE_OUT="$out" HOTSCOPE_HEAP_SUMMARY=0
      HOTSCOPE_HEAP_MODE=sampled) ;;
    against_full) command=(env LD_PRELOAD="$against" HOTSCOPE_OUT="$out" HOTSCOPE_HEAP_SUMMARY=0) ;;
    against_sampled) command=(env LD_PRELOAD="$against" HOTSCOPE_OUT="$out"
      HOTSCOPE_HEAP_SUMMARY=0 HOTSCOPE_HEAP_MODE=sampled) ;;
    heaptrack) command=(heaptrack -o "$out/heaptrack") ;;
    dhat) command=(valgrind --tool=dhat --dhat-out-file="$out/dhat.json") ;;
  esac
  local start="$EPOCHREALTIME" # GNU time's %e has only 10 ms steps
  /usr/bin/time -f '%U %S %M' -o "$work/time" "${command[@]}" "$work/workload" "$size" \
    >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
  local end="$EPOCHREALTIME" peak
  peak="$(awk '/^peak_rss_kib/ { print $2 }' "$work/stderr")"
  awk -v start="$start" -v end="$end" -v peak="$peak" \
    '{ printf "%.3f %.2f %s %s\n", end - start, $1 + $2, peak, $3 }' "$work/time"
}

for ((round = 0; round < repeats; ++round)); do
  for tool in "${tools[@]}"; do
    run "$tool" >>"$work/$tool.times"
  done
done

median() { # file column
  sort -g -k"$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}
native_wall="$(median "$work/native.times" 1)"
native_cpu="$(median "$work/native.times" 2)"
echo
printf '%-17s %9s %9s %9s %9s %14s %14s\n' tool wall "× native" CPU "× native" "program peak" \
  "largest peak"
for tool in "${tools[@]}"; do
  awk -v name="${label[$tool]}" -v wall="$(median "$work/$tool.times" 1)" -v native="$native_wall" \
    -v cpu="$(median "$work/$tool.times" 2)" -v native_cpu="$native_cpu" \
    -v peak="$(median "$work/$tool.times" 3)" -v largest="$(median "$work/$tool.times" 4)" 'BEGIN {
      printf "%-17s %8.3fs %9.2f %8.2fs %9.2f %10.1f MiB %10.1f MiB\n", name, wall, wall / native,
        cpu, cpu / native_cpu, peak / 1024, largest / 1024
    }'
done
echo "(medians of $repeats interleaved runs of $rounds rounds; CPU is user + system of every" \
  "process the tool ran)"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

# The steady state: the cost per allocation, without the fixed cost that a longer program spreads
# thinner.
allocations="$(grep -o 'Total: .*' "$work/count.err" | grep -o '[0-9,]* blocks' | tr -dc '0-9')"
for ((round = 0; round < repeats; ++round)); do
  for size in "$rounds" "$((4 * rounds))"; do
    for tool in native sampled; do
      run "$tool" "$size" >>"$work/steady-$tool-$size.times"
    done
  done
done
echo
awk -v n1="$(median "$work/steady-native-$rounds.times" 1)" \
  -v n4="$(median "$work/steady-native-$((4 * rounds)).times" 1)" \
  -v s1="$(median "$work/steady-sampled-$rounds.times" 1)" \
  -v s4="$(median "$work/steady-sampled-$((4 * rounds)).times" 1)" \
  -v cn1="$(median "$work/steady-native-$rounds.times" 2)" \
  -v cn4="$(median "$work/steady-native-$((4 * rounds)).times" 2)" \
  -v cs1="$(median "$work/steady-sampled-$rounds.times" 2)" \
  -v cs4="$(median "$work/steady-sampled-$((4 * rounds)).times" 2)" \
  -v rounds="$rounds" -v allocations="$allocations" 'BEGIN {
    printf "hotscope sampled, steady state (wall, medians of %d runs): native %.3f s at %d rounds, %.3f s at %d;\n",
      '"$repeats"', n1, rounds, n4, 4 * rounds
    printf "  sampled %.3f s, %.3f s: whole-run ratios %.3f and %.3f\n", s1, s4, s1 / n1, s4 / n4
    printf "  steady-state ratio (sampled(4R) - sampled(R)) / (native(4R) - native(R)) = %.3f\n",
      (s4 - s1) / (n4 - n1)
    if (allocations > 0) {
      printf "  added per allocation: %.1f ns (%d allocations per %d rounds)\n",
        1e9 * ((s4 - s1) - (n4 - n1)) / (3 * allocations), allocations, rounds
    }
    fixed_native = n1 - (n4 - n1) / 3
    fixed_sampled = s1 - (s4 - s1) / 3
    printf "  fixed cost (start-up and the report at exit): %.1f ms\n", 1e3 * (fixed_sampled - fixed_native)
    printf "  in CPU time (user + system): steady-state ratio %.3f, fixed cost %.1f ms\n",
      (cs4 - cs1) / (cn4 - cn1), 1e3 * ((cs1 - (cs4 - cs1) / 3) - (cn1 - (cn4 - cn1) / 3))
  }'

if ((callgrind)); then
  install_packages <(printf '%s\n' valgrind)
  count() { # tool rounds -> instructions
    local command=()
    [[ "$1" == sampled ]] && command=(env LD_PRELOAD="$preload" HOTSCOPE_OUT="$work/out-cg"
      HOTSCOPE_HEAP_SUMMARY=0 HOTSCOPE_HEAP_MODE=sampled HOTSCOPE_HEAP_SAMPLE_SEED=1)
    "${command[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$work/workload" "$2" \
      2>&1 >/dev/null | awk '/I +refs:/ { gsub(",", "", $NF); print $NF }'
  }
  small="$callgrind" large="$((4 * callgrind))"
  awk -v n1="$(count native "$small")" -v n4="$(count native "$large")" \
    -v s1="$(count sampled "$small")" -v s4="$(count sampled "$large")" -v r="$small" 'BEGIN {
      printf "\ncallgrind instructions: native %.1f M at %d rounds, %.1f M at %d; sampled %.1f M, %.1f M\n",
        n1 / 1e6, r, n4 / 1e6, 4 * r, s1 / 1e6, s4 / 1e6
      printf "  whole-run ratios %.3f and %.3f; steady-state ratio %.3f; fixed %.1f M instructions\n",
        s1 / n1, s4 / n4, (s4 - s1) / (n4 - n1), ((s1 - (s4 - s1) / 3) - (n1 - (n4 - n1) / 3)) / 1e6
    }'
fi
