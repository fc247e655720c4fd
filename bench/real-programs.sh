#!/usr/bin/env bash
# The heap profiler on programs nobody here wrote, as the distribution ships them (stripped, no
# frame pointers): native, hotscope full, hotscope sampled (with the debug cache warm, and cold as
# on a program's first run) and heaptrack side by side, rounds interleaved (each round runs every
# program under every tool, the tools' order rotating), so a noisy machine affects each alike. Prints, per program, the median wall time and CPU time (user +
# system of every process the tool ran) and each tool's ratio to native, then the goals of
# docs/performance.md checked against them, the time the sampled runs took to symbolize at exit,
# and the load average.
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
tools=(native full sampled sampled-cold heaptrack)

run() { # program tool -> "wall_s cpu_s", or nothing (and a line on stderr) when it failed
  local out="$work/out-$1-$2" prefix=()
  rm -rf "$out" "$work/cold-cache" && mkdir -p "$out"
  local hotscope=(env LD_PRELOAD="$preload" HOTSCOPE_OUT="$out" XDG_CACHE_HOME="$work/cache")
  case "$2" in
    native) prefix=() ;;
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
      run "$program" "$tool" >>"$work/$program-$tool.times" # created even when it fails
    done
  done
done

median() { # file column; "nan" when every run failed
  sort -g -k"$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print NR ? v[int((NR + 1) / 2)] : "nan" }'
}

echo
echo "| program | native wall / CPU | hotscope full | hotscope sampled | sampled, cache cold | heaptrack |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for program in "${programs[@]}"; do
  line="| $program | $(median "$work/$program-native.times" 1) s / $(median "$work/$program-native.times" 2) s"
  for tool in full sampled sampled-cold heaptrack; do
    line+="$(awk -v w="$(median "$work/$program-$tool.times" 1)" \
      -v nw="$(median "$work/$program-native.times" 1)" \
      -v c="$(median "$work/$program-$tool.times" 2)" \
      -v nc="$(median "$work/$program-native.times" 2)" \
      'BEGIN {
        if (w == "nan") printf " | failed"; else printf " | %.2f × / %.2f ×", w / nw, c / (nc > 0 ? nc : 0.01)
      }')"
  done
  echo "$line |"
done
echo
echo "(wall × native / CPU × native, medians of $rounds interleaved rounds; CPU is user + system"
echo "of every process the tool ran, heaptrack_interpret included)"

echo
echo "Goals:"
for program in "${programs[@]}"; do
  awk -v p="$program" \
    -v nw="$(median "$work/$program-native.times" 1)" -v nc="$(median "$work/$program-native.times" 2)" \
    -v fw="$(median "$work/$program-full.times" 1)" -v fc="$(median "$work/$program-full.times" 2)" \
    -v sw="$(median "$work/$program-sampled.times" 1)" -v sc="$(median "$work/$program-sampled.times" 2)" \
    -v kw="$(median "$work/$program-sampled-cold.times" 1)" \
    -v kc="$(median "$work/$program-sampled-cold.times" 2)" \
    -v hw="$(median "$work/$program-heaptrack.times" 1)" \
    -v hc="$(median "$work/$program-heaptrack.times" 2)" 'BEGIN {
      if (hw == "nan") { printf "  %-8s heaptrack failed: no comparison\n", p; exit }
      wall_ok = fw - nw <= (hw - nw) / 2; cpu_ok = fc - nc <= (hc - nc) / 2
      limit = nw >= 1 ? 1.05 : 1.10
      printf "  %-8s full adds %.2f s wall (heaptrack %.2f: %s), %.2f s CPU (heaptrack %.2f: %s);",
        p, fw - nw, hw - nw, wall_ok ? "met" : "missed", fc - nc, hc - nc, cpu_ok ? "met" : "missed"
      printf " sampled %.3f × native wall, %.3f × CPU (goal %.2f: %s, %s)", sw / nw, sc / nc, limit,
        sw / nw <= limit ? "met" : "missed", sc / nc <= limit ? "met" : "missed"
      printf "; cache cold %.3f × wall, %.3f × CPU\n", kw / nw, kc / nc
    }'
done

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
