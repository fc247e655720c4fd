#!/usr/bin/env bash
# `hotscope attach` on the demo running flat out (docs/performance.md, "Attach to a running
# program"): the time the attach takes, and the demo's request rate with the heap profiler
# attached in the sampled mode against the same demo alone, both running at the same time.
#   bench/attach.sh [BUILD_DIR] [ROUNDS] [SECONDS]
# BUILD_DIR (default build/release) holds examples/hotscope-demo-disabled (the demo without
# hotscope: an unmodified program) and tools/hotscope/hotscope with its preload libraries.
# Each round starts two copies of the demo flat out (--rate 1000000) for SECONDS (default 5) at
# once, twice: once with neither attached (A/A: the noise of two copies side by side), once with
# `hotscope attach` on one of them 0.5 s after its start (the first copy in odd rounds, the second
# in even ones). Run side by side, both copies see the same load, which a shared machine moves
# between rounds far more than the 2 % asked. Compared: each copy's own figure (requests served
# over its whole run, so the attached one has the profiler in it for all but its first 0.5 s),
# and requests served per CPU second of its process (/usr/bin/time), whose attached figure
# includes the attach and the report at exit. ROUNDS defaults to 5.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$repo/build/release}" && pwd)"
rounds="${2:-5}"
seconds="${3:-5}"
demo="$build/examples/hotscope-demo-disabled"
cli="$build/tools/hotscope/hotscope"
for file in "$demo" "$cli"; do
  [[ -x "$file" ]] || { echo "no $file: build hotscope-demo-disabled and hotscope_cli" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export HOTSCOPE_RUNTIME_DIR="$work/rt"

rate() { sed -n 's/.*requests in .* (\([0-9]*\)\/s).*/\1/p' "$1"; }
# Requests served per CPU second: the demo's count over /usr/bin/time's user + system seconds.
per_cpu() { awk -v n="$(sed -n 's/^served \([0-9]*\) of.*/\1/p' "$1.out")" '{ printf "%d", n / ($1 + $2) }' "$1.cpu"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'; }

# run_pair NAME ATTACHED: two copies at once, files NAME.1.* and NAME.2.*; copy ATTACHED (1 or 2,
# 0 for none) attached 0.5 s after the start. Prints the attach's seconds when there is one.
run_pair() {
  local name="$1" attached="$2" copy time_pids=()
  for copy in 1 2; do
    /usr/bin/time -f "%U %S" -o "$work/$name.$copy.cpu" \
      "$demo" --seconds "$seconds" --rate 1000000 >"$work/$name.$copy.out" &
    time_pids+=($!)
  done
  if ((attached > 0)); then
    sleep 0.5
    local demo_pid
    demo_pid="$(pgrep -P "${time_pids[attached - 1]}")"
    "$cli" attach -p "$demo_pid" --heap sampled --out "$work/$name.profile" 2>"$work/$name.attach"
  fi
  wait "${time_pids[@]}"
  if ((attached > 0)); then
    [[ -s "$work/$name.profile/heap.json" ]] || { echo "$name: no heap.json" >&2; exit 1; }
    local took
    took="$(sed -n 's/.*attached in \([0-9.]*\) s.*/\1/p' "$work/$name.attach")"
    [[ -n "$took" ]] || { cat "$work/$name.attach" >&2; exit 1; }
    echo "$took"
  fi
}

for ((round = 1; round <= rounds; ++round)); do
  run_pair "aa.$round" 0
  attached=$((round % 2 == 1 ? 1 : 2))
  alone=$((3 - attached))
  took="$(run_pair "ab.$round" "$attached")"
  figures="$(ratio "$(rate "$work/aa.$round.1.out")" "$(rate "$work/aa.$round.2.out")")"
  figures+=" $(ratio "$(rate "$work/ab.$round.$attached.out")" "$(rate "$work/ab.$round.$alone.out")")"
  figures+=" $(ratio "$(per_cpu "$work/aa.$round.1")" "$(per_cpu "$work/aa.$round.2")")"
  figures+=" $(ratio "$(per_cpu "$work/ab.$round.$attached")" "$(per_cpu "$work/ab.$round.$alone")")"
  figures+=" $took $(rate "$work/ab.$round.$alone.out")"
  echo "round $round: requests/s A/A, attached/alone; per CPU second A/A, attached/alone;" \
    "attach s; alone requests/s: $figures"
  echo "$figures" >>"$work/figures"
done

column() { cut -d' ' -f"$1" "$work/figures" | median; }
awk -v aa="$(column 1)" -v ab="$(column 2)" -v caa="$(column 3)" -v cab="$(column 4)" \
  -v t="$(column 5)" -v alone="$(column 6)" -v r="$rounds" \
  -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
  printf "medians of %d rounds, two copies side by side (about %d requests/s each alone):\n", r, alone
  printf "  requests/s attached over alone %.3f (A/A %.3f)\n", ab, aa
  printf "  requests per CPU second attached over alone %.3f (A/A %.3f); attach %.3f s\n", cab, caa, t
  printf "  load average at the end: %s\n", load }'
