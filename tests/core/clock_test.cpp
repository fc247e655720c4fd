#include "clock/clock.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

namespace {

using namespace hotscope;

TEST(Clock, TicksAgreeWithMonotonicWithinATenthOfAPercentOver250ms) {
  clock::init(clock::Request::Auto);
  const ClockInfo before = clock::info();
  ASSERT_GT(before.ticks_per_second, 0);
  const std::uint64_t ticks0 = clock::now_ticks();
  const std::uint64_t ns0 = clock::monotonic_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const std::uint64_t ticks1 = clock::now_ticks();
  const std::uint64_t ns1 = clock::monotonic_ns();
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
