#!/usr/bin/env bash
# The live agent's costs (docs/performance.md, "Live agent"):
# 1. hotscope-demo's throughput with the agent running idle vs HOTSCOPE_AGENT=0, in one run,
#    repetitions interleaved; the demo offers 1,000,000 requests/s, more than it can serve, so
#    it runs flat out and "served .../s" is its throughput. Also requests per CPU second, and
#    the CPU ticks of the agent's own threads (hotscope-agent, hotscope-answer) in the agent runs.
# 2. The time to serve GET /v1/stats for 10,000 functions: bench/agent_stats_program.cpp has
#    10,000 instrumented functions; curl asks its agent over the Unix socket (curl's time_total:
#    connect, request, the whole answer).
# 3. The time to serve GET /v1/heap (DHAT JSON and pprof) for 100,000 sites (bench/heap_serve.sh),
#    and the same work step by step without HTTP (bench/heap_profile_bench.cpp).
#   bench/agent.sh [--build DIR] [--repeats N] [--seconds S]
# --build: a Release build dir with HOTSCOPE_BUILD_BENCH=ON (default build-bench, configured as
# scripts/bench.sh does); --repeats: runs of the demo per setting (default 7) and requests
# (x3); --seconds: length of each demo run (default 5).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-bench"
repeats=7
seconds=5
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    *) echo "bench/agent.sh: unknown argument '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
install_packages "$repo/scripts/packages.txt"
install_packages <(printf '%s\n' jq time curl)

# The demo is an example; scripts/bench.sh's configuration leaves the examples out.
configure_bench_build "$build" -DHOTSCOPE_BUILD_EXAMPLES=ON
cmake --build "$build" --target hotscope-demo hotscope-agent-stats-program \
  hotscope-heap-profile-bench >/dev/null
# Not in sanitizer builds (no hotscope::heap there).
cmake --build "$build" --target hotscope-heap-serve-workload >/dev/null 2>&1 || true

work="$(mktemp -d)"
program_pid=""
cleanup() {
  if [[ -n "$program_pid" ]]; then
    kill "$program_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
export HOTSCOPE_RUNTIME_DIR="$work/run"


# ---- 1. Throughput, agent idle vs no agent ----
# CPU ticks (user + system, from /proc/PID/task/*/stat) of the threads named COMM, or of all.
thread_ticks() { # pid [comm]
  local total=0 task
  for task in /proc/"$1"/task/*; do
    if [[ -z "${2:-}" || "$(cat "$task/comm" 2>/dev/null)" == "$2" ]]; then
      total=$((total + $(awk '{ print $14 + $15 }' "$task/stat" 2>/dev/null || echo 0)))
    fi
  done
  echo "$total"
}

demo_run() { # agent(0|1) -> "requests/s requests/CPU-s" (and the agent's ticks to $work/ticks)
  local out="$work/demo-$1"
  rm -rf "$out"
  HOTSCOPE_AGENT="$1" HOTSCOPE_OUT="$out" /usr/bin/time -f '%U %S' -o "$work/demo.time" \
    "$build/examples/hotscope-demo" --seconds "$seconds" --rate 1000000 >"$work/demo.txt" \
    2>"$work/demo.err" &
  local time_pid=$!
  sleep 1
  # The agent must really be there, or really not: its <pid>.json names the demo's pid.
  local info pid=""
  info="$(compgen -G "$HOTSCOPE_RUNTIME_DIR/*.json" || true)"
  if [[ -n "$info" ]]; then
    pid="$(basename "$info" .json)"
  fi
  if [[ "$1" == 1 && -z "$pid" ]] || [[ "$1" == 0 && -n "$pid" ]]; then
    echo "bench/agent.sh: HOTSCOPE_AGENT=$1, but an agent was" \
      "$([[ -n "$pid" ]] && echo there || echo missing)" >&2
    exit 1
  fi
  if [[ -n "$pid" ]]; then
    # Just before the end: what the agent's own threads have used so far.
    sleep "$(awk -v s="$seconds" 'BEGIN { print s - 1.5 }')"
    echo "$(($(thread_ticks "$pid" hotscope-agent) + $(thread_ticks "$pid" hotscope-answer))) $(thread_ticks "$pid")" >>"$work/ticks"
  fi
  wait "$time_pid"
  demo_throughput "$work/demo.txt" "$work/demo.time"
}
interleave "$repeats" demo_run "$work/throughput"
echo "demo throughput, medians of $repeats interleaved runs of $seconds s:"
compare_settings "$work/throughput" "no agent (HOTSCOPE_AGENT=0)" "agent idle"
echo "  (goal: within 1 %)"
awk '{ agent += $1; all += $2 } END {
  printf "  the agent'"'"'s own threads used %d of the %d CPU ticks of the agent runs" \
    " (%.3f %%)\n", agent, all, all ? 100 * agent / all : 0 }' "$work/ticks"

# ---- 2 and 3. Requests to a program's agent ----
start_program() { # command... : starts it, waits for "ready" and its socket; sets program_pid
  "$@" >"$work/program.txt" &
  program_pid=$!
  for _ in $(seq 300); do
    [[ -s "$work/program.txt" && -S "$HOTSCOPE_RUNTIME_DIR/$program_pid.sock" ]] && return 0
    sleep 0.1
  done
  echo "bench/agent.sh: $1 did not start its agent" >&2
  exit 1
}
stop_program() {
  kill "$program_pid"
  wait "$program_pid" 2>/dev/null || true
  rm -f "$HOTSCOPE_RUNTIME_DIR/$program_pid".* # a program ended by a signal leaves them
  program_pid=""
}
time_requests() { # path count -> "median_s size_MiB"
  local i
  : >"$work/times"
  for ((i = 0; i < $2; ++i)); do
    curl -sf -o /dev/null -w '%{time_total} %{size_download}\n' \
      --unix-socket "$HOTSCOPE_RUNTIME_DIR/$program_pid.sock" "http://localhost$1" >>"$work/times"
  done
  echo "$(cut -d' ' -f1 "$work/times" | median) $(awk 'NR == 1 { printf "%.1f", $2 / 1048576 }' \
    "$work/times")"
}
ask() { # path -> the answer
  curl -sf --unix-socket "$HOTSCOPE_RUNTIME_DIR/$program_pid.sock" "http://localhost$1"
}

start_program "$build/bench/hotscope-agent-stats-program"
functions="$(ask /v1/stats | jq '.functions | length')"
read -r stats_s stats_mib < <(time_requests /v1/stats $((repeats * 3)))
stop_program
echo
echo "GET /v1/stats with $functions functions ($stats_mib MiB): median $stats_s s of" \
  "$((repeats * 3)) requests"

if [[ -x "$build/bench/hotscope-heap-serve-workload" ]]; then
  echo
  "$repo/bench/heap_serve.sh" "$build" "$repeats"
fi

# ---- The work of a /v1/heap answer, step by step, without HTTP ----
echo
"$build/bench/hotscope-heap-profile-bench" 100000 "$repeats"
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
