// The runtime of a program `hotscope run --heap` runs in the sampled mode is loaded at its first
// client (docs/agent.md, "hotscope run"): until then the program has no library, thread, socket
// or file of the runtime's, though `hotscope list` shows it; the first command loads it and is
// answered; a load that fails is answered with why; processes the program starts load it
// themselves; HOTSCOPE_RUNTIME_AT=start loads it with the program.
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>
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

// The live program (programs/live_program.c) under `hotscope run --heap` in the sampled mode,
// with `variables` for the launcher, its agent in a runtime directory of the test's own. Unlike
// live_test.cpp's, it asks the program nothing before the test does.
class SampledProgram {
public:
  SampledProgram(const fs::path& dir, const std::vector<std::string>& variables,
                 const std::vector<std::string>& program)
      : dir_(dir) {
    std::vector<std::string> command{"/usr/bin/env", "HOTSCOPE_RUNTIME_DIR=" + rt().string(),
                                     "HOTSCOPE_HEAP_MODE=sampled"};
    command.insert(command.end(), variables.begin(), variables.end());
    for (const char* argument :
         {HOTSCOPE_CLI, "run", "--heap", "--no-summary", "--out", "", "--"}) {
      command.emplace_back(argument);
    }
    command[command.size() - 2] = (dir / "out").string();
    command.insert(command.end(), program.begin(), program.end());
    launcher_ = start_command(command, dir / "launcher.txt");
    eventually(10, [&] { return slurp(dir / "ready").find('\n') != std::string::npos; });
    const std::string ready = slurp(dir / "ready");
    pid_ = ready.substr(0, ready.find('\n'));
  }
  ~SampledProgram() { stop(); }
  SampledProgram(const SampledProgram&) = delete;
  SampledProgram& operator=(const SampledProgram&) = delete;

  fs::path rt() const { return dir_ / "rt"; }
  const std::string& pid() const { return pid_; }
  // `hotscope ARGUMENTS`' exit status; its standard error in DIR/cli-err.txt.
  int cli(const std::string& arguments) const {
    return shell("env HOTSCOPE_RUNTIME_DIR=" + rt().string() + " " + HOTSCOPE_CLI + " " +
                 arguments + " 2>" + (dir_ / "cli-err.txt").string());
  }
  std::string cli_output(const std::string& arguments) const {
    return output_of("env HOTSCOPE_RUNTIME_DIR=" + rt().string() + " " + HOTSCOPE_CLI + " " +
                     arguments + " 2>" + (dir_ / "cli-err.txt").string());
  }
  // Ends the program as live_program.c ends (DIR/stop); the launcher's exit status.
  int stop() {
    if (launcher_ <= 0) {
      return status_;
    }
    std::ofstream(dir_ / "stop").close();
    status_ = wait_for_child(launcher_);
    launcher_ = 0;
    return status_;
  }

private:
  fs::path dir_;
  pid_t launcher_ = 0;
  int status_ = -1;
  std::string pid_;
};

bool runtime_loaded(const std::string& pid) {
  return slurp("/proc/" + pid + "/maps").find("libhotscope-run.so") != std::string::npos;
}

std::size_t sockets_of(const std::string& pid) {
  std::size_t count = 0;
  for (const auto& fd : fs::directory_iterator("/proc/" + pid + "/fd")) {
    std::error_code error;
    count += fs::read_symlink(fd.path(), error).string().rfind("socket:", 0) == 0 ? 1 : 0;
  }
  return count;
}

TEST(HeapFirstClient, TheRuntimeIsLoadedByTheFirstCommandAndAnswersIt) {
  const hotscope::testing::ScratchDir scratch("heap-first-client");
  const fs::path& dir = scratch.path();
  SampledProgram program(dir, {}, {LIVE_PROGRAM, dir.string()});
  const std::string& pid = program.pid();
  ASSERT_FALSE(pid.empty()) << slurp(dir / "launcher.txt");

  // Nothing of the runtime's in the program, but listed.
  EXPECT_FALSE(runtime_loaded(pid));
  EXPECT_EQ(threads_named(pid, "hotscope-agent"), 0u);
  EXPECT_EQ(sockets_of(pid), 0u);
  // The launcher writes it once the program runs, which may be ready first.
  EXPECT_TRUE(eventually(10, [&] { return fs::exists(program.rt() / (pid + ".json")); }));
  EXPECT_NE(program.cli_output("list").find(pid), std::string::npos);
  EXPECT_FALSE(runtime_loaded(pid)) << "listing reads the files only";

  // The first command loads it, and gets its answer.
  const auto info = nlohmann::json::parse(program.cli_output("info -p " + pid));
  EXPECT_EQ(info.at("pid").get<long>(), std::stol(pid)) << info.dump();
  EXPECT_EQ(info.at("enabled").at("heap"), "sampled") << info.dump();
  EXPECT_TRUE(runtime_loaded(pid));
  EXPECT_EQ(threads_named(pid, "hotscope-agent"), 1u);
  // The next ones go to its agent directly.
  ASSERT_EQ(program.cli("heap -p " + pid + " -o " + (dir / "now.json").string()), 0)
      << slurp(dir / "cli-err.txt");
  const auto profile = nlohmann::json::parse(slurp(dir / "now.json"));
  for (const auto& frame : profile.at("ftbl")) {
    EXPECT_EQ(frame.get<std::string>().find("hotscope"), std::string::npos) << frame;
  }

  EXPECT_EQ(program.stop(), 0) << slurp(dir / "launcher.txt");
  EXPECT_TRUE(fs::exists(dir / "out" / "heap.json"));
  EXPECT_FALSE(fs::exists(program.rt() / (pid + ".json")));
  EXPECT_FALSE(fs::exists(program.rt() / (pid + ".sock")));
}

// Clients that connect together before the runtime is there: the launcher accepts them all,
// loads it once, and relays each to its agent.
TEST(HeapFirstClient, ClientsThatComeTogetherAreAllAnsweredByOneRuntime) {
  const hotscope::testing::ScratchDir scratch("heap-first-clients");
  const fs::path& dir = scratch.path();
  SampledProgram program(dir, {}, {LIVE_PROGRAM, dir.string()});
  const std::string& pid = program.pid();
  ASSERT_FALSE(pid.empty()) << slurp(dir / "launcher.txt");
  std::string together;
  for (int client = 0; client < 6; ++client) {
    together += "env HOTSCOPE_RUNTIME_DIR=" + program.rt().string() + " " + HOTSCOPE_CLI +
                " heap -p " + pid + " -o " + (dir / ("now" + std::to_string(client))).string() +
                " & ";
  }
  ASSERT_EQ(shell("(" + together + "wait) 2>" + (dir / "clients.txt").string()), 0);
  for (int client = 0; client < 6; ++client) {
    const auto profile =
        nlohmann::json::parse(slurp(dir / ("now" + std::to_string(client))), nullptr, false);
    EXPECT_TRUE(profile.is_object() && profile.contains("pps"))
        << client << ": " << slurp(dir / "clients.txt");
  }
  EXPECT_TRUE(runtime_loaded(pid));
  EXPECT_EQ(threads_named(pid, "hotscope-agent"), 1u) << "one runtime, one agent";
  EXPECT_EQ(program.stop(), 0) << slurp(dir / "launcher.txt");
}

// The attach path's steps fail as HOTSCOPE_ATTACH_FAIL_AT makes them (docs/heap.md): the client
// is told why and what to do, the program goes on profiled, and its profile is written.
TEST(HeapFirstClient, ARuntimeThatCannotBeLoadedIsExplainedToTheClient) {
  const hotscope::testing::ScratchDir scratch("heap-first-client-fails");
  const fs::path& dir = scratch.path();
  SampledProgram program(dir, {"HOTSCOPE_ATTACH_FAIL_AT=environment"},
                         {LIVE_PROGRAM, dir.string()});
  const std::string& pid = program.pid();
  ASSERT_FALSE(pid.empty()) << slurp(dir / "launcher.txt");
  for (int attempt = 0; attempt < 2; ++attempt) {
    EXPECT_NE(program.cli("info -p " + pid + " >/dev/null"), 0);
    const std::string error = slurp(dir / "cli-err.txt");
    EXPECT_NE(error.find("HOTSCOPE_ATTACH_FAIL_AT"), std::string::npos) << error;
    EXPECT_NE(error.find("HOTSCOPE_RUNTIME_AT=start loads the agent"), std::string::npos) << error;
  }
  EXPECT_FALSE(runtime_loaded(pid));
  EXPECT_EQ(program.stop(), 0) << slurp(dir / "launcher.txt");
  EXPECT_TRUE(fs::exists(dir / "out" / "heap.json"));
  EXPECT_FALSE(fs::exists(program.rt() / (pid + ".sock")));
}

TEST(HeapFirstClient, RuntimeAtStartLoadsItWithTheProgram) {
  const hotscope::testing::ScratchDir scratch("heap-first-client-start");
  const fs::path& dir = scratch.path();
  SampledProgram program(dir, {"HOTSCOPE_RUNTIME_AT=start"}, {LIVE_PROGRAM, dir.string()});
  ASSERT_FALSE(program.pid().empty()) << slurp(dir / "launcher.txt");
  EXPECT_TRUE(runtime_loaded(program.pid()));
  EXPECT_TRUE(eventually(10, [&] { return threads_named(program.pid(), "hotscope-agent") == 1; }));
}

// The launcher knows only the program's pid: a process the program starts loads the runtime at
// its own start, and answers as a preloaded runtime does.
TEST(HeapFirstClient, AProcessTheProgramStartsHasItsRuntimeFromItsStart) {
  const hotscope::testing::ScratchDir scratch("heap-first-client-child");
  const fs::path& dir = scratch.path();
  SampledProgram program(
      dir, {}, {"/bin/sh", "-c", std::string(LIVE_PROGRAM) + " " + dir.string() + "; true"});
  const std::string& child = program.pid(); // the live program's, not the shell's
  ASSERT_FALSE(child.empty()) << slurp(dir / "launcher.txt");
  EXPECT_TRUE(runtime_loaded(child));
  ASSERT_TRUE(eventually(10, [&] { return program.cli("info -p " + child + " >/dev/null") == 0; }))
      << slurp(dir / "cli-err.txt");
  EXPECT_EQ(program.stop(), 0) << slurp(dir / "launcher.txt");
  bool child_profile = false;
  for (const auto& file : fs::directory_iterator(dir / "out")) {
    child_profile = child_profile || file.path().filename().string().find("." + child + ".json") !=
                                         std::string::npos;
  }
  EXPECT_TRUE(child_profile) << "heap.<name>." << child << ".json";
}

} // namespace
