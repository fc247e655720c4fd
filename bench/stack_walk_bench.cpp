// One stack of 32 frames walked three ways, side by side in one run (docs/performance.md,
// "Walking the stacks"): by the frames' .eh_frame rules with their cache warm (the heap
// library's walk), by libgcc's _Unwind_Backtrace, and by libunwind's unw_backtrace with its
// per-thread trace cache warm.
#include "unwind/unwind.hpp"

#include <benchmark/benchmark.h>

#include <pthread.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <span>

namespace {

using hotscope::unwind::StackBounds;

constexpr int depth = 30; // with the benchmark's own frames: 32 walked
constexpr std::size_t frames = 32;

StackBounds this_thread_stack() {
  pthread_attr_t attributes;
  void* base = nullptr;
  std::size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attributes) != 0 ||
      pthread_attr_getstack(&attributes, &base, &size) != 0) {
    std::abort();
  }
  pthread_attr_destroy(&attributes);
  const auto low = reinterpret_cast<std::uintptr_t>(base);
  return {low, low + size};
}

using Walk = std::size_t (*)(std::span<std::uintptr_t>);

__attribute__((noinline)) std::size_t rules_walk(std::span<std::uintptr_t> out) {
  static const StackBounds bounds = this_thread_stack();
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  const auto walked =
      hotscope::unwind::walk_by_rules(hotscope::unwind::caller_registers(frame), bounds, out);
  return walked.value_or(0);
}

__attribute__((noinline)) std::size_t libgcc_walk(std::span<std::uintptr_t> out) {
  return hotscope::unwind::backtrace(*hotscope::unwind::find_libgcc(), out);
}

__attribute__((noinline)) std::size_t libunwind_walk(std::span<std::uintptr_t> out) {
  const int got = hotscope::unwind::find_libunwind()->backtrace(
      reinterpret_cast<void**>(out.data()), static_cast<int>(out.size()));
  return got > 0 ? static_cast<std::size_t>(got) : 0;
}

// Walks at `levels` calls below: each level keeps its frame.
__attribute__((noinline)) std::size_t walk_below(int levels, Walk walk) {
  if (levels > 0) {
    const std::size_t walked = walk_below(levels - 1, walk);
    benchmark::ClobberMemory();
    return walked;
  }
  std::array<std::uintptr_t, frames> out{};
  const std::size_t walked = walk(out);
  benchmark::DoNotOptimize(out);
  return walked;
}

void walk_stack(benchmark::State& state, Walk walk) {
  if (walk_below(depth, walk) != frames) {
    state.SkipWithError("the walk did not reach the 32 frames");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(walk_below(depth, walk));
  }
  state.counters["ns_per_frame"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * frames,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

BENCHMARK_CAPTURE(walk_stack, rules_cached, rules_walk);
BENCHMARK_CAPTURE(walk_stack, libgcc, libgcc_walk);
BENCHMARK_CAPTURE(walk_stack, libunwind_cached, libunwind_walk);

} // namespace

BENCHMARK_MAIN();
