#!/usr/bin/env bash
# Measures the hot path with the benchmarks in bench/ (Release build in build-bench/) while an
# LTTng session records the LTTng case, and prints the table of docs/performance.md; then the
# heap profiler against heaptrack and valgrind DHAT (bench/heap.sh, about 6 more minutes; set
# HOTSCOPE_BENCH_HEAP=0 to leave it out) and the live agent (bench/agent.sh, about 2 minutes;
# HOTSCOPE_BENCH_AGENT=0 leaves it out).
#   scripts/bench.sh                       (5 repetitions, medians)
#   scripts/bench.sh --benchmark_min_time=2  extra options go to the benchmark binary
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-bench"
json="$build/bench-results.json"

# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
install_packages "$repo/scripts/packages.txt" # what the build needs
install_packages <(printf '%s\n' liblttng-ust-dev lttng-tools babeltrace2 jq)

configure_bench_build "$build"
cmake --build "$build" --target hotscope-bench

work="$(mktemp -d)"
session=hotscope-bench
sessiond_pid=""
cleanup() {
  lttng destroy "$session" >/dev/null 2>&1 || true
  if [[ -n "$sessiond_pid" ]]; then
    kill "$sessiond_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The session must be recording before the binary starts: LTTng-UST registers at startup.
start_lttng() {
  if ! lttng list >/dev/null 2>&1; then
    lttng-sessiond --daemonize || return 1
    local rundir="/var/run/lttng"
    if ((EUID != 0)); then
      rundir="${LTTNG_HOME:-$HOME}/.lttng"
    fi
    sessiond_pid="$(cat "$rundir/lttng-sessiond.pid")"
  fi
  lttng destroy "$session" >/dev/null 2>&1 || true # left over from an interrupted run
  # Large sub-buffers: the consumer daemon shares the CPUs with the benchmark, and an event
  # discarded because the buffers were full would cost less than a recorded one.
  lttng create "$session" --output="$work/trace" >/dev/null &&
    lttng enable-channel -u -s "$session" --subbuf-size=4M --num-subbuf=8 bench >/dev/null &&
    lttng enable-event -u -s "$session" -c bench 'hotscope_bench:*' >/dev/null &&
    lttng start "$session" >/dev/null
}
lttng_active=1
if ! start_lttng; then
  lttng_active=0
  echo "warning: could not start an LTTng session; the LTTng case will not be measured" >&2
fi

"$build/bench/hotscope-bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true --benchmark_out="$json" \
  --benchmark_out_format=json "$@" | tee "$work/console.txt"

emitted="$(awk '/^lttng events emitted:/ { print $4 }' "$work/console.txt")"
discarded="-"
recorded="-"
trace_bytes=0
if ((lttng_active)); then
  lttng stop "$session" >/dev/null
  discarded="$(lttng list "$session" | awk '/Discarded events:/ { n += $3 } END { print n + 0 }')"
  lttng destroy "$session" >/dev/null
  recorded="$(babeltrace2 -c sink.utils.counter --params=step=+0 "$work/trace" |
    awk '/ Event messages$/ { print $1 }')"
  trace_bytes="$(du -sb "$work/trace" | cut -f1)"
fi

median() {
  jq -r --arg name "$1" '.benchmarks[] | select(.run_name == $name and
    .aggregate_name == "median") | .ns_per_op' "$json"
}
rdtsc="$(median rdtsc_pair/manual_time/threads:1)"
rdtsc2="$(median rdtsc_pair/manual_time/threads:2)"
scope1="$(median hotscope_scope/manual_time/threads:1)"
scope2="$(median hotscope_scope/manual_time/threads:2)"
alloc1="$(median hotscope_allocation/manual_time/threads:1)"
queue1="$(median hotscope_queue_push_pop/manual_time/threads:1)"
mutex_plain="$(median mutex_plain/manual_time/threads:1)"
lockable="$(median hotscope_lockable/manual_time/threads:1)"
lockable_added="$(awk -v a="$lockable" -v b="$mutex_plain" 'BEGIN { if (a != "" && b != "") printf "%.3f", a - b }')"
resume_plain="$(median coroutine_resume_plain/manual_time/threads:1)"
resume_task="$(median hotscope_task_resume/manual_time/threads:1)"
task_added="$(awk -v a="$resume_task" -v b="$resume_plain" 'BEGIN { if (a != "" && b != "") printf "%.3f", a - b }')"
lttng_ns="$(median lttng_pair/manual_time)"
plain="$(median workload_plain/manual_time)"
off="$(median workload_hotscope_off/manual_time)"
lttng_note=""
if [[ "${emitted:-0}" == 0 || "$recorded" != "$emitted" || "$discarded" != 0 ]]; then
  lttng_ns="" # not the cost of recording every event: leave the case out
  lttng_note=" -- NOT every event was recorded, so the LTTng case is left out"
fi

# The two copies of the workload must compile to the same instructions (names aside).
code_of() {
  objdump -d --no-show-raw-insn "$build/bench/CMakeFiles/hotscope_bench_workload.dir/$1.cpp.o" |
    sed -n '/^0000/,$p' | sed -e 's/<[^>]*>//g' -e '1d'
}
if diff <(code_of workload_plain) <(code_of workload_disabled) >/dev/null; then
  same_code="identical"
else
  same_code="DIFFERENT"
fi

# value NAME NS
value() {
  if [[ -n "$2" ]]; then
    printf "%-34s %9.2f\n" "$1" "$2"
  else
    printf "%-34s %9s  not measured\n" "$1" "-"
  fi
}
# ratio NAME NS BASELINE_NAME BASELINE_NS MIN MAX GOAL_TEXT
ratio() {
  awk -v name="$1" -v ns="$2" -v base="$3" -v base_ns="$4" -v lo="$5" -v hi="$6" -v goal="$7" \
    'BEGIN {
      if (ns == "" || base_ns == "") {
        printf "%-34s %9s  %-20s %6s  %-9s %s\n", name, "-", base, "-", goal, "not measured"
        exit
      }
      r = ns / base_ns
      printf "%-34s %9.2f  %-20s %6.2f  %-9s %s\n", name, ns, base, r, goal,
        goal == "-" ? "(control)" : (r >= lo && r <= hi) ? "yes" : "NO"
    }'
}
echo
echo "== medians of the repetitions, ns per operation (clock: $(jq -r .context.hotscope_clock "$json"))"
printf "%-34s %9s  %-20s %6s  %-9s %s\n" case ns/op "ratio to" ratio goal met?
value "rdtsc pair (the floor)" "$rdtsc"
ratio "rdtsc pair, 2 threads (each)" "$rdtsc2" "rdtsc pair" "$rdtsc" 0 0 "-"
ratio "hotscope scope, 1 thread" "$scope1" "rdtsc pair" "$rdtsc" 0 1.3 "<= 1.30"
ratio "hotscope scope, 2 threads (each)" "$scope2" "scope, 1 thread" "$scope1" 0 1.1 "<= 1.10"
ratio "record_allocation (one block)" "$alloc1" "scope, 1 thread" "$scope1" 0 0.5 "<= 0.50"
ratio "queue push + pop (one item)" "$queue1" "scope, 1 thread" "$scope1" 0 1.1 "<= 1.10"
value "std::mutex lock + unlock" "$mutex_plain"
awk -v ns="$lockable_added" 'BEGIN {
  if (ns == "") { printf "%-34s %9s  %-20s %6s  %-9s %s\n", "Lockable: added to that", "-", "-", "-", "<= 25 ns", "not measured"; exit }
  printf "%-34s %9.2f  %-20s %6s  %-9s %s\n", "Lockable: added to that", ns, "(ns more)", "-", "<= 25 ns", ns <= 25 ? "yes" : "NO" }'
value "coroutine resume+suspend, plain" "$resume_plain"
ratio "task slice added to that" "$task_added" "scope, 1 thread" "$scope1" 0 1.5 "<= 1.50"
value "LTTng-UST tracepoint pair" "$lttng_ns"
ratio "hotscope scope, 1 thread" "$scope1" "LTTng pair" "$lttng_ns" 0 0.5 "<= 0.50"
value "workload, no macros" "$plain"
ratio "workload, hotscope compiled out" "$off" "workload, no macros" "$plain" 0.97 1.03 "0.97-1.03"
echo
echo "LTTng: ${emitted:-0} events emitted, $recorded in the trace" \
  "($((trace_bytes / 1048576)) MiB), $discarded discarded$lttng_note"
echo "workload machine code, hotscope compiled out vs no macros: $same_code"
echo "full results: $json"

if [[ "${HOTSCOPE_BENCH_HEAP:-1}" != 0 ]]; then
  echo
  echo "== the heap profiler on an allocation-heavy program (bench/heap.sh)"
  "$repo/bench/heap.sh" --build "$build"
fi
if [[ "${HOTSCOPE_BENCH_AGENT:-1}" != 0 ]]; then
  echo
  echo "== the live agent (bench/agent.sh)"
  "$repo/bench/agent.sh" --build "$build"
fi
