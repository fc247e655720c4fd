// hotscope-xray-bench (docs/performance.md, "XRay"): two call-heavy workloads compiled by clang
// with XRay's sleds and without (xray_workload.cpp), timed side by side in interleaved rounds:
// the sleds unpatched against no sleds, and the cost per call of the sleds patched (each call a
// FUNCTION_BEGIN and END). Run with HOTSCOPE_XRAY=off HOTSCOPE_MIN_NS=0 HOTSCOPE_AGENT=0.
#include "instrument/instrument.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#define WORKLOAD_DECLARATIONS                                                                      \
  std::uint64_t fibonacci(int n);                                                                  \
  std::uint64_t hash_words(const char* text, std::size_t length);
namespace plain {
WORKLOAD_DECLARATIONS
}
namespace sleds {
WORKLOAD_DECLARATIONS
}

namespace {

using Clock = std::chrono::steady_clock;

// The calls fibonacci(n) makes, itself included.
std::uint64_t fibonacci_calls(int n) {
  std::uint64_t previous = 1, current = 1; // calls of fibonacci(0) and (1)
  for (int i = 2; i <= n; ++i) {
    const std::uint64_t next = previous + current + 1;
    previous = current;
    current = next;
  }
  return n == 0 ? previous : current;
}

struct Case {
  const char* name;
  // Runs the workload of one copy (sleds or not) once; returns a checksum.
  std::function<std::uint64_t(bool sleds)> run;
  std::uint64_t calls; // of one time
};

double ns_per_call(const Case& c, bool sleds, std::uint64_t& sink) {
  const auto start = Clock::now();
  sink += c.run(sleds);
  const std::chrono::duration<double, std::nano> took = Clock::now() - start;
  return took.count() / static_cast<double>(c.calls);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Sleds unpatched against no sleds, in interleaved rounds of one run (tens of microseconds: few
// are preempted on a loaded machine, and the median leaves those out); then patched, in rounds
// that the collector drains between them (no record dropped).
void measure(const Case& c, std::uint64_t& sink) {
  constexpr int kRounds = 21;
  hotscope::instrument::switch_xray(0, false);
  std::vector<double> without, off;
  for (int round = 0; round < 100 * kRounds; ++round) { // which goes first alternates
    const bool sleds_first = round % 2 == 1;
    (sleds_first ? off : without).push_back(ns_per_call(c, sleds_first, sink));
    (sleds_first ? without : off).push_back(ns_per_call(c, !sleds_first, sink));
  }
  hotscope::instrument::switch_xray(0, true);
  std::vector<double> bare, on;
  for (int round = 0; round < 10 * kRounds; ++round) {
    bare.push_back(ns_per_call(c, false, sink));
    on.push_back(ns_per_call(c, true, sink));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  hotscope::instrument::switch_xray(0, false);
  std::printf("%-12s no sleds %7.3f ns/call, sleds off %7.3f (ratio %.3f, goal <= 1.02), sleds on "
              "%7.3f: %.2f ns per instrumented call\n",
              c.name, median(without), median(off), median(off) / median(without), median(on),
              median(on) - median(bare));
}

} // namespace

int main() {
  if (hotscope::instrument::xray_count == 0) {
    std::fprintf(stderr, "hotscope-xray-bench: no XRay sleds found\n");
    return 1;
  }
  std::uint64_t sink = 0;
  // Fibonacci(18): 8,361 calls of a few instructions each, the worst case of a sled.
  const Case fibonacci{
      "fibonacci", [](bool sleds) { return sleds ? sleds::fibonacci(18) : plain::fibonacci(18); },
      fibonacci_calls(18)};
  // 4,096 words of 16 bytes: a call of about 10 ns each (and one call around them).
  static const std::string text(4096 * 16, 'x');
  const Case words{"hash_words",
                   [](bool sleds) {
                     return sleds ? sleds::hash_words(text.data(), text.size())
                                  : plain::hash_words(text.data(), text.size());
                   },
                   4097};
  measure(fibonacci, sink);
  measure(words, sink);
  return sink == 0 ? 1 : 0;
}
