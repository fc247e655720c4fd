// The threads tab's CPU %: from the growth of figures that never fall, and on real threads of
// this process, a spinning one near the share of the interval it could run and an idle one near 0
// (docs/console.md, "2 threads").
#include "console/model.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace hotscope::cli::console;
using Json = nlohmann::json;

// One thread of a /v1/threads answer.
Json thread_json(std::int64_t tid, const std::string& name, std::uint64_t user_ns,
                 std::uint64_t system_ns) {
  return Json{{"index", tid},
              {"os_tid", tid},
              {"name", name},
              {"exited", false},
              {"state", "R"},
              {"cpu_user_ns", user_ns},
              {"cpu_system_ns", system_ns},
              {"voluntary_switches", 0},
              {"involuntary_switches", 0},
              {"records", {{"written", 0}, {"kept", 0}, {"dropped", 0}}},
              {"open_scopes", Json::array()},
              {"stuck", false}};
}

Json answer_at(std::uint64_t now_ns, const Json& threads) {
  return Json{{"now_ns", now_ns}, {"stuck_threshold_ns", 1'000'000'000}, {"threads", threads}};
}

// An agent that recomputed the user/system split at each read gave a user time that fell while
// the total grew by 35 ms in 1 s: 3.5 % of a core, not the whole user time over one second.
TEST(ConsoleThreads, CpuPercentComesFromFiguresThatNeverFall) {
  Model model;
  model.update_threads(answer_at(
      10'000'000'000, Json::array({thread_json(7, "acceptor", 265'238'000, 10'000'000)})));
  model.update_threads(answer_at(
      11'000'000'000, Json::array({thread_json(7, "acceptor", 264'670'000, 45'568'000)})));
  const ThreadRow& row = model.threads().at(0);
  ASSERT_TRUE(row.user_percent && row.system_percent);
  EXPECT_DOUBLE_EQ(*row.user_percent, 0);
  EXPECT_NEAR(*row.system_percent, 3.5, 1e-9);
}

std::uint64_t ns_of(const timespec& time) {
  return static_cast<std::uint64_t>(time.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(time.tv_nsec);
}

// A thread of this process: its CPU clock, and from schedstat how long it waited for a CPU.
struct RealThread {
  pthread_t handle;
  std::int64_t tid;
  std::uint64_t cpu_ns() const {
    clockid_t clock{};
    timespec now{};
    pthread_getcpuclockid(handle, &clock);
    clock_gettime(clock, &now);
    return ns_of(now);
  }
  std::uint64_t waited_ns() const {
    std::uint64_t on_cpu = 0, waited = 0;
    std::ifstream("/proc/self/task/" + std::to_string(tid) + "/schedstat") >> on_cpu >> waited;
    return waited;
  }
};

// The answer now, each thread's CPU time from its clock.
Json real_answer(const RealThread& spinning, const RealThread& sleeping) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return answer_at(ns_of(now),
                   Json::array({thread_json(spinning.tid, "spinner", spinning.cpu_ns(), 0),
                                thread_json(sleeping.tid, "idle", sleeping.cpu_ns(), 0)}));
}

// A spinning thread uses a whole core whenever it is not waiting for one, an idle thread none:
// on a loaded machine the spinner's share is measured against the time it could run.
TEST(ConsoleThreads, CpuPercentOfASpinningAndAnIdleThread) {
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> spinning_tid{0}, idle_tid{0};
  std::thread spinner([&] {
    spinning_tid = static_cast<std::int64_t>(syscall(SYS_gettid));
    while (!stop) {
    }
  });
  std::thread idle([&] {
    idle_tid = static_cast<std::int64_t>(syscall(SYS_gettid));
    while (!stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  while (spinning_tid == 0 || idle_tid == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const RealThread spinning{spinner.native_handle(), spinning_tid};
  const RealThread sleeping{idle.native_handle(), idle_tid};
  const Json before = real_answer(spinning, sleeping);
  const std::uint64_t waited_before = spinning.waited_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const Json after = real_answer(spinning, sleeping);
  const std::uint64_t waited = spinning.waited_ns() - waited_before;
  stop = true;
  spinner.join();
  idle.join();
  Model model;
  model.update_threads(before);
  model.update_threads(after);
  const double wall = after.at("now_ns").get<double>() - before.at("now_ns").get<double>();
  const double could_run = 100 * (wall - static_cast<double>(waited)) / wall;
  const ThreadRow& spin_row = model.threads().at(0);
  const ThreadRow& idle_row = model.threads().at(1);
  ASSERT_TRUE(spin_row.user_percent && spin_row.system_percent && idle_row.user_percent &&
              idle_row.system_percent);
  EXPECT_NEAR(*spin_row.user_percent + *spin_row.system_percent, could_run, 10)
      << "waited " << waited << " ns of " << wall;
  EXPECT_LE(*spin_row.user_percent + *spin_row.system_percent, 110);
  EXPECT_LT(*idle_row.user_percent + *idle_row.system_percent, 2);
}

} // namespace
