#!/usr/bin/env bash
# `hotscope attach` on the demo running flat out (docs/performance.md, "Attach to a running
# program"): the time the attach takes, and the demo's request rate alone and with the heap
# profiler attached in the sampled mode, side by side in interleaved rounds.
#   bench/attach.sh [BUILD_DIR] [ROUNDS] [SECONDS]
# BUILD_DIR (default build/release) holds examples/hotscope-demo-disabled (the demo without
# hotscope: an unmodified program) and tools/hotscope/hotscope with its preload libraries. Each
# round runs the demo alone for SECONDS (default 5), then again with `hotscope attach` 0.5 s
# after its start; the demo's own figure (requests served over its whole run) is compared, so the
# attached run has the profiler in it for all but its first 0.5 s. The profile is written at the
# demo's exit. ROUNDS defaults to 5.
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
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for ((round = 1; round <= rounds; ++round)); do
  "$demo" --seconds "$seconds" >"$work/alone.$round"
  "$demo" --seconds "$seconds" >"$work/attached.$round" &
  demo_pid=$!
  sleep 0.5
  "$cli" attach -p "$demo_pid" --heap sampled --out "$work/profile.$round" 2>"$work/attach.$round"
  wait "$demo_pid"
  took="$(sed -n 's/.*attached in \([0-9.]*\) s.*/\1/p' "$work/attach.$round")"
  [[ -n "$took" ]] || { cat "$work/attach.$round" >&2; exit 1; }
  [[ -s "$work/profile.$round/heap.json" ]] || { echo "round $round: no heap.json" >&2; exit 1; }
  echo "round $round: alone $(rate "$work/alone.$round")/s, attached $(rate "$work/attached.$round")/s, attach took $took s"
  echo "$(rate "$work/alone.$round") $(rate "$work/attached.$round") $took" >>"$work/figures"
done

alone="$(cut -d' ' -f1 "$work/figures" | median)"
attached="$(cut -d' ' -f2 "$work/figures" | median)"
took="$(cut -d' ' -f3 "$work/figures" | median)"
awk -v a="$alone" -v b="$attached" -v t="$took" -v r="$rounds" 'BEGIN {
  printf "medians of %d rounds: alone %d/s, sampled mode attached %d/s (%+.2f %%), attach %.3f s\n",
         r, a, b, (b / a - 1) * 100, t }'
