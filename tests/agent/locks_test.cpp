// The locks of a running program through the agent (docs/locks.md, "Outputs"): locks_program.cpp's
// hotscope::Lockable locks, contended then deadlocked, read as /v1/locks, /v1/threads (JSON and
// text), /v1/metrics (promtool), /debug/pprof/mutex (go tool pprof) and /v1/trace (the wait
// slices and the handoff flows).
#include "demo_process.hpp"
#include "prometheus_check.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace hotscope::testing;
using Json = nlohmann::json;

// /v1/locks once its deadlock stands (or after 10 s).
Json locks_when_deadlocked(const Demo& program) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  Json locks = Json::parse(program.get("/v1/locks"));
  while (locks.at("deadlocks").empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    locks = Json::parse(program.get("/v1/locks"));
  }
  return locks;
}

const Json* lock_named(const Json& locks, const std::string& name) {
  for (const Json& lock : locks.at("locks")) {
    if (lock.at("name") == name) {
      return &lock;
    }
  }
  return nullptr;
}

TEST(AgentLocks, ContentionAndTheDeadlockInEveryOutput) {
  const Demo program(Program{{LOCKS_PROGRAM}});
  const Json locks = locks_when_deadlocked(program);
  ASSERT_EQ(locks.at("deadlocks").size(), 1u) << locks.dump(2);
  const Json& cycle = locks.at("deadlocks").at(0).at("cycle");
  ASSERT_EQ(cycle.size(), 2u);
  std::set<std::string> waiting;
  for (const Json& link : cycle) {
    waiting.insert(link.at("waiter").at("thread").get<std::string>() + " waits for " +
                   link.at("lock").get<std::string>());
    EXPECT_EQ(link.at("waiter_scopes"), (Json{"hold_one", "take_the_other"}));
  }
  EXPECT_EQ(waiting, (std::set<std::string>{"locker-a waits for second_lock",
                                            "locker-b waits for first_lock"}));
  EXPECT_EQ(locks.at("lock_figures").at("deadlocks_found"), 1);

  // The holder kept the lock 10 ms at a time: the waiter waited, at its scope.
  const Json* contended = lock_named(locks, "contended_lock");
  ASSERT_NE(contended, nullptr) << locks.dump(2);
  EXPECT_GT(contended->at("contended"), 0);
  EXPECT_GT(contended->at("wait_max_ns"), 1'000'000);
  EXPECT_EQ(contended->at("top_waiters").at(0).at("thread"), "waiter");
  EXPECT_EQ(contended->at("contended_at").at(0).at("scopes"), (Json{"ask_for_it"}));

  // The same in stats.json's keys, and the deadlock in /v1/threads.
  const Json stats = Json::parse(program.get("/v1/stats"));
  EXPECT_EQ(stats.at("deadlocks").size(), 1u);
  const Json threads = Json::parse(program.get("/v1/threads"));
  EXPECT_EQ(threads.at("deadlocks").size(), 1u);
  const std::string text = program.get("/v1/threads?format=text");
  EXPECT_NE(text.find("\ndeadlock: locker-"), std::string::npos) << text;
  EXPECT_LT(text.find("deadlock: "), text.find("== ")) << text;

  const std::string metrics = program.get("/v1/metrics");
  EXPECT_EQ(prometheus_problems(metrics), std::vector<std::string>{});
  EXPECT_NE(metrics.find("\nhotscope_deadlocks 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("hotscope_lock_wait_seconds_count{lock=\"contended_lock\"}"),
            std::string::npos)
      << metrics;
  if (!std::string(PROMTOOL).empty()) {
    const fs::path file = program.scratch() / "metrics.prom";
    std::ofstream(file) << metrics;
    const CommandResult check =
        run({"sh", "-c", std::string(PROMTOOL) + " check metrics <" + quote(file.string())});
    EXPECT_EQ(check.status, 0) << check.out << check.err;
  }

  // go tool pprof reads the contention: the waits for contended_lock weigh most.
  const fs::path profile = program.scratch() / "mutex.pb.gz";
  ASSERT_EQ(
      program.curl({"--fail", "--output", profile, "http://localhost/debug/pprof/mutex"}).status,
      0);
  const CommandResult top = run({GO, "tool", "pprof", "-top", "-symbolize=none", profile},
                                {{"PPROF_TMPDIR", program.scratch() / "pprof"}});
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("Type: delay"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("wait for contended_lock"), std::string::npos) << top.out;

  // The trace: the waits as slices, an arrow from each release to the acquisition it allowed,
  // each end inside a B/E slice of its thread, the start first (the viewers' rules,
  // docs/formats-output.md).
  const Json trace = Json::parse(program.get("/v1/trace"));
  std::size_t waits = 0;
  std::map<std::uint64_t, int> flow_ends;
  std::map<std::string, int> open; // pid:tid -> B/E slices open
  for (const Json& event : trace.at("traceEvents")) {
    const std::string track = event.at("pid").dump() + ":" + event.value("tid", Json(0)).dump();
    open[track] += event.at("ph") == "B" ? 1 : event.at("ph") == "E" ? -1 : 0;
    if (event.value("cat", "") != "lock") {
      continue;
    }
    waits += event.at("ph") == "X" && event.at("name") == "wait for contended_lock" ? 1 : 0;
    if (event.at("ph") == "s" || event.at("ph") == "f") {
      EXPECT_GT(open[track], 0) << event.dump();
      int& ends = flow_ends[event.at("id").get<std::uint64_t>()];
      EXPECT_EQ(ends, event.at("ph") == "s" ? 0 : 1) << event.dump();
      ends += event.at("ph") == "s" ? 1 : 10;
    }
  }
  EXPECT_GT(waits, 0u);
  EXPECT_TRUE(std::any_of(flow_ends.begin(), flow_ends.end(), [](const auto& flow) {
    return flow.second == 11;
  })) << "no flow with both ends";
}

} // namespace
