#!/usr/bin/env bash
# The heap profiler on programs nobody here wrote, as the distribution ships them (stripped, no
# frame pointers): native, hotscope full, hotscope sampled (with the debug cache warm, and cold as
# on a program's first run) and heaptrack side by side, rounds interleaved (each round runs every
# program under every tool, the tools' order rotating), so a noisy machine affects each alike.
# Each round also runs the native command a second time, to measure the machine's own noise.
# Prints, per program, the median wall time and CPU time (user + system of every process the tool
# ran) of the native runs, and each tool's ratio to native, then the goals of docs/performance.md
# checked: each run against the native run of its round, the median over the rounds, judged met,
# missed, or within noise (no further off than the native-against-native runs make a median of
# that many rounds move by chance). Then the time the sampled runs took to symbolize at exit, the
# load average, and (without --only) the sampled mode's fixed cost on `python3 -c pass` under
# `hotscope run` (bench/sampled-fixed-cost.sh, 10 rounds per round here: a program that short
# needs the program's own CPU time from wait4, finer than GNU time's 10 ms steps).
#   bench/real-programs.sh [--build DIR] [--rounds N] [--only NAME]
# --build: a CMake build dir that has (or will get) the hotscope_preload target; default
#          build-bench (configured as scripts/bench.sh does); --rounds: interleaved rounds
#          (default 3); --only: one program (cc1plus, python3, sort, perl, xz, git, xz-T2).
# Needs (installed here from Debian if missing): heaptrack, GNU time, g++ (its cc1plus), python3,
# perl, xz-utils, git. Everything the programs read is generated here: a preprocessed C++ file
# from system headers, sort's lines, xz's input, a git repository.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-bench"
rounds=3
only=""
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    *) echo "bench/real-programs.sh: unknown argument '$1' (see the comment at the top)" >&2
      exit 2 ;;
  esac
done

# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
install_packages "$repo/scripts/packages.txt"
install_packages <(printf '%s\n' heaptrack time g++ python3 perl xz-utils git)

configure_bench_build "$build"
cmake --build "$build" --target hotscope_preload hotscope_pprof >/dev/null

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Copies: a rebuild during the run must not change the library under test.
cp "$build/src/libhotscope-preload.so" "$build/src/libhotscope-pprof.so" "$work/"
preload="$work/libhotscope-preload.so"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"

# ---- The programs' inputs ----

# cc1plus: a file of the kind a C++ project compiles, preprocessed once (no include lookups
# timed), compiled at -O2 by the compiler proper. (With <regex> or <future> as well, heaptrack
# 1.4's heaptrack_interpret dies of std::bad_alloc here and the compiler of SIGPIPE.)
cat >"$work/heavy.cpp" <<'EOF'
#include <algorithm>
#include <chrono>
#include <deque>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>
template <class K, class V> using Table = std::map<K, std::vector<V>>;
Table<std::string, int> table;
int main(int argc, char** argv) {
  std::unordered_map<std::string, std::variant<int, double, std::string>> values;
  std::set<std::pair<int, std::string>> ordered;
  std::deque<std::list<double>> lists(4);
  std::mt19937 random(argc);
  for (int i = 0; i < argc; ++i) {
    values[argv[i]] = i;
    ordered.emplace(random() % 100, argv[i]);
    lists[i % 4].push_back(std::uniform_real_distribution<>(0, 1)(random));
  }
  std::ostringstream out;
  for (auto& [key, value] : values) out << std::quoted(key) << value.index();
  std::sort(table["x"].begin(), table["x"].end(), std::greater<>());
}
EOF
g++ -std=c++20 -E "$work/heavy.cpp" -o "$work/heavy.ii"
cc1plus="$(g++ -print-prog-name=cc1plus)"

cat >"$work/roundtrip.py" <<'EOF'
import json
records = [{"id": i, "name": "item%d" % i, "tags": ["t%d" % (i % 7), "x"], "value": i * 0.5}
           for i in range(60000)]
for _ in range(3):
    text = json.dumps(records)
    records = json.loads(text)
print(len(text))
EOF

cat >"$work/hash.pl" <<'EOF'
my %h;
for my $i (1 .. 400000) { $h{"key$i"} = [$i, "value$i"]; }
my $sum = 0;
for my $k (keys %h) { $sum += $h{$k}[0]; delete $h{$k} if $sum % 3 == 0; }
print scalar(keys %h), "\n";
EOF

awk 'BEGIN { srand(1); for (i = 0; i < 400000; ++i) printf "%08d line %d %s\n", int(rand() * 1e8), i, substr("abcdefghij", 1 + i % 10) }' \
  >"$work/lines.txt"
for _ in 1 2 3; do cat "$work/heavy.ii"; done >"$work/xz-input"

git_repo="$work/repository"
git init -q "$git_repo"
(
  cd "$git_repo"
  git config user.name bench && git config user.email bench@localhost
  for ((commit = 0; commit < 150; ++commit)); do
    for ((file = 0; file < 6; ++file)); do
      seq "$commit" "$((commit * 7 + file * 50 + 400))" >"file$file.txt"
    done
    git add -A && git commit -qm "commit $commit"
  done
)

declare -A commands=(
  [cc1plus]="$cc1plus -quiet -O2 -std=c++20 $work/heavy.ii -o /dev/null"
  [python3]="/usr/bin/python3 $work/roundtrip.py"
  [sort]="sort $work/lines.txt"
  [perl]="perl $work/hash.pl"
  [xz]="xz -6 -c $work/xz-input"
  [git]="git -C $git_repo log -p --stat"
  [xz-T2]="xz -6 -T2 -c $work/xz-input"
)
programs=(cc1plus python3 sort perl xz git xz-T2)
if [[ -n "$only" ]]; then
  [[ -v "commands[$only]" ]] || { echo "bench/real-programs.sh: no program '$only'" >&2; exit 2; }
  programs=("$only")
fi
# sampled-cold: the sampled mode with an empty debug cache, as a program's first run on a machine
# (every compressed debug file it needs is inflated, and written to the cache); the other hotscope
# runs share a cache the warm-up below filled, as every later run finds it.
# native-again: the native run once more, so the rounds measure this machine's own noise (an A/A
# comparison) beside each tool's cost.
tools=(native native-again full sampled sampled-cold heaptrack)

run() { # program tool -> "wall_s cpu_s", or nothing (and a line on stderr) when it failed
  local out="$work/out-$1-$2" prefix=()
  rm -rf "$out" "$work/cold-cache" && mkdir -p "$out"
  local hotscope=(env LD_PRELOAD="$preload" HOTSCOPE_OUT="$out" XDG_CACHE_HOME="$work/cache")
  case "$2" in
    native | native-again) prefix=() ;;
    full) prefix=("${hotscope[@]}") ;;
    sampled) prefix=("${hotscope[@]}" HOTSCOPE_HEAP_MODE=sampled) ;;
    sampled-cold) prefix=("${hotscope[@]}" XDG_CACHE_HOME="$work/cold-cache" HOTSCOPE_HEAP_MODE=sampled) ;;
    heaptrack) prefix=(heaptrack -o "$out/heaptrack") ;;
  esac
  local start="$EPOCHREALTIME" # GNU time's %e has only 10 ms steps
  # shellcheck disable=SC2086 # the command line is split into words on purpose
  if ! /usr/bin/time -f '%U %S' -o "$work/time" "${prefix[@]}" ${commands[$1]} >/dev/null \
    2>"$out/stderr"; then
    echo "$1 under $2 failed: $(grep -v '^Command exited' "$out/stderr" | tail -2 | tr '\n' ' ')" \
      "($(tail -1 "$work/time"))" >&2
    return 0
  fi
  local end="$EPOCHREALTIME"
  grep -h 'symbolized' "$out/stderr" >>"$work/$1-$2.symbolized" || true
  awk -v start="$start" -v end="$end" '{ printf "%.3f %.2f\n", end - start, $1 + $2 }' "$work/time"
}

echo "warming the debug cache: one sampled run of each program (not timed)"
for program in "${programs[@]}"; do
  run "$program" sampled >/dev/null
  rm -f "$work/$program-sampled.symbolized"
done

for ((round = 0; round < rounds; ++round)); do
  for program in "${programs[@]}"; do
    for ((i = 0; i < ${#tools[@]}; ++i)); do
      tool="${tools[$(((i + round) % ${#tools[@]}))]}"
      run "$program" "$tool" | sed "s/^/$program $tool $round /" >>"$work/runs"
    done
  done
done

# Each run is compared with the native run of its own round, which ran next to it: on this kind
# of machine the speed drifts between rounds, and medians taken per tool would keep the drift.
python3 - "$work/runs" "$rounds" "${programs[@]}" <<'PYTHON'
import collections
import math
import statistics
import sys

runs_file, rounds, programs = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = collections.defaultdict(dict)  # (program, tool) -> round -> (wall, cpu)
with open(runs_file) as lines:
    for line in lines:
        program, tool, round_, wall, cpu = line.split()
        runs[program, tool][round_] = (float(wall), float(cpu))


def pairs(program, tool, compare):
    """compare(tool's run, native run) for each round that has both, each with its own round's."""
    native = runs[program, "native"]
    return [compare(run, native[r]) for r, run in runs[program, tool].items() if r in native]


def ratio(program, tool, column):
    values = pairs(program, tool, lambda run, native: run[column] / max(native[column], 0.01))
    return statistics.median(values) if values else None


def added(program, tool, column):
    values = pairs(program, tool, lambda run, native: run[column] - native[column])
    return statistics.median(values) if values else None


def noise(program, column):
    """How far a median over the rounds of paired differences moves by chance alone, in seconds:
    twice its standard error, from the spread of native-again against native (the A/A
    comparison; 1.4826 × the median absolute deviation estimates a standard deviation, and the
    median of n values has about 1.2533 × sd / sqrt(n) of standard error)."""
    differences = pairs(program, "native-again", lambda run, native: run[column] - native[column])
    if len(differences) < 3:
        return math.inf
    center = statistics.median(differences)
    spread = 1.4826 * statistics.median(abs(d - center) for d in differences)
    return 2 * 1.2533 * spread / math.sqrt(len(differences))


def verdict(excess, margin):
    """met when nothing is in excess of the goal; within noise when the excess is no larger than
    chance alone makes it (the goal can be neither confirmed nor refuted at this noise)."""
    if excess <= 0:
        return "met"
    return "within noise (±%.3f s)" % margin if excess <= margin else "missed"


tools = ["native-again", "full", "sampled", "sampled-cold", "heaptrack"]
print()
print("| program | native wall / CPU | native again | hotscope full | hotscope sampled"
      " | sampled, cache cold | heaptrack |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for program in programs:
    native = list(runs[program, "native"].values())
    cells = ["%.3f s / %.2f s" % (statistics.median(w for w, _ in native),
                                  statistics.median(c for _, c in native)) if native else "failed"]
    for tool in tools:
        wall, cpu = ratio(program, tool, 0), ratio(program, tool, 1)
        cells.append("failed" if wall is None else "%.2f × / %.2f ×" % (wall, cpu))
    print("| %s | %s |" % (program, " | ".join(cells)))
print()
print("(wall × native / CPU × native: of each round's run against that round's native run, the")
print("median over %s interleaved rounds; CPU is user + system of every process the tool ran," % rounds)
print("heaptrack_interpret included. native again: the same native command once more, this")
print("machine's own noise)")
print()
print("Goals (met; missed; or within noise: off the goal by no more than twice the standard error")
print("that the native-against-native runs give a median of this many rounds):")
for program in programs:
    if any(added(program, tool, 0) is None for tool in tools):
        print("  %-8s a tool failed in every round: no comparison" % program)
        continue
    goals = []
    for column, name in ((0, "wall"), (1, "CPU")):
        ours, theirs = added(program, "full", column), added(program, "heaptrack", column)
        goals.append("%.2f s %s (heaptrack %.2f: %s)" %
                     (ours, name, theirs, verdict(ours - theirs / 2, noise(program, column))))
    native_wall = statistics.median(w for w, _ in runs[program, "native"].values())
    native_cpu = statistics.median(c for _, c in runs[program, "native"].values())
    limit = 1.05 if native_wall >= 1 else 1.10
    sampled = [ratio(program, "sampled", column) for column in (0, 1)]
    cold = [ratio(program, "sampled-cold", column) for column in (0, 1)]
    sampled_verdicts = [verdict((sampled[column] - limit) * base, noise(program, column))
                        for column, base in ((0, native_wall), (1, native_cpu))]
    print("  %-8s full adds %s, %s; sampled %.3f × native wall, %.3f × CPU (goal %.2f: %s, %s);"
          " cache cold %.3f × wall, %.3f × CPU" %
          (program, goals[0], goals[1], sampled[0], sampled[1], limit, sampled_verdicts[0],
           sampled_verdicts[1], cold[0], cold[1]))
PYTHON
echo
echo "Symbolization at exit (sampled runs, every frame resolved there; the last run of each):"
for program in "${programs[@]}"; do
  for tool in sampled sampled-cold; do
    if [[ -f "$work/$program-$tool.symbolized" ]]; then
      sed "s/^/  $program ($tool): /" "$work/$program-$tool.symbolized" | tail -1
    fi
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
if [[ -z "$only" ]]; then
  echo
  echo "The sampled mode's fixed cost:"
  "$repo/bench/sampled-fixed-cost.sh" --build "$build" --rounds "$((rounds * 10))"
fi
