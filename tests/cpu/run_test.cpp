// `hotscope run --cpu [--out DIR] -- prog args...` on unmodified programs.
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using hotscope::test_support::shell;
using hotscope::test_support::slurp;

// Samples in a cpu.folded, and those whose stack names `frame`.
std::pair<std::uint64_t, std::uint64_t> samples(const fs::path& folded, const std::string& frame) {
  std::ifstream in(folded);
  std::string line;
  std::uint64_t all = 0;
  std::uint64_t with_frame = 0;
  while (std::getline(in, line)) {
    const std::uint64_t count = std::stoull(line.substr(line.rfind(' ') + 1));
    all += count;
    with_frame += line.find(frame) != std::string::npos ? count : 0;
  }
  return {all, with_frame};
}

} // namespace

TEST(CpuRun, Python3GetsItsInterpreterSampled) {
  const hotscope::testing::ScratchDir scratch("cpu-run-python");
  const fs::path& dir = scratch.path();
  const std::string program = "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.5:\n"
                              "    sum(i * i for i in range(1000))\n";
  std::ofstream(dir / "busy.py") << program;
  ASSERT_EQ(shell(std::string(HOTSCOPE_CLI) + " run --cpu --out " + (dir / "out").string() +
                  " -- /usr/bin/python3 " + (dir / "busy.py").string() + " 2>" +
                  (dir / "err").string()),
            0)
      << slurp(dir / "err");
  const auto [all, in_eval] = samples(dir / "out" / "cpu.folded", "_PyEval_EvalFrameDefault");
  EXPECT_GE(all, 35u) << "0.5 s of CPU at 99 Hz";
  EXPECT_GE(in_eval, all / 2) << "the interpreter's loop, named from its dynamic symbols";
  const auto stats = nlohmann::json::parse(slurp(dir / "out" / "stats.json"));
  EXPECT_EQ(stats.at("cpu").at("hz"), 0) << "stopped at exit";
  EXPECT_GE(stats.at("cpu").at("samples").get<std::uint64_t>(), all);
}

TEST(CpuRun, ACProgramAndTheProcessesItStartsEachWriteTheirOwnProfile) {
  const hotscope::testing::ScratchDir scratch("cpu-run-sort");
  const fs::path& dir = scratch.path();
  {
    std::ofstream lines(dir / "lines");
    for (std::uint64_t i = 0, x = 1; i < 400'000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      lines << (x >> 20) << '\n';
    }
  }
  // sh is the program; the sort it starts reports into a directory of its own. The second sort
  // replaces the shell (exec: same process, so its reports are the program's), with a sample's
  // signal perhaps pending as it starts: it must not end it.
  const std::string script = "/usr/bin/sort " + (dir / "lines").string() + " >/dev/null; " +
                             "exec /usr/bin/sort -n " + (dir / "lines").string() + " >/dev/null";
  ASSERT_EQ(shell(std::string(HOTSCOPE_CLI) + " run --cpu --out " + (dir / "out").string() +
                  " -- /bin/sh -c '" + script + "' 2>" + (dir / "err").string()),
            0)
      << slurp(dir / "err");
  int sort_profiles = 0;
  for (const auto& entry : fs::directory_iterator(dir / "out")) {
    if (entry.is_directory() && entry.path().filename().string().rfind("sort.", 0) == 0) {
      ++sort_profiles;
      EXPECT_GT(samples(entry.path() / "cpu.folded", "").first, 5u) << entry.path();
    }
  }
  EXPECT_EQ(sort_profiles, 1);
  EXPECT_GT(samples(dir / "out" / "cpu.folded", "").first, 5u) << "the exec'd sort's own";
  EXPECT_EQ(slurp(dir / "err"), "");
}
