// The acceptance criterion of the heap profiler: on a single-threaded program, the preload
// library's Total, At t-gmax and At t-end figures (bytes and blocks) equal valgrind DHAT's for
// the same binary. valgrind runs with --run-libc-freeres=no --run-cxx-freeres=no: by default it
// makes the C and C++ runtimes release their own memory after the program ends, which no
// in-process profiler can see (docs/heap.md).
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Figures {
  std::uint64_t total_bytes = 0;
  std::uint64_t total_blocks = 0;
  std::uint64_t gmax_bytes = 0;
  std::uint64_t gmax_blocks = 0;
  std::uint64_t end_bytes = 0;
  std::uint64_t end_blocks = 0;
};

using hotscope::test_support::slurp;

Figures sum(const nlohmann::json& profile) {
  Figures figures;
  for (const auto& pp : profile.at("pps")) {
    figures.total_bytes += pp.at("tb").get<std::uint64_t>();
    figures.total_blocks += pp.at("tbk").get<std::uint64_t>();
    figures.gmax_bytes += pp.at("gb").get<std::uint64_t>();
    figures.gmax_blocks += pp.at("gbk").get<std::uint64_t>();
    figures.end_bytes += pp.at("eb").get<std::uint64_t>();
    figures.end_blocks += pp.at("ebk").get<std::uint64_t>();
  }
  return figures;
}

int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Runs {
  nlohmann::json valgrind;
  nlohmann::json hotscope;
  std::string hotscope_err;
};

// Runs `command` under valgrind DHAT and under the preload library, stdout to a file in both
// runs (the C library sizes the stdout buffer by what stdout is). valgrind's file is named by
// pid: the process whose pid the command prints first (a forking parent), else the only one.
Runs run_both(const fs::path& dir, const std::string& command) {
  Runs runs;
  const int valgrind_status =
      run(std::string(VALGRIND) + " --tool=dhat --run-libc-freeres=no --run-cxx-freeres=no" +
          " --dhat-out-file=" + (dir / "dhat.%p.json").string() + " " + command + " >" +
          (dir / "valgrind.out").string() + " 2>" + (dir / "valgrind.err").string());
  EXPECT_EQ(valgrind_status, 0) << slurp(dir / "valgrind.err");
  const int hotscope_status = run(
      "env HOTSCOPE_OUT=" + (dir / "out").string() + " LD_PRELOAD=" + HOTSCOPE_PRELOAD + " " +
      command + " >" + (dir / "hotscope.out").string() + " 2>" + (dir / "hotscope.err").string());
  runs.hotscope_err = slurp(dir / "hotscope.err");
  EXPECT_EQ(hotscope_status, 0) << runs.hotscope_err;

  std::string printed = slurp(dir / "valgrind.out");
  printed = printed.substr(0, printed.find('\n'));
  fs::path valgrind_file = dir / ("dhat." + printed + ".json");
  if (!fs::exists(valgrind_file)) {
    valgrind_file.clear();
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().filename().string().rfind("dhat.", 0) == 0) {
        valgrind_file = entry.path();
      }
    }
  }
  if (valgrind_file.empty() || !fs::exists(dir / "out" / "heap.json")) {
    ADD_FAILURE() << "a profile is missing in " << dir;
    return runs;
  }
  runs.valgrind = nlohmann::json::parse(slurp(valgrind_file));
  runs.hotscope = nlohmann::json::parse(slurp(dir / "out" / "heap.json"));
  return runs;
}

// The file is one the viewer accepts: unique fs, frame 0 unused, valgrind's frame syntax, and
// the workload's own source named.
void expect_viewer_ready(const nlohmann::json& profile, const std::string& source_file) {
  EXPECT_EQ(profile.at("mode"), "cpp-heap");
  EXPECT_LE(profile.at("tg").get<std::uint64_t>(), profile.at("te").get<std::uint64_t>());
  std::set<std::vector<int>> seen;
  for (const auto& pp : profile.at("pps")) {
    const auto fs_indices = pp.at("fs").get<std::vector<int>>();
    EXPECT_TRUE(seen.insert(fs_indices).second) << "repeated location";
    for (int index : fs_indices) {
      EXPECT_GT(index, 0);
    }
  }
  const auto frames = profile.at("ftbl").get<std::vector<std::string>>();
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames[0], "[root]");
  bool names_source = false;
  for (std::size_t i = 1; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i].rfind("0x", 0), 0u) << frames[i];
    EXPECT_EQ(frames[i].back(), ')') << frames[i];
    names_source = names_source || frames[i].find(source_file + ":") != std::string::npos;
  }
  EXPECT_TRUE(names_source) << "no frame in " << source_file;
}

void expect_same_figures_as_valgrind(const fs::path& dir, const std::string& command,
                                     const std::string& source_file) {
  const Runs runs = run_both(dir, command);
  if (runs.valgrind.is_null() || runs.hotscope.is_null()) {
    return;
  }
  const Figures want = sum(runs.valgrind);
  const Figures got = sum(runs.hotscope);
  EXPECT_GT(want.total_blocks, 0u);
  EXPECT_EQ(got.total_bytes, want.total_bytes);
  EXPECT_EQ(got.total_blocks, want.total_blocks);
  EXPECT_EQ(got.gmax_bytes, want.gmax_bytes);
  EXPECT_EQ(got.gmax_blocks, want.gmax_blocks);
  EXPECT_EQ(got.end_bytes, want.end_bytes);
  EXPECT_EQ(got.end_blocks, want.end_blocks);
  EXPECT_NE(runs.hotscope_err.find("At t-gmax: "), std::string::npos) << runs.hotscope_err;
  expect_viewer_ready(runs.hotscope, source_file);
}

TEST(HeapExactness, TreeAndListWorkloadMatchesValgrindDhat) {
  const hotscope::testing::ScratchDir scratch("exactness-list-tree");
  expect_same_figures_as_valgrind(scratch.path(), LIST_TREE_PROGRAM, "list_tree.cpp");
}

TEST(HeapExactness, ContainersAndEdgeCasesMatchValgrindDhat) {
  const hotscope::testing::ScratchDir scratch("exactness-containers");
  expect_same_figures_as_valgrind(scratch.path(), CONTAINERS_PROGRAM, "containers.cpp");
}

TEST(HeapExactness, CProgramWithStdioMatchesValgrindDhat) {
  const hotscope::testing::ScratchDir scratch("exactness-stdio");
  expect_same_figures_as_valgrind(scratch.path(), STDIO_PROGRAM, "stdio.c");
}

TEST(HeapExactness, ExceptionsAndIostreamsMatchValgrindDhat) {
  const hotscope::testing::ScratchDir scratch("exactness-exceptions");
  expect_same_figures_as_valgrind(scratch.path(), EXCEPTIONS_PROGRAM, "exceptions.cpp");
}

// Static constructors and destructors, atexit handlers: before and after main.
TEST(HeapExactness, AllocationsBeforeAndAfterMainMatchValgrindDhat) {
  const hotscope::testing::ScratchDir scratch("exactness-lifecycle");
  expect_same_figures_as_valgrind(scratch.path(), std::string(BEHAVIOURS_PROGRAM) + " lifecycle",
                                  "behaviours.cpp");
}

// The parent's profile; the forked child is not profiled (it writes nothing).
TEST(HeapExactness, ForkingParentMatchesValgrindDhat) {
  const hotscope::testing::ScratchDir scratch("exactness-fork");
  expect_same_figures_as_valgrind(scratch.path(), std::string(BEHAVIOURS_PROGRAM) + " fork",
                                  "behaviours.cpp");
  // heap.json and heap.pb.gz, the parent's only.
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(scratch.path() / "out")) {
    files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"heap.json", "heap.pb.gz"}));
}

// With threads the peak depends on scheduling, but every block is counted, none is unknown, no
// event is lost. A thread's dynamic thread vector (glibc callocs it with the thread's stack, and
// reuses both for later threads) is 16 bytes longer per library with thread-local storage loaded
// when the thread starts: the preload's, and the report module's three (it, libdw and libelf),
// which the profiler's thread loads at its first look at the stacks, before or after a thread
// of the program starts. So bytes differ by up to that, in steps of 16, for `vectors` vectors,
// and blocks do not.
void expect_threaded_totals(const fs::path& dir, const std::string& mode, std::uint64_t vectors) {
  const Runs runs = run_both(dir, std::string(BEHAVIOURS_PROGRAM) + " " + mode);
  ASSERT_FALSE(runs.valgrind.is_null());
  ASSERT_FALSE(runs.hotscope.is_null());
  const Figures want = sum(runs.valgrind);
  const Figures got = sum(runs.hotscope);
  EXPECT_EQ(got.total_blocks, want.total_blocks);
  EXPECT_EQ(got.end_blocks, want.end_blocks);
  const std::uint64_t extra = got.total_bytes - want.total_bytes;
  EXPECT_EQ(got.end_bytes - want.end_bytes, extra);
  EXPECT_EQ(extra % 16, 0u);
  EXPECT_LE(extra, 16 * vectors * 8) << "more than 8 thread-local-storage libraries?";
  EXPECT_EQ(runs.hotscope_err.find("Unknown pointers"), std::string::npos) << runs.hotscope_err;
  EXPECT_EQ(runs.hotscope_err.find("could not be recorded"), std::string::npos)
      << runs.hotscope_err;
  expect_viewer_ready(runs.hotscope, "behaviours.cpp");
}

// Waves of four threads: later waves reuse the stacks, and the vectors with them.
TEST(HeapExactness, ThreadedTotalsMatchValgrindDhatUpToThreadVectors) {
  const hotscope::testing::ScratchDir scratch("exactness-threads");
  expect_threaded_totals(scratch.path(), "threads", 4);
}

// Blocks freed on other threads than their own, with reallocs, while the addresses go straight
// back to malloc on another: the full mode applies each event in the allocator's order. Four
// threads at once.
TEST(HeapExactness, BlocksHandedBetweenThreadsMatchValgrindDhat) {
  const hotscope::testing::ScratchDir scratch("exactness-handoff");
  expect_threaded_totals(scratch.path(), "handoff", 4);
}

} // namespace
