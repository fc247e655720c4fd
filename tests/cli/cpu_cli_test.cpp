// `hotscope cpu` against hotscope-demo's agent (docs/agent.md): the CPU profile of the next
// seconds as cpu.pb.gz (the sampler started by the agent for them), the functions with most CPU,
// and its failures in one line with their exit codes.
#include "agent/demo_process.hpp"

#include <gtest/gtest.h>

#include <regex>

namespace {

using namespace hotscope::testing;

// A gzip stream starts with 1f 8b.
bool gzipped(const std::string& bytes) {
  return bytes.size() > 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::size_t lines_in(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The sampler is off (no HOTSCOPE_CPU_HZ): the agent runs it for the window, and the demo's
// request handling shows in the top functions with CPU time.
TEST(CpuCli, WritesTheProfileAndTheTopFunctions) {
  Demo demo({}, true, kBusyDemo);
  const std::string pid = std::to_string(demo.pid());
  const fs::path file = demo.scratch() / "window.pb.gz";
  const CommandResult cpu =
      cli(demo, {"cpu", "-p", pid, "--seconds", "2", "--top", "5", "-o", file});
  ASSERT_EQ(cpu.status, 0) << cpu.err;
  EXPECT_TRUE(gzipped(slurp(file)));
  EXPECT_EQ(cpu.err, "hotscope: the CPU profile of process " + pid +
                         " (hotscope-demo) over 2 s is in " + file.string() + "\n");
  // "N CPU samples, X of CPU", the heading, then at most 5 functions with their CPU.
  EXPECT_TRUE(
      std::regex_search(cpu.out, std::regex("^[1-9][0-9]* CPU samples, [0-9.]+ [mµ]?s of CPU\n")))
      << cpu.out;
  EXPECT_NE(cpu.out.find("  CPU self      %   CPU total      %  Function\n"), std::string::npos)
      << cpu.out;
  EXPECT_GE(lines_in(cpu.out), 3u) << cpu.out;
  EXPECT_LE(lines_in(cpu.out), 7u) << cpu.out;
  // The demo's own scopes, named by function ("demo::...") or by hand ("backend_query"): which
  // are the top five varies with the window.
  EXPECT_NE(cpu.out.find("examples/demo/"), std::string::npos) << cpu.out;

  // The default file name is the formats table's, in the current directory.
  const CommandResult here = run({"sh", "-c",
                                  "cd " + quote(demo.scratch()) + " && " + quote(HOTSCOPE_CLI) +
                                      " cpu -n hotscope-demo --seconds 1"},
                                 {{"HOTSCOPE_RUNTIME_DIR", demo.runtime_dir()}});
  EXPECT_EQ(here.status, 0) << here.err;
  EXPECT_EQ(here.out, "");
  EXPECT_TRUE(gzipped(slurp(demo.scratch() / "cpu.pb.gz")));

  // --folded: the same window as collapsed stacks, root first, native frames named.
  const fs::path folded = demo.scratch() / "window.folded";
  const CommandResult stacks =
      cli(demo, {"cpu", "-p", pid, "--seconds", "1", "--folded", "-o", folded});
  ASSERT_EQ(stacks.status, 0) << stacks.err;
  const std::string text = slurp(folded);
  EXPECT_TRUE(std::regex_search(text, std::regex("(^|\n)[^\n]*start_thread;[^\n]* [1-9][0-9]*\n")))
      << text.substr(0, 2000);
}

// Each failure is one line on stderr with its exit code (docs/agent.md), nothing written.
TEST(CpuCli, FailuresAreOneLine) {
  Demo demo;
  const std::string pid = std::to_string(demo.pid());
  const auto refused = [&](const std::vector<std::string>& arguments, int status,
                           const std::string& part) {
    const CommandResult result = cli(demo, arguments);
    EXPECT_EQ(result.status, status) << result.err;
    EXPECT_EQ(lines_in(result.err), 1u) << result.err;
    EXPECT_NE(result.err.find(part), std::string::npos) << result.err;
    EXPECT_EQ(result.out, "");
  };
  refused({"cpu", "-p", pid, "--seconds", "0"}, 2, "--seconds");
  refused({"cpu", "-p", pid, "--seconds", "301"}, 2, "--seconds");
  refused({"cpu", "-p", "999999999", "--seconds", "1"}, 3, "999999999");
  refused({"cpu", "-p", pid, "--seconds", "1", "--top", "3", "-o", "-"}, 2, "--top");
  refused({"cpu", "-p", pid, "--seconds", "1", "-o", demo.scratch() / "no" / "such" / "dir"}, 8,
          "cannot write");
}

} // namespace
