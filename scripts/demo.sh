#!/usr/bin/env bash
# Builds the demo service, runs it under hotscope for a few seconds and shows the profile.
#   scripts/demo.sh                  (SECONDS_TO_RUN=30 scripts/demo.sh for a longer run)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
install_packages "$repo/scripts/packages.txt"

# The same build directory and settings as the release step of scripts/test.sh, so either
# script reuses what the other built.
build="$repo/build/release"
out="$repo/out/demo"
echo "== building hotscope-demo in $build"
mkdir -p "$repo/build"
cmake -S "$repo" -B "$build" -G Ninja -Wno-dev -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" --target hotscope-demo hotscope_cli guest_sample-guest guest_sample-guest-process

rm -rf "$out"
mkdir -p "$out"
echo "== running the demo service for ${SECONDS_TO_RUN:-10} s (4 worker threads, heap profiler on)"
HOTSCOPE_OUT="$out" HOTSCOPE_HEAP_MODE="${HOTSCOPE_HEAP_MODE:-full}" \
  "$build/examples/hotscope-demo" --seconds "${SECONDS_TO_RUN:-10}" --threads 4

if [[ ! -s "$out/report.txt" ]]; then
  echo "error: the demo wrote no $out/report.txt (is HOTSCOPE_ENABLE off in $build?)" >&2
  exit 1
fi
echo
echo "== per-function table ($out/report.txt)"
cat "$out/report.txt"
"$build/tools/hotscope/hotscope" report "$out"
cat <<EOT

== report.html: the tables, an interactive flame graph and the heap sites in one page
  open $out/report.html in a browser (no network needed); docs/diff-and-report.md

== trace files in $out
  trace.json    Chrome trace events: open https://ui.perfetto.dev and use "Open trace file",
                or drop it on https://www.speedscope.app
  trace.folded  folded stacks: hotscope flame trace.folded -o flame.svg, or speedscope
  trace.txt     the call tree as indented text: less $out/trace.txt
  stats.json    per-function statistics (counts, self/inclusive time, percentiles, memory)
  heap.json     the heap profile: open /usr/libexec/valgrind/dh_view.html and load it
EOT

# A guest: the sample guest in a KVM micro-VM when /dev/kvm is usable, else as a child process.
guest_out="$repo/out/guest"
if [[ -r /dev/kvm && -w /dev/kvm ]]; then
  guest=("$build/guest/sample-guest.elf")
else
  echo "== /dev/kvm is not usable here: the guest runs as a child process instead"
  guest=("$build/guest/sample-guest-process" --process)
fi
echo
echo "== hotscope vm run ${guest[*]} --calls 3 --out $guest_out"
rm -rf "$guest_out"
"$build/tools/hotscope/hotscope" vm run "${guest[@]}" --calls 3 --out "$guest_out"
echo
echo "== the guest's calls inside the host's, on one timeline ($guest_out/trace.txt, first lines)"
head -n 40 "$guest_out/trace.txt"
cat <<EOT

== watch the demo live (a 2-minute run; q quits the console, docs/console.md):
  HOTSCOPE_HEAP_MODE=full $build/examples/hotscope-demo --seconds 120 >/dev/null & sleep 1; $build/tools/hotscope/hotscope console -n hotscope-demo
EOT
