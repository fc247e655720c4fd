// Per-thread CPU time and context switches (docs/formats-output.md, per-thread figures): they
// only go up from one snapshot to the next, and a thread that ended keeps the figures it had.
// Each test runs in its own process (gtest_discover_tests), with the real rings and collector.
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <fcntl.h>
#include <thread>
#include <vector>

namespace {

using namespace hotscope;
using namespace std::chrono_literals;

std::int64_t this_tid() {
  return static_cast<std::int64_t>(syscall(SYS_gettid));
}

std::uint64_t own_cpu_ns() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// Both user and system time: reads of /dev/zero between loops of arithmetic.
void burn_cpu(std::uint64_t ns) {
  const int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  char buffer[4096];
  volatile std::uint64_t sink = 0;
  for (const std::uint64_t start = own_cpu_ns(); own_cpu_ns() - start < ns;) {
    for (int i = 0; i < 20000; ++i) {
      sink = sink + static_cast<std::uint64_t>(i) * 7;
    }
    [[maybe_unused]] const ssize_t got = read(zero, buffer, sizeof buffer);
  }
  close(zero);
}

const ThreadInfo* find_thread(const Snapshot& s, std::int64_t tid) {
  for (const ThreadInfo& thread : s.threads) {
    if (thread.os_tid == tid) {
      return &thread;
    }
  }
  return nullptr;
}

TEST(ThreadCpu, AThreadThatEndedKeepsItsCpuTimeAndSwitches) {
  std::atomic<std::int64_t> tid{0};
  std::thread worker([&] {
    HOTSCOPE_SCOPE("worker");
    tid = this_tid();
    burn_cpu(100'000'000);
    std::this_thread::sleep_for(1ms); // one voluntary switch at least
  });
  worker.join();
  std::this_thread::sleep_for(50ms); // the collector sees the exit
  const Snapshot s = trace::snapshot();
  const ThreadInfo* thread = find_thread(s, tid);
  ASSERT_NE(thread, nullptr);
  EXPECT_TRUE(thread->exited);
  EXPECT_GE(thread->os.cpu_user_ns + thread->os.cpu_system_ns, 90'000'000u);
  EXPECT_GE(thread->os.voluntary_switches, 1u);
}

// The user/system split comes from tick counts and shifts as they grow; neither part may fall.
// The thread spends time in the kernel too (reads of /dev/zero), so that both parts grow: a
// thread that only computes may get no tick in system time at all.
TEST(ThreadCpu, TwoHundredReadsOfABusyThreadNeverFall) {
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> tid{0};
  std::thread busy([&] {
    HOTSCOPE_SCOPE("busy");
    tid = this_tid();
    const int zeros = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    std::vector<char> buffer(1 << 20);
    while (!stop) {
      burn_cpu(1'000'000);
      static_cast<void>(read(zeros, buffer.data(), buffer.size()));
    }
    close(zeros);
  });
  while (tid == 0) {
    std::this_thread::sleep_for(1ms);
  }
  OsThreadFigures before;
  int falls = 0;
  for (int read = 0; read < 200; ++read) {
    std::this_thread::sleep_for(10ms);
    const Snapshot s = trace::snapshot();
    const ThreadInfo* thread = find_thread(s, tid);
    ASSERT_NE(thread, nullptr);
    const OsThreadFigures& now = thread->os;
    falls += now.cpu_user_ns < before.cpu_user_ns ? 1 : 0;
    falls += now.cpu_system_ns < before.cpu_system_ns ? 1 : 0;
    falls += now.voluntary_switches < before.voluntary_switches ? 1 : 0;
    falls += now.involuntary_switches < before.involuntary_switches ? 1 : 0;
    before = now;
  }
  stop = true;
  busy.join();
  EXPECT_EQ(falls, 0);
  EXPECT_GT(before.cpu_user_ns, 0u);
  EXPECT_GT(before.cpu_system_ns, 0u);
}

} // namespace
