// `hotscope run` and signals (docs/agent.md, "hotscope run"): the launcher passes signals on to
// the program and ends as it ended; Ctrl-C in a terminal reaches the program once; SIGTERM and
// SIGINT write the reports before they end the program (HOTSCOPE_ON_SIGNAL=report, which
// `hotscope run` sets), for a program linking libhotscope and for python3 under --heap.
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/scratch_dir.hpp"
#include "support/stats.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using hotscope::test_support::slurp;
using hotscope::test_support::start_command;
using hotscope::test_support::wait_for_child;
using hotscope::test_support::wait_for_text;
using namespace std::chrono_literals;

constexpr const char* kPython = "/usr/bin/python3";

// The pid the program printed after "ready " in `output`, once it did; 0 if it never did.
pid_t wait_until_ready(const fs::path& output) {
  const std::string ready = wait_for_text(output, "ready ");
  return ready.empty() ? 0 : std::atoi(ready.c_str() + 6);
}

// A zombie has ended: an orphan waits for whoever adopted it (pid 1 of a container) to reap it.
bool still_runs(pid_t pid) {
  if (pid <= 0 || kill(pid, 0) != 0) {
    return false;
  }
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t state = stat.rfind(") ");
  return state == std::string::npos || stat[state + 2] != 'Z';
}

std::vector<std::string> run_command(const fs::path& out, std::vector<std::string> program,
                                     bool heap = false) {
  std::vector<std::string> command{HOTSCOPE_CLI, "run", "--out", out.string()};
  if (heap) {
    command.insert(command.end(), {"--heap", "--no-summary"});
  }
  command.push_back("--");
  command.insert(command.end(), program.begin(), program.end());
  return command;
}

std::uint64_t calls_of(const fs::path& stats_file, const std::string& name) {
  return hotscope::test_support::calls_of(nlohmann::json::parse(slurp(stats_file)), name);
}

// SIGKILLs the launcher and reaps it; whether its program then ended within 10 s (it is killed
// otherwise).
bool kill_the_launcher(pid_t launcher, pid_t program) {
  kill(launcher, SIGKILL);
  wait_for_child(launcher);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (still_runs(program) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  if (still_runs(program)) {
    kill(program, SIGKILL);
    return false;
  }
  return true;
}

struct Ended {
  int status = -1;       // the launcher's wait status
  bool orphaned = false; // the program outlived its launcher (it is killed then)
  std::string output;
};

// `hotscope run --out DIR/out -- signalled MODE`, sent `signal` once the program is ready.
Ended signal_the_launcher(const fs::path& dir, const std::string& mode, int signal) {
  const fs::path output = dir / ("output-" + mode + "-" + std::to_string(signal));
  const pid_t launcher = start_command(run_command(dir / "out", {SIGNALLED_PROGRAM, mode}), output);
  const pid_t program = wait_until_ready(output);
  Ended ended;
  if (program > 0) {
    kill(launcher, signal);
  }
  ended.status = wait_for_child(launcher);
  ended.orphaned = still_runs(program);
  if (ended.orphaned) {
    kill(program, SIGKILL);
  }
  ended.output = slurp(output);
  return ended;
}

TEST(RunSignals, SigtermToTheLauncherReachesTheProgramWhichWritesItsReports) {
  const hotscope::testing::ScratchDir scratch("run-sigterm");
  const Ended ended = signal_the_launcher(scratch.path(), "wait", SIGTERM);
  EXPECT_FALSE(ended.orphaned) << "the program outlived its launcher";
  EXPECT_TRUE(WIFSIGNALED(ended.status) && WTERMSIG(ended.status) == SIGTERM)
      << ended.status << ended.output;
  EXPECT_EQ(calls_of(scratch.path() / "out" / "stats.json", "ready"), 1u) << ended.output;
}

// SIGKILL cannot be passed on: the kernel sends the program SIGTERM when its launcher dies
// (PR_SET_PDEATHSIG), which writes the reports and ends it instead of leaving it orphaned.
TEST(RunSignals, AKilledLauncherEndsTheProgramWithItsReports) {
  const hotscope::testing::ScratchDir scratch("run-sigkill");
  const fs::path output = scratch.path() / "output";
  const pid_t launcher =
      start_command(run_command(scratch.path() / "out", {SIGNALLED_PROGRAM, "wait"}), output);
  const pid_t program = wait_until_ready(output);
  ASSERT_GT(program, 0) << slurp(output);
  ASSERT_TRUE(kill_the_launcher(launcher, program)) << "the program outlived its launcher by 10 s";
  EXPECT_EQ(calls_of(scratch.path() / "out" / "stats.json", "ready"), 1u) << slurp(output);
}

// A launcher killed with SIGKILL cannot symbolize the sampled mode's report: the program, ended
// by SIGTERM (PR_SET_PDEATHSIG), finds that its parent is no longer the launcher and writes and
// names its profile itself (docs/heap.md, "The report at exit").
TEST(RunSignals, AKilledLauncherLeavesTheSampledProgramsOwnProfile) {
  if (access(kPython, X_OK) != 0) {
    GTEST_SKIP() << kPython << " is not installed (scripts/packages.txt lists python3)";
  }
  const hotscope::testing::ScratchDir scratch("run-sigkill-sampled");
  const fs::path output = scratch.path() / "output";
  setenv("HOTSCOPE_HEAP_MODE", "sampled", 1);
  setenv("HOTSCOPE_HEAP_SAMPLE_BYTES", "4096", 1);
  const pid_t launcher = start_command(
      run_command(scratch.path() / "out",
                  {kPython, "-c",
                   "import os, time\nprint('ready', os.getpid(), flush=True)\ntime.sleep(30)\n"},
                  true),
      output);
  unsetenv("HOTSCOPE_HEAP_MODE");
  unsetenv("HOTSCOPE_HEAP_SAMPLE_BYTES");
  const pid_t program = wait_until_ready(output);
  ASSERT_GT(program, 0) << slurp(output);
  ASSERT_TRUE(kill_the_launcher(launcher, program)) << "the program outlived its launcher by 10 s";
  const auto profile = nlohmann::json::parse(slurp(scratch.path() / "out" / "heap.json"));
  EXPECT_GT(profile.at("pps").size(), 0u);
  std::size_t named = 0;
  for (const auto& frame : profile.at("ftbl")) {
    named += frame.get<std::string>().find("???") == std::string::npos ? 1 : 0;
  }
  EXPECT_GT(named, 1u) << profile.at("ftbl").dump(); // more than [root]
}

// The sampled mode starts its reporter thread at the first sample after 20 ms (docs/heap.md,
// "Signals"). A program ended before it writes its profile from the signal's handler; one that
// allocates on gets the thread.
pid_t start_sampled_python(const fs::path& dir, const char* sample_bytes, const std::string& code) {
  setenv("HOTSCOPE_HEAP_MODE", "sampled", 1);
  setenv("HOTSCOPE_HEAP_SAMPLE_BYTES", sample_bytes, 1);
  const pid_t launcher =
      start_command(run_command(dir / "out", {kPython, "-c", code}, true), dir / "output");
  unsetenv("HOTSCOPE_HEAP_MODE");
  unsetenv("HOTSCOPE_HEAP_SAMPLE_BYTES");
  return launcher;
}

TEST(RunSignals, ASampledProgramEndedBeforeItsReporterThreadWritesItsProfileFromTheHandler) {
  if (access(kPython, X_OK) != 0) {
    GTEST_SKIP() << kPython << " is not installed (scripts/packages.txt lists python3)";
  }
  const hotscope::testing::ScratchDir scratch("run-sampled-early");
  // No sample at all (one per GiB): the reporter never starts.
  const pid_t launcher = start_sampled_python(
      scratch.path(), "1073741824",
      "import os, time\nprint('ready', os.getpid(), flush=True)\ntime.sleep(30)\n");
  const pid_t program = wait_until_ready(scratch.path() / "output");
  ASSERT_GT(program, 0) << slurp(scratch.path() / "output");
  EXPECT_EQ(hotscope::test_support::threads_named(std::to_string(program), "hotscope-signal"), 0u);
  kill(launcher, SIGTERM);
  const int status = wait_for_child(launcher);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  const auto profile = nlohmann::json::parse(slurp(scratch.path() / "out" / "heap.json"));
  // Written from the handler by the program, named by the launcher: its command line.
  EXPECT_EQ(profile.at("cmd").get<std::string>().rfind(std::string(kPython) + " -c ", 0), 0u);
}

TEST(RunSignals, ASampledProgramThatAllocatesOnGetsItsReporterThread) {
  if (access(kPython, X_OK) != 0) {
    GTEST_SKIP() << kPython << " is not installed (scripts/packages.txt lists python3)";
  }
  const hotscope::testing::ScratchDir scratch("run-sampled-reporter");
  const fs::path go = scratch.path() / "go";
  const pid_t launcher = start_sampled_python(scratch.path(), "524288",
                                              "import os, time\n"
                                              "print('ready', os.getpid(), flush=True)\n"
                                              "while not os.path.exists('" +
                                                  go.string() +
                                                  "'):\n"
                                                  "    time.sleep(0.01)\n"
                                                  "kept = [bytearray(1 << 20) for _ in range(32)]\n"
                                                  "print('allocated', flush=True)\n"
                                                  "time.sleep(30)\n");
  const pid_t program = wait_until_ready(scratch.path() / "output");
  ASSERT_GT(program, 0) << slurp(scratch.path() / "output");
  const std::string pid = std::to_string(program);
  // Started at the first sample after 20 ms: the program is older when it allocates on.
  std::this_thread::sleep_for(30ms);
  std::ofstream(go.string()) << "go\n";
  ASSERT_FALSE(wait_for_text(scratch.path() / "output", "allocated").empty());
  EXPECT_EQ(hotscope::test_support::threads_named(pid, "hotscope-signal"), 1u);
  kill(launcher, SIGTERM);
  const int status = wait_for_child(launcher);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  const auto profile = nlohmann::json::parse(slurp(scratch.path() / "out" / "heap.json"));
  EXPECT_GT(profile.at("pps").size(), 0u);
}

TEST(RunSignals, TheOtherSignalsAreForwardedAndTheLauncherEndsWithTheProgramsStatus) {
  const hotscope::testing::ScratchDir scratch("run-forward");
  const fs::path& dir = scratch.path();
  for (const int signal : {SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
    const Ended ended = signal_the_launcher(dir, "exit", signal);
    EXPECT_FALSE(ended.orphaned) << strsignal(signal);
    EXPECT_TRUE(WIFEXITED(ended.status) && WEXITSTATUS(ended.status) == 40 + signal)
        << strsignal(signal) << ": status " << ended.status << ended.output;
  }
}

// Ctrl-C in a terminal: the terminal sends SIGINT to the whole foreground process group, so the
// program has it already and the launcher must not send it again; the program handles it, ends
// normally and writes its reports; the launcher ends with its status.
TEST(RunSignals, CtrlCInATerminalReachesTheProgramOnceAndEndsWithAProfile) {
  const hotscope::testing::ScratchDir scratch("run-ctrl-c");
  const fs::path& dir = scratch.path();
  const std::vector<std::string> command = run_command(dir / "out", {SIGNALLED_PROGRAM, "count"});
  int terminal = -1;
  const pid_t launcher = forkpty(&terminal, nullptr, nullptr, nullptr);
  ASSERT_GE(launcher, 0) << std::strerror(errno);
  if (launcher == 0) {
    hotscope::test_support::default_signals();
    hotscope::test_support::exec_command(command);
  }
  std::string seen;
  const auto read_until = [&](const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    char buffer[256];
    while (seen.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      const ssize_t got = read(terminal, buffer, sizeof buffer);
      if (got <= 0) {
        return; // EIO: every process on the terminal is gone
      }
      seen.append(buffer, static_cast<std::size_t>(got));
    }
  };
  read_until("ready");
  ASSERT_NE(seen.find("ready"), std::string::npos) << seen;
  ASSERT_EQ(write(terminal, "\x03", 1), 1); // the terminal's interrupt character
  read_until("sigint");
  read_until("\n");
  const int status = wait_for_child(launcher);
  close(terminal);
  EXPECT_NE(seen.find("sigint 1"), std::string::npos) << seen;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << seen;
  EXPECT_EQ(calls_of(dir / "out" / "stats.json", "ready"), 1u) << seen;
}

// python3 has no handler for SIGTERM; its SIGINT handler raises KeyboardInterrupt, and after
// that ends the program, python3 ends itself with SIGINT. Either way heap.json is written, the
// program's own handler still runs, and the launcher ends killed by the same signal.
void python_ends_with_a_profile(int signal) {
  if (access(kPython, X_OK) != 0) {
    GTEST_SKIP() << kPython << " is not installed (scripts/packages.txt lists python3)";
  }
  const hotscope::testing::ScratchDir scratch("run-python-" + std::to_string(signal));
  const fs::path& dir = scratch.path();
  const fs::path output = dir / "output";
  const pid_t launcher = start_command(run_command(dir / "out",
                                                   {kPython, "-c",
                                                    "import os, time\n"
                                                    "print('ready', os.getpid(), flush=True)\n"
                                                    "try:\n"
                                                    "    time.sleep(30)\n"
                                                    "finally:\n"
                                                    "    print('finally ran', flush=True)\n"},
                                                   true),
                                       output);
  ASSERT_GT(wait_until_ready(output), 0) << slurp(output);
  kill(launcher, signal);
  const int status = wait_for_child(launcher);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal) << status << slurp(output);
  const auto profile = nlohmann::json::parse(slurp(dir / "out" / "heap.json"));
  EXPECT_GT(profile.at("pps").size(), 0u);
  if (signal == SIGINT) {
    EXPECT_NE(slurp(output).find("KeyboardInterrupt"), std::string::npos) << slurp(output);
    EXPECT_NE(slurp(output).find("finally ran"), std::string::npos) << slurp(output);
  }
}

TEST(RunSignals, PythonUnderTheHeapProfilerEndedBySigintWritesHeapJson) {
  python_ends_with_a_profile(SIGINT);
}

TEST(RunSignals, PythonUnderTheHeapProfilerEndedBySigtermWritesHeapJson) {
  python_ends_with_a_profile(SIGTERM);
}

} // namespace
