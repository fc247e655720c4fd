// The acceptance criterion of the heap profiler: on a single-threaded program, the preload
// library's Total, At t-gmax and At t-end figures (bytes and blocks) equal valgrind DHAT's for
// the same binary. valgrind runs with --run-libc-freeres=no --run-cxx-freeres=no: by default it
// makes the C and C++ runtimes release their own memory after the program ends, which no
// in-process profiler can see (docs/heap.md).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

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

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

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

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("hotscope-heap-exactness-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Runs `program` under both profilers and checks the figures, and the file's shape.
void expect_same_figures_as_valgrind(const std::string& name, const std::string& program,
                                     const std::string& source_file) {
  const fs::path dir = scratch(name);
  const fs::path valgrind_file = dir / "dhat.json";
  ASSERT_EQ(run(std::string(VALGRIND) +
                " --tool=dhat --run-libc-freeres=no --run-cxx-freeres=no --dhat-out-file=" +
                valgrind_file.string() + " " + program + " >/dev/null 2>" +
                (dir / "valgrind.err").string()),
            0)
      << slurp(dir / "valgrind.err");
  ASSERT_EQ(run("env HOTSCOPE_OUT=" + (dir / "out").string() + " LD_PRELOAD=" + HOTSCOPE_PRELOAD +
                " " + program + " >/dev/null 2>" + (dir / "hotscope.err").string()),
            0)
      << slurp(dir / "hotscope.err");

  const auto expected = nlohmann::json::parse(slurp(valgrind_file));
  const auto actual = nlohmann::json::parse(slurp(dir / "out" / "heap.json"));
  const Figures want = sum(expected);
  const Figures got = sum(actual);
  EXPECT_GT(want.total_blocks, 0u);
  EXPECT_EQ(got.total_bytes, want.total_bytes);
  EXPECT_EQ(got.total_blocks, want.total_blocks);
  EXPECT_EQ(got.gmax_bytes, want.gmax_bytes);
  EXPECT_EQ(got.gmax_blocks, want.gmax_blocks);
  EXPECT_EQ(got.end_bytes, want.end_bytes);
  EXPECT_EQ(got.end_blocks, want.end_blocks);

  // The summary on stderr says the same.
  const std::string err = slurp(dir / "hotscope.err");
  EXPECT_NE(err.find("At t-gmax: "), std::string::npos) << err;

  // The file is one the viewer accepts: unique fs, frame 0 unused, valgrind's frame syntax, and
  // the workload's own source named.
  EXPECT_EQ(actual.at("mode"), "cpp-heap");
  EXPECT_LE(actual.at("tg").get<std::uint64_t>(), actual.at("te").get<std::uint64_t>());
  std::set<std::vector<int>> seen;
  for (const auto& pp : actual.at("pps")) {
    const auto fs_indices = pp.at("fs").get<std::vector<int>>();
    EXPECT_TRUE(seen.insert(fs_indices).second) << "repeated location";
    for (int index : fs_indices) {
      EXPECT_GT(index, 0);
    }
  }
  const auto frames = actual.at("ftbl").get<std::vector<std::string>>();
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

TEST(HeapExactness, TreeAndListWorkloadMatchesValgrindDhat) {
  expect_same_figures_as_valgrind("list-tree", LIST_TREE_PROGRAM, "list_tree.cpp");
}

TEST(HeapExactness, ContainersAndEdgeCasesMatchValgrindDhat) {
  expect_same_figures_as_valgrind("containers", CONTAINERS_PROGRAM, "containers.cpp");
}

TEST(HeapExactness, CProgramWithStdioMatchesValgrindDhat) {
  expect_same_figures_as_valgrind("stdio", STDIO_PROGRAM, "stdio.c");
}

} // namespace
