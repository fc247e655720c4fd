// threads::Doorbell: a ring wakes the sleeper before its timeout, and is answered once.
#include "threads/threads.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

using hotscope::threads::Doorbell;
using Clock = std::chrono::steady_clock;

TEST(Doorbell, ARingBeforeTheWaitIsAnsweredAtOnceAndOnlyOnce) {
  Doorbell doorbell;
  doorbell.ring();
  doorbell.ring(); // two rings before one look are one
  EXPECT_TRUE(doorbell.wait_for(10'000'000'000));
  const Clock::time_point start = Clock::now();
  EXPECT_FALSE(doorbell.wait_for(20'000'000)) << "the ring was answered";
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(15)) << "it slept its timeout";
}

TEST(Doorbell, ARingWakesASleeperLongBeforeItsTimeout) {
  Doorbell doorbell;
  std::atomic<bool> woken{false};
  const Clock::time_point start = Clock::now();
  std::thread sleeper([&] { woken.store(doorbell.wait_for(60'000'000'000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  doorbell.ring();
  sleeper.join();
  EXPECT_TRUE(woken.load());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(30)) << "woken by the ring, not the timeout";
}

} // namespace
