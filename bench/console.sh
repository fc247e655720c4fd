#!/usr/bin/env bash
# The costs of `hotscope console` (docs/performance.md, "Live console"):
# 1. hotscope-demo flat out (--rate 1000000) with a console watching it at 1 Hz (in tmux, the
#    functions tab) vs no console, in one run, repetitions interleaved: requests served per
#    second and per CPU second (user + system), and the console's own CPU in % of a core.
# 2. One refresh of a process with 10,000 functions (bench/agent_stats_program.cpp): the agent's
#    answer alone (curl's time_total for GET /v1/stats?format=columns, what the console asks)
#    and the agent's CPU per request, `hotscope console --once` (start, fetch, parse, build the
#    table, print it), and a live console's refresh time as its help (key ?) gives it, split by
#    step (asking the agent, parsing, updating the model, building the page, drawing), with the
#    CPU it uses. With --baseline, the same for another build, side by side, alternating.
#   bench/console.sh [--build DIR] [--repeats N] [--seconds S] [--baseline DIR] [--functions-only]
# --build: a Release build dir (default build-bench, configured as scripts/bench.sh does, plus
# the examples); --repeats: runs per setting (default 5); --seconds: length of each demo run
# (default 10); --baseline: a build dir of another revision (e.g. main's build-bench) with
# hotscope-agent-stats-program and hotscope built, measured in part 2 beside this build;
# --functions-only: part 2 only.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-bench"
repeats=5
seconds=10
baseline=""
functions_only=0
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --baseline) baseline="$(cd "$2" && pwd)"; shift 2 ;;
    --functions-only) functions_only=1; shift ;;
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
program_pids=()
cleanup() {
  tmux -L "$server" kill-server 2>/dev/null || true
  for pid in "${program_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
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

# Starts console $1 (a hotscope CLI) in a 200x50 tmux terminal on pid $2 with the extra
# arguments; prints its pid.
start_console() {
  local console="$1" pid="$2"
  shift 2
  tmux -L "$server" -f /dev/null new-session -d -x 200 -y 50 \
    "exec env HOTSCOPE_RUNTIME_DIR=$HOTSCOPE_RUNTIME_DIR $console console -p $pid $*"
  tmux -L "$server" list-panes -F '#{pane_pid}'
}
# Ends the console and waits until its tmux server has gone, so the next one can start.
stop_console() {
  tmux -L "$server" kill-server 2>/dev/null || true
  for _ in $(seq 50); do
    [[ -S "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$server" ]] || return 0
    sleep 0.1
  done
}

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
    console_pid="$(start_console "$cli" "$demo_pid" --interval 1)"
    local start
    start="$(cpu_ticks "$console_pid")"
    sleep "$(awk -v s="$seconds" 'BEGIN { print s - 2 }')"
    echo "$(($(cpu_ticks "$console_pid") - start)) $((seconds - 2))" >>"$work/ticks"
    stop_console
  fi
  wait "$time_pid"
  demo_throughput "$work/demo.txt" "$work/demo.time"
}
if ((!functions_only)); then
  interleave "$repeats" demo_run "$work/demo"
  echo "hotscope-demo flat out, medians of $repeats interleaved runs of $seconds s:"
  compare_settings "$work/demo" "no console" "a console at 1 Hz"
  awk -v hz="$ticks_per_second" '{ ticks += $1; s += $2 } END {
    printf "  the console itself: %d CPU ticks in %d s = %.2f %% of a core (goal: <= 2 %%)\n",
      ticks, s, 100 * ticks / hz / s }' "$work/ticks"
  echo
fi

# ---- 2. 10,000 functions: this build, and the baseline's beside it ----
builds=("$build")
if [[ -n "$baseline" ]]; then
  builds+=("$baseline")
fi
label() { ((${1} == 0)) && echo "this build" || echo "baseline"; }
# The builds in turn, the order alternating with `round` so that a drift in load favours neither.
in_turn() {
  if (($1 % 2 == 0)); then
    seq 0 $((${#builds[@]} - 1))
  else
    seq $((${#builds[@]} - 1)) -1 0
  fi
}
for b in "${!builds[@]}"; do
  "${builds[b]}/bench/hotscope-agent-stats-program" >"$work/program.$b.txt" &
  program_pids+=($!)
  wait_for_agent $!
  agent_ticks[b]="$(cpu_ticks "${program_pids[b]}")"
done
count=$((repeats * 4))
for ((i = 0; i < count; ++i)); do
  for b in $(in_turn "$i"); do
    curl -sf -o /dev/null -w '%{time_total} %{size_download}\n' \
      --unix-socket "$HOTSCOPE_RUNTIME_DIR/${program_pids[b]}.sock" \
      'http://localhost/v1/stats?format=columns' >>"$work/curl.$b"
    /usr/bin/time -f '%e %U %S' -a -o "$work/once.$b" "${builds[b]}/tools/hotscope/hotscope" \
      console -p "${program_pids[b]}" --once >"$work/once.$b.txt"
  done
done
for b in "${!builds[@]}"; do # two requests per round: curl's and the console's
  agent_ticks[b]="$(($(cpu_ticks "${program_pids[b]}") - agent_ticks[b]))"
done
# A refresh that takes longer than the interval is followed by the next one at once. The help
# (key ?) says how long the last refresh took (asked, parsed and drawn), and each step's share.
live_seconds=0
for ((round = 0; round < 2; ++round)); do
  for b in $(in_turn "$round"); do
    console_pid="$(start_console "${builds[b]}/tools/hotscope/hotscope" "${program_pids[b]}" \
      --interval 1)"
    sleep 2
    start="$(cpu_ticks "$console_pid")"
    tmux -L "$server" send-keys '?'
    for _ in $(seq 10); do
      sleep 1
      tmux -L "$server" capture-pane -p >"$work/screen"
      sed -n 's/.*the last refresh took \([0-9]*\) ms.*/\1/p' "$work/screen" >>"$work/refresh_ms.$b"
      sed -n 's/^ *\([0-9.]*\) ms asking the agent, \([0-9.]*\) parsing, \([0-9.]*\) updating the model, \([0-9.]*\) building the page, \([0-9.]*\) drawing.*/\1 \2 \3 \4 \5/p' \
        "$work/screen" >>"$work/split.$b"
    done
    console_ticks[b]="$((${console_ticks[b]:-0} + $(cpu_ticks "$console_pid") - start))"
    stop_console
  done
  live_seconds=$((live_seconds + 10))
done

ms() { awk -v s="$1" 'BEGIN { printf "%.1f ms", 1000 * s }'; }
rows="$(grep -c 'agent_stats_program\|instrumented' "$work/once.0.txt" || true)"
echo "one refresh of $rows functions ($(awk 'NR == 1 { printf "%.1f", $2 / 1048576 }' \
  "$work/curl.0") MiB of statistics), medians of $count, builds alternating:"
for b in "${!builds[@]}"; do
  echo " $(label "$b") (${builds[b]}):"
  echo "  GET /v1/stats?format=columns alone (curl time_total): $(ms "$(cut -d' ' -f1 \
    "$work/curl.$b" | median)"); the agent's CPU per request $(awk -v t="${agent_ticks[b]}" \
    -v hz="$ticks_per_second" -v n="$((2 * count))" 'BEGIN { printf "%.1f ms", 1000 * t / hz / n }')"
  echo "  hotscope console --once: wall $(ms "$(cut -d' ' -f1 "$work/once.$b" | median)")," \
    "its own CPU $(ms "$(awk '{ print $2 + $3 }' "$work/once.$b" | median)")"
  echo "  a live console's refresh (its help's \"the last refresh took\"): median" \
    "$(median <"$work/refresh_ms.$b") ms of $(wc -l <"$work/refresh_ms.$b") samples," \
    "from $(sort -g "$work/refresh_ms.$b" | head -1) to $(sort -g "$work/refresh_ms.$b" | tail -1)" \
    "(goal: <= 50 ms)"
  if [[ -s "$work/split.$b" ]]; then
    echo "    by step, medians in ms: asking the agent $(cut -d' ' -f1 "$work/split.$b" | median)," \
      "parsing $(cut -d' ' -f2 "$work/split.$b" | median)," \
      "updating the model $(cut -d' ' -f3 "$work/split.$b" | median)," \
      "building the page $(cut -d' ' -f4 "$work/split.$b" | median)," \
      "drawing $(cut -d' ' -f5 "$work/split.$b" | median)"
  fi
  echo "  a live console at --interval 1: ${console_ticks[b]} CPU ticks in $live_seconds s =" \
    "$(awk -v t="${console_ticks[b]}" -v hz="$ticks_per_second" -v s="$live_seconds" \
      'BEGIN { printf "%.1f %% of a core", 100 * t / hz / s }')"
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
