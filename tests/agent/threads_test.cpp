// `hotscope threads` (GET /v1/threads) against a real deadlock: both threads shown stuck with
// the scope each waits in and its age, and the CPU time of a spinning and a sleeping thread; with
// its mutexes interposed (HOTSCOPE_LOCKS=1), the deadlock named by `hotscope locks`, `threads`
// and the console.
#include "demo_process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>

namespace {

using namespace hotscope::testing;
using Json = nlohmann::json;

Json threads_json(const Demo& program) {
  const CommandResult result =
      cli(program, {"threads", "-p", std::to_string(program.pid()), "--json", "--stuck", "500"});
  EXPECT_EQ(result.status, 0) << result.err;
  return Json::parse(result.out);
}

const Json& thread_named(const Json& threads, const std::string& name) {
  for (const Json& thread : threads.at("threads")) {
    if (thread.at("name") == name) {
      return thread;
    }
  }
  ADD_FAILURE() << "no thread " << name << " in " << threads.dump(1);
  static const Json none = Json::object();
  return none;
}

std::vector<std::string> scope_names(const Json& thread) {
  std::vector<std::string> names;
  for (const Json& scope : thread.at("open_scopes")) {
    names.push_back(scope.at("name"));
  }
  return names;
}

std::uint64_t cpu_ns(const Json& thread) {
  return thread.at("cpu_user_ns").get<std::uint64_t>() +
         thread.at("cpu_system_ns").get<std::uint64_t>();
}

// The spinner's report of its last spell of spinning (threads_program.cpp), once it is written.
std::string spin_report(const Demo& program) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string out = hotscope::test_support::slurp(program.scratch() / "demo.out");
    if (out.find('\n') != std::string::npos) {
      return out;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "the spinner never reported its spinning";
  return "";
}

TEST(AgentThreads, DeadlockedThreadsAreStuckInTheirScopesAndCpuIsMeasured) {
  const Demo program(Program{{THREADS_PROGRAM}});
  const pid_t pid = program.pid();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));

  // The spinner spins for 3 s between two SIGUSR1, and is idle while the CPU times are read.
  const Json before = threads_json(program);
  kill(pid, SIGUSR1);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  kill(pid, SIGUSR1);
  const std::string spun = spin_report(program);
  const Json after = threads_json(program);
  EXPECT_EQ(after.at("pid"), pid);
  EXPECT_EQ(after.at("stuck_threshold_ns"), 500'000'000);
  const std::uint64_t now_ns = after.at("now_ns");
  // Exactly the two lockers are stuck, and listed first.
  const Json& threads = after.at("threads");
  ASSERT_GE(threads.size(), 5u);
  std::set<std::string> stuck;
  for (std::size_t i = 0; i < threads.size(); ++i) {
    EXPECT_EQ(threads[i].at("stuck").get<bool>(), i < 2) << threads[i].dump();
    if (threads[i].at("stuck")) {
      stuck.insert(threads[i].at("name").get<std::string>());
    }
  }
  EXPECT_EQ(stuck, (std::set<std::string>{"locker-a", "locker-b"}));
  for (const auto& [name, scopes] :
       {std::pair{"locker-a", std::vector<std::string>{"hold_first", "take_second"}},
        std::pair{"locker-b", std::vector<std::string>{"hold_second", "take_first"}}}) {
    const Json& thread = thread_named(after, name);
    EXPECT_EQ(scope_names(thread), scopes);
    EXPECT_EQ(thread.at("state"), "S") << "blocked on a mutex: sleeping";
    const Json& outer = thread.at("open_scopes").at(0);
    const Json& inner = thread.at("open_scopes").at(1);
    // Stuck since the program's first moments: at least the 4.6 s the test waited, at most now.
    EXPECT_GE(inner.at("open_ns").get<std::uint64_t>(), 3'000'000'000u);
    EXPECT_LE(outer.at("open_ns").get<std::uint64_t>(), now_ns + 1'000'000'000u);
    EXPECT_GE(outer.at("open_ns"), inner.at("open_ns"));
    EXPECT_NEAR(static_cast<double>(inner.at("opened_ns").get<std::uint64_t>() +
                                    inner.at("open_ns").get<std::uint64_t>()),
                static_cast<double>(now_ns), 2.0)
        << "opened_ns + open_ns is the snapshot's time, within a rounding";
    EXPECT_NE(inner.at("file").get<std::string>().find("threads_program.cpp"), std::string::npos);
  }
  EXPECT_TRUE(thread_named(after, "main").at("open_scopes").empty());

  // The spinner ran whenever it could (its wall time less the time it waited for a CPU), and
  // hotscope shows the CPU time it used; the sleeper hardly ran.
  std::uint64_t spin_wall = 0;
  std::uint64_t spin_cpu = 0;
  std::uint64_t spin_waited = 0;
  ASSERT_EQ(std::sscanf(spun.c_str(), "spun wall=%lu cpu=%lu waited=%lu", &spin_wall, &spin_cpu,
                        &spin_waited),
            3)
      << spun;
  const double runnable = static_cast<double>(spin_wall - spin_waited);
  const double spinner_cpu = static_cast<double>(cpu_ns(thread_named(after, "spinner")) -
                                                 cpu_ns(thread_named(before, "spinner")));
  EXPECT_NEAR(spinner_cpu / runnable, 1.0, 0.10)
      << "hotscope shows " << spinner_cpu << " ns on CPU; " << spun;
  EXPECT_NEAR(spinner_cpu / static_cast<double>(spin_cpu), 1.0, 0.10)
      << "hotscope shows " << spinner_cpu << " ns on CPU; " << spun;
  const double wall = static_cast<double>(now_ns - before.at("now_ns").get<std::uint64_t>());
  const double sleeper_cpu = static_cast<double>(cpu_ns(thread_named(after, "sleeper")) -
                                                 cpu_ns(thread_named(before, "sleeper")));
  EXPECT_LT(sleeper_cpu / wall, 0.02) << "sleeper: " << sleeper_cpu << " ns on CPU of " << wall;
  EXPECT_GT(thread_named(after, "sleeper").at("voluntary_switches").get<std::uint64_t>(),
            thread_named(before, "sleeper").at("voluntary_switches").get<std::uint64_t>());

  // The text form: the stuck threads first, each scope on its own line, indented, with its age.
  const CommandResult text = cli(program, {"threads", "-n", "threads_program"});
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("2 of "), std::string::npos) << text.out;
  const std::size_t locker = text.out.find("== locker-");
  const std::size_t spinner = text.out.find("== spinner");
  EXPECT_LT(locker, spinner) << text.out;
  EXPECT_NE(text.out.find(") == STUCK for "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\nhold_first ("), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\n  take_second ("), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("state S, CPU "), std::string::npos) << text.out;
}

// The two lockers' std::mutex, interposed: `hotscope locks` names the cycle first (each step's
// waiter, lock and holder, the waiters' scopes), then both locks with their waiter;
// --json is the agent's answer; `hotscope threads` and the console's locks and threads tabs name
// the same cycle.
TEST(AgentThreads, LocksNameTheDeadlockOfInterposedMutexes) {
  const Demo program(Program{{THREADS_PROGRAM}}, {{"HOTSCOPE_LOCKS", "1"}});
  const std::string pid = std::to_string(program.pid());
  CommandResult locks;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    locks = cli(program, {"locks", "-p", pid});
    ASSERT_EQ(locks.status, 0) << locks.err;
  } while (locks.out.find("\ndeadlock: ") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline);
  const std::size_t deadlock = locks.out.find("\ndeadlock: locker-");
  ASSERT_NE(deadlock, std::string::npos) << locks.out;
  const std::string cycle =
      locks.out.substr(deadlock + 1, locks.out.find('\n', deadlock + 1) - deadlock - 1);
  for (const char* part : {"locker-a waits for ", "(held by locker-b for ", "locker-b waits for ",
                           "(held by locker-a for ", " → "}) {
    EXPECT_NE(cycle.find(part), std::string::npos) << part << " in " << locks.out;
  }
  EXPECT_NE(locks.out.find("\n  locker-a in hold_first > take_second\n"), std::string::npos)
      << locks.out;
  EXPECT_NE(locks.out.find("\n  locker-b in hold_second > take_first\n"), std::string::npos)
      << locks.out;
  EXPECT_LT(deadlock, locks.out.find("Holders now")) << locks.out;
  // Each lock is waited for by a locker (the holder of an interposed mutex taken without
  // contention is known to the deadlock, from the mutex's owner, not to the table).
  const std::size_t heading = locks.out.find("Holders now");
  const std::string table = locks.out.substr(heading, locks.out.find("\n\n", heading) - heading);
  std::size_t rows = 0;
  for (std::size_t at = table.find('\n'); at != std::string::npos; at = table.find('\n', at + 1)) {
    const std::string line = table.substr(at + 1, table.find('\n', at + 1) - at - 1);
    if (line.find("locker-a") != std::string::npos || line.find("locker-b") != std::string::npos) {
      ++rows;
    }
  }
  EXPECT_EQ(rows, 2u) << locks.out;

  const CommandResult json = cli(program, {"locks", "-p", pid, "--json"});
  ASSERT_EQ(json.status, 0) << json.err;
  const Json answer = Json::parse(json.out);
  EXPECT_EQ(answer.at("deadlocks").size(), 1u) << json.out;
  EXPECT_GE(answer.at("locks").size(), 2u) << json.out;
  EXPECT_GE(answer.at("lock_figures").at("deadlocks_found").get<std::uint64_t>(), 1u);

  const CommandResult threads = cli(program, {"threads", "-p", pid});
  EXPECT_LT(threads.out.find("\ndeadlock: locker-"), threads.out.find("== locker-")) << threads.out;
  for (const char* tab : {"locks", "threads"}) {
    const CommandResult console = cli(program, {"console", "-p", pid, "--tab", tab, "--once"});
    ASSERT_EQ(console.status, 0) << console.err;
    EXPECT_NE(console.out.find("\n deadlock: locker-"), std::string::npos) << console.out;
  }
}

TEST(AgentThreads, BadStuckThresholdIsOneLine) {
  const Demo program(Program{{THREADS_PROGRAM}});
  const CommandResult result = program.curl({"http://localhost/v1/threads?stuck_ms=soon"});
  EXPECT_EQ(Json::parse(result.out).at("error"),
            "stuck_ms=\"soon\" is not a number of milliseconds (0 or more)");
  const CommandResult cli_result =
      cli(program, {"threads", "-p", std::to_string(program.pid()), "--stuck", "-1"});
  EXPECT_EQ(cli_result.status, 2) << cli_result.err;
}

} // namespace
