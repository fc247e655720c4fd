#!/usr/bin/env bash
# The README's test command, and what CI runs: installs what is missing, then builds and tests
# every configuration: the normal build (all tests), ASan+UBSan (all but packaging), TSan (the
# concurrent parts), the disabled build (HOTSCOPE_ENABLE=OFF), the build without the agent
# (HOTSCOPE_AGENT=OFF: the library, the demo and the runtime tests), the formatting check, and a
# bounded libFuzzer run on the guest batch validator and on the agent's HTTP request parser.
# TSan runs the tests labelled `concurrent` (tests/CMakeLists.txt); those whose forked child
# records skip themselves there (tests/support/forked_child_skips.hpp). Nor does it run the stack
# capture's tests (StackCache, HeapCapture): a thread that unwound with libunwind ends in
# libunwind's thread-specific-data destructor, which locks a mutex after TSan tore the thread's
# state down, and TSan's runtime crashes there (GCC 12).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
install_packages scripts/packages.txt

# Each step says when it starts, so that a run's log tells where its time went.
step() { printf '\n=== %s (at %d s) ===\n' "$*" "$SECONDS"; }
# Each configuration is a preset of CMakePresets.json: `cmake --preset asan && cmake --build
# --preset asan && ctest --preset asan` runs one of them alone.
configure() { # configure PRESET
  cmake --preset "$1" -Wno-dev >"build/$1.configure.log" 2>&1 ||
    { cat "build/$1.configure.log"; return 1; }
}
mkdir -p build

step "formatting (clang-format --dry-run)"
git ls-files '*.cpp' '*.hpp' '*.h' | xargs clang-format --dry-run -Werror

step "disabled build: HOTSCOPE_ENABLE=OFF"
configure disabled
cmake --build --preset disabled
ctest --preset disabled

step "build without the agent: HOTSCOPE_AGENT=OFF"
configure no-agent
cmake --build --preset no-agent
ctest --preset no-agent

step "ASan + UBSan build"
configure asan
cmake --build --preset asan
ctest --preset asan

step "TSan build: the concurrent parts"
configure tsan
cmake --build --preset tsan
ctest --preset tsan

step "fuzzing: the guest batch validator, the CLI's readers and the agent's request parser (clang, libFuzzer, bounded)"
# Only the fuzzers' targets are built. New inputs go to build/fuzz/corpus*; the committed seeds
# are read only. docs/guest.md, docs/diff-and-report.md and docs/agent.md say how to run them longer.
configure fuzz
cmake --build --preset fuzz
# The guest batch validator's 40 s run beside the others, on the second core; its output
# follows theirs.
mkdir -p build/fuzz/corpus build/fuzz/corpus-request
build/fuzz/tests/guest/guest_batch_fuzzer -runs=200000 -max_total_time=40 -print_final_stats=1 \
  build/fuzz/corpus tests/guest/corpus >build/fuzz/guest_batch_fuzzer.log 2>&1 &
guest_fuzzer=$!
for reader in stats_json heap_json folded; do
  mkdir -p build/fuzz/corpus-$reader
  build/fuzz/tests/cli/cli_${reader}_fuzzer -runs=100000 -max_total_time=10 -max_len=65536 \
    -rss_limit_mb=2048 -print_final_stats=1 build/fuzz/corpus-$reader tests/cli/corpus/${reader%_json}
done
build/fuzz/tests/agent/agent_request_fuzzer -max_total_time=10 -print_final_stats=1 \
  build/fuzz/corpus-request tests/agent/corpus
guest_fuzzer_status=0
wait "$guest_fuzzer" || guest_fuzzer_status=$?
cat build/fuzz/guest_batch_fuzzer.log
[ "$guest_fuzzer_status" -eq 0 ]

step "release build: every test"
configure release
cmake --build --preset release
ctest --preset release
step "all passed"
