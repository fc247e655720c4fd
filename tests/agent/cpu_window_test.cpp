// The CPU samples of a window, as GET /debug/pprof/profile?seconds=N answers them: the difference
// of two snapshots' CPU profiles (src/agent/cpu_window.cpp).
#include "agent/routes.hpp"

#include <gtest/gtest.h>

namespace {

using namespace hotscope;

// What a later CPU profile has that an earlier one has not: stacks matched frame by frame, their
// scopes by what they name whatever their index.
TEST(CpuWindow, TheDifferenceHoldsTheStacksThatGainedSamples) {
  CpuProfile earlier;
  earlier.samples = 5;
  earlier.lost = 1;
  earlier.scopes = {{"b", "b.cpp", 2}, {"a", "a.cpp", 1}};
  earlier.stacks = {{{CpuFrame{0x10, -1}, CpuFrame{0, 1}}, 3}, {{CpuFrame{0, 0}}, 2}};
  earlier.threads = {{7, 5}};
  CpuProfile later;
  later.hz = 99;
  later.period_ns = 10'101'010;
  later.samples = 12;
  later.lost = 1;
  later.incomplete = 4;
  later.scopes = {{"a", "a.cpp", 1}, {"b", "b.cpp", 2}, {"c", "c.cpp", 3}};
  later.stacks = {{{CpuFrame{0x10, -1}, CpuFrame{0, 0}}, 4}, // 1 more
                  {{CpuFrame{0, 1}}, 2},                     // none more
                  {{CpuFrame{0, 2}}, 6}};                    // new
  later.threads = {{7, 6}, {8, 6}};
  const CpuProfile window = agent::cpu_difference(earlier, later);
  EXPECT_EQ(window.hz, 99u);
  EXPECT_EQ(window.period_ns, 10'101'010u);
  EXPECT_EQ(window.samples, 7u);
  EXPECT_EQ(window.lost, 0u);
  EXPECT_EQ(window.incomplete, 4u);
  EXPECT_EQ(window.scopes.size(), 3u);
  ASSERT_EQ(window.stacks.size(), 2u);
  EXPECT_EQ(window.stacks[0].samples, 1u);
  EXPECT_EQ(window.stacks[0].frames[1].scope, 0);
  EXPECT_EQ(window.stacks[1].samples, 6u);
  EXPECT_EQ(window.stacks[1].frames[0].scope, 2);
  ASSERT_EQ(window.threads.size(), 2u);
  EXPECT_EQ(window.threads[0].samples, 1u);
  EXPECT_EQ(window.threads[1].os_tid, 8);
  EXPECT_EQ(window.threads[1].samples, 6u);
}

} // namespace
