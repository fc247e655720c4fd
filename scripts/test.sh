#!/usr/bin/env bash
# The README's test command, and what CI runs: installs what is missing, then builds and tests
# every configuration: the normal build (all tests), ASan+UBSan (all but packaging), TSan (the
# concurrent parts), the disabled build (HOTSCOPE_ENABLE=OFF), the build without the agent
# (HOTSCOPE_AGENT=OFF: the library, the demo and the runtime tests), the formatting check, and a
# bounded libFuzzer run on the guest batch validator and on the agent's HTTP request parser.
# TSan skips the forked-child tests: TSan does not support threads in a child forked from a
# multi-threaded process (it reports its own "dup thread" error there). Nor does it run the stack
# capture's tests (StackCache, HeapCapture): a thread that unwound with libunwind ends in
# libunwind's thread-specific-data destructor, which locks a mutex after TSan tore the thread's
# state down, and TSan's runtime crashes there (GCC 12).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
install_packages scripts/packages.txt

step() { printf '\n=== %s ===\n' "$*"; }
configure() { # configure BUILD_DIR CMAKE_ARGS...
  local dir="$1"
  shift
  cmake -S . -B "$dir" -G Ninja -Wno-dev "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
}
mkdir -p build

step "formatting (clang-format --dry-run)"
git ls-files '*.cpp' '*.hpp' '*.h' | xargs clang-format --dry-run -Werror

step "disabled build: HOTSCOPE_ENABLE=OFF"
configure build/disabled -DHOTSCOPE_ENABLE=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
ninja -C build/disabled
ctest --test-dir build/disabled --output-on-failure

step "build without the agent: HOTSCOPE_AGENT=OFF"
configure build/no-agent -DHOTSCOPE_AGENT=OFF -DHOTSCOPE_HEAP=OFF -DHOTSCOPE_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
ninja -C build/no-agent hotscope hotscope-demo core_runtime_test
ctest --test-dir build/no-agent --output-on-failure -R 'Runtime\.'

step "ASan + UBSan build"
configure build/asan -DCMAKE_BUILD_TYPE=Debug -DHOTSCOPE_SANITIZE=address,undefined \
  -DHOTSCOPE_BUILD_BENCH=OFF
ninja -C build/asan
ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build/asan --output-on-failure -j2 -LE 'package|viewer'

step "TSan build: the concurrent parts"
configure build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOTSCOPE_SANITIZE=thread \
  -DHOTSCOPE_BUILD_BENCH=OFF
ninja -C build/tsan
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build/tsan --output-on-failure -j2 -LE package \
  -R 'Runtime|ExitPaths|Demo|AgentServer|AnswerBudget|GuestTrace|HeapEvents|HeapRecorder|QueueProgram|TaskRuntime|AsioTracking|TasksProgram' \
  -E 'AForkedChild|ForkedChildren'

step "fuzzing: the guest batch validator, the CLI's readers and the agent's request parser (clang, libFuzzer, bounded)"
# Only the fuzzers' targets are built. New inputs go to build/fuzz/corpus*; the committed seeds
# are read only. docs/guest.md, docs/diff-and-report.md and docs/agent.md say how to run them longer.
CC=clang-14 CXX=clang++-14 configure build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHOTSCOPE_FUZZ=ON -DHOTSCOPE_HEAP=OFF -DHOTSCOPE_BUILD_BENCH=OFF
ninja -C build/fuzz guest_batch_fuzzer cli_stats_json_fuzzer cli_heap_json_fuzzer cli_folded_fuzzer \
  agent_request_fuzzer
mkdir -p build/fuzz/corpus build/fuzz/corpus-request
build/fuzz/tests/guest/guest_batch_fuzzer -runs=200000 -max_total_time=60 -print_final_stats=1 \
  build/fuzz/corpus tests/guest/corpus
for reader in stats_json heap_json folded; do
  mkdir -p build/fuzz/corpus-$reader
  build/fuzz/tests/cli/cli_${reader}_fuzzer -runs=100000 -max_total_time=15 -max_len=65536 \
    -rss_limit_mb=2048 -print_final_stats=1 build/fuzz/corpus-$reader tests/cli/corpus/${reader%_json}
done
build/fuzz/tests/agent/agent_request_fuzzer -max_total_time=20 -print_final_stats=1 \
  build/fuzz/corpus-request tests/agent/corpus

step "release build: every test"
configure build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo
ninja -C build/release
ctest --test-dir build/release --output-on-failure -j2
