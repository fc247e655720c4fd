#!/usr/bin/env bash
# The sampled mode's fixed cost: `python3 -c pass` natively and under `hotscope run --heap` in the
# sampled mode (the preload library, the runtime's live agent, the profile at exit), rounds
# interleaved, each round also running the native command a second time (the A/A noise of
# bench/real-programs.sh). Prints the medians of the program's CPU time (user + system), peak
# RSS and minor page faults (the least noisy of the three on a shared machine), measured inside
# the run (the program alone, not the launcher: getrusage of its process by wait4, as GNU time's
# CPU times have 10 ms steps; under `hotscope run` the launcher's own wait4, which `--usage FILE`
# writes: the program is its child, as in every use), and their ratios and differences to native.
# The native runs' parent is a small C program that only forks, execs and waits, as a shell does:
# started by Python's subprocess instead, the program's own CPU time was 0.17 ms higher.
# The debug cache is warmed first, as every run after a program's first finds it.
#   bench/sampled-fixed-cost.sh [--build DIR] [--before DIR] [--parts] [--rounds N] [-- COMMAND...]
# --build: a CMake build dir (default build-bench, configured as scripts/bench.sh does), or a
#          directory with another build's tools/hotscope/hotscope and src/libhotscope-*.so (a
#          change's before);
# --before: such a directory of another build, whose libraries run sampled in the same rounds
#           under this build's launcher (a change's before and after side by side, under the same
#           load);
# --parts: rows for the parts of the cost too, in the same rounds: the runtime
#          (libhotscope-run.so) preloaded alone, with and without its agent (HOTSCOPE_AGENT=0),
#          and `hotscope run` sampled with the runtime preloaded at start (HOTSCOPE_RUNTIME_AT=
#          start) instead of loaded at a first client, which no one is here;
# --rounds: interleaved rounds (default 15); COMMAND: the program (default python3 -c pass).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-bench"
before=""
parts=0
rounds=15
command=(/usr/bin/python3 -c pass)
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --before) before="$2"; shift 2 ;;
    --parts) parts=1; shift ;;
    --rounds) rounds="$2"; shift 2 ;;
    --) shift; command=("$@"); break ;;
    *) echo "bench/sampled-fixed-cost.sh: unknown argument '$1' (see the comment at the top)" >&2
      exit 2 ;;
  esac
done

# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
install_packages "$repo/scripts/packages.txt"
install_packages <(printf '%s\n' python3)
if [[ -f "$build/CMakeCache.txt" || ! -x "$build/tools/hotscope/hotscope" ]]; then
  configure_bench_build "$build"
  cmake --build "$build" --target hotscope_cli hotscope_preload hotscope_run hotscope_pprof >/dev/null
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Copies: a rebuild during the run must not change the libraries under test.
cp "$build/tools/hotscope/hotscope" "$build"/src/libhotscope-{preload,run,pprof}.so "$work/"
export XDG_CACHE_HOME="$work/cache"
# The program's own CPU time, peak RSS (KiB) and minor faults, from the rusage wait4 returns:
#   measure FILE PROGRAM ARGUMENTS...   (its standard output to /dev/null; CHILD_PRELOAD: the
# program's LD_PRELOAD)
cat >"$work/measure.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const pid_t child = fork();
  if (child == 0) {
    const char* preload = getenv("CHILD_PRELOAD");
    if (preload != NULL) setenv("LD_PRELOAD", preload, 1);
    dup2(open("/dev/null", O_WRONLY), 1);
    execvp(argv[2], argv + 2);
    _exit(127);
  }
  int status = 0;
  struct rusage usage;
  if (child < 0 || wait4(child, &status, 0, &usage) != child) return 1;
  FILE* out = fopen(argv[1], "w");
  if (out == NULL) return 1;
  fprintf(out, "%.6f %ld %ld\n",
          usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
              (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6,
          usage.ru_maxrss, usage.ru_minflt);
  fclose(out);
  return status == 0 ? 0 : 1;
}
C
cc -O2 -o "$work/measure" "$work/measure.c"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"

if [[ -n "$before" ]]; then
  mkdir "$work/before"
  cp "$before"/src/libhotscope-{preload,run,pprof}.so "$work/before/"
fi

run() { # tool -> "cpu_s peak_kib minor_faults" of the program alone
  local from="$work"
  rm -rf "$work/out"
  [[ "$1" == sampled-before ]] && from="$work/before"
  local runtime="$from/libhotscope-run.so" runtime_at=first-client
  [[ "$1" == sampled-runtime-at-start ]] && runtime_at=start
  if [[ "$1" == sampled* ]]; then
    env HOTSCOPE_HEAP_MODE=sampled HOTSCOPE_PRELOAD="$from/libhotscope-preload.so" \
      HOTSCOPE_RUN_PRELOAD="$runtime" HOTSCOPE_RUNTIME_AT="$runtime_at" \
      "$work/hotscope" run --heap --no-summary \
      --usage "$work/time" --out "$work/out" -- "${command[@]}" >/dev/null
  elif [[ "$1" == runtime* ]]; then
    env CHILD_PRELOAD="$runtime" HOTSCOPE_AGENT="$([[ "$1" == runtime ]] && echo 1 || echo 0)" \
      "$work/measure" "$work/time" "${command[@]}"
  else
    "$work/measure" "$work/time" "${command[@]}"
  fi
  cat "$work/time"
}

run sampled >/dev/null # warms the debug cache
compgen -G "$work/out/heap*.json" >/dev/null ||
  { echo "bench/sampled-fixed-cost.sh: the program wrote no heap profile" >&2; exit 1; }
tools=(native native-again sampled)
if [[ -n "$before" ]]; then
  run sampled-before >/dev/null
  tools+=(sampled-before)
fi
((parts)) && tools+=(runtime-no-agent runtime sampled-runtime-at-start)
for ((round = 0; round < rounds; ++round)); do
  for ((i = 0; i < ${#tools[@]}; ++i)); do
    tool="${tools[(i + round) % ${#tools[@]}]}"
    echo "$tool $round $(run "$tool")" >>"$work/results"
  done
done

python3 - "$work/results" "${command[*]}" <<'PY'
import math, statistics, sys
runs = {}  # tool -> round -> (cpu, rss, faults)
for line in open(sys.argv[1]):
    tool, round_, cpu, rss, faults = line.split()
    runs.setdefault(tool, {})[round_] = (float(cpu), int(rss), int(faults))
median = lambda tool, i: statistics.median(r[i] for r in runs[tool].values())
cpu0, rss0, faults0 = (median("native", i) for i in range(3))
print("%s, medians of %d rounds:" % (sys.argv[2], len(runs["native"])))
print("| run | CPU | × native | peak RSS | + native | page faults | + native |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for tool in ("native", "native-again", "runtime-no-agent", "runtime", "sampled-runtime-at-start",
             "sampled-before", "sampled"):
    if tool not in runs:
        continue
    cpu, rss, faults = (median(tool, i) for i in range(3))
    print("| %s | %.1f ms | %.3f | %.1f MiB | %+.1f MiB | %d | %+d |"
          % (tool, cpu * 1e3, cpu / cpu0, rss / 1024, (rss - rss0) / 1024, faults,
             faults - faults0))
# The goals, as bench/real-programs.sh judges them: each run against the native run of its own
# round, the median over the rounds; "within noise" when the excess is no larger than twice the
# standard error of such a median that native-again against native shows (the A/A comparison).
def paired(tool):
    native = runs["native"]
    return [run[0] - native[r][0] for r, run in runs[tool].items() if r in native]
aa = paired("native-again")
center = statistics.median(aa)
margin = 2 * 1.2533 * 1.4826 * statistics.median(abs(d - center) for d in aa) / math.sqrt(len(aa))
added = statistics.median(paired("sampled"))
excess = added - 0.05 * cpu0
verdict = "met" if excess <= 0 else "within noise" if excess <= margin else "missed"
print("goal 1.05× the CPU: %s (sampled adds %.2f ms a run, the median of its rounds against their"
      " native run: %.3f×; 5 %% is %.2f ms; the A/A noise ±%.2f ms)"
      % (verdict, added * 1e3, 1 + added / cpu0, 0.05 * cpu0 * 1e3, margin * 1e3))
rss_added = (median("sampled", 1) - rss0) / 1024
print("goal +8 MiB of peak RSS: %s (+%.1f MiB)" % ("met" if rss_added <= 8 else "missed", rss_added))
PY
