// Runs plugin_host, which unloads plug-ins (plugin.cpp) right after calling them, with
// HOTSCOPE_OUT, and checks that every output names each library's scopes, counter and messages.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include "support/scratch_dir.hpp"
#include "support/stats.hpp"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;
using hotscope::test_support::calls_of;
using hotscope::test_support::slurp;

struct HostRun {
  int status;
  std::string out;
  std::string err;
};

// A long collector period: the libraries are unloaded before any periodic drain.
HostRun run_host(const fs::path& dir, const std::string& arguments) {
  const std::string command =
      "timeout 60 env HOTSCOPE_COLLECT_MS=1000 HOTSCOPE_OUT=" + (dir / "out").string() + " " +
      PLUGIN_HOST + " " + arguments + " >" + (dir / "stdout").string() + " 2>" +
      (dir / "stderr").string();
  const int status = std::system(command.c_str());
  return HostRun{status, slurp(dir / "stdout"), slurp(dir / "stderr")};
}

std::uint64_t counter_updates(const nlohmann::json& stats, const std::string& name) {
  for (const auto& counter : stats.at("counters")) {
    if (counter.at("name") == name) {
      return counter.at("updates").get<std::uint64_t>();
    }
  }
  return 0;
}

// Events of trace.json named `name` with phase `ph`, on the program's own tracks (not those of
// its kept slowest calls, a process of their own: docs/slow.md).
std::uint64_t trace_events(const nlohmann::json& trace, const std::string& ph,
                           const std::string& name) {
  constexpr std::int64_t kSlowCallsPid = (std::int64_t{1} << 30) - 1;
  std::uint64_t count = 0;
  for (const auto& event : trace.at("traceEvents")) {
    count += event.at("ph") == ph && event.at("name") == name &&
             event.value("pid", std::int64_t{0}) != kSlowCallsPid;
  }
  return count;
}

// Each of the plug-in `tag`'s scopes, counter updates and messages was recorded `calls` times.
void expect_named(const fs::path& out, const std::string& tag, std::uint64_t calls) {
  const auto stats = nlohmann::json::parse(slurp(out / "stats.json"));
  EXPECT_EQ(calls_of(stats, tag + "_scope"), calls) << tag;
  EXPECT_EQ(counter_updates(stats, tag + "_counter"), calls) << tag;
  const auto trace = nlohmann::json::parse(slurp(out / "trace.json"));
  EXPECT_EQ(trace_events(trace, "B", tag + "_scope"), calls) << tag;
  EXPECT_EQ(trace_events(trace, "C", tag + "_counter"), calls) << tag;
  EXPECT_EQ(trace_events(trace, "i", tag + " message"), calls) << tag;
  EXPECT_NE(slurp(out / "report.txt").find(tag + "_scope"), std::string::npos) << tag;
}

TEST(RuntimeUnload, ALibraryUnloadedRightAfterItsCallsIsNamedInEveryOutput) {
  for (int run = 0; run < 3; ++run) {
    const hotscope::testing::ScratchDir scratch("unload-at-once-" + std::to_string(run));
    const HostRun host =
        run_host(scratch.path(), std::string("unload-at-once ") + PLUGIN_A + " 8 5");
    ASSERT_EQ(host.status, 0) << host.err;
    EXPECT_EQ(host.err, "");
    expect_named(scratch.path() / "out", "alpha", 8 * 100 * 5);
  }
}

TEST(RuntimeUnload, ALibraryLoadedWhereAnUnloadedOneWasGetsNamesOfItsOwn) {
  const hotscope::testing::ScratchDir scratch("unload-same-address");
  const HostRun host =
      run_host(scratch.path(), std::string("same-address ") + PLUGIN_A + " " + PLUGIN_B);
  ASSERT_EQ(host.status, 0) << host.err;
  // Two libraries of the same size, one unloaded before the other is loaded: the loader maps
  // the second into the hole the first left, unless another thread's mmap took it first (the
  // host then tries again, calling A 10 times each try).
  int tries = 0;
  ASSERT_EQ(std::sscanf(host.out.c_str(), "same address after %d tries", &tries), 1) << host.out;
  expect_named(scratch.path() / "out", "alpha", 10 * static_cast<std::uint64_t>(tries));
  expect_named(scratch.path() / "out", "bravo", 20);
}

} // namespace
