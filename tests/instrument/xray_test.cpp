// Runs xray_program (built with hotscope_instrument(MODE xray)) and checks what hotscope recorded:
// the counts with the sleds patched at start, an exception and threads; the filter unpatching a
// function; and the sleds switched off and on through the agent (`hotscope instrument`).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/scratch_dir.hpp"
#include "support/stats.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace {

namespace fs = std::filesystem;
using hotscope::test_support::calls_of;
using hotscope::test_support::slurp;
using Json = nlohmann::json;

#ifdef XRAY_MISSING
#define SKIP_WITHOUT_XRAY() GTEST_SKIP() << "no XRay program: " XRAY_MISSING
#else
#define SKIP_WITHOUT_XRAY()
#endif

const std::string ns = "(anonymous namespace)::";

// Runs the program to its end with `environment`; its stats.json.
Json run_program(const hotscope::testing::ScratchDir& scratch, const std::string& environment) {
#ifdef XRAY_PROGRAM
  const fs::path out = scratch.path() / "out";
  const std::string command = "timeout 60 env HOTSCOPE_AGENT=0 HOTSCOPE_OUT=" + out.string() + " " +
                              environment + " " + XRAY_PROGRAM + " 2>" +
                              (scratch.path() / "stderr").string();
  EXPECT_EQ(std::system(command.c_str()), 0) << slurp(scratch.path() / "stderr");
  return Json::parse(slurp(out / "stats.json"));
#else
  (void)scratch, (void)environment;
  return {};
#endif
}

TEST(Xray, SledsPatchedAtStartRecordEveryCall) {
  SKIP_WITHOUT_XRAY();
  const hotscope::testing::ScratchDir scratch("xray-counts");
  const Json stats = run_program(scratch, "HOTSCOPE_MIN_NS=0 XRAY_OPTIONS=xray_mode=xray-basic");
  const std::map<std::string, std::uint64_t> expected{
      {"main", 1},         {ns + "alpha", 2000}, {ns + "beta", 1000}, {ns + "gamma", 1000},
      {ns + "catcher", 1}, {ns + "middle", 1},   {ns + "thrower", 1}, {ns + "after_catch", 1},
      {ns + "worker", 4},  {ns + "leaf", 400}};
  for (const auto& [name, calls] : expected) {
    EXPECT_EQ(calls_of(stats, name), calls) << name << "\n" << stats.at("functions").dump(1);
  }
  EXPECT_TRUE(stats.at("filtered_functions").empty());
  EXPECT_EQ(stats.at("records").at("dropped"), 0) << stats.at("records").dump();
#ifdef XRAY_PROGRAM
  // Named with the executable and its build id.
  bool named = false;
  for (const Json& function : stats.at("functions")) {
    if (function.at("name") == ns + "alpha") {
      EXPECT_EQ(fs::canonical(function.at("module").get<std::string>()),
                fs::canonical(XRAY_PROGRAM));
      EXPECT_EQ(function.at("build_id"), hotscope::test_support::build_id_of(XRAY_PROGRAM));
      named = true;
    }
  }
  EXPECT_TRUE(named);
#endif
  // XRay's own logging mode is not linked in: XRAY_OPTIONS naming one writes no file.
  for (const auto& file : fs::directory_iterator(fs::current_path())) {
    EXPECT_NE(file.path().filename().string().rfind("xray-log.", 0), 0u) << file.path();
  }
  // XRay has no exit on unwinding: the frames the exception left close at the next entry on
  // the stack above them, the catch handler's call (docs/instrument.md, "XRay").
  const std::string folded = slurp(scratch.path() / "out" / "trace.folded");
  EXPECT_NE(folded.find("main;" + ns + "catcher;" + ns + "middle;" + ns + "thrower "),
            std::string::npos)
      << folded;
  EXPECT_NE(folded.find("main;" + ns + "catcher;" + ns + "after_catch "), std::string::npos)
      << folded;
  EXPECT_EQ(folded.find("thrower;"), std::string::npos) << folded;
}

// alpha's first 1000 calls are all shorter than 100 ms: the collector unpatches it, and its next
// 1000 calls, after the pause, reach no sled at all (not even counted).
TEST(Xray, FilterUnpatchesAFunctionWhoseCallsAreAllShort) {
  SKIP_WITHOUT_XRAY();
  const hotscope::testing::ScratchDir scratch("xray-filter");
  const Json stats = run_program(scratch, "HOTSCOPE_MIN_NS=100000000 PAUSE_MS=2000");
  const Json* alpha = nullptr;
  for (const Json& filtered : stats.at("filtered_functions")) {
    if (filtered.at("name") == ns + "alpha") {
      alpha = &filtered;
    }
  }
  ASSERT_NE(alpha, nullptr) << stats.at("filtered_functions").dump(1);
  EXPECT_EQ(alpha->at("recorded_calls"), 1000u) << "unpatched before the pause ended";
  EXPECT_EQ(alpha->at("skipped_calls"), 0u) << "an unpatched function's calls are not counted";
  EXPECT_EQ(calls_of(stats, ns + "alpha"), 1000u);
}

// HOTSCOPE_XRAY=off: nothing recorded until `hotscope instrument on`; then `off --function`
// unpatches gamma only. Phases: alpha (off), beta and gamma (on), beta and gamma (gamma off),
// then the exception and the threads.
TEST(Xray, SwitchedThroughTheAgent) {
  SKIP_WITHOUT_XRAY();
#ifndef HOTSCOPE_CLI
  GTEST_SKIP() << "the hotscope command is not built (HOTSCOPE_CLI_TESTS, HOTSCOPE_AGENT)";
#else
  const hotscope::testing::ScratchDir scratch("xray-agent");
  const fs::path out = scratch.path() / "out";
  const fs::path runtime = scratch.path() / "rt";
  const pid_t child = hotscope::test_support::start_command(
      {"/usr/bin/env", "HOTSCOPE_XRAY=off", "HOTSCOPE_MIN_NS=0", "HOTSCOPE_OUT=" + out.string(),
       "HOTSCOPE_RUNTIME_DIR=" + runtime.string(), XRAY_PROGRAM, scratch.path().string()},
      scratch.path() / "output");
  const std::string pid = std::to_string(child);
  const auto cli = [&](const std::string& arguments) {
    return hotscope::test_support::output_of("HOTSCOPE_RUNTIME_DIR=" + runtime.string() + " " +
                                             HOTSCOPE_CLI + " instrument -p " + pid + " " +
                                             arguments + " 2>&1");
  };
  const auto at = [&](int phase) {
    const fs::path file = scratch.path() / ("at" + std::to_string(phase));
    return !hotscope::test_support::wait_for_text(file, std::to_string(phase)).empty();
  };
  const auto go = [&](int phase) {
    std::ofstream(scratch.path() / ("go" + std::to_string(phase))) << phase;
  };
  ASSERT_TRUE(at(1)) << slurp(scratch.path() / "output");
  go(1);
  ASSERT_TRUE(at(2));
  const std::string on = cli("on");
  EXPECT_NE(on.find("instrumentation on: "), std::string::npos) << on;
  go(2);
  ASSERT_TRUE(at(3));
  const std::string off = cli("off --function '*::gamma'");
  EXPECT_NE(off.find("instrumentation off: 1 of its "), std::string::npos) << off;
  go(3);
  const int status = hotscope::test_support::wait_for_child(child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(scratch.path() / "output");
  const Json stats = Json::parse(slurp(out / "stats.json"));
  EXPECT_EQ(calls_of(stats, ns + "alpha"), 0u) << "the sleds were off";
  EXPECT_EQ(calls_of(stats, ns + "beta"), 1000u);
  EXPECT_EQ(calls_of(stats, ns + "gamma"), 500u) << "unpatched by name for the last phase";
  EXPECT_EQ(calls_of(stats, ns + "thrower"), 1u);
  EXPECT_EQ(calls_of(stats, ns + "leaf"), 400u);
#endif
}

} // namespace
