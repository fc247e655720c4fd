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
