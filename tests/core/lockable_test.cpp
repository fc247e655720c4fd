// hotscope::Lockable end to end (docs/locks.md): contention with known waits, holds, try-lock
// failures, recursive and shared locks, a condition variable's wait (not contention), a deadlock
// named while it stands, a lock-order inversion that never deadlocked, and the waits in the trace.
// Each test runs in its own process (gtest_discover_tests), so the collector starts fresh.
#include "support/forked_child_skips.hpp"
#include "trace/trace.hpp"

#include <hotscope/lockable.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace hotscope;
using namespace std::chrono_literals;

const LockStats* find_lock(const Snapshot& s, const std::string& name) {
  for (const LockStats& lock : s.locks) {
    if (lock.name == name) {
      return &lock;
    }
  }
  return nullptr;
}

void spin_until(const std::atomic<bool>& flag) {
  while (!flag.load()) {
    std::this_thread::yield();
  }
}

// The holder keeps the lock 10 ms; the waiter, once it sees the lock taken, waits for it. On a
// loaded machine the waiter may be preempted until the lock is free again, and not wait at all:
// rounds go on until five waited, and hotscope must have counted exactly those.
TEST(Lockable, WaitsAsLongAsTheHolderHeldIt) {
  HOTSCOPE_LOCKABLE(std::mutex, contended_lock);
  constexpr std::uint64_t kWaits = 5;
  std::vector<double> waited_ms; // as the waiter saw it, in the rounds hotscope counted
  std::uint64_t rounds = 0;
  std::uint64_t contended = 0;
  while (contended < kWaits && rounds < 20) {
    ++rounds;
    std::atomic<bool> taken{false};
    std::thread holder([&] {
      HOTSCOPE_THREAD_NAME("holder");
      const std::lock_guard lock(contended_lock);
      taken = true;
      std::this_thread::sleep_for(10ms);
    });
    spin_until(taken);
    const auto start = std::chrono::steady_clock::now();
    {
      HOTSCOPE_SCOPE("waiting_here");
      const std::lock_guard lock(contended_lock);
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    holder.join();
    const LockStats* lock = nullptr;
    const Snapshot s = trace::snapshot(trace::Contents::StatisticsOnly);
    for (const LockStats& each : s.locks) {
      lock = each.name == "contended_lock" ? &each : lock;
    }
    ASSERT_NE(lock, nullptr);
    if (lock->contended > contended) {
      waited_ms.push_back(ms);
    }
    contended = lock->contended;
  }
  ASSERT_EQ(contended, kWaits) << "in " << rounds << " rounds";
  const Snapshot s = trace::snapshot();
  const LockStats* lock = find_lock(s, "contended_lock");
  ASSERT_NE(lock, nullptr);
  EXPECT_EQ(lock->kind, "mutex");
  EXPECT_EQ(lock->acquisitions, 2 * rounds);
  EXPECT_EQ(lock->wait.calls, kWaits);
  EXPECT_EQ(lock->hold.calls, 2 * rounds);
  // Each wait as the waiter timed it (about the holder's 10 ms): p50 within 10 % of theirs.
  std::sort(waited_ms.begin(), waited_ms.end());
  const double median_ns = waited_ms[kWaits / 2] * 1e6;
  EXPECT_NEAR(static_cast<double>(lock->wait.p50_ns), median_ns, median_ns * 0.1);
  EXPECT_GT(median_ns, 5e6);
  ASSERT_FALSE(lock->top_waiters.empty());
  ASSERT_FALSE(lock->contended_at.empty());
  EXPECT_EQ(lock->contended_at.front().site.scopes, std::vector<std::string>{"waiting_here"});
  EXPECT_EQ(lock->contended_at.front().waits, kWaits);
  EXPECT_TRUE(lock->holders.empty());
  EXPECT_TRUE(lock->waiters.empty());
}

TEST(Lockable, WaitsAreSlicesInTheTraceWithAHandoffFlow) {
  HOTSCOPE_LOCKABLE(std::mutex, traced_lock);
  std::atomic<bool> taken{false};
  std::thread holder([&] {
    const std::lock_guard lock(traced_lock);
    taken = true;
    std::this_thread::sleep_for(5ms);
  });
  spin_until(taken);
  { const std::lock_guard lock(traced_lock); }
  holder.join();
  const Snapshot s = trace::snapshot();
  std::map<std::int64_t, int> flow_ends; // flow id -> handoffs + acquisitions seen
  std::uint64_t waited_ns = 0;
  for (const TraceEvent& event : s.trace) {
    if (event.kind == EventKind::LockWait && s.names.at(event.name) == "traced_lock") {
      waited_ns = static_cast<std::uint64_t>(event.value);
    }
    if (event.kind == EventKind::LockHandoff || event.kind == EventKind::LockAcquired) {
      ++flow_ends[event.value];
    }
  }
  EXPECT_GE(waited_ns, 4'000'000u);
  ASSERT_EQ(flow_ends.size(), 1u);
  EXPECT_EQ(flow_ends.begin()->second, 2); // both ends of one flow
}

TEST(Lockable, TryLockFailuresAreCounted) {
  HOTSCOPE_LOCKABLE(std::timed_mutex, busy_lock);
  std::atomic<bool> taken{false};
  std::atomic<bool> done{false};
  std::thread holder([&] {
    const std::lock_guard lock(busy_lock);
    taken = true;
    spin_until(done);
  });
  spin_until(taken);
  EXPECT_FALSE(busy_lock.try_lock());
  EXPECT_FALSE(busy_lock.try_lock_for(2ms)); // a timed wait that gives up
  done = true;
  holder.join();
  const Snapshot s = trace::snapshot();
  const LockStats* lock = find_lock(s, "busy_lock");
  ASSERT_NE(lock, nullptr);
  EXPECT_EQ(lock->kind, "timed_mutex");
  EXPECT_EQ(lock->try_failed, 2u);
  EXPECT_EQ(lock->contended, 0u);
  EXPECT_EQ(lock->acquisitions, 1u);
}

TEST(Lockable, ARecursiveLockHoldsOnceAndSharedHoldersWaitForNoOne) {
  HOTSCOPE_LOCKABLE(std::recursive_mutex, reentrant);
  {
    const std::lock_guard outer(reentrant);
    const std::lock_guard inner(reentrant);
  }
  hotscope::Lockable<std::shared_mutex> table{"table"};
  {
    std::shared_lock first(table);
    std::thread second_reader([&] { std::shared_lock second(table); });
    second_reader.join();
  }
  { const std::unique_lock writer(table); }
  const Snapshot s = trace::snapshot();
  const LockStats* recursive = find_lock(s, "reentrant");
  ASSERT_NE(recursive, nullptr);
  EXPECT_EQ(recursive->kind, "recursive_mutex");
  EXPECT_EQ(recursive->acquisitions, 2u);
  EXPECT_EQ(recursive->hold.calls, 1u);
  const LockStats* shared = find_lock(s, "table");
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(shared->kind, "shared_mutex");
  EXPECT_EQ(shared->acquisitions, 3u);
  EXPECT_EQ(shared->contended, 0u);
  EXPECT_EQ(shared->hold.calls, 3u);
  EXPECT_TRUE(s.inversions.empty());
}

TEST(Lockable, AConditionVariableWaitIsNotContention) {
  HOTSCOPE_LOCKABLE(std::mutex, signal_lock);
  std::condition_variable_any ready;
  bool go = false;
  std::thread waiter([&] {
    std::unique_lock lock(signal_lock);
    ready.wait(lock, [&] { return go; });
  });
  std::this_thread::sleep_for(50ms);
  {
    const std::lock_guard lock(signal_lock);
    go = true;
  }
  ready.notify_all();
  waiter.join();
  const Snapshot s = trace::snapshot();
  const LockStats* lock = find_lock(s, "signal_lock");
  ASSERT_NE(lock, nullptr);
  // The 50 ms the waiter slept on the condition are not a wait for the lock.
  EXPECT_LT(lock->wait.total_ns, 20'000'000u);
}

TEST(Lockable, ADeadlockIsNamedWithinASecondWhileItStands) {
  HOTSCOPE_LOCKABLE(std::timed_mutex, first_lock);
  HOTSCOPE_LOCKABLE(std::timed_mutex, second_lock);
  std::atomic<int> holding{0};
  // Each takes one lock, then waits up to 3 s for the other's: a deadlock that ends by itself.
  const auto locker = [&](const char* name, auto& mine, auto& theirs, bool& gave_up) {
    HOTSCOPE_THREAD_NAME(name);
    HOTSCOPE_SCOPE("take_both");
    const std::lock_guard lock(mine);
    ++holding;
    while (holding.load() < 2) {
      std::this_thread::yield();
    }
    gave_up = !theirs.try_lock_for(3s);
  };
  bool a_gave_up = false;
  bool b_gave_up = false;
  const auto start = std::chrono::steady_clock::now();
  std::thread a([&] { locker("locker-a", first_lock, second_lock, a_gave_up); });
  std::thread b([&] { locker("locker-b", second_lock, first_lock, b_gave_up); });
  std::vector<Deadlock> found;
  while (found.empty() && std::chrono::steady_clock::now() - start < 2500ms) {
    std::this_thread::sleep_for(20ms);
    found = trace::snapshot(trace::Contents::StatisticsOnly).deadlocks;
  }
  const auto named_after = std::chrono::steady_clock::now() - start;
  a.join();
  b.join();
  EXPECT_TRUE(a_gave_up || b_gave_up); // the first to give up lets the other in
  ASSERT_EQ(found.size(), 1u);
  EXPECT_LT(named_after, 1s + 100ms); // the locks were both held within a few ms of the start
  ASSERT_EQ(found[0].cycle.size(), 2u);
  std::map<std::string, std::string> waits_for; // waiter -> lock
  for (const Deadlock::Link& link : found[0].cycle) {
    waits_for[link.waiter.thread] = link.lock;
    EXPECT_NE(link.holder.thread, link.waiter.thread);
    EXPECT_EQ(link.waiter_scopes, std::vector<std::string>{"take_both"});
  }
  EXPECT_EQ(waits_for, (std::map<std::string, std::string>{{"locker-a", "second_lock"},
                                                           {"locker-b", "first_lock"}}));
  const Snapshot after = trace::snapshot(trace::Contents::StatisticsOnly);
  EXPECT_TRUE(after.deadlocks.empty()); // both gave up: it no longer stands
  EXPECT_EQ(after.lock_figures.deadlocks_found, 1u);
}

TEST(Lockable, AnInversionIsFoundThoughItNeverDeadlocked) {
  HOTSCOPE_LOCKABLE(std::mutex, accounts);
  HOTSCOPE_LOCKABLE(std::mutex, audit_log);
  std::thread one([&] {
    HOTSCOPE_THREAD_NAME("transfer");
    HOTSCOPE_SCOPE("transfer_path");
    const std::lock_guard a(accounts);
    const std::lock_guard b(audit_log);
  });
  one.join(); // never at the same time: no deadlock can happen in this run
  std::thread two([&] {
    HOTSCOPE_THREAD_NAME("auditor");
    HOTSCOPE_SCOPE("audit_path");
    const std::lock_guard b(audit_log);
    const std::lock_guard a(accounts);
  });
  two.join();
  const Snapshot s = trace::snapshot();
  EXPECT_TRUE(s.deadlocks.empty());
  ASSERT_EQ(s.inversions.size(), 1u);
  const LockInversion& inversion = s.inversions[0];
  EXPECT_EQ(inversion.first, "audit_log");
  EXPECT_EQ(inversion.second, "accounts");
  EXPECT_EQ(inversion.thread_one, "auditor");
  EXPECT_EQ(inversion.site_one.scopes, std::vector<std::string>{"audit_path"});
  EXPECT_EQ(inversion.thread_two, "transfer");
  EXPECT_EQ(inversion.site_two.scopes, std::vector<std::string>{"transfer_path"});
  EXPECT_EQ(s.lock_figures.order_edges, 2u);
}

// A child forked while its parent's thread holds a lock: the child's copy of that lock is held by
// the thread that forked, which releases and takes it again; another thread of the parent held a
// second lock, which the child must not wait for (an alarm ends a child that hangs).
TEST(Lockable, AForkWhileLocksAreHeldLeavesTheChildWorking) {
  HOTSCOPE_SKIP_FORKED_CHILD_UNDER_TSAN();
  HOTSCOPE_LOCKABLE(std::mutex, held_at_fork);
  HOTSCOPE_LOCKABLE(std::mutex, other_thread_lock);
  std::atomic<bool> taken{false};
  std::atomic<bool> done{false};
  std::thread other([&] {
    const std::lock_guard lock(other_thread_lock);
    taken = true;
    spin_until(done);
  });
  spin_until(taken);
  held_at_fork.lock();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(5);
    held_at_fork.unlock();
    { const std::lock_guard again(held_at_fork); }
    _exit(other_thread_lock.try_lock() ? 1 : 0); // held by a thread the child does not have
  }
  held_at_fork.unlock();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  done = true;
  other.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const Snapshot s = trace::snapshot();
  const LockStats* lock = find_lock(s, "held_at_fork");
  ASSERT_NE(lock, nullptr);
  EXPECT_EQ(lock->acquisitions, 1u); // the parent's own: the child's records are the child's
  EXPECT_TRUE(lock->holders.empty());
}

} // namespace
