// `hotscope attach` and `hotscope detach` against a running C program (docs/heap.md, "Attach to a
// running program"): the profile from the attach on, its figures, the frees of blocks allocated
// before it counted apart, attaching again, the refusals, and the program unharmed by an attach
// that fails at any step.
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;

using hotscope::test_support::eventually;
using hotscope::test_support::output_of;
using hotscope::test_support::slurp;
using hotscope::test_support::start_command;
using hotscope::test_support::wait_for_child;

// attach_program.c (or `command`), started by the test (not under hotscope) with `dir` as its
// argument, its agent's socket (once attached) in a runtime directory of the test's own.
class Program {
public:
  explicit Program(const fs::path& dir, std::vector<std::string> command = {ATTACH_PROGRAM})
      : dir_(dir) {
    fs::create_directories(dir / "rt");
    command.push_back(dir.string());
    child_ = start_command(command, dir / "program.txt");
    eventually(20, [&] { return slurp(dir / "ready").find('\n') != std::string::npos; });
    pid_ = std::to_string(child_);
  }
  ~Program() {
    if (child_ > 0) {
      end();
    }
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // `hotscope ARGUMENTS` with `variable` ("NAME=VALUE") set: its exit status; what it wrote to
  // stderr in `errors`.
  int cli(const std::string& arguments, std::string* errors = nullptr,
          const std::string& variable = "") const {
    const fs::path err = dir_ / "cli-err.txt";
    const std::string command = "env HOTSCOPE_RUNTIME_DIR=" + (dir_ / "rt").string() + " " +
                                variable + " " + HOTSCOPE_CLI + " " + arguments + " >/dev/null 2>" +
                                err.string();
    const int status = std::system(command.c_str());
    if (errors != nullptr) {
      *errors = slurp(err);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  unsigned long count() const {
    const std::string text = slurp(dir_ / "count");
    return text.empty() ? 0 : std::stoul(text);
  }
  // True once it made `steps` more steps than now.
  bool steps_on(unsigned long steps) const {
    const unsigned long from = count();
    return eventually(20, [&] { return count() >= from + steps; });
  }
  // Its exit status after DIR/stop: 0 when every block kept its bytes.
  int end() {
    std::ofstream(dir_ / "stop").close();
    const int status = wait_for_child(child_);
    child_ = 0;
    return status;
  }
  const std::string& pid() const { return pid_; }

private:
  fs::path dir_;
  pid_t child_ = 0;
  std::string pid_;
};

nlohmann::json profile_in(const fs::path& file) {
  return nlohmann::json::parse(slurp(file));
}

// The sum of `key` over the sites whose frames name `function`.
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

TEST(HeapAttach, ProfilesFromTheAttachServesLiveAndAttachesAgainAfterDetach) {
  const hotscope::testing::ScratchDir scratch("heap-attach");
  const fs::path& dir = scratch.path();
  Program program(dir);
  ASSERT_TRUE(program.steps_on(1000)) << slurp(dir / "program.txt");
  std::string errors;
  ASSERT_EQ(
      program.cli("attach -p " + program.pid() + " --heap full --out " + (dir / "one").string(),
                  &errors),
      0)
      << errors;
  EXPECT_NE(errors.find("attached in"), std::string::npos) << errors;
  // Twice the ring: every block live at the end was allocated after the attach.
  ASSERT_TRUE(program.steps_on(2 * 1000)) << slurp(dir / "program.txt");

  EXPECT_EQ(
      program.cli("heap -p " + program.pid() + " -o " + (dir / "live.json").string(), &errors), 0)
      << errors;
  const auto live = profile_in(dir / "live.json");
  EXPECT_GT(site_sum(live, "churn", "eb"), 0u) << live.dump().substr(0, 2000);
  EXPECT_EQ(program.cli("attach -p " + program.pid(), &errors), 1);
  EXPECT_NE(errors.find("attached already"), std::string::npos) << errors;

  ASSERT_EQ(program.cli("detach -p " + program.pid(), &errors), 0) << errors;
  const auto one = profile_in(dir / "one" / "heap.json");
  // The ring's 1,000 blocks of 1,000 bytes, all from churn().
  EXPECT_EQ(site_sum(one, "churn", "eb"), 1000u * 1000u);
  EXPECT_EQ(site_sum(one, "churn", "ebk"), 1000u);
  ASSERT_TRUE(one.contains("attached")) << one.dump().substr(0, 2000);
  // The blocks live at the attach were freed after it: not unknown frees of a broken profile.
  EXPECT_GE(one.at("attached").at("freesBeforeAttach").get<std::uint64_t>(), 1000u);
  EXPECT_EQ(program.cli("detach -p " + program.pid(), &errors), 1);
  EXPECT_NE(errors.find("not attached"), std::string::npos) << errors;

  ASSERT_TRUE(program.steps_on(500));
  // The second recording of the full mode: each thread's events in a ring of its own.
  ASSERT_EQ(program.cli("attach -p " + program.pid() + " --heap full --seconds 1 --out " +
                            (dir / "two").string(),
                        &errors),
            0)
      << errors;
  const auto two = profile_in(dir / "two" / "heap.json");
  EXPECT_TRUE(two.contains("attached"));
  EXPECT_EQ(site_sum(two, "churn", "ebk"), 1000u) << "a second of steps turns the ring over";
  ASSERT_TRUE(program.steps_on(500)) << "it runs on after the second detach";
  EXPECT_EQ(program.end(), 0) << slurp(dir / "program.txt");
}

// --until-exit: the program writes the profile at its exit, and the command returns then.
TEST(HeapAttach, UntilExitTheProgramWritesTheProfileAtItsExit) {
  const hotscope::testing::ScratchDir scratch("heap-attach-exit");
  const fs::path& dir = scratch.path();
  Program program(dir);
  ASSERT_TRUE(program.steps_on(200)) << slurp(dir / "program.txt");
  const pid_t command = start_command(
      {"/usr/bin/env", "HOTSCOPE_RUNTIME_DIR=" + (dir / "rt").string(), HOTSCOPE_CLI, "attach",
       "-p", program.pid(), "--heap", "full", "--until-exit", "--out", (dir / "out").string()},
      dir / "command.txt");
  ASSERT_FALSE(hotscope::test_support::wait_for_text(dir / "command.txt", "attached in").empty())
      << slurp(dir / "command.txt");
  ASSERT_TRUE(program.steps_on(2 * 1000));
  EXPECT_EQ(program.end(), 0);
  const int status = wait_for_child(command);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir / "command.txt");
  const auto profile = profile_in(dir / "out" / "heap.json");
  EXPECT_TRUE(profile.contains("attached"));
  EXPECT_EQ(site_sum(profile, "churn", "ebk"), 1000u);
}

TEST(HeapAttach, AFailureAtAnyStepLeavesTheProgramRunningUnharmed) {
  const hotscope::testing::ScratchDir scratch("heap-attach-fail");
  const fs::path& dir = scratch.path();
  Program program(dir);
  ASSERT_TRUE(program.steps_on(200)) << slurp(dir / "program.txt");
  for (const std::string step : {"seize", "stop", "registers", "environment", "load", "runtime"}) {
    std::string errors;
    EXPECT_EQ(
        program.cli("attach -p " + program.pid() + " --heap full --out " + (dir / "out").string(),
                    &errors, "HOTSCOPE_ATTACH_FAIL_AT=" + step),
        1)
        << step;
    EXPECT_NE(errors.find("(" + step + "); it goes on unprofiled"), std::string::npos) << errors;
    EXPECT_TRUE(program.steps_on(300))
        << "after failing at " << step << ": " << slurp(dir / "program.txt");
  }
  // What a failed attach left behind (its libraries loaded, idle) lets a later one work whole.
  std::string errors;
  ASSERT_EQ(
      program.cli("attach -p " + program.pid() + " --heap full --out " + (dir / "out").string(),
                  &errors),
      0)
      << errors;
  ASSERT_TRUE(program.steps_on(2 * 1000));
  ASSERT_EQ(program.cli("detach -p " + program.pid(), &errors), 0) << errors;
  const auto profile = profile_in(dir / "out" / "heap.json");
  EXPECT_EQ(site_sum(profile, "churn", "ebk"), 1000u);
  EXPECT_EQ(program.end(), 0) << "every block kept its bytes: " << slurp(dir / "program.txt");
}

// Plug-ins (docs/heap.md, "What an attached profile means"): a module unloaded after the attach is
// left alone at the detach (its GOT is gone), and one loaded after the attach is patched by the
// profiler's thread that watches the loader: its ring of 100 blocks of 3,000 bytes is profiled.
TEST(HeapAttach, PluginsUnloadedAndLoadedAfterTheAttachAreHandled) {
  const hotscope::testing::ScratchDir scratch("heap-attach-plugins");
  const fs::path& dir = scratch.path();
  Program program(dir, {PLUGINS_PROGRAM, HEAP_LOADED_A, ATTACH_PLUGIN});
  const std::string attach =
      "attach -p " + program.pid() + " --heap full --out " + (dir / "out").string();
  std::string errors;
  ASSERT_EQ(program.cli(attach, &errors), 0) << errors;
  std::ofstream(dir / "unload").close();
  ASSERT_TRUE(eventually(20, [&] { return fs::exists(dir / "unloaded"); }))
      << slurp(dir / "program.txt");
  ASSERT_EQ(program.cli("detach -p " + program.pid(), &errors), 0) << errors;
  ASSERT_TRUE(program.steps_on(200))
      << "it runs on after the detach: " << slurp(dir / "program.txt");

  ASSERT_EQ(program.cli(attach, &errors), 0) << errors;
  std::ofstream(dir / "load").close();
  const fs::path live = dir / "live.json";
  // Patched within the watcher's 100 ms, then a turn of the ring: every live block is seen.
  EXPECT_TRUE(eventually(20, [&] {
    return program.cli("heap -p " + program.pid() + " -o " + live.string()) == 0 &&
           site_sum(profile_in(live), "plugin_churn", "eb") == 100u * 3000u;
  })) << slurp(live).substr(0, 2000);
  ASSERT_EQ(program.cli("detach -p " + program.pid(), &errors), 0) << errors;
  const auto profile = profile_in(dir / "out" / "heap.json");
  EXPECT_EQ(site_sum(profile, "plugin_churn", "ebk"), 100u);
  EXPECT_EQ(site_sum(profile, "plugin_churn", "eb"), 100u * 3000u);
  ASSERT_TRUE(program.steps_on(200))
      << "it runs on after the detach: " << slurp(dir / "program.txt");
  EXPECT_EQ(program.end(), 0) << slurp(dir / "program.txt");
}

// A sampled attach's live bytes per site against the bytes the program keeps there: within the
// sampled mode's bound, 4 standard deviations of at most sqrt(mean * B) for B bytes (docs/heap.md,
// "Sampled mode"). The program's own environment sets the mean the library reads at its load.
TEST(HeapAttach, SampledLiveBytesPerSiteAreWithinTheSampledModesBound) {
  const hotscope::testing::ScratchDir scratch("heap-attach-sampled");
  const fs::path& dir = scratch.path();
  constexpr double mean = 1024;
  Program program(dir, {"/usr/bin/env", "HOTSCOPE_HEAP_SAMPLE_BYTES=1024",
                        "HOTSCOPE_HEAP_SAMPLE_SEED=37", ATTACH_SITES_PROGRAM});
  std::string errors;
  ASSERT_EQ(
      program.cli("attach -p " + program.pid() + " --heap sampled --out " + (dir / "out").string(),
                  &errors),
      0)
      << errors;
  // Its one thread, not the threads the attach started in it (the agent's).
  const std::string threads =
      hotscope::test_support::output_of("env HOTSCOPE_RUNTIME_DIR=" + (dir / "rt").string() + " " +
                                        HOTSCOPE_CLI + " threads -p " + program.pid() + " --json");
  const auto listed = nlohmann::json::parse(threads);
  EXPECT_TRUE(listed.value("unmodified_program", false)) << threads;
  EXPECT_EQ(listed.at("threads").size(), 1u) << threads;
  std::ofstream(dir / "go").close();
  ASSERT_TRUE(eventually(20, [&] { return fs::exists(dir / "done"); }))
      << slurp(dir / "program.txt");
  ASSERT_EQ(program.cli("detach -p " + program.pid(), &errors), 0) << errors;
  const auto profile = profile_in(dir / "out" / "heap.json");
  for (const auto& [site, bytes] :
       {std::pair{"keep_small", 2'000'000.0}, std::pair{"keep_medium", 2'000'000.0},
        std::pair{"keep_large", 4'000'000.0}}) {
    const auto estimate = static_cast<double>(site_sum(profile, site, "eb"));
    EXPECT_NEAR(estimate, bytes, 4 * std::sqrt(mean * bytes)) << site;
  }
  EXPECT_EQ(program.end(), 0) << slurp(dir / "program.txt");
}

TEST(HeapAttach, RefusesAStaticProgramAndAnEndedOneInOneLine) {
  const hotscope::testing::ScratchDir scratch("heap-attach-refused");
  const fs::path& dir = scratch.path();
  const pid_t static_program = start_command({STATIC_PROGRAM, "30"}, dir / "static.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string refused = output_of(std::string(HOTSCOPE_CLI) + " attach -p " +
                                        std::to_string(static_program) + " 2>&1; echo status $?");
  EXPECT_NE(refused.find("no dlopen"), std::string::npos) << refused;
  EXPECT_NE(refused.find("status 1"), std::string::npos) << refused;
  EXPECT_EQ(std::count(refused.begin(), refused.end(), '\n'), 2) << refused;
  kill(static_program, SIGKILL);
  wait_for_child(static_program);
  const std::string gone = output_of(std::string(HOTSCOPE_CLI) + " attach -p " +
                                     std::to_string(static_program) + " 2>&1");
  EXPECT_NE(gone.find("no such process"), std::string::npos) << gone;
}

// As root: a process of root's, attached by hotscope run as nobody (setpriv).
TEST(HeapAttach, RefusesAnotherUsersProcess) {
  if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "needs root and setpriv to act as a second user";
  }
  const hotscope::testing::ScratchDir scratch("heap-attach-user");
  const fs::path& dir = scratch.path();
  Program program(dir);
  const std::string refused =
      output_of("/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups " +
                std::string(HOTSCOPE_CLI) + " attach -p " + program.pid() + " --out /tmp 2>&1");
  EXPECT_NE(refused.find("belongs to user 0"), std::string::npos) << refused;
  EXPECT_TRUE(program.steps_on(100));
}

} // namespace
