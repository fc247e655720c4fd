#!/usr/bin/env bash
# Where the sampled mode's fixed cost goes: `python3 -c pass` natively and under `hotscope run
# --heap` (sampled), alternating, all under one `perf record` of the CPU clock (kernel included,
# which callgrind does not count). The native runs start through a link named python3-native, so
# that the samples of the two tell apart by command name; the profiled program's samples are those
# of python3 and of the profiler's threads in it (hotscope-agent, hotscope-signal, hotscope-drain),
# not the launcher's (hotscope). Prints, for each, the samples in user code, in page faults and in
# each system call, and the differences: perf's own overhead inflates both sides alike, so the
# shares of the difference are what to read, not the times.
#   bench/fixed-cost-breakdown.sh [--build DIR] [--runs N]
# --build: a CMake build dir with tools/hotscope/hotscope and src/libhotscope-*.so (default
#          build-bench, configured as scripts/bench.sh does); --runs: pairs of runs (default 80).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-bench"
runs=80
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    *) echo "bench/fixed-cost-breakdown.sh: unknown argument '$1' (see the comment at the top)" >&2
      exit 2 ;;
  esac
done

# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
install_packages "$repo/scripts/packages.txt"
install_packages <(printf '%s\n' python3 linux-perf)
if [[ -f "$build/CMakeCache.txt" || ! -x "$build/tools/hotscope/hotscope" ]]; then
  configure_bench_build "$build"
  cmake --build "$build" --target hotscope_cli hotscope_preload hotscope_run hotscope_pprof >/dev/null
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
ln -s "$(readlink -f /usr/bin/python3)" "$work/python3-native"
export XDG_CACHE_HOME="$work/cache"
cat >"$work/runs.sh" <<SH
for ((i = 0; i < $runs; ++i)); do
  "$work/python3-native" -c pass
  HOTSCOPE_HEAP_MODE=sampled "$build/tools/hotscope/hotscope" run --heap --no-summary \
    --out "$work/out" -- /usr/bin/python3 -c pass
done
SH
bash "$work/runs.sh" >/dev/null 2>&1 # warms the debug cache and the page cache
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
perf record -q -e cpu-clock -F 25000 -g -o "$work/perf.data" bash "$work/runs.sh" >/dev/null 2>&1
perf script -i "$work/perf.data" -F comm,ip,sym,dso 2>/dev/null >"$work/samples.txt"

python3 - "$work/samples.txt" <<'PY'
import collections, re, sys
PROGRAM = {"python3", "hotscope-agent", "hotscope-signal", "hotscope-drain"}
counts = {"native": collections.Counter(), "sampled": collections.Counter()}
def place(frames):
    """user, page fault, or the outermost system call of a sample's kernel frames"""
    if not frames or not frames[0][1].startswith("[kernel"):
        return "user code"
    where = "kernel, other"
    for symbol, dso in frames:
        if not dso.startswith("[kernel"):
            break
        if symbol == "exc_page_fault":
            where = "page faults"
        elif re.match(r"(__(x64|do)_sys|ksys)_", symbol):  # ksys_: where the entry is inlined
            call = re.sub(r"^(__(x64|do)_sys|ksys)_", "", symbol)
            where = "system call " + ("mmap" if call == "mmap_pgoff" else call)
        elif symbol == "vm_mmap_pgoff":
            where = "system call mmap"
    return where
comm, frames = None, []
def flush():
    side = "native" if comm == "python3-native" else "sampled" if comm in PROGRAM else None
    if side:
        counts[side][place(frames)] += 1
for line in open(sys.argv[1]):
    if not line.strip():
        flush(); comm, frames = None, []
    elif not line[0].isspace():
        comm, frames = line.split()[0], []
    else:
        parts = line.split(None, 2)
        if len(parts) >= 2:
            frames.append((re.sub(r"\+0x[0-9a-f]+$", "", parts[1]),
                           parts[2].strip().strip("()") if len(parts) > 2 else ""))
flush()
native, sampled = (sum(counts[s].values()) for s in ("native", "sampled"))
extra = sampled - native
print("samples: native %d, sampled %d (%.2fx); the difference, %d, by where it went:"
      % (native, sampled, sampled / native, extra))
print("| where | native | sampled | difference | share of it |")
print("| --- | ---: | ---: | ---: | ---: |")
rows = set(counts["native"]) | set(counts["sampled"])
for row in sorted(rows, key=lambda r: counts["native"][r] - counts["sampled"][r])[:14]:
    d = counts["sampled"][row] - counts["native"][row]
    print("| %s | %d | %d | %+d | %.0f %% |" % (row, counts["native"][row], counts["sampled"][row],
                                           d, 100.0 * d / extra))
PY
