// Interposed pthread locks through the collector's lock table (src/trace/lock_table.*): a
// deadlock of two threads on two mutexes named by their statics, an inversion that never
// deadlocks, and contention counted for a waiter but not for a condition wait. TSan is left out:
// it reports the lock-order inversions these tests make on purpose.
#include "locks/locks.hpp"
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <set>
#include <string>
#include <thread>

// In .data (error-checking mutexes: their initialisers are not all zero), named by the module.
pthread_mutex_t locks_test_first = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
pthread_mutex_t locks_test_second = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
pthread_mutex_t locks_test_guarded = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;

namespace {

namespace locks = hotscope::locks;
namespace trace = hotscope::trace;

#if defined(__SANITIZE_THREAD__)
#define HOTSCOPE_SKIP_UNDER_TSAN() GTEST_SKIP() << "TSan reports the inversion itself"
#else
#define HOTSCOPE_SKIP_UNDER_TSAN() static_cast<void>(0)
#endif

class LockTable : public ::testing::Test {
protected:
  void SetUp() override { locks::start(locks::Mode::Contended); }
  void TearDown() override { locks::start(locks::Mode::Off); }
};

timespec seconds_from_now(int seconds) {
  timespec deadline{};
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += seconds;
  return deadline;
}

const hotscope::LockStats* lock_named(const hotscope::Snapshot& snapshot, const std::string& name) {
  const auto found =
      std::find_if(snapshot.locks.begin(), snapshot.locks.end(),
                   [&](const hotscope::LockStats& lock) { return lock.name == name; });
  return found == snapshot.locks.end() ? nullptr : &*found;
}

TEST_F(LockTable, TwoThreadsDeadlockedOnPthreadMutexesAreNamedWithTheirLocks) {
  HOTSCOPE_SKIP_UNDER_TSAN();
  std::barrier both_hold(2);
  const auto take = [&](pthread_mutex_t* mine, pthread_mutex_t* theirs) {
    locks::mutex_lock(mine, __builtin_return_address(0));
    both_hold.arrive_and_wait();
    const timespec deadline = seconds_from_now(3);
    if (locks::mutex_timedlock(theirs, CLOCK_MONOTONIC, &deadline, true, nullptr) == 0) {
      locks::mutex_unlock(theirs);
    }
    locks::mutex_unlock(mine);
  };
  std::thread a(take, &locks_test_first, &locks_test_second);
  std::thread b(take, &locks_test_second, &locks_test_first);
  hotscope::Snapshot snapshot;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    snapshot = trace::snapshot(trace::Contents::StatisticsOnly);
  } while (snapshot.deadlocks.empty() && std::chrono::steady_clock::now() < give_up);
  a.join();
  b.join();
  ASSERT_EQ(snapshot.deadlocks.size(), 1u);
  const hotscope::Deadlock& deadlock = snapshot.deadlocks[0];
  ASSERT_EQ(deadlock.cycle.size(), 2u);
  EXPECT_EQ((std::set<std::string>{deadlock.cycle[0].lock, deadlock.cycle[1].lock}),
            (std::set<std::string>{"locks_test_first", "locks_test_second"}));
  for (const hotscope::Deadlock::Link& link : deadlock.cycle) {
    EXPECT_NE(link.waiter.os_tid, 0);
    EXPECT_NE(link.holder.os_tid, 0);
    EXPECT_NE(link.waiter.os_tid, link.holder.os_tid);
  }
  const hotscope::LockStats* first = lock_named(snapshot, "locks_test_first");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->kind, "pthread_mutex");
  EXPECT_EQ(first->address, reinterpret_cast<std::uintptr_t>(&locks_test_first));
}

TEST_F(LockTable, AnInversionThatNeverDeadlocksIsFoundWithBothSites) {
  HOTSCOPE_SKIP_UNDER_TSAN();
  const auto nest = [](pthread_mutex_t* outer, pthread_mutex_t* inner) {
    locks::mutex_lock(outer, __builtin_return_address(0));
    locks::mutex_lock(inner, __builtin_return_address(0));
    locks::mutex_unlock(inner);
    locks::mutex_unlock(outer);
  };
  std::thread(nest, &locks_test_first, &locks_test_guarded).join();
  std::thread(nest, &locks_test_guarded, &locks_test_first).join();
  const hotscope::Snapshot snapshot = trace::snapshot(trace::Contents::StatisticsOnly);
  const auto found =
      std::find_if(snapshot.inversions.begin(), snapshot.inversions.end(), [](const auto& one) {
        return std::set<std::string>{one.first, one.second} ==
               std::set<std::string>{"locks_test_first", "locks_test_guarded"};
      });
  ASSERT_NE(found, snapshot.inversions.end());
  EXPECT_FALSE(found->site_one.stack.empty());
  EXPECT_FALSE(found->site_two.stack.empty());
  EXPECT_TRUE(snapshot.deadlocks.empty());
}

TEST_F(LockTable, AWaiterCountsAsContentionAndAConditionWaitDoesNot) {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER; // on the stack: named by its address
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  bool ready = false;
  std::thread consumer([&] {
    locks::mutex_lock(&mutex, nullptr);
    while (!ready) {
      locks::cond_wait(&cond, &mutex, CLOCK_REALTIME, nullptr, false);
    }
    locks::mutex_unlock(&mutex);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30)); // the consumer waits meanwhile
  locks::mutex_lock(&mutex, nullptr);
  ready = true;
  pthread_cond_signal(&cond);
  locks::mutex_unlock(&mutex);
  consumer.join();
  std::thread holder([&] {
    locks::mutex_lock(&mutex, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    locks::mutex_unlock(&mutex);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  locks::mutex_lock(&mutex, nullptr); // waits about 20 ms
  locks::mutex_unlock(&mutex);
  holder.join();
  const hotscope::Snapshot snapshot = trace::snapshot(trace::Contents::StatisticsOnly);
  const hotscope::LockStats* lock =
      lock_named(snapshot, trace::address_lock_name("pthread_mutex",
                                                    reinterpret_cast<std::uintptr_t>(&mutex)));
  ASSERT_NE(lock, nullptr);
  // The waiter's wait; and perhaps the consumer's retaking of the mutex after its wake-up, which
  // only waits if the signalling thread still holds it then. Never the 30 ms condition wait.
  EXPECT_GE(lock->contended, 1u);
  EXPECT_LE(lock->contended, 2u);
  EXPECT_GE(lock->wait.max_ns, 5'000'000u);
  EXPECT_LT(lock->wait.max_ns, 29'000'000u) << "the condition wait is not a lock wait";
}

TEST_F(LockTable, FailedTryLocksAreCounted) {
  std::barrier held(2);
  std::barrier tried(2);
  std::thread holder([&] {
    locks::mutex_lock(&locks_test_guarded, nullptr);
    held.arrive_and_wait();
    tried.arrive_and_wait();
    locks::mutex_unlock(&locks_test_guarded);
  });
  held.arrive_and_wait();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(locks::mutex_trylock(&locks_test_guarded), EBUSY);
  }
  tried.arrive_and_wait();
  holder.join();
  const hotscope::Snapshot snapshot = trace::snapshot(trace::Contents::StatisticsOnly);
  const hotscope::LockStats* lock = lock_named(snapshot, "locks_test_guarded");
  ASSERT_NE(lock, nullptr);
  EXPECT_EQ(lock->try_failed, 5u);
}

} // namespace
