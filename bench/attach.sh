#!/usr/bin/env bash
# `hotscope attach` on the demo running flat out (docs/performance.md, "Attach to a running
# program"): the time the attach takes, and the demo's request rate alone and with the heap
# profiler attached in the sampled mode, side by side in interleaved rounds.
#   bench/attach.sh [BUILD_DIR] [ROUNDS] [SECONDS]
# BUILD_DIR (default build/release) holds examples/hotscope-demo-disabled (the demo without
# hotscope: an unmodified program) and tools/hotscope/hotscope with its preload libraries. Each
# round runs the demo flat out (--rate 1000000) alone for SECONDS (default 5), then again with
# `hotscope attach` 0.5 s after its start; the demo's own figure (requests served over its whole
# run) is compared, so the attached run has the profiler in it for all but its first 0.5 s. The
# profile is written at the demo's exit. Also requests served per CPU second of the demo's
# process (/usr/bin/time), whose attached figure includes the attach and the report at exit.
# ROUNDS defaults to 5.
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
per_cpu() { awk -v n="$(sed -n 's/^served \([0-9]*\) of.*/\1/p' "$1")" '{ printf "%d", n / ($1 + $2) }' "$2"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for ((round = 1; round <= rounds; ++round)); do
  /usr/bin/time -f "%U %S" -o "$work/alone.cpu.$round" \
    "$demo" --seconds "$seconds" --rate 1000000 >"$work/alone.$round"
  /usr/bin/time -f "%U %S" -o "$work/attached.cpu.$round" \
    "$demo" --seconds "$seconds" --rate 1000000 >"$work/attached.$round" &
  time_pid=$!
  sleep 0.5
  demo_pid="$(pgrep -P "$time_pid")"
  "$cli" attach -p "$demo_pid" --heap sampled --out "$work/profile.$round" 2>"$work/attach.$round"
  wait "$time_pid"
  took="$(sed -n 's/.*attached in \([0-9.]*\) s.*/\1/p' "$work/attach.$round")"
  [[ -n "$took" ]] || { cat "$work/attach.$round" >&2; exit 1; }
  [[ -s "$work/profile.$round/heap.json" ]] || { echo "round $round: no heap.json" >&2; exit 1; }
  figures="$(rate "$work/alone.$round") $(rate "$work/attached.$round")"
  figures+=" $(per_cpu "$work/alone.$round" "$work/alone.cpu.$round")"
  figures+=" $(per_cpu "$work/attached.$round" "$work/attached.cpu.$round") $took"
  echo "round $round: requests/s alone, attached; per CPU second alone, attached; attach s: $figures"
  echo "$figures" >>"$work/figures"
done

column() { cut -d' ' -f"$1" "$work/figures" | median; }
awk -v a="$(column 1)" -v b="$(column 2)" -v c="$(column 3)" -v d="$(column 4)" \
  -v t="$(column 5)" -v r="$rounds" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
  printf "medians of %d rounds: requests/s alone %d, sampled mode attached %d (%+.2f %%)\n", r, a, b, (b / a - 1) * 100
  printf "  requests per CPU second alone %d, attached %d (%+.2f %%); attach %.3f s\n", c, d, (d / c - 1) * 100, t
  printf "  load average at the end: %s\n", load }'
