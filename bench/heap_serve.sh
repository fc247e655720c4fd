#!/usr/bin/env bash
# Time to serve GET /v1/heap for 100,000 sites (docs/performance.md, "Time to serve /v1/heap"):
# starts bench/heap_serve_workload.cpp with the agent, asks for the profile REQUESTS times in each
# format with curl --unix-socket (the first request symbolizes, the next ones reuse the cache),
# then times the same profiles in-process through hotscope::heap_profile, without HTTP.
#   bench/heap_serve.sh [BUILD_DIR] [REQUESTS]
# BUILD_DIR holds bench/hotscope-heap-serve-workload (default build-bench); REQUESTS defaults to 5.
# The workload finds libhotscope-heap.so by its RUNPATH; LD_LIBRARY_PATH can point it at another
# build's (with its libhotscope-pprof.so beside it) to compare versions.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$repo/build-bench}" && pwd)"
requests="${2:-5}"
workload="$build/bench/hotscope-heap-serve-workload"
[[ -x "$workload" ]] || { echo "no $workload: build the hotscope-heap-serve-workload target" >&2; exit 1; }

work="$(mktemp -d)"
pid=""
cleanup() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

export HOTSCOPE_HEAP_MODE=full HOTSCOPE_RUNTIME_DIR="$work/rt"
"$workload" serve "$work/ready" >/dev/null &
pid=$!
for ((i = 0; i < 600; ++i)); do
  [[ -f "$work/ready" ]] && break
  sleep 0.1
done
[[ -f "$work/ready" && -S "$work/rt/$pid.sock" ]] || { echo "the workload did not start" >&2; exit 1; }
echo "/v1/heap through curl --unix-socket (100,000 sites):"
for format in dhat pprof; do
  for ((request = 1; request <= requests; ++request)); do
    curl --silent --show-error --fail --max-time 600 --unix-socket "$work/rt/$pid.sock" \
      -o "$work/answer" -w "$format request $request: %{time_total} s, %{size_download} bytes\n" \
      "http://localhost/v1/heap?format=$format"
  done
done
echo "peak RSS of the workload: $(awk '/VmHWM/ {printf "%.0f MiB", $2 / 1024}' "/proc/$pid/status")"
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=""

echo "hotscope::heap_profile in-process (a fresh process):"
HOTSCOPE_AGENT=0 "$workload" self "$requests"
