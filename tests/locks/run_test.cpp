// `hotscope run --locks [--out DIR] -- prog` on a C program that knows nothing of hotscope
// (pthread_locks_program.c): the interposed pthread locks record, and the program runs as it would
// without: its condition waits, failed try-locks and a fork while a lock is held.
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using hotscope::test_support::shell;
using hotscope::test_support::slurp;

// Runs the program's case under `hotscope run --locks`; its exit status, its stats.json.
std::pair<int, nlohmann::json> run(const fs::path& dir, const std::string& which) {
  const int status =
      shell(std::string(HOTSCOPE_CLI) + " run --locks --out " + (dir / "out").string() + " -- " +
            LOCKS_PROGRAM + " " + which + " 2>" + (dir / "err").string());
  const std::string stats = slurp(dir / "out" / "stats.json");
  return {status, stats.empty() ? nlohmann::json() : nlohmann::json::parse(stats)};
}

// Records the program's threads wrote, the main thread's apart.
std::uint64_t records_written(const nlohmann::json& stats) {
  std::uint64_t written = 0;
  for (const auto& thread : stats.at("threads")) {
    written += thread.at("records").at("written").get<std::uint64_t>();
  }
  return written;
}

TEST(LocksRun, AnInversionThatNeverDeadlocksRecordsItsOrders) {
  const hotscope::testing::ScratchDir scratch("locks-run-inversion");
  const auto [status, stats] = run(scratch.path(), "inversion");
  ASSERT_EQ(status, 0) << slurp(scratch.path() / "err");
  EXPECT_GE(records_written(stats), 4u) << "two LOCK_ORDER records and their stacks at least";
  ASSERT_EQ(stats.at("lock_inversions").size(), 1u) << stats.at("lock_inversions");
  EXPECT_TRUE(stats.at("deadlocks").empty());
  // The summary on stderr names it too.
  const std::string err = slurp(scratch.path() / "err");
  EXPECT_NE(err.find("hotscope: locks of "), std::string::npos) << err;
  EXPECT_NE(err.find("Lock-order inversions: 1"), std::string::npos) << err;
}

TEST(LocksRun, AContendedStaticMutexIsNamedInTheTrace) {
  const hotscope::testing::ScratchDir scratch("locks-run-contended");
  const auto [status, stats] = run(scratch.path(), "contended");
  ASSERT_EQ(status, 0) << slurp(scratch.path() / "err");
  // The program's `static pthread_mutex_t guarded`, named by the symbolizer module.
  const auto trace = nlohmann::json::parse(slurp(scratch.path() / "out" / "trace.json"));
  std::uint64_t waits = 0;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.value("name", "") == "wait for guarded") {
      ++waits;
      EXPECT_GT(event.at("dur").get<double>(), 40'000.0) << "µs: the holder keeps it 100 ms";
    }
  }
  EXPECT_EQ(waits, 1u);
  const auto& locks = stats.at("locks");
  const auto guarded = std::find_if(locks.begin(), locks.end(),
                                    [](const auto& lock) { return lock.at("name") == "guarded"; });
  ASSERT_NE(guarded, locks.end()) << locks;
  EXPECT_EQ(guarded->at("kind"), "pthread_mutex");
  EXPECT_EQ(guarded->at("contended"), 1);
  const std::string err = slurp(scratch.path() / "err");
  EXPECT_NE(err.find("guarded"), std::string::npos) << err;
}

TEST(LocksRun, WithoutLocksNothingIsRecorded) {
  const hotscope::testing::ScratchDir scratch("locks-run-off");
  const fs::path& dir = scratch.path();
  ASSERT_EQ(shell(std::string(HOTSCOPE_CLI) + " run --cpu --out " + (dir / "out").string() +
                  " -- " + LOCKS_PROGRAM + " inversion 2>" + (dir / "err").string()),
            0);
  EXPECT_EQ(records_written(nlohmann::json::parse(slurp(dir / "out" / "stats.json"))), 0u);
}

// Only `--locks` preloads the runtime with the pthread lock functions: under `--cpu` or `--heap`
// a program's locks are glibc's, not an interposer's that is off.
TEST(LocksRun, OnlyLocksPreloadsTheLockFunctions) {
  const hotscope::testing::ScratchDir scratch("locks-run-which");
  const fs::path& dir = scratch.path();
  for (const char* option : {"--cpu", "--locks"}) {
    const fs::path maps = dir / (std::string(option + 2) + ".maps");
    ASSERT_EQ(shell(std::string(HOTSCOPE_CLI) + " run " + option + " --out " +
                    (dir / "out").string() + " -- cat /proc/self/maps >" + maps.string() + " 2>" +
                    (dir / "err").string()),
              0)
        << slurp(dir / "err");
    const bool locks = std::string(option) == "--locks";
    EXPECT_EQ(slurp(maps).find("/libhotscope-run-locks.so") != std::string::npos, locks) << option;
    EXPECT_EQ(slurp(maps).find("/libhotscope-run.so") != std::string::npos, !locks) << option;
  }
}

TEST(LocksRun, ConditionWaitsTryLocksAndAForkWhileALockIsHeldRunAsWithout) {
  for (const char* which : {"condvar", "trylock", "fork"}) {
    const hotscope::testing::ScratchDir scratch(std::string("locks-run-") + which);
    const auto [status, stats] = run(scratch.path(), which);
    EXPECT_EQ(status, 0) << which << ": " << slurp(scratch.path() / "err");
    EXPECT_FALSE(stats.is_null()) << which;
  }
}

// Starts `command` under `hotscope run --locks`, ends it with SIGTERM after 1.5 s (it deadlocked:
// it never ends by itself) and returns its stats.json.
nlohmann::json run_until_sigterm(const fs::path& dir, const std::vector<std::string>& command) {
  std::vector<std::string> argv{HOTSCOPE_CLI,           "run", "--locks", "--out",
                                (dir / "out").string(), "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  const pid_t launcher = hotscope::test_support::start_command(argv, dir / "err");
  EXPECT_GT(launcher, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(launcher, SIGTERM);
  EXPECT_NE(hotscope::test_support::wait_for_child(launcher), -1) << "the launcher did not end";
  const std::string stats = slurp(dir / "out" / "stats.json");
  EXPECT_FALSE(stats.empty()) << slurp(dir / "err");
  return stats.empty() ? nlohmann::json() : nlohmann::json::parse(stats);
}

TEST(LocksRun, ADeadlockedProgramEndedBySigtermWritesItsReports) {
  const hotscope::testing::ScratchDir scratch("locks-run-deadlock");
  const fs::path& dir = scratch.path();
  const nlohmann::json json = run_until_sigterm(dir, {LOCKS_PROGRAM, "deadlock"});
  ASSERT_FALSE(json.is_null());
  // Each thread's wait (LOCK_WAIT, LOCK_HOLDER, a stack) and order (LOCK_ORDER, a stack).
  EXPECT_GE(records_written(json), 8u);
  // The two static mutexes, each held by one thread and waited for by the other.
  ASSERT_EQ(json.at("deadlocks").size(), 1u) << json.at("deadlocks");
  EXPECT_EQ(json.at("deadlocks")[0].at("cycle").size(), 2u);
  const std::string err = slurp(dir / "err");
  EXPECT_NE(err.find("deadlock: "), std::string::npos) << err;
}

// The same with plain std::mutex in a C++ program: the deadlock names both statics.
TEST(LocksRun, AStdMutexDeadlockIsNamedWithBothMutexes) {
  const hotscope::testing::ScratchDir scratch("locks-run-std-mutex");
  const nlohmann::json json = run_until_sigterm(scratch.path(), {STD_MUTEX_PROGRAM});
  ASSERT_FALSE(json.is_null());
  ASSERT_EQ(json.at("deadlocks").size(), 1u) << json.at("deadlocks");
  std::set<std::string> locks;
  for (const auto& link : json.at("deadlocks")[0].at("cycle")) {
    const std::string lock = link.at("lock");
    locks.insert(lock.find("accounts_mutex") != std::string::npos ? "accounts_mutex"
                 : lock.find("ledger_mutex") != std::string::npos ? "ledger_mutex"
                                                                  : lock);
  }
  EXPECT_EQ(locks, (std::set<std::string>{"accounts_mutex", "ledger_mutex"}))
      << json.at("deadlocks");
}

} // namespace
