#include "clock/clock.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <thread>

namespace {

using namespace hotscope;

// Ticks and monotonic time read together: the ticks between two monotonic readings at most 20 µs
// apart (a preempted attempt is retried), the time their midpoint.
struct Paired {
  std::uint64_t ticks;
  std::uint64_t ns;
};
Paired paired_now() {
  Paired best{0, 0};
  std::uint64_t best_gap = UINT64_MAX;
  for (int attempt = 0; attempt < 100 && best_gap > 20'000; ++attempt) {
    const std::uint64_t before = clock::monotonic_ns();
    const std::uint64_t ticks = clock::now_ticks();
    const std::uint64_t after = clock::monotonic_ns();
    if (after - before < best_gap) {
      best_gap = after - before;
      best = {ticks, before + (after - before) / 2};
    }
  }
  return best;
}

TEST(Clock, TicksAgreeWithMonotonicWithinATenthOfAPercentOver250ms) {
  clock::init(clock::Request::Auto);
  const ClockInfo before = clock::info();
  ASSERT_GT(before.ticks_per_second, 0);
  const auto [ticks0, ns0] = paired_now();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const auto [ticks1, ns1] = paired_now();
  const double measured_ns = static_cast<double>(ticks1 - ticks0) * 1e9 / clock::ticks_per_second();
  const double monotonic = static_cast<double>(ns1 - ns0);
  EXPECT_GE(monotonic, 250e6);
  EXPECT_LE(std::abs(measured_ns - monotonic), monotonic * 0.001)
      << "source=" << before.source << " origin=" << before.frequency_origin;
}

TEST(Clock, ReportsItsChoice) {
  clock::init(clock::Request::Auto);
  const ClockInfo info = clock::info();
  EXPECT_TRUE(info.source == "tsc" || info.source == "monotonic");
  EXPECT_FALSE(info.reason.empty());
  EXPECT_FALSE(info.frequency_origin.empty());
  EXPECT_EQ(info.invariant_tsc, clock::cpu_has_invariant_tsc());
  if (info.source == "tsc") {
    EXPECT_GT(info.ticks_per_second, 1e8); // no real TSC runs slower than 100 MHz
  } else {
    EXPECT_EQ(info.ticks_per_second, 1e9);
  }
}

} // namespace
