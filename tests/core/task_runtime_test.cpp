// Coroutines as tasks end to end: HOTSCOPE_TASK and hotscope::TaskPromise, through the real
// rings and collector, under the manual clock. Each test runs in its own process
// (gtest_discover_tests), so the global collector starts fresh every time.
#include "clock/clock.hpp"
#include "export/export.hpp"
#include "trace/trace.hpp"

#include "support/coroutine_task.hpp"
#include "support/named.hpp"

#include <hotscope/task.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <utility>

namespace {

using namespace hotscope;

using Task = coroutine_support::CoroutineTask;
using test_support::named;

// A thread that resumes the coroutines handed to it, each after advancing the manual clock by
// the wait it was handed with: the time the coroutine waited.
class Executor {
public:
  void post(std::coroutine_handle<> handle, std::uint64_t wait_ns) {
    {
      std::lock_guard lock(mutex_);
      queue_.emplace_back(handle, wait_ns);
    }
    ready_.notify_one();
  }
  // Resumes what it is handed until `done` says so, on the calling thread.
  template <typename Done> void run(Done done) {
    while (!done()) {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return !queue_.empty(); });
      const auto [handle, wait_ns] = queue_.front();
      queue_.pop_front();
      lock.unlock();
      clock::advance_manual_clock(wait_ns);
      handle.resume();
    }
  }

private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<std::coroutine_handle<>, std::uint64_t>> queue_;
};

// co_await Hop{to, wait}: continue on `to`'s thread after `wait` ns.
struct Hop {
  Executor& to;
  std::uint64_t wait_ns;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> handle) const { to.post(handle, wait_ns); }
  void await_resume() const noexcept {}
};

std::int64_t this_tid() {
  return static_cast<std::int64_t>(syscall(SYS_gettid));
}

// Runs 30 ns on the thread that starts it, 40 on `other`, 50 back on `home`.
Task two_threads(Executor& other, Executor& home) {
  HOTSCOPE_TASK("two_threads");
  clock::advance_manual_clock(30);
  co_await Hop{other, 200};
  clock::advance_manual_clock(40);
  co_await Hop{home, 300};
  clock::advance_manual_clock(50);
}

TEST(TaskRuntime, ACoroutineResumedOnTwoThreadsHasExactRunningAndWaitingTimes) {
  clock::use_manual_clock_for_testing();
  trace::reset();
  Executor home;
  Executor other;
  std::atomic<bool> other_done{false};
  std::int64_t other_tid = 0;
  std::thread other_thread([&] {
    other_tid = this_tid();
    other.run([&] { return other_done.load(); });
  });
  Task task = two_threads(other, home); // created now
  clock::advance_manual_clock(100);     // waits 100 ns before it first runs
  task.handle.resume();
  home.run([&] { return task.handle.done(); });
  other_done = true;
  other.post(std::noop_coroutine(), 0); // wakes it to see other_done
  other_thread.join();

  trace::collect_now(); // the pass after the task's end: its figures are final
  const Snapshot s = trace::snapshot();
  const TaskStats& t = named(s.tasks, "two_threads");
  EXPECT_EQ(t.kind, "coroutine");
  EXPECT_EQ(t.created, 1u);
  EXPECT_EQ(t.completed, 1u);
  EXPECT_EQ(t.destroyed_unfinished, 0u);
  EXPECT_EQ(t.alive, 0u);
  EXPECT_EQ(t.resumes, 3u);
  EXPECT_EQ(t.running.calls, 3u);
  EXPECT_EQ(t.running.total_ns, 120u);
  EXPECT_EQ(t.waiting.total_ns, 600u);
  EXPECT_EQ(t.lifetime.total_ns, 720u);

  // Each slice is on the thread that ran it; the flows link them across the threads.
  std::map<std::int64_t, int> slices_by_tid;
  for (const TraceEvent& event : s.trace) {
    if (event.kind == EventKind::TaskResume) {
      for (const ThreadInfo& thread : s.threads) {
        if (thread.index == event.thread) {
          ++slices_by_tid[thread.os_tid];
        }
      }
    }
  }
  EXPECT_EQ(slices_by_tid[this_tid()], 2);
  EXPECT_EQ(slices_by_tid[other_tid], 1);
  std::ostringstream chrome;
  exporters::write_chrome_json(s, chrome);
  const auto json = nlohmann::json::parse(chrome.str());
  std::vector<std::pair<std::string, std::int64_t>> flows; // phase, tid
  for (const auto& event : json["traceEvents"]) {
    if (event.value("cat", "") == "task" && (event["ph"] == "s" || event["ph"] == "f")) {
      flows.emplace_back(event["ph"].get<std::string>(), event["tid"].get<std::int64_t>());
    }
  }
  const std::vector<std::pair<std::string, std::int64_t>> expected{
      {"s", this_tid()}, {"f", other_tid}, {"s", other_tid}, {"f", this_tid()}};
  EXPECT_EQ(flows, expected);
}

Task abandoned() {
  HOTSCOPE_TASK("abandoned");
  co_await std::suspend_always{};
  ADD_FAILURE() << "never resumed";
}

Task untracked() {
  co_await std::suspend_always{};
}

TEST(TaskRuntime, ACoroutineDestroyedBeforeItCompletesIsCountedUnfinished) {
  clock::use_manual_clock_for_testing();
  trace::reset();
  {
    Task task = abandoned();
    task.handle.resume();
    clock::advance_manual_clock(1000);
    Task plain = untracked(); // no HOTSCOPE_TASK: not a task
    plain.handle.resume();
  } // destroyed while suspended
  trace::collect_now();
  const Snapshot s = trace::snapshot();
  ASSERT_EQ(s.tasks.size(), 1u);
  const TaskStats& t = s.tasks[0];
  EXPECT_EQ(t.name, "abandoned");
  EXPECT_EQ(t.created, 1u);
  EXPECT_EQ(t.completed, 0u);
  EXPECT_EQ(t.destroyed_unfinished, 1u);
  EXPECT_EQ(t.alive, 0u);
  EXPECT_EQ(t.resumes, 1u);
  EXPECT_EQ(t.lifetime.total_ns, 1000u);
  EXPECT_EQ(t.waiting.total_ns, 1000u);
}

// Suspends and is resumed at once (await_suspend returns false): a zero-length wait.
struct Yield {
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<>) const noexcept { return false; }
  void await_resume() const noexcept {}
};

Task short_lived() {
  HOTSCOPE_TASK("short_lived");
  clock::advance_manual_clock(10);
  co_await Yield{};
  clock::advance_manual_clock(5);
}

TEST(TaskRuntime, TenThousandShortLivedTasksLeaveBoundedMemory) {
  clock::use_manual_clock_for_testing();
  trace::reset();
  const auto run = [](int count) {
    for (int i = 0; i < count; ++i) {
      Task task = short_lived();
      task.handle.resume();
      if (i % 1000 == 0) {
        trace::collect_now(); // keeps the ring from filling on a slow machine
      }
    }
    trace::collect_now();
    trace::collect_now();
  };
  run(100);
  const std::uint64_t after_hundred =
      trace::snapshot(trace::Contents::StatisticsOnly).memory.statistics;
  run(10'000);
  const Snapshot s = trace::snapshot(trace::Contents::StatisticsOnly);
  ASSERT_EQ(s.records.dropped, 0u);
  const TaskStats& t = named(s.tasks, "short_lived");
  EXPECT_EQ(t.created, 10'100u);
  EXPECT_EQ(t.completed, 10'100u);
  EXPECT_EQ(t.alive, 0u);
  EXPECT_EQ(t.resumes, 20'200u);
  EXPECT_EQ(t.running.total_ns, 10'100u * 15);
  EXPECT_EQ(t.lifetime.max_ns, 15u);
  EXPECT_EQ(t.waiting.max_ns, 0u);
  EXPECT_LE(s.memory.statistics, after_hundred + 16 * 1024);
}

} // namespace
