// Runs exit_paths_program with HOTSCOPE_OUT and checks what it wrote at exit.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include "support/forked_child_skips.hpp"
#include "support/scratch_dir.hpp"
#include "support/stats.hpp"
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace {

namespace fs = std::filesystem;

struct ProgramRun {
  int status;
  std::string out;
  std::string err;
};

using hotscope::test_support::slurp;

// `shell` runs first in the same shell (e.g. a ulimit).
ProgramRun run_program(const std::string& env, const std::string& mode, const fs::path& dir,
                       const std::string& shell = "") {
  // A long collector period: the early thread ends long before any periodic drain. A hang ends
  // after a minute (status 124), with no program left behind.
  const std::string command = shell + "timeout 60 env HOTSCOPE_COLLECT_MS=1000 " + env + " " +
                              EXIT_PATHS_PROGRAM + " " + mode + " >" + (dir / "stdout").string() +
                              " 2>" + (dir / "stderr").string();
  const int status = std::system(command.c_str());
  return ProgramRun{status, slurp(dir / "stdout"), slurp(dir / "stderr")};
}

using hotscope::test_support::calls_of;

TEST(ExitPaths, ReturningFromMainFlushesEveryThread) {
  const hotscope::testing::ScratchDir scratch("exit-return");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_program("HOTSCOPE_OUT=" + (dir / "out").string(), "return", dir);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const auto stats = nlohmann::json::parse(slurp(dir / "out" / "stats.json"));
  EXPECT_EQ(calls_of(stats, "{anonymous}::early_thread_work"), 100u);
  EXPECT_EQ(calls_of(stats, "main_tail"), 1u);
  for (const char* file : {"report.txt", "stats.json", "trace.json", "trace.folded", "trace.txt"}) {
    EXPECT_TRUE(fs::exists(dir / "out" / file)) << file;
  }
}

TEST(ExitPaths, ExitFromAWorkerThreadFlushesEveryThread) {
  const hotscope::testing::ScratchDir scratch("exit-exit");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_program("HOTSCOPE_OUT=" + (dir / "out").string(), "exit", dir);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto stats = nlohmann::json::parse(slurp(dir / "out" / "stats.json"));
  EXPECT_EQ(calls_of(stats, "{anonymous}::early_thread_work"), 100u);
  EXPECT_EQ(calls_of(stats, "{anonymous}::exiting_thread_work"), 50u);
  EXPECT_EQ(stats.at("records").at("dropped"), 0);
}

// The parent's calls are all in its report, and no child's: a forked child writes none.
void expect_only_the_parents_calls(const fs::path& dir) {
  const auto stats = nlohmann::json::parse(slurp(dir / "out" / "stats.json"));
  EXPECT_EQ(calls_of(stats, "{anonymous}::early_thread_work"), 100u);
  EXPECT_EQ(calls_of(stats, "main_tail"), 1u);
  EXPECT_EQ(calls_of(stats, "{anonymous}::child_work"), 0u);
}

TEST(ExitPaths, AForkedChildRecordsExitsCleanlyAndLeavesTheParentsReports) {
  HOTSCOPE_SKIP_FORKED_CHILD_UNDER_TSAN();
  const hotscope::testing::ScratchDir scratch("exit-fork");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_program("HOTSCOPE_OUT=" + (dir / "out").string(), "fork", dir);
  ASSERT_EQ(run.status, 0) << run.err;
  // LeakSanitizer notes in a forked child that its parent's threads are gone; hotscope says
  // nothing.
  EXPECT_EQ(run.err.find("hotscope"), std::string::npos) << run.err;
  expect_only_the_parents_calls(dir);
}

// Forks while the collector wakes every millisecond: a child never waits for a lock the
// parent's collector thread held at the fork.
TEST(ExitPaths, ForkedChildrenNeverWaitForTheParentsCollector) {
  HOTSCOPE_SKIP_FORKED_CHILD_UNDER_TSAN();
  HOTSCOPE_SKIP_ALLOCATING_FORKED_CHILD_UNDER_ASAN("the collector thread"); // 1 run in 25
  const hotscope::testing::ScratchDir scratch("exit-forks");
  const fs::path& dir = scratch.path();
  const ProgramRun run =
      run_program("HOTSCOPE_COLLECT_MS=1 HOTSCOPE_OUT=" + (dir / "out").string(), "forks", dir);
  ASSERT_EQ(run.status, 0) << run.err;
  expect_only_the_parents_calls(dir);
}

// Forks while another thread starts the agent: a child never waits for the lock that thread held.
TEST(ExitPaths, ForkedChildrenNeverWaitForAnAgentStartingInTheParent) {
  HOTSCOPE_SKIP_FORKED_CHILD_UNDER_TSAN();
  HOTSCOPE_SKIP_ALLOCATING_FORKED_CHILD_UNDER_ASAN("the agent-starting thread");
  const hotscope::testing::ScratchDir scratch("exit-agent-forks");
  const fs::path& dir = scratch.path();
  fs::create_directories(dir / "runtime");
  const ProgramRun run =
      run_program("HOTSCOPE_AGENT=0 HOTSCOPE_RUNTIME_DIR=" + (dir / "runtime").string() +
                      " HOTSCOPE_OUT=" + (dir / "out").string(),
                  "agent-forks", dir);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  for (const auto& entry : fs::directory_iterator(dir / "runtime")) {
    // The mark of a checked directory (docs/agent.md, "Security model") is no process's.
    EXPECT_EQ(entry.path().filename(), ".checked") << "the agent's files outlived the parent";
  }
}

// A forked child lets go of its parent's agent sockets (the Unix one and the TCP listener).
TEST(ExitPaths, AForkedChildHoldsNoneOfTheAgentsListeningSockets) {
  HOTSCOPE_SKIP_FORKED_CHILD_UNDER_TSAN();
  const hotscope::testing::ScratchDir scratch("exit-agent-fork");
  const fs::path& dir = scratch.path();
  fs::create_directories(dir / "runtime");
  const ProgramRun run = run_program("HOTSCOPE_AGENT=1 HOTSCOPE_AGENT_TCP=127.0.0.1:0 "
                                     "HOTSCOPE_RUNTIME_DIR=" +
                                         (dir / "runtime").string(),
                                     "agent-fork", dir);
  EXPECT_EQ(run.status, 0) << run.err;
}

// A forked child has no collector thread; the rings of its ended threads are freed all the same.
TEST(ExitPaths, AForkedChildFreesTheRingsOfItsEndedThreads) {
  HOTSCOPE_SKIP_FORKED_CHILD_UNDER_TSAN();
  HOTSCOPE_SKIP_ALLOCATING_FORKED_CHILD_UNDER_ASAN("the collector thread"); // 1 run in 150
  const hotscope::testing::ScratchDir scratch("exit-child-threads");
  const fs::path& dir = scratch.path();
  const ProgramRun run =
      run_program("HOTSCOPE_OUT=" + (dir / "out").string(), "child-threads", dir);
  EXPECT_EQ(run.status, 0) << run.err;
}

// The collector's and the agent's threads take none of the program's signals.
TEST(ExitPaths, TheProgramsSignalsReachTheProgram) {
  const hotscope::testing::ScratchDir scratch("exit-sigwait");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_program("HOTSCOPE_OUT=" + (dir / "out").string(), "sigwait", dir);
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.status << run.err;
}

// A thread whose ring cannot be mapped (512 MiB rings in a 390 MiB address space) runs on, and
// every record it writes is counted as dropped: written = dropped, nothing kept, no crash.
TEST(ExitPaths, ARingThatCannotBeMappedDropsAndCountsEveryRecord) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizer's shadow memory does not fit in a 390 MiB address space";
#endif
  const hotscope::testing::ScratchDir scratch("exit-no-ring");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_program("HOTSCOPE_AGENT=0 HOTSCOPE_RING_RECORDS=16777216 "
                                     "HOTSCOPE_OUT=" +
                                         (dir / "out").string(),
                                     "return", dir, "ulimit -v 400000; ");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "program result 42\n");
  EXPECT_NE(run.err.find("hotscope: cannot map a ring of 16777216 records"), std::string::npos)
      << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  const auto stats = nlohmann::json::parse(slurp(dir / "out" / "stats.json"));
  const auto& records = stats.at("records");
  // 100 scopes of the early thread and main_tail: a BEGIN and an END each.
  EXPECT_EQ(records.at("written"), 202);
  EXPECT_EQ(records.at("dropped"), 202);
  EXPECT_EQ(records.at("kept"), 0);
}

// HOTSCOPE_ON_SIGNAL=report: SIGTERM writes the reports, then ends the program as SIGTERM does.
TEST(ExitPaths, SigtermWritesTheReportsWhenAskedAndStillEndsTheProgram) {
  const hotscope::testing::ScratchDir scratch("exit-sigterm");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_program(
      "HOTSCOPE_ON_SIGNAL=report HOTSCOPE_OUT=" + (dir / "out").string(), "sigterm", dir);
  ASSERT_TRUE(WIFEXITED(run.status)) << run.status; // the shell's status: 128 + SIGTERM
  EXPECT_EQ(WEXITSTATUS(run.status), 128 + SIGTERM) << run.err;
  const auto stats = nlohmann::json::parse(slurp(dir / "out" / "stats.json"));
  EXPECT_EQ(calls_of(stats, "{anonymous}::early_thread_work"), 100u);
  EXPECT_TRUE(fs::exists(dir / "out" / "trace.json"));
}

// Without it (the library's default), SIGTERM's default action is left alone: no reports.
TEST(ExitPaths, SigtermLeavesNoReportsByDefault) {
  const hotscope::testing::ScratchDir scratch("exit-sigterm-default");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_program("HOTSCOPE_OUT=" + (dir / "out").string(), "sigterm", dir);
  EXPECT_EQ(WEXITSTATUS(run.status), 128 + SIGTERM) << run.err;
  EXPECT_FALSE(fs::exists(dir / "out" / "stats.json"));
}

// A program's own handler stays its own: it runs, and the program ends as it decides.
TEST(ExitPaths, AProgramsOwnSignalHandlerIsKept) {
  const hotscope::testing::ScratchDir scratch("exit-own-handler");
  const fs::path& dir = scratch.path();
  const ProgramRun run =
      run_program("HOTSCOPE_ON_SIGNAL=report HOTSCOPE_OUT=" + (dir / "out").string(),
                  "own-sigterm-handler", dir);
  ASSERT_TRUE(WIFEXITED(run.status));
  EXPECT_EQ(WEXITSTATUS(run.status), 3) << run.err;
  EXPECT_TRUE(fs::exists(dir / "out" / "stats.json"));
}

TEST(ExitPaths, ForcedClockIsReported) {
  const hotscope::testing::ScratchDir scratch("exit-clock");
  const fs::path& dir = scratch.path();
  const ProgramRun run =
      run_program("HOTSCOPE_CLOCK=monotonic HOTSCOPE_OUT=" + (dir / "out").string(), "return", dir);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto stats = nlohmann::json::parse(slurp(dir / "out" / "stats.json"));
  EXPECT_EQ(stats.at("clock").at("source"), "monotonic");
  EXPECT_EQ(calls_of(stats, "{anonymous}::early_thread_work"), 100u);
}

TEST(ExitPaths, UnwritableOutDirIsOneLineAndTheProgramRunsOn) {
  const hotscope::testing::ScratchDir scratch("exit-unwritable");
  const fs::path& dir = scratch.path();
  std::ofstream(dir / "a-file") << "not a directory";
  const ProgramRun run =
      run_program("HOTSCOPE_OUT=" + (dir / "a-file" / "out").string(), "return", dir);
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.out, "program result 42\n");
  EXPECT_NE(run.err.find("HOTSCOPE_OUT="), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

TEST(ExitPaths, BadVariablesAreNamedAndIgnored) {
  const hotscope::testing::ScratchDir scratch("exit-badvars");
  const fs::path& dir = scratch.path();
  const ProgramRun run = run_program(
      "HOTSCOPE_RING_RECORDS=12 HOTSCOPE_CLOCK=sundial HOTSCOPE_OUT=" + (dir / "out").string(),
      "return", dir);
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.out, "program result 42\n");
  EXPECT_NE(run.err.find("HOTSCOPE_RING_RECORDS=\"12\""), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("HOTSCOPE_CLOCK=\"sundial\""), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 2) << run.err;
  EXPECT_TRUE(fs::exists(dir / "out" / "stats.json"));
}

} // namespace
