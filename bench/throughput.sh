#!/usr/bin/env bash
# Collector throughput (docs/performance.md, "Collector throughput"): threads writing empty
# scopes at fixed rates with the default settings, what the collector kept of them and what it
# cost, and beside each case an LTTng-UST session with default-sized buffers at the same event
# rate and its discarded events.
#   bench/throughput.sh                      every case, 10 s each (about 5 minutes)
#   bench/throughput.sh --seconds 3          shorter cases
#   bench/throughput.sh --compare OLD_BINARY also runs an older hotscope-throughput before each
#                                            case (the "before" of docs/performance.md)
#   HOTSCOPE_BENCH_LTTNG=0 bench/throughput.sh  without the LTTng sessions
# HOTSCOPE_* variables set by the caller apply to every hotscope case (e.g. a ring size).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-bench"
seconds=10
compare=""
while (($#)); do
  case "$1" in
  --seconds) seconds="$2"; shift 2 ;;
  --compare) compare="$2"; shift 2 ;;
  *) echo "usage: bench/throughput.sh [--seconds N] [--compare OLD_BINARY]" >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
install_packages "$repo/scripts/packages.txt"
lttng=${HOTSCOPE_BENCH_LTTNG:-1}
if ((lttng)); then
  install_packages <(printf '%s\n' liblttng-ust-dev lttng-tools)
fi
configure_bench_build "$build"
cmake --build "$build" --target hotscope-throughput >/dev/null
binary="$build/bench/hotscope-throughput"

work="$(mktemp -d)"
session=hotscope-throughput
sessiond_pid=""
cleanup() {
  if ((lttng)); then
    lttng destroy "$session" >/dev/null 2>&1 || true
  fi
  if [[ -n "$sessiond_pid" ]]; then
    kill "$sessiond_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
export HOTSCOPE_AGENT=0 HOTSCOPE_OUT="$work/out"

if ((lttng)) && ! lttng list >/dev/null 2>&1; then
  lttng-sessiond --daemonize
  rundir="/var/run/lttng"
  if ((EUID != 0)); then
    rundir="${LTTNG_HOME:-$HOME}/.lttng"
  fi
  sessiond_pid="$(cat "$rundir/lttng-sessiond.pid")"
fi

# lttng_case THREADS RATE: the same threads and rate firing tracepoints, recorded by a session
# with the default channel (default sub-buffer size and count); prints a table row.
lttng_case() {
  lttng destroy "$session" >/dev/null 2>&1 || true
  rm -rf "$work/trace"
  lttng create "$session" --output="$work/trace" >/dev/null
  lttng enable-event -u -s "$session" 'hotscope_bench:*' >/dev/null
  lttng start "$session" >/dev/null
  local line emitted elapsed discarded
  line="$(HOTSCOPE_TRACE_MIB=0 "$binary" --lttng --threads "$1" --rate "$2" --seconds "$seconds")"
  lttng stop "$session" >/dev/null
  discarded="$(lttng list "$session" | awk '/Discarded events:/ { n += $3 } END { print n + 0 }')"
  lttng destroy "$session" >/dev/null
  rm -rf "$work/trace"
  emitted="$(awk '{ print $4 }' <<<"$line")"
  elapsed="$(awk '{ print $6 }' <<<"$line")"
  awk -v t="$1" -v r="$2" -v e="$emitted" -v s="$elapsed" -v d="$discarded" 'BEGIN {
    printf "| LTTng-UST, default buffers | %d x %.1f M/s | %.1f M/s | %.1f M | %.1f M | %.2f %% | | |\n",
      t, r / 1e6, e / s / t / 1e6, e / 1e6, (e - d) / 1e6, e ? 100 * d / e : 0
  }'
}

echo "| case | threads x rate asked | written per thread | written | kept | dropped | collector CPU (share of the run) | collector ns per record |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for threads_rate in "1 2e6" "1 5e6" "1 10e6" "2 2.5e6" "2 5e6" "4 1.25e6" "4 2.5e6"; do
  read -r threads rate <<<"$threads_rate"
  if [[ -n "$compare" ]]; then
    printf '| before '
    "$compare" --threads "$threads" --rate "$rate" --seconds "$seconds"
  fi
  printf '| hotscope '
  "$binary" --threads "$threads" --rate "$rate" --seconds "$seconds"
  if ((lttng)); then
    lttng_case "$threads" "$rate"
  fi
done
echo
echo "8 threads taking trace snapshots in a loop (as /v1/trace requests) meanwhile:"
echo "| case | threads x rate asked | written per thread | written | kept | dropped | collector CPU (share of the run) | collector ns per record | snapshots |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
if [[ -n "$compare" ]]; then
  printf '| before '
  "$compare" --threads 1 --rate 10e6 --seconds "$seconds" --snapshot-clients 8
fi
printf '| hotscope '
"$binary" --threads 1 --rate 10e6 --seconds "$seconds" --snapshot-clients 8
