// `hotscope run --heap [--out DIR] -- prog args...`.
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "support/child_process.hpp"
#include "support/files.hpp"
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

namespace fs = std::filesystem;

using hotscope::test_support::shell;
using hotscope::test_support::slurp;

nlohmann::json totals(const fs::path& file) {
  const auto profile = nlohmann::json::parse(slurp(file));
  nlohmann::json sums = {{"tb", 0}, {"tbk", 0}, {"gb", 0}, {"gbk", 0}, {"eb", 0}, {"ebk", 0}};
  for (const auto& pp : profile.at("pps")) {
    for (auto& [key, value] : sums.items()) {
      value = value.get<std::uint64_t>() + pp.at(key).get<std::uint64_t>();
    }
  }
  return sums;
}

TEST(HeapRun, WritesTheProfileAProgramWritesUnderThePreloadLibrary) {
  const hotscope::testing::ScratchDir scratch("run-heap");
  const fs::path& dir = scratch.path();
  ASSERT_EQ(shell(std::string(HOTSCOPE_CLI) + " run --heap --out " + (dir / "run").string() +
                  " -- " + BEHAVIOURS_PROGRAM + " lifecycle 2>" + (dir / "err").string()),
            0)
      << slurp(dir / "err");
  ASSERT_EQ(shell("env HOTSCOPE_OUT=" + (dir / "direct").string() + " LD_PRELOAD=" +
                  HOTSCOPE_PRELOAD + " " + BEHAVIOURS_PROGRAM + " lifecycle 2>/dev/null"),
            0);
  EXPECT_EQ(totals(dir / "run" / "heap.json"), totals(dir / "direct" / "heap.json"));
  EXPECT_NE(slurp(dir / "err").find("hotscope heap: At t-end:"), std::string::npos);
  // Each summary line names the process and its program.
  const std::string program = fs::path(BEHAVIOURS_PROGRAM).filename().string();
  EXPECT_NE(slurp(dir / "err").find("== " + program + ": hotscope heap: Total:"), std::string::npos)
      << slurp(dir / "err");
}

// The frames of heap.json without their addresses ("0x4011A6: f (a.c:3)" -> "f (a.c:3)"),
// sorted: the same program run twice has its objects at other addresses.
std::vector<std::string> frame_names(const fs::path& file) {
  std::vector<std::string> names;
  const nlohmann::json profile = nlohmann::json::parse(slurp(file));
  for (const auto& frame : profile.at("ftbl")) {
    const std::string text = frame.get<std::string>();
    const std::size_t colon = text.find(": ");
    names.push_back(colon == std::string::npos ? text : text.substr(colon + 2));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// In the sampled mode `hotscope run` symbolizes the program's report after the program ended
// (docs/heap.md, "The report at exit"): the same figures and frame names as the report the
// program writes itself under the preload library alone, a summary that says so, heap.pb.gz
// beside it, and nothing left in TMPDIR. A mean of 1 byte samples each of these blocks.
TEST(HeapRun, TheSampledReportIsWrittenByTheLauncherWithTheSameNames) {
  const hotscope::testing::ScratchDir scratch("run-sampled");
  const fs::path& dir = scratch.path();
  fs::create_directory(dir / "tmp");
  const std::string sampled =
      "HOTSCOPE_HEAP_MODE=sampled HOTSCOPE_HEAP_SAMPLE_BYTES=1 HOTSCOPE_HEAP_SAMPLE_SEED=1 ";
  ASSERT_EQ(shell("env TMPDIR=" + (dir / "tmp").string() + " " + sampled + HOTSCOPE_CLI +
                  " run --heap --out " + (dir / "run").string() + " -- " + BEHAVIOURS_PROGRAM +
                  " lifecycle 2>" + (dir / "err").string()),
            0)
      << slurp(dir / "err");
  ASSERT_EQ(shell("env " + sampled + "HOTSCOPE_OUT=" + (dir / "direct").string() +
                  " LD_PRELOAD=" + HOTSCOPE_PRELOAD + " " + BEHAVIOURS_PROGRAM + " lifecycle 2>" +
                  (dir / "direct-err").string()),
            0);
  EXPECT_EQ(totals(dir / "run" / "heap.json"), totals(dir / "direct" / "heap.json"));
  const std::vector<std::string> names = frame_names(dir / "run" / "heap.json");
  EXPECT_EQ(names, frame_names(dir / "direct" / "heap.json"));
  EXPECT_TRUE(std::any_of(names.begin(), names.end(), [](const std::string& name) {
    return name.starts_with("main (");
  })) << testing::PrintToString(names);
  EXPECT_NE(slurp(dir / "err").find("code addresses after exit, by hotscope run"),
            std::string::npos)
      << slurp(dir / "err");
  EXPECT_NE(slurp(dir / "direct-err").find("code addresses at exit"), std::string::npos);
  EXPECT_GT(fs::file_size(dir / "run" / "heap.pb.gz"), 0u);
  EXPECT_TRUE(fs::is_empty(dir / "tmp"));
}

TEST(HeapRun, ExecutedChildrenWriteTheirOwnFiles) {
  const hotscope::testing::ScratchDir scratch("run-exec");
  const fs::path& dir = scratch.path();
  ASSERT_EQ(shell(std::string(HOTSCOPE_CLI) + " run --heap --out " + dir.string() + " -- " +
                  BEHAVIOURS_PROGRAM + " exec 2>/dev/null"),
            0);
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") { // each also writes its heap[.<pid>].pb.gz
      files.push_back(entry.path().filename().string());
    }
  }
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 2u);
  // heap.<program>.<child pid>.json: which program of a run that starts many, and which process.
  const std::string program = fs::path(BEHAVIOURS_PROGRAM).filename().string();
  EXPECT_EQ(files[0].rfind("heap." + program + ".", 0), 0u) << files[0];
  EXPECT_NE(files[0], "heap.json");
  EXPECT_EQ(files[1], "heap.json");
  // The child's profile is that of the same program run on its own.
  ASSERT_EQ(shell("env HOTSCOPE_OUT=" + (dir / "direct").string() + " LD_PRELOAD=" +
                  HOTSCOPE_PRELOAD + " " + BEHAVIOURS_PROGRAM + " lifecycle 2>/dev/null"),
            0);
  EXPECT_EQ(totals(dir / files[0]), totals(dir / "direct" / "heap.json"));
}

TEST(HeapRun, NoSummaryKeepsStderrQuiet) {
  const hotscope::testing::ScratchDir scratch("run-quiet");
  const fs::path& dir = scratch.path();
  ASSERT_EQ(shell(std::string(HOTSCOPE_CLI) + " run --heap --no-summary --out " + dir.string() +
                  " -- " + BEHAVIOURS_PROGRAM + " lifecycle 2>" + (dir / "err").string()),
            0);
  EXPECT_EQ(slurp(dir / "err"), "");
  EXPECT_TRUE(fs::exists(dir / "heap.json"));
}

// sort closes its stderr before it exits; the summary goes to the stderr it was started with.
TEST(HeapRun, TheSummaryReachesAProgramThatClosedItsStderr) {
  const hotscope::testing::ScratchDir scratch("run-closed-stderr");
  const fs::path& dir = scratch.path();
  ASSERT_EQ(shell(std::string(HOTSCOPE_CLI) + " run --heap --out " + dir.string() +
                  " -- sort /dev/null 2>" + (dir / "err").string()),
            0);
  EXPECT_NE(slurp(dir / "err").find("hotscope heap: At t-end:"), std::string::npos)
      << slurp(dir / "err");
}

// A program that closed fd 2 and opened a file of its own under that number: the summary goes to
// the stderr it was started with, never into the program's file.
TEST(HeapRun, TheSummaryNeverGoesIntoAFileTheProgramOpenedAsFd2) {
  if (access("/usr/bin/python3", X_OK) != 0) {
    GTEST_SKIP() << "/usr/bin/python3 is not installed (scripts/packages.txt lists python3)";
  }
  const hotscope::testing::ScratchDir scratch("run-reused-fd2");
  const fs::path& dir = scratch.path();
  const fs::path own = dir / "own.log";
  ASSERT_EQ(shell(std::string(HOTSCOPE_CLI) + " run --heap --out " + dir.string() +
                  " -- /usr/bin/python3 -c \"import os; os.close(2); "
                  "fd = os.open('" +
                  own.string() +
                  "', os.O_WRONLY | os.O_CREAT); "
                  "assert fd == 2; os.write(fd, b'own\\\\n')\" 2>" +
                  (dir / "err").string()),
            0)
      << slurp(dir / "err");
  EXPECT_EQ(slurp(own), "own\n");
  EXPECT_NE(slurp(dir / "err").find("hotscope heap: At t-end:"), std::string::npos)
      << slurp(dir / "err");
}

// Asked for a profile, a program under `hotscope run --heap` with HOTSCOPE_AGENT=0 (no agent)
// gets an answer that says where its profile will be written and how to have it now.
TEST(HeapRun, AskingAPreloadedProgramSaysWhereItsProfileGoes) {
  const hotscope::testing::ScratchDir scratch("run-ask");
  const fs::path& dir = scratch.path();
  const fs::path pid_file = dir / "pid";
  ASSERT_EQ(shell("HOTSCOPE_AGENT=0 " + std::string(HOTSCOPE_CLI) +
                  " run --heap --no-summary --out " + (dir / "out").string() +
                  " -- /bin/sh -c 'echo $$ >" + pid_file.string() +
                  "; exec sleep 30' >/dev/null 2>&1 &"),
            0);
  for (int i = 0; i < 1000 && slurp(pid_file).find('\n') == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string pid = slurp(pid_file).substr(0, slurp(pid_file).find('\n'));
  ASSERT_FALSE(pid.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(200)); // sh has become sleep
  const int status =
      shell(std::string(HOTSCOPE_CLI) + " heap -p " + pid + " 2>" + (dir / "err").string());
  kill(std::stoi(pid), SIGTERM);
  EXPECT_EQ(status, 4);
  const std::string err = slurp(dir / "err");
  EXPECT_NE(err.find("runs the heap profiler's preload library without a live agent"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find((dir / "out" / "heap.json").string()), std::string::npos) << err;
  EXPECT_NE(err.find("kill -TERM " + pid), std::string::npos) << err;
}

// A Release build without -g: every view names the worker's leak after the worker's function,
// never after the thread's entry (docs/heap.md, "Site names").
TEST(HeapRun, SitesOfAWorkerWithoutDebugInformationAreNamedAfterItsFunction) {
  const hotscope::testing::ScratchDir scratch("run-site-names");
  const fs::path& dir = scratch.path();
  const std::string cli = HOTSCOPE_CLI;
  ASSERT_EQ(shell(cli + " run --heap --no-summary --out " + dir.string() + " -- " +
                  WORKER_LEAK_PROGRAM + " 2>" + (dir / "err").string()),
            0)
      << slurp(dir / "err");
  const std::string heap = (dir / "heap.json").string();
  ASSERT_EQ(shell(cli + " diff " + heap + " " + heap + " --json >" + (dir / "diff").string()), 0);
  const auto rows = nlohmann::json::parse(slurp(dir / "diff")).at("rows");
  const std::string program = fs::path(WORKER_LEAK_PROGRAM).filename().string();
  const std::string name = "svc::render_response (in " + program + ")";
  double named_bytes = 0; // live at the end: the 100 strings' characters, and more
  for (const auto& row : rows) {
    const std::string row_name = row.at("name").get<std::string>();
    EXPECT_EQ(row_name.find("start_thread"), std::string::npos) << rows.dump();
    if (row_name == name) {
      named_bytes += row.at("columns").at("end_bytes").at("base").get<double>();
    }
  }
  EXPECT_GE(named_bytes, 100 * 100) << rows.dump();
  ASSERT_EQ(shell(cli + " report " + dir.string() + " 2>" + (dir / "err").string()), 0)
      << slurp(dir / "err");
  const std::string page = slurp(dir / "report.html");
  EXPECT_NE(page.find("<summary>" + name + "</summary>"), std::string::npos);
  EXPECT_EQ(page.find("<summary>start_thread"), std::string::npos);
  // The flame graph draws every frame, shortened as the names are.
  ASSERT_EQ(shell(cli + " flame " + heap + " --bytes end >" + (dir / "heap.svg").string()), 0);
  EXPECT_NE(slurp(dir / "heap.svg").find(name), std::string::npos);
}

TEST(HeapRun, ReturnsTheProgramsExitStatus) {
  EXPECT_EQ(shell(std::string(HOTSCOPE_CLI) + " run -- /bin/sh -c 'exit 7'"), 7);
  EXPECT_EQ(shell(std::string(HOTSCOPE_CLI) + " run --heap -- /nonexistent/program 2>/dev/null"),
            127);
  EXPECT_NE(shell(std::string(HOTSCOPE_CLI) + " run 2>/dev/null"), 0); // no program given
  EXPECT_EQ(hotscope::test_support::output_of(std::string(HOTSCOPE_CLI) +
                                              " run -- /nonexistent/program 2>&1"),
            "hotscope: cannot run /nonexistent/program: No such file or directory\n");
}

// The variables that name the program's process (docs/heap.md, "The report at exit") carry its
// pid, which the launcher learns only once it started it; the program's own variables pass on.
TEST(HeapRun, TheProgramsEnvironmentNamesItsOwnPid) {
  const std::string seen = hotscope::test_support::output_of(
      "HOTSCOPE_HEAP_MODE=off MINE=kept " + std::string(HOTSCOPE_CLI) +
      " run --heap -- /bin/sh -c 'echo $$ $HOTSCOPE_RUN_PID $HOTSCOPE_HEAP_PID $MINE'");
  const std::string pid = seen.substr(0, seen.find(' '));
  EXPECT_FALSE(pid.empty());
  EXPECT_EQ(seen, pid + " " + pid + " " + pid + " kept\n");
}

} // namespace

// The copy of the program's stderr (docs/heap.md) is numbered within the descriptor table the
// program starts with: growing it, with the agent's thread running, makes the kernel wait for an
// RCU grace period, 10 to 15 ms of the program's start.
TEST(HeapRun, TheProgramsDescriptorTableKeepsItsSize) {
  const std::string grep = " -- grep FDSize /proc/self/status";
  const std::string alone =
      hotscope::test_support::output_of(std::string(HOTSCOPE_CLI) + " run" + grep);
  EXPECT_NE(alone.find("FDSize"), std::string::npos) << alone;
  for (const char* mode : {"sampled", "full"}) {
    EXPECT_EQ(hotscope::test_support::output_of(std::string("HOTSCOPE_HEAP_MODE=") + mode + " " +
                                                HOTSCOPE_CLI + " run --heap --no-summary" + grep),
              alone)
        << mode;
  }
}
