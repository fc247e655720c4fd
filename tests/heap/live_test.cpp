// The live agent of a program under `hotscope run --heap` (docs/heap.md, "Live"): python3 and a C
// program answer `hotscope list`, `info`, `heap`, `threads` and `console --once --tab memory`,
// and the agent stays out of the program's profile, its children's descriptors and its threads.
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

using hotscope::test_support::eventually;
using hotscope::test_support::output_of;
using hotscope::test_support::shell;
using hotscope::test_support::slurp;
using hotscope::test_support::start_command;
using hotscope::test_support::threads_named;
using hotscope::test_support::wait_for_child;

// A program under `hotscope run --heap`, its agent in a runtime directory of the test's own (no
// other process named as it is answers there). It writes its pid into DIR/ready (or "ready PID").
class PreloadedProgram {
public:
  PreloadedProgram(const fs::path& dir, const std::string& mode,
                   const std::vector<std::string>& program)
      : dir_(dir), runtime_dir_(dir / "rt") {
    std::vector<std::string> command{"/usr/bin/env",
                                     "HOTSCOPE_RUNTIME_DIR=" + runtime_dir_.string(),
                                     "HOTSCOPE_HEAP_MODE=" + mode,
                                     HOTSCOPE_CLI,
                                     "run",
                                     "--heap",
                                     "--no-summary",
                                     "--out",
                                     (dir / "out").string(),
                                     "--"};
    command.insert(command.end(), program.begin(), program.end());
    launcher_ = start_command(command, dir / "launcher.txt");
    eventually(10, [&] { return slurp(dir / "ready").find('\n') != std::string::npos; });
    const std::string line = slurp(dir / "ready").substr(0, slurp(dir / "ready").find('\n'));
    pid_ = line.substr(line.rfind(' ') + 1); // "PID", or "ready PID"
    // The agent is up once it answers.
    eventually(10,
               [&] { return !pid_.empty() && cli("info -p " + pid_ + " >/dev/null 2>&1") == 0; });
  }
  ~PreloadedProgram() { stop(); }
  PreloadedProgram(const PreloadedProgram&) = delete;
  PreloadedProgram& operator=(const PreloadedProgram&) = delete;

  // `hotscope ARGUMENTS`' exit status, against this program's runtime directory.
  int cli(const std::string& arguments) const {
    return shell("env HOTSCOPE_RUNTIME_DIR=" + runtime_dir_.string() + " " + HOTSCOPE_CLI + " " +
                 arguments);
  }
  // What `hotscope ARGUMENTS` writes to its standard output.
  std::string cli_output(const std::string& arguments) const {
    return output_of("env HOTSCOPE_RUNTIME_DIR=" + runtime_dir_.string() + " " + HOTSCOPE_CLI +
                     " " + arguments + " 2>" + (dir_ / "cli-err.txt").string());
  }
  // SIGTERM through the launcher, which passes it on; the launcher's wait status.
  int stop() {
    if (launcher_ <= 0) {
      return status_;
    }
    kill(launcher_, SIGTERM);
    status_ = wait_for_child(launcher_);
    launcher_ = 0;
    return status_;
  }
  const std::string& pid() const { return pid_; }

private:
  fs::path dir_;
  fs::path runtime_dir_;
  pid_t launcher_ = 0;
  int status_ = -1;
  std::string pid_;
};

// The sum of a DHAT profile's field `key` over the sites whose frames name `function`.
std::uint64_t site_sum(const nlohmann::json& profile, const std::string& function,
                       const char* key) {
  std::uint64_t sum = 0;
  const auto& frames = profile.at("ftbl");
  for (const auto& pp : profile.at("pps")) {
    for (const auto& frame : pp.at("fs")) {
      if (frames.at(frame.get<std::size_t>()).get<std::string>().find(function) !=
          std::string::npos) {
        sum += pp.at(key).get<std::uint64_t>();
        break;
      }
    }
  }
  return sum;
}

// No frame of the profiler's own code: what the agent allocates while it answers is not the
// program's.
void expect_no_profiler_frames(const nlohmann::json& profile) {
  for (const auto& frame : profile.at("ftbl")) {
    const std::string text = frame.get<std::string>();
    EXPECT_EQ(text.find("libhotscope"), std::string::npos) << text;
    EXPECT_EQ(text.find("hotscope::"), std::string::npos) << text;
  }
}

TEST(HeapLive, APreloadedPython3AnswersTheAgentsCommands) {
  if (access("/usr/bin/python3", X_OK) != 0) {
    GTEST_SKIP() << "/usr/bin/python3 is not installed (scripts/packages.txt lists python3)";
  }
  const hotscope::testing::ScratchDir scratch("heap-live-python");
  const fs::path& dir = scratch.path();
  PreloadedProgram python(dir, "sampled",
                          {"/usr/bin/python3", "-c",
                           "import os, time\nkept = [bytearray(1 << 20) for _ in range(16)]\n"
                           "open('" +
                               (dir / "ready").string() +
                               "', 'w').write(f'{os.getpid()}\\n')\n"
                               "time.sleep(60)\n"});
  ASSERT_FALSE(python.pid().empty()) << slurp(dir / "launcher.txt");

  EXPECT_NE(python.cli_output("list").find(python.pid()), std::string::npos);
  const auto info = nlohmann::json::parse(python.cli_output("info -n python3"));
  EXPECT_EQ(info.at("pid").get<long>(), std::stol(python.pid()));
  EXPECT_EQ(info.at("enabled").at("heap"), "sampled") << info.dump();

  ASSERT_EQ(python.cli("heap -n python3 -o " + (dir / "now.json").string()), 0)
      << slurp(dir / "cli-err.txt");
  const auto profile = nlohmann::json::parse(slurp(dir / "now.json"));
  std::uint64_t live = 0;
  for (const auto& pp : profile.at("pps")) {
    live += pp.at("eb").get<std::uint64_t>();
  }
  EXPECT_GE(live, 8u << 20) << "the 16 MiB python3 keeps, sampled";
  expect_no_profiler_frames(profile);

  const std::string memory = python.cli_output("console -n python3 --once --tab memory");
  EXPECT_NE(memory.find(" live "), std::string::npos) << memory;
  EXPECT_EQ(python.cli("threads -n python3 >/dev/null"), 0) << slurp(dir / "cli-err.txt");

  // Ended by SIGTERM, it still writes its profile.
  python.stop();
  EXPECT_TRUE(fs::exists(dir / "out" / "heap.json"));
}

// The descriptors a child of `live_program` in `dir` inherits, as it lists them.
std::string child_descriptors(const fs::path& dir) {
  std::ofstream(dir / "go").close();
  EXPECT_TRUE(eventually(10, [&] { return fs::exists(dir / "done"); }));
  fs::remove(dir / "done");
  return slurp(dir / "fds");
}

// A connection to the agent at `socket`, open while it lives.
class Connection {
public:
  explicit Connection(const fs::path& socket) : fd_(::socket(AF_UNIX, SOCK_STREAM, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket.c_str());
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~Connection() { close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  bool connected() const { return connected_; }

private:
  int fd_;
  bool connected_ = false;
};

// The agent's workers start at its first request (docs/agent.md, "The agent"): a program that is
// never asked pays for no more than the agent's I/O thread. The trace's collector (hotscope-drain)
// starts only once something is recorded, here the CPU samples `hotscope cpu` asks for.
TEST(HeapLive, TheProfilersThreadsStartWhenAsked) {
  const hotscope::testing::ScratchDir scratch("heap-live-workers");
  const fs::path& dir = scratch.path();
  const pid_t launcher = start_command(
      {"/usr/bin/env", "HOTSCOPE_RUNTIME_DIR=" + (dir / "rt").string(), HOTSCOPE_CLI, "run",
       "--heap", "--no-summary", "--out", (dir / "out").string(), "--", LIVE_PROGRAM, dir.string()},
      dir / "launcher.txt");
  ASSERT_TRUE(eventually(10, [&] { return slurp(dir / "ready").find('\n') != std::string::npos; }));
  const std::string ready = slurp(dir / "ready");
  const std::string pid = ready.substr(0, ready.find('\n'));
  ASSERT_TRUE(eventually(10, [&] { return threads_named(pid, "hotscope-agent") == 1; }));
  EXPECT_EQ(threads_named(pid, "hotscope-answer"), 0u);
  EXPECT_EQ(threads_named(pid, "hotscope-drain"), 0u);
  const std::string cli = "env HOTSCOPE_RUNTIME_DIR=" + (dir / "rt").string() + " " + HOTSCOPE_CLI;
  EXPECT_EQ(shell(cli + " info -p " + pid + " >/dev/null"), 0);
  EXPECT_EQ(threads_named(pid, "hotscope-answer"), 2u);
  EXPECT_EQ(shell(cli + " heap -p " + pid + " -o " + (dir / "now.json").string() + " >/dev/null"),
            0);
  EXPECT_EQ(threads_named(pid, "hotscope-drain"), 0u);
  EXPECT_EQ(shell(cli + " cpu -p " + pid + " --seconds 1 -o " + (dir / "cpu.pb.gz").string() +
                  " >/dev/null"),
            0);
  EXPECT_EQ(threads_named(pid, "hotscope-drain"), 1u);
  std::ofstream(dir / "stop").close();
  EXPECT_EQ(wait_for_child(launcher), 0) << slurp(dir / "launcher.txt");
}

TEST(HeapLive, APreloadedCProgramAnswersAndStaysInvisibleToIt) {
  const hotscope::testing::ScratchDir scratch("heap-live-c");
  const fs::path& dir = scratch.path();
  // What a child inherits without the profiler.
  const fs::path native = dir / "native";
  fs::create_directories(native);
  const pid_t alone = start_command({LIVE_PROGRAM, native.string()}, native / "log.txt");
  ASSERT_TRUE(eventually(10, [&] { return fs::exists(native / "ready"); }));
  const std::string native_fds = child_descriptors(native);
  std::ofstream(native / "stop").close();
  EXPECT_EQ(wait_for_child(alone), 0);
  ASSERT_NE(native_fds, "");

  PreloadedProgram program(dir, "full", {LIVE_PROGRAM, dir.string()});
  ASSERT_FALSE(program.pid().empty()) << slurp(dir / "launcher.txt");

  // Exact in the full mode: the 100 blocks of 1,000 bytes keep_blocks keeps.
  ASSERT_EQ(program.cli("heap -n heap_live_program -o " + (dir / "now.json").string()), 0)
      << slurp(dir / "cli-err.txt");
  const auto profile = nlohmann::json::parse(slurp(dir / "now.json"));
  EXPECT_EQ(site_sum(profile, "keep_blocks", "eb"), 100'000u);
  EXPECT_EQ(site_sum(profile, "keep_blocks", "ebk"), 100u);
  expect_no_profiler_frames(profile);
  const std::string memory = program.cli_output("console -n heap_live_program --once --tab memory");
  EXPECT_NE(memory.find("keep_blocks"), std::string::npos) << memory;

  // The program's only thread; the profiler's are not among them.
  const auto threads =
      nlohmann::json::parse(program.cli_output("threads -n heap_live_program --json"));
  for (const auto& thread : threads.at("threads")) {
    EXPECT_EQ(thread.at("name").get<std::string>().find("hotscope"), std::string::npos)
        << threads.dump();
  }

  // A child started while the agent holds a connection open inherits what it does natively.
  {
    const Connection connection(dir / "rt" / (program.pid() + ".sock"));
    EXPECT_TRUE(connection.connected());
    EXPECT_EQ(child_descriptors(dir), native_fds);
  }

  // Nothing the agent allocated since is in the profile it writes at exit.
  const int status = program.stop();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  const auto at_exit = nlohmann::json::parse(slurp(dir / "out" / "heap.json"));
  EXPECT_EQ(site_sum(at_exit, "keep_blocks", "eb"), 100'000u);
  expect_no_profiler_frames(at_exit);
  // The runtime writes no reports of its own: the program has nothing they would show.
  EXPECT_FALSE(fs::exists(dir / "out" / "stats.json"));
}

// An unmodified program's threads: its own from /proc, named as it named them, with their state
// and CPU time, none of the profiler's (the agent's, the collectors'), and no records or scopes.
TEST(HeapLive, AnUnmodifiedProgramsThreadsAreListedWithoutTheProfilers) {
  const hotscope::testing::ScratchDir scratch("heap-live-threads");
  const fs::path& dir = scratch.path();
  PreloadedProgram program(dir, "full", {THREADS_PROGRAM, dir.string()});
  ASSERT_FALSE(program.pid().empty()) << slurp(dir / "launcher.txt");
  const std::vector<std::string> workers{"worker-a", "worker-b", "worker-c"};
  std::size_t tasks = 0;
  for ([[maybe_unused]] const auto& task :
       fs::directory_iterator("/proc/" + program.pid() + "/task")) {
    ++tasks;
  }
  EXPECT_GT(tasks, 4u) << "the profiler's threads run beside the program's four";

  const auto json =
      nlohmann::json::parse(program.cli_output("threads -n heap_threads_program --json"));
  EXPECT_TRUE(json.value("unmodified_program", false)) << json.dump();
  ASSERT_EQ(json.at("threads").size(), 4u) << json.dump();
  for (const auto& thread : json.at("threads")) {
    EXPECT_TRUE(thread.value("os_only", false)) << thread.dump();
    EXPECT_FALSE(thread.at("state").get<std::string>().empty()) << thread.dump();
  }
  for (const std::string& worker : workers) {
    EXPECT_NE(json.dump().find("\"" + worker + "\""), std::string::npos) << json.dump();
  }

  const std::string text = program.cli_output("threads -p " + program.pid());
  EXPECT_NE(text.find("an unmodified program: threads without scopes"), std::string::npos) << text;
  EXPECT_EQ(text.find("hotscope-"), std::string::npos) << text;
  EXPECT_EQ(text.find("records:"), std::string::npos) << text;
  for (const std::string& worker : workers) {
    EXPECT_NE(text.find("== " + worker + " (tid "), std::string::npos) << text;
  }

  const std::string tab =
      program.cli_output("console -p " + program.pid() + " --once --tab threads");
  EXPECT_NE(tab.find("4 threads"), std::string::npos) << tab;
  EXPECT_NE(tab.find("an unmodified program: threads without scopes"), std::string::npos) << tab;
  EXPECT_NE(tab.find("n/a"), std::string::npos) << tab;
  EXPECT_EQ(tab.find("hotscope-"), std::string::npos) << tab;
  for (const std::string& worker : workers) {
    EXPECT_NE(tab.find(worker), std::string::npos) << tab;
  }
  // The tabs an unmodified program leaves empty say why.
  for (const std::string empty : {"functions", "queues", "tasks", "locks"}) {
    const std::string page =
        program.cli_output("console -p " + program.pid() + " --once --tab " + empty);
    EXPECT_NE(page.find("an unmodified program"), std::string::npos) << empty << ": " << page;
  }
}

// A program linked with hotscope keeps its own runtime under `hotscope run --heap`: the agent
// that answers is the program's (it knows the program's scope), the only one in the runtime
// directory, and the program's reports are written at exit.
TEST(HeapLive, AProgramLinkedWithHotscopeKeepsItsOwnRuntime) {
  const hotscope::testing::ScratchDir scratch("heap-live-linked");
  const fs::path& dir = scratch.path();
  PreloadedProgram program(
      dir, "full",
      {"/bin/sh", "-c",
       "exec " + std::string(SIGNALLED_PROGRAM) + " wait >" + (dir / "ready").string()});
  const std::string& pid = program.pid();
  ASSERT_FALSE(pid.empty()) << slurp(dir / "launcher.txt");
  EXPECT_NE(program.cli_output("stats -p " + pid).find("ready"), std::string::npos);
  std::size_t sockets = 0;
  for (const auto& entry : fs::directory_iterator(dir / "rt")) {
    sockets += entry.path().extension() == ".sock" ? 1 : 0;
  }
  EXPECT_EQ(sockets, 1u);
  program.stop();
  EXPECT_NE(slurp(dir / "out" / "stats.json").find("\"ready\""), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "out" / "heap.json"));
}

} // namespace
