// `hotscope check -p PID | -n NAME --policy FILE` against hotscope-demo's agent (docs/ci.md,
// "Checking a running process"): the live statistics judged, functions, queues and locks, with
// the exit codes of a file's check and of the commands that reach an agent.
#include "agent/demo_process.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace {

using namespace hotscope::testing;

fs::path write(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return dir / name;
}

// The demo's pipeline queues and its named cache lock, busy: budgets it keeps.
constexpr const char* kKept = R"([functions."enqueue_work"]
calls = ">= 1"
[queues."work_queue"]
pushed = ">= 1"
wait_p99 = "< 100s"
[locks."cache_mutex"]
acquisitions = ">= 1"
hold_p99 = "< 100s"
)";

TEST(CheckCli, JudgesARunningProcessBudgets) {
  Demo demo({}, true, kBusyDemo);
  const std::string pid = std::to_string(demo.pid());
  const fs::path kept = write(demo.scratch(), "kept.toml", kKept);
  // The demo's first requests go through its pipeline within a second of its start.
  CommandResult held;
  for (int attempt = 0; attempt < 50; ++attempt) {
    held = cli(demo, {"check", "-p", pid, "--policy", kept});
    if (held.status != 0 || held.out.find(": 5 of 5 rules held\n") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(held.status, 0) << held.out << held.err;
  EXPECT_EQ(held.out.rfind("check: process " + pid + " (hotscope-demo)  ", 0), 0U) << held.out;
  EXPECT_NE(held.out.find(": 5 of 5 rules held\n"), std::string::npos) << held.out;

  // A budget the queue cannot keep, by name: exit 1, the broken rule and its line.
  const fs::path broken = write(demo.scratch(), "broken.toml",
                                "[queues.\"work_queue\"]\npushed = \"< 1\"\n[locks.\"cache_mutex\"]"
                                "\nacquisitions = \">= 1\"\n");
  const CommandResult fails = cli(demo, {"check", "-n", "hotscope-demo", "--policy", broken});
  EXPECT_EQ(fails.status, 1) << fails.err;
  EXPECT_NE(fails.out.find(": 1 of 2 rules held\nFAILS queue work_queue: pushed = \"< 1\" is "),
            std::string::npos)
      << fails.out;
  EXPECT_NE(fails.out.find(" (line 2)\n"), std::string::npos) << fails.out;

  const CommandResult json = cli(demo, {"check", "-p", pid, "--policy", broken, "--json"});
  EXPECT_EQ(json.status, 1) << json.err;
  const nlohmann::json out = nlohmann::json::parse(json.out);
  EXPECT_EQ(out["new"]["source"], "process " + pid + " (hotscope-demo)");
  EXPECT_EQ(out["policy"]["judgements"].size(), 2U) << json.out;
}

TEST(CheckCli, FailuresAreOneLine) {
  Demo demo;
  const std::string pid = std::to_string(demo.pid());
  const fs::path policy = write(demo.scratch(), "p.toml", kKept);
  const auto refused = [&](const std::vector<std::string>& arguments, int status,
                           const std::string& part) {
    const CommandResult result = cli(demo, arguments);
    EXPECT_EQ(result.status, status) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_NE(result.err.find(part), std::string::npos) << result.err;
    EXPECT_EQ(result.out, "");
  };
  refused({"check", "-p", "999999999", "--policy", policy}, 3, "999999999");
  refused({"check", "-n", "no-such-program", "--policy", policy}, 3, "no-such-program");
  refused({"check", "--policy", policy}, 2, "check: say what to judge");
  refused({"check", policy, "-p", pid, "--policy", policy}, 2,
          "check: give one of NEW, -p PID and -n NAME");
}

} // namespace
