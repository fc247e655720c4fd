#!/usr/bin/env bash
# The costs of `hotscope console` (docs/performance.md, "Live console"):
# 1. hotscope-demo flat out (--rate 1000000) with a console watching it at 1 Hz (in tmux, the
#    functions tab) vs no console, in one run, repetitions interleaved: requests served per
#    second and per CPU second (user + system), and the console's own CPU in % of a core.
# 2. One refresh of a process with 10,000 functions (bench/agent_stats_program.cpp): the agent's
#    answer alone (curl's time_total for GET /v1/stats?format=columns, what the console asks),
#    `hotscope console --once` (start, fetch,
#    parse, build the table, print it), and the CPU a live console uses.
#   bench/console.sh [--build DIR] [--repeats N] [--seconds S]
# --build: a Release build dir (default build-bench, configured as scripts/bench.sh does, plus
# the examples); --repeats: runs per setting (default 5); --seconds: length of each demo run
# (default 10).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-bench"
repeats=5
seconds=10
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    *) echo "bench/console.sh: unknown argument '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
install_packages "$repo/scripts/packages.txt"
install_packages <(printf '%s\n' time curl)

configure_bench_build "$build" -DHOTSCOPE_BUILD_EXAMPLES=ON
cmake --build "$build" --target hotscope-demo hotscope-agent-stats-program hotscope_cli >/dev/null
cli="$build/tools/hotscope/hotscope"

work="$(mktemp -d)"
server="hs-console-bench-$$"
program_pid=""
cleanup() {
  tmux -L "$server" kill-server 2>/dev/null || true
  if [[ -n "$program_pid" ]]; then
    kill "$program_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
export HOTSCOPE_RUNTIME_DIR="$work/run"

ticks_per_second="$(getconf CLK_TCK)"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # user + system of a process

wait_for_agent() { # pid
  for _ in $(seq 300); do
    [[ -S "$HOTSCOPE_RUNTIME_DIR/$1.sock" ]] && return 0
    sleep 0.1
  done
  echo "bench/console.sh: process $1 started no agent" >&2
  exit 1
}

# Starts a console in a 200x50 tmux terminal on pid $1 with the extra arguments; prints its pid.
start_console() {
  local pid="$1"
  shift
  tmux -L "$server" -f /dev/null new-session -d -x 200 -y 50 \
    "exec env HOTSCOPE_RUNTIME_DIR=$HOTSCOPE_RUNTIME_DIR $cli console -p $pid $*"
  tmux -L "$server" list-panes -F '#{pane_pid}'
}
stop_console() { tmux -L "$server" kill-server 2>/dev/null || true; }

# ---- 1. The demo with and without a console ----
demo_run() { # console(0|1) -> "requests/s requests/CPU-s" (the console's ticks to $work/ticks)
  rm -rf "$work/out"
  HOTSCOPE_OUT="$work/out" /usr/bin/time -f '%U %S' -o "$work/demo.time" \
    "$build/examples/hotscope-demo" --seconds "$seconds" --rate 1000000 >"$work/demo.txt" \
    2>"$work/demo.err" &
  local time_pid=$! demo_pid console_pid
  sleep 0.5
  demo_pid="$(pgrep -P "$time_pid" hotscope-demo)"
  wait_for_agent "$demo_pid"
  if [[ "$1" == 1 ]]; then
    console_pid="$(start_console "$demo_pid" --interval 1)"
    local start
    start="$(cpu_ticks "$console_pid")"
    sleep "$(awk -v s="$seconds" 'BEGIN { print s - 2 }')"
    echo "$(($(cpu_ticks "$console_pid") - start)) $((seconds - 2))" >>"$work/ticks"
    stop_console
  fi
  wait "$time_pid"
  demo_throughput "$work/demo.txt" "$work/demo.time"
}
interleave "$repeats" demo_run "$work/demo"
echo "hotscope-demo flat out, medians of $repeats interleaved runs of $seconds s:"
compare_settings "$work/demo" "no console" "a console at 1 Hz"
awk -v hz="$ticks_per_second" '{ ticks += $1; s += $2 } END {
  printf "  the console itself: %d CPU ticks in %d s = %.2f %% of a core (goal: <= 2 %%)\n",
    ticks, s, 100 * ticks / hz / s }' "$work/ticks"

# ---- 2. 10,000 functions ----
"$build/bench/hotscope-agent-stats-program" >"$work/program.txt" &
program_pid=$!
wait_for_agent "$program_pid"
count=$((repeats * 4))
for ((i = 0; i < count; ++i)); do
  curl -sf -o /dev/null -w '%{time_total} %{size_download}\n' \
    --unix-socket "$HOTSCOPE_RUNTIME_DIR/$program_pid.sock" 'http://localhost/v1/stats?format=columns' >>"$work/curl"
  /usr/bin/time -f '%e %U %S' -a -o "$work/once" "$cli" console -p "$program_pid" --once \
    >"$work/once.txt"
done
rows="$(grep -c 'agent_stats_program\|instrumented' "$work/once.txt" || true)"
echo
echo "one refresh of $rows functions ($(awk 'NR == 1 { printf "%.1f", $2 / 1048576 }' \
  "$work/curl") MiB of statistics), medians of $count:"
echo "  GET /v1/stats?format=columns alone (curl time_total): $(cut -d' ' -f1 "$work/curl" | median) s"
echo "  hotscope console --once (wall): $(cut -d' ' -f1 "$work/once" | median) s," \
  "its own CPU $(awk '{ print $2 + $3 }' "$work/once" | median) s"
# A refresh that takes longer than the interval is followed by the next one at once. The help
# (key ?) says how long the last refresh took: asked, parsed and drawn.
console_pid="$(start_console "$program_pid" --interval 1)"
sleep 2
start="$(cpu_ticks "$console_pid")"
tmux -L "$server" send-keys '?'
for _ in $(seq 20); do
  sleep 1
  tmux -L "$server" capture-pane -p | sed -n 's/.*the last refresh took \([0-9]*\) ms.*/\1/p' \
    >>"$work/refresh_ms"
done
used="$(($(cpu_ticks "$console_pid") - start))"
stop_console
echo "  a live console's refresh (its help's \"the last refresh took\"): median" \
  "$(median <"$work/refresh_ms") ms of $(wc -l <"$work/refresh_ms") samples" \
  "(goal: <= 50 ms)"
echo "  a live console at --interval 1: $used CPU ticks in 20 s = $(awk -v t="$used" \
  -v hz="$ticks_per_second" 'BEGIN { printf "%.1f %% of a core", 100 * t / hz / 20 }')"
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
