// Runs crash_program in each of its crashes with HOTSCOPE_OUT and reads the report it left.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/scratch_dir.hpp"

#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using hotscope::test_support::slurp;
using nlohmann::json;

struct ProgramRun {
  pid_t pid = 0;
  int status = 0;
  std::string output; // stdout and stderr
  fs::path out;       // HOTSCOPE_OUT
};

ProgramRun run_program(const fs::path& dir, const std::string& mode,
                       std::vector<std::string> env = {}) {
  ProgramRun result;
  result.out = dir / "out";
  std::vector<std::string> command{"/usr/bin/env", "HOTSCOPE_OUT=" + result.out.string()};
  command.insert(command.end(), env.begin(), env.end());
  command.push_back(CRASH_PROGRAM);
  command.push_back(mode);
  result.pid = hotscope::test_support::start_command(command, dir / "output");
  result.status = hotscope::test_support::wait_for_child(result.pid);
  result.output = slurp(dir / "output");
  return result;
}

json report(const ProgramRun& run, pid_t pid = 0) {
  const fs::path file = run.out / ("crash." + std::to_string(pid == 0 ? run.pid : pid) + ".json");
  EXPECT_TRUE(fs::exists(file)) << run.output;
  return fs::exists(file) ? json::parse(slurp(file)) : json::object();
}

bool killed_by(int status, int signal) {
#if defined(__SANITIZE_ADDRESS__)
  // ASan's SIGSEGV handler, installed before the program starts, runs after hotscope's report
  // and ends the process with an exit status of its own.
  if (signal == SIGSEGV) {
    return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0;
  }
#endif
  return status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == signal;
}

const json* crashed_thread(const json& report) {
  if (!report.contains("threads")) {
    return nullptr;
  }
  for (const json& thread : report.at("threads")) {
    if (thread.value("crashed", false)) {
      return &thread;
    }
  }
  return nullptr;
}

std::vector<std::string> open_scopes(const json& thread) {
  std::vector<std::string> names;
  for (const json& scope : thread.at("open_scopes")) {
    names.push_back(scope.at("name"));
  }
  return names;
}

TEST(Crash, AFaultInAWorkerNamesTheThreadItsScopesAndTheOthers) {
  const hotscope::testing::ScratchDir scratch("crash-worker");
  const ProgramRun crashed = run_program(scratch.path(), "worker");
  EXPECT_TRUE(killed_by(crashed.status, SIGSEGV)) << crashed.status << crashed.output;
  const json r = report(crashed);
  EXPECT_EQ(r.at("signal").at("name"), "SIGSEGV");
  EXPECT_EQ(r.at("signal").at("code_name"), "SEGV_MAPERR");
  EXPECT_EQ(r.at("signal").at("address"), 64);
  EXPECT_EQ(r.at("thread").at("name"), "crasher");
  EXPECT_TRUE(r.at("complete"));
  const json* thread = crashed_thread(r);
  ASSERT_NE(thread, nullptr) << r.dump(1);
  EXPECT_EQ(thread->at("tid"), r.at("thread").at("tid"));
  EXPECT_EQ(open_scopes(*thread), (std::vector<std::string>{"worker_job", "crash_site"}));
  const json& last = thread->at("last_records");
  ASSERT_GE(last.size(), 3u);
  EXPECT_EQ(last.back().at("text"), "> crash_site");
  EXPECT_EQ(last.back().at("depth"), 1);
  EXPECT_EQ(last[last.size() - 2].at("text"), "- about to crash");
  // The other threads: main waits in its scope, the idle thread sleeps in its own.
  bool idle_seen = false;
  bool main_seen = false;
  for (const json& other : r.at("threads")) {
    idle_seen = idle_seen || open_scopes(other) == std::vector<std::string>{"idle_wait"};
    main_seen = main_seen || open_scopes(other) == std::vector<std::string>{"main_scope"};
  }
  EXPECT_TRUE(idle_seen && main_seen) << r.dump(1);
  ASSERT_FALSE(r.at("backtrace").empty());
  const json& first = r.at("backtrace").front();
  EXPECT_EQ(first.at("module"), fs::canonical(CRASH_PROGRAM).string());
  EXPECT_FALSE(first.at("build_id").get<std::string>().empty());
  EXPECT_EQ(r.at("counters").at(0).at("name"), "crash_counter");
  EXPECT_EQ(r.at("counters").at(0).at("last"), 42);
  EXPECT_EQ(r.at("heap"), json({{"mode", "not linked"}}));
  const std::string text = slurp(crashed.out / ("crash." + std::to_string(crashed.pid) + ".txt"));
  EXPECT_NE(text.find("thread crasher (tid "), std::string::npos) << text;
  EXPECT_NE(text.find("    worker_job (open "), std::string::npos) << text;
}

TEST(Crash, AbortFromMainIsReportedAndStillEndsBySigabrt) {
  const hotscope::testing::ScratchDir scratch("crash-abort");
  const ProgramRun crashed = run_program(scratch.path(), "abort");
  EXPECT_TRUE(killed_by(crashed.status, SIGABRT)) << crashed.status << crashed.output;
  const json r = report(crashed);
  EXPECT_EQ(r.at("signal").at("number"), SIGABRT);
  EXPECT_EQ(r.at("signal").at("code_name"), "SI_TKILL");
  const json* thread = crashed_thread(r);
  ASSERT_NE(thread, nullptr) << r.dump(1);
  EXPECT_EQ(open_scopes(*thread), (std::vector<std::string>{"main_scope", "before_abort"}));
}

TEST(Crash, AnUncaughtExceptionIsReportedOnceWithItsType) {
  const hotscope::testing::ScratchDir scratch("crash-throw");
  const ProgramRun crashed = run_program(scratch.path(), "throw");
  EXPECT_TRUE(killed_by(crashed.status, SIGABRT)) << crashed.status << crashed.output;
  // The C++ runtime's own terminate handler still ran: it names the exception.
  EXPECT_NE(crashed.output.find("nobody catches this"), std::string::npos) << crashed.output;
  const json r = report(crashed);
  EXPECT_FALSE(r.contains("signal"));
  EXPECT_EQ(r.at("terminate").at("exception"), "St13runtime_error");
  EXPECT_EQ(r.at("terminate").at("what"), "nobody catches this");
  const json* thread = crashed_thread(r);
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ(open_scopes(*thread), (std::vector<std::string>{"main_scope", "thrower"}));
}

TEST(Crash, AStackOverflowIsReportedFromTheAlternateStack) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reports stack overflows itself, on its own alternate stack";
#endif
  const hotscope::testing::ScratchDir scratch("crash-overflow");
  const ProgramRun crashed = run_program(scratch.path(), "overflow");
  EXPECT_TRUE(killed_by(crashed.status, SIGSEGV)) << crashed.status << crashed.output;
  const json r = report(crashed);
  const json* thread = crashed_thread(r);
  ASSERT_NE(thread, nullptr);
  const std::vector<std::string> scopes = open_scopes(*thread);
  ASSERT_GT(scopes.size(), 100u);
  EXPECT_EQ(scopes.front(), "main_scope");
  EXPECT_EQ(scopes.back(), "recurse");
  EXPECT_EQ(r.at("backtrace").size(), 64u);
}

TEST(Crash, ACrashInAForkedChildIsReportedUnderTheChildsPid) {
  const hotscope::testing::ScratchDir scratch("crash-fork");
  const ProgramRun parent = run_program(scratch.path(), "fork");
  ASSERT_TRUE(parent.status != -1 && WIFEXITED(parent.status)) << parent.output;
  pid_t child = 0;
  int status = 0;
  const std::size_t line = parent.output.rfind("child "); // after what a sanitizer printed
  ASSERT_NE(line, std::string::npos) << parent.output;
  ASSERT_EQ(std::sscanf(parent.output.c_str() + line, "child %d status %d", &child, &status), 2);
  EXPECT_TRUE(killed_by(status, SIGSEGV)) << status;
  const json r = report(parent, child);
  EXPECT_EQ(r.at("pid"), child);
  const json* thread = crashed_thread(r);
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ(open_scopes(*thread),
            (std::vector<std::string>{"main_scope", "child_work", "crash_site"}));
  EXPECT_FALSE(fs::exists(parent.out / ("crash." + std::to_string(parent.pid) + ".json")));
}

TEST(Crash, AHandlerInstalledBeforeHotscopeGetsTheSignalAfterTheReport) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan installs its SIGSEGV handler between the program's and hotscope's";
#endif
  const hotscope::testing::ScratchDir scratch("crash-before");
  const ProgramRun crashed = run_program(scratch.path(), "segv", {"CRASH_PROGRAM_HANDLER=before"});
  EXPECT_TRUE(killed_by(crashed.status, SIGSEGV)) << crashed.status << crashed.output;
  EXPECT_NE(crashed.output.find("program handler: after the report"), std::string::npos)
      << crashed.output;
  EXPECT_EQ(report(crashed).at("signal").at("name"), "SIGSEGV");
}

TEST(Crash, AHandlerInstalledAfterHotscopeRunsFirstAndChainsToIt) {
  const hotscope::testing::ScratchDir scratch("crash-after");
  const ProgramRun crashed = run_program(scratch.path(), "segv", {"CRASH_PROGRAM_HANDLER=after"});
  EXPECT_TRUE(killed_by(crashed.status, SIGSEGV)) << crashed.status << crashed.output;
  EXPECT_NE(crashed.output.find("program handler: before the report"), std::string::npos)
      << crashed.output;
  EXPECT_EQ(report(crashed).at("signal").at("name"), "SIGSEGV");
}

// With a core size limit, the kernel still dumps core after the report (where core_pattern
// writes a file or hands the core to a helper).
TEST(Crash, ACoreIsStillDumped) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan ends a SIGSEGV itself, without a core dump (disable_coredump)";
#endif
  const std::string pattern = slurp("/proc/sys/kernel/core_pattern");
  rlimit limit{};
  getrlimit(RLIMIT_CORE, &limit);
  if (pattern.empty() || pattern == "\n" || limit.rlim_max == 0) {
    GTEST_SKIP() << "no core dumps on this machine (core_pattern \"" << pattern
                 << "\", hard core size limit " << limit.rlim_max << ")";
  }
  const hotscope::testing::ScratchDir scratch("crash-core");
  const fs::path& dir = scratch.path();
  // In the scratch directory, so that a core_pattern of "core" writes it there.
  const std::string script = "cd " + dir.string() + " && ulimit -c " +
                             (limit.rlim_max == RLIM_INFINITY ? std::string("unlimited")
                                                              : std::to_string(limit.rlim_max)) +
                             " && exec env HOTSCOPE_OUT=" + (dir / "out").string() + " " +
                             CRASH_PROGRAM + " segv";
  const pid_t pid =
      hotscope::test_support::start_command({"/bin/sh", "-c", script}, dir / "output");
  const int status = hotscope::test_support::wait_for_child(pid);
  EXPECT_TRUE(killed_by(status, SIGSEGV)) << status << slurp(dir / "output");
  EXPECT_TRUE(status != -1 && WCOREDUMP(status)) << "core_pattern: " << pattern;
  EXPECT_TRUE(fs::exists(dir / "out" / ("crash." + std::to_string(pid) + ".json")));
}

#if defined(HEAP_PRELOAD)
// free() aborts inside the allocator while another thread allocates, under the heap profiler:
// the report takes no lock the allocator or the heap profiler holds.
TEST(Crash, AnAbortInsideTheAllocatorIsReportedUnderHeapProfiling) {
  const hotscope::testing::ScratchDir scratch("crash-heap");
  const ProgramRun crashed =
      run_program(scratch.path(), "heap", {std::string("LD_PRELOAD=") + HEAP_PRELOAD});
  EXPECT_TRUE(killed_by(crashed.status, SIGABRT)) << crashed.status << crashed.output;
  const json r = report(crashed);
  const json* thread = crashed_thread(r);
  ASSERT_NE(thread, nullptr) << r.dump(1);
  EXPECT_EQ(open_scopes(*thread), (std::vector<std::string>{"main_scope", "bad_free"}));
  // The heap's figures as of its collector's last drain: the other thread's block among them
  // (it allocates and frees one at a time, the 64 bytes of calloc are live at the crash).
  const json& heap = r.at("heap");
  EXPECT_EQ(heap.at("mode"), "full") << heap.dump();
  const std::uint64_t live_bytes = heap.at("live_bytes");
  const std::uint64_t live_blocks = heap.at("live_blocks");
  EXPECT_GE(live_blocks, 1u) << heap.dump();
  EXPECT_LT(live_blocks, 100'000u) << heap.dump();
  EXPECT_GE(live_bytes, live_blocks) << heap.dump(); // a block counts one byte at least
  EXPECT_LE(live_bytes, heap.at("peak_bytes").get<std::uint64_t>()) << heap.dump();
  EXPECT_TRUE(heap.contains("events_waiting")) << heap.dump();
  const std::string text = slurp(crashed.out / ("crash." + std::to_string(crashed.pid) + ".txt"));
  EXPECT_NE(text.find("\nheap: full profiling, as of its last drain\n  live: " +
                      std::to_string(live_bytes) + " bytes in " + std::to_string(live_blocks) +
                      " blocks\n"),
            std::string::npos)
      << text;
}

// With the heap library there but HOTSCOPE_HEAP_MODE=off, the report says so.
TEST(Crash, TheReportSaysWhenHeapProfilingIsOff) {
  const hotscope::testing::ScratchDir scratch("crash-heap-off");
  const ProgramRun crashed =
      run_program(scratch.path(), "abort",
                  {std::string("LD_PRELOAD=") + HEAP_PRELOAD, "HOTSCOPE_HEAP_MODE=off"});
  EXPECT_TRUE(killed_by(crashed.status, SIGABRT)) << crashed.status << crashed.output;
  EXPECT_EQ(report(crashed).at("heap"), json({{"mode", "off"}}));
  const std::string text = slurp(crashed.out / ("crash." + std::to_string(crashed.pid) + ".txt"));
  EXPECT_NE(text.find("\nheap: heap profiling off\n"), std::string::npos) << text;
}
#endif

#if defined(HOTSCOPE_CLI)
// `hotscope crash FILE [--binary PATH]`'s output.
std::string named(const fs::path& report, const std::vector<std::string>& binaries = {}) {
  std::string command = std::string(HOTSCOPE_CLI) + " crash " + report.string();
  for (const std::string& binary : binaries) {
    command += " --binary " + binary;
  }
  return hotscope::test_support::output_of(command + " 2>&1");
}

TEST(CrashCommand, NamesTheFramesFromTheObjectsTheReportNames) {
  const hotscope::testing::ScratchDir scratch("crash-cli");
  const ProgramRun crashed = run_program(scratch.path(), "worker");
  const fs::path file = crashed.out / ("crash." + std::to_string(crashed.pid) + ".json");
  const std::string text = named(file);
  EXPECT_NE(text.find("SIGSEGV (SEGV_MAPERR) at 0x40, in thread crasher"), std::string::npos)
      << text;
  EXPECT_NE(text.find("null_deref()"), std::string::npos) << text;
  EXPECT_NE(text.find("crasher (tid "), std::string::npos) << text;
  EXPECT_NE(text.find("worker_job ("), std::string::npos) << text;
}

TEST(CrashCommand, NamesTheUncaughtExceptionAndStartsTheStackInTheTerminateHandler) {
  const hotscope::testing::ScratchDir scratch("crash-cli-throw");
  const ProgramRun crashed = run_program(scratch.path(), "throw");
  const std::string text = named(crashed.out / ("crash." + std::to_string(crashed.pid) + ".json"));
  EXPECT_NE(text.find("std::terminate: uncaught std::runtime_error: nobody catches this"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("#0  0x"), std::string::npos) << text;
  EXPECT_NE(text.find("on_terminate()"), std::string::npos) << text;
  EXPECT_NE(text.find("__cxa_throw"), std::string::npos) << text;
}

// A report from elsewhere: its program is not at the path the report names, or is another build
// there; --binary gives the crashed one.
TEST(CrashCommand, NamesTheFramesFromBinariesGivenByBuildId) {
  const hotscope::testing::ScratchDir scratch("crash-cli-binary");
  const fs::path& dir = scratch.path();
  const ProgramRun crashed = run_program(dir, "worker");
  json r = report(crashed);
  for (json& frame : r.at("backtrace")) {
    if (frame.value("module", "") == fs::canonical(CRASH_PROGRAM).string()) {
      frame["module"] = "/elsewhere/crash_program";
    }
  }
  std::ofstream(dir / "moved.json") << r.dump();
  fs::copy_file(CRASH_PROGRAM, dir / "renamed_copy");
  EXPECT_EQ(named(dir / "moved.json").find("null_deref()"), std::string::npos);
  EXPECT_NE(named(dir / "moved.json").find("not readable here"), std::string::npos);
  const std::string text = named(dir / "moved.json", {(dir / "renamed_copy").string()});
  EXPECT_NE(text.find("null_deref()"), std::string::npos) << text;

  r.at("backtrace").at(0)["module"] = fs::canonical(CRASH_PROGRAM).string();
  r.at("backtrace").at(0)["build_id"] = "00";
  std::ofstream(dir / "rebuilt.json") << r.dump();
  EXPECT_NE(named(dir / "rebuilt.json").find("another build"), std::string::npos);
}

// A damaged report (a pid past any integer, an address written as a fraction) is an error that
// names the file and the key, not an undefined conversion.
TEST(CrashCommand, ADamagedReportIsAnErrorNamingTheField) {
  const hotscope::testing::ScratchDir scratch("crash-cli-damaged");
  const fs::path& dir = scratch.path();
  json r = report(run_program(dir, "worker"));
  const json pid = r.at("pid");
  r["pid"] = 4.3e95;
  std::ofstream(dir / "pid.json") << r.dump();
  const std::string pid_text = named(dir / "pid.json");
  EXPECT_NE(pid_text.find("pid.json: \"pid\" is 4.3e+95, not a count (an integer from 0 to "
                          "2^64-1): the file is not a crash report as hotscope writes it"),
            std::string::npos)
      << pid_text;
  r["pid"] = pid;
  r.at("backtrace").at(0)["address"] = 1.5e30;
  std::ofstream(dir / "address.json") << r.dump();
  const std::string address_text = named(dir / "address.json");
  EXPECT_NE(address_text.find("address.json: \"backtrace\"[0].\"address\" is 1.5e+30, not a "
                              "count"),
            std::string::npos)
      << address_text;
}

#if defined(HOTSCOPE_RUN_BUILT) // the preload libraries are not built under sanitizers
// The crash report of an unmodified program that `hotscope run OPTION` ran and SIGSEGV ended:
// `hotscope run` ends as the program did.
void expect_run_reports_the_crash(const char* option) {
  const hotscope::testing::ScratchDir scratch(std::string("crash-run") + option);
  const fs::path out = scratch.path() / "out";
  const int status = std::system((std::string(HOTSCOPE_CLI) + " run " + option + " --out " +
                                  out.string() + " -- /bin/sh -c 'kill -SEGV $$' 2>/dev/null")
                                     .c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGSEGV) << status;
  std::vector<fs::path> reports;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (entry.path().extension() == ".json" &&
        entry.path().filename().string().rfind("crash.", 0) == 0) {
      reports.push_back(entry.path());
    }
  }
  ASSERT_EQ(reports.size(), 1u) << option;
  const json r = json::parse(slurp(reports.front()));
  EXPECT_EQ(r.at("signal").at("name"), "SIGSEGV");
  EXPECT_EQ(r.at("signal").at("code_name"), "SI_USER");
  EXPECT_NE(named(reports.front()).find("SIGSEGV (SI_USER), in thread sh"), std::string::npos)
      << named(reports.front());
}

// Under `hotscope run --cpu` (libhotscope-run.so preloaded) the crash is reported the same way.
TEST(CrashCommand, HotscopeRunReportsTheCrashOfTheProgramItRuns) {
  expect_run_reports_the_crash("--cpu");
}

// `hotscope run --heap` alone preloads libhotscope-run.so too: the crash is reported.
TEST(CrashCommand, HotscopeRunHeapReportsTheCrashOfTheProgramItRuns) {
  expect_run_reports_the_crash("--heap");
}
#endif
#endif

// The collector crashes while it drains, holding its lock: the report does not wait for it, and
// says it could read only the crashing thread.
TEST(Crash, ACrashWhileTheCollectorDrainsIsReportedWithoutItsLock) {
  const hotscope::testing::ScratchDir scratch("crash-drain");
  const auto started = std::chrono::steady_clock::now();
  const ProgramRun crashed = run_program(scratch.path(), "drain");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  EXPECT_TRUE(killed_by(crashed.status, SIGSEGV)) << crashed.status << crashed.output;
  const json r = report(crashed);
  EXPECT_EQ(r.at("thread").at("name"), "hotscope-drain");
  EXPECT_FALSE(r.contains("counters"));
  const json* thread = crashed_thread(r);
  ASSERT_NE(thread, nullptr) << r.dump(1);
  EXPECT_FALSE(thread->at("scopes_complete"));
  const std::string text = slurp(crashed.out / ("crash." + std::to_string(crashed.pid) + ".txt"));
  EXPECT_NE(text.find("the collector's locks were held"), std::string::npos) << text;
}

TEST(Crash, OffWritesNoReportAndTheCrashIsUnchanged) {
  const hotscope::testing::ScratchDir scratch("crash-off");
  const ProgramRun crashed = run_program(scratch.path(), "segv", {"HOTSCOPE_ON_CRASH=off"});
  EXPECT_TRUE(killed_by(crashed.status, SIGSEGV)) << crashed.status << crashed.output;
  EXPECT_FALSE(fs::exists(crashed.out / ("crash." + std::to_string(crashed.pid) + ".json")));
}

} // namespace
