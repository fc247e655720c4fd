# shellcheck shell=bash
# Shared helpers for scripts/*.sh; source it, do not run it.

# install_packages FILE: installs the Debian packages listed in FILE (one per line, '#' starts a
# comment) that are not installed yet. Checking with dpkg-query first keeps this instant when
# everything is present; apt-get update runs at most once, and only if something is missing.
install_packages() {
  local file="$1" line package
  local -a missing=()
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line%%#*}"
    for package in $line; do
      if [[ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" != "install ok installed" ]]; then
        missing+=("$package")
      fi
    done
  done <"$file"
  if ((${#missing[@]} == 0)); then
    return 0
  fi

  local -a sudo=()
  if ((EUID != 0)); then
    if ! command -v sudo >/dev/null; then
      echo "missing packages: ${missing[*]} (run as root, or install them: apt-get install ${missing[*]})" >&2
      return 1
    fi
    sudo=(sudo)
  fi
  echo "installing: ${missing[*]}" >&2
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

# configure_bench_build DIR [CMAKE_ARGS...]: the Release build the benchmarks share, configured
# once the way scripts/bench.sh wants it (benchmarks on, tests and examples off); CMAKE_ARGS,
# if any, are then applied on top (bench/agent.sh adds the examples).
configure_bench_build() {
  local dir="$1" repo
  shift
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [[ ! -f "$dir/CMakeCache.txt" ]]; then
    cmake -S "$repo" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHOTSCOPE_ENABLE=ON \
      -DHOTSCOPE_BUILD_BENCH=ON -DHOTSCOPE_BUILD_TESTS=OFF -DHOTSCOPE_BUILD_EXAMPLES=OFF >/dev/null
  fi
  if (($#)); then
    cmake -S "$repo" -B "$dir" "$@" >/dev/null
  fi
}

# median: the middle one of the numbers on standard input, one per line.
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# demo_throughput DEMO_OUTPUT TIME_FILE: "requests/s requests-per-CPU-second" of one hotscope-demo
# run, from its "served N of M requests in S s (R/s)" line and /usr/bin/time -f '%U %S'.
demo_throughput() {
  local served
  served="$(sed -n 's/^served \([0-9]*\) of .*/\1/p' "$1")"
  awk -v served="$served" -v per_s="$(sed -n 's/.*requests in [0-9.]* s (\([0-9]*\)\/s).*/\1/p' \
    "$1")" '{ printf "%s %.0f\n", per_s, served / ($1 + $2) }' "$2"
}

# interleave REPEATS COMMAND PREFIX: runs `COMMAND 0` and `COMMAND 1` REPEATS times each, the
# order alternating every round so that a drift in the machine's load favours neither; their
# outputs go to PREFIX-0 and PREFIX-1, one line per run.
interleave() {
  local round setting
  for ((round = 0; round < $1; ++round)); do
    for setting in $( ((round % 2 == 0)) && echo 0 1 || echo 1 0); do
      "$2" "$setting" >>"$3-$setting"
    done
  done
}

# compare_settings PREFIX LABEL0 LABEL1: the medians of interleave's runs of demo_throughput,
# setting 0 against setting 1 with the change in %, and every run.
compare_settings() {
  local column off on unit
  for column in 1 2; do
    off="$(cut -d' ' -f"$column" "$1-0" | median)"
    on="$(cut -d' ' -f"$column" "$1-1" | median)"
    unit="requests/s"
    ((column == 2)) && unit="requests per CPU second (user + system)"
    echo "  $unit: $2 $off, $3 $on," \
      "$(awk -v on="$on" -v off="$off" 'BEGIN { printf "%+.2f %%", 100 * (on - off) / off }')"
    echo "    runs with $2: $(cut -d' ' -f"$column" "$1-0" | tr '\n' ' ')"
    echo "    runs with $3: $(cut -d' ' -f"$column" "$1-1" | tr '\n' ' ')"
  done
}
