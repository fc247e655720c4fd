// The known-share program (shares_program.cpp) under the sampler: each hot function's share of
// the samples, within a tolerance that allows for this machine's noise (bench/cpu.sh compares
// the shares with perf's, to the goal's ±3 points).
#include "support/child_process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace {

struct Folded {
  std::map<std::string, std::uint64_t> innermost; // samples by innermost frame
  std::map<std::string, std::uint64_t> anywhere;  // samples of stacks holding the frame
  std::uint64_t total = 0;
};

Folded read_folded(const std::filesystem::path& path) {
  Folded folded;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t space = line.rfind(' ');
    const std::uint64_t count = std::stoull(line.substr(space + 1));
    const std::string stack = line.substr(0, space);
    folded.total += count;
    folded.innermost[stack.substr(stack.rfind(';') + 1)] += count;
    std::size_t start = 0;
    std::map<std::string, bool> seen;
    while (start <= stack.size()) {
      const std::size_t end = std::min(stack.find(';', start), stack.size());
      const std::string frame = stack.substr(start, end - start);
      if (!seen[frame]) {
        seen[frame] = true;
        folded.anywhere[frame] += count;
      }
      start = end + 1;
    }
  }
  return folded;
}

const nlohmann::json* function_named(const nlohmann::json& stats, const std::string& name) {
  for (const nlohmann::json& function : stats["functions"]) {
    if (function["name"] == name) {
      return &function;
    }
  }
  return nullptr;
}

} // namespace

TEST(CpuShares, EachHotFunctionGetsItsShareAndTheSleepingHalfIsNotCpu) {
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / ("hotscope-shares-" + std::to_string(getpid()));
  std::filesystem::remove_all(out);
  const std::string command = "HOTSCOPE_CPU_HZ=499 HOTSCOPE_AGENT=0 HOTSCOPE_OUT=" + out.string() +
                              " " + CPU_SHARES_PROGRAM + " 2 >/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const Folded folded = read_folded(out / "cpu.folded");
  ASSERT_GT(folded.total, 500u) << "2 s of CPU at 499 Hz";
  // Each function's inclusive share: the innermost native frame of a sample inside a scope is
  // below the scope's frame.
  const auto share = [&](const std::string& name) {
    const auto it = folded.anywhere.find(name);
    return 100.0 * static_cast<double>(it == folded.anywhere.end() ? 0 : it->second) /
           static_cast<double>(folded.total);
  };
  EXPECT_NEAR(share("hotscope_shares_in_library"), 40, 8);
  EXPECT_NEAR(share("hotscope_shares_sort"), 20, 8);
  EXPECT_GE(share("hotscope_shares_compare"), share("hotscope_shares_sort") / 2)
      << "qsort's comparator, through the C library's frames";
  EXPECT_NEAR(share("hotscope_shares_scoped"), 20, 8);
  EXPECT_NEAR(share("hotscope_shares_sleepy"), 20, 8);
  // The main thread's samples reach main, through the library without frame pointers too.
  EXPECT_NEAR(share("main"), 80, 8);
  // The scope sits among the native frames: right inside the function that opened it.
  EXPECT_NEAR(share("scoped_work"), share("hotscope_shares_scoped"), 1);
  EXPECT_EQ(folded.innermost.count("hotscope_shares_scoped"), 0u)
      << "its samples end in its scope's frame";

  std::ifstream stats_file(out / "stats.json");
  const nlohmann::json stats = nlohmann::json::parse(stats_file);
  const nlohmann::json& cpu = stats["cpu"];
  EXPECT_LE(cpu["incomplete"].get<double>(), 0.05 * cpu["samples"].get<double>())
      << "at least 95 % of the stacks unwound to their outermost frame";
  EXPECT_EQ(cpu["lost"], 0);
  // Each scope's CPU time is the CPU time its function spent by construction (0.2 of 2 s),
  // however loaded the machine; the sleeping thread's scope lasted at least twice that.
  const nlohmann::json* sleepy = function_named(stats, "sleepy_loop");
  ASSERT_NE(sleepy, nullptr);
  const double sleepy_cpu = (*sleepy)["cpu_total_ns"].get<double>();
  EXPECT_NEAR(sleepy_cpu, 0.4e9, 0.1e9);
  EXPECT_GE((*sleepy)["total_ns"].get<double>(), 1.8 * sleepy_cpu) << "its sleep is not CPU";
  const nlohmann::json* scoped = function_named(stats, "scoped_work");
  ASSERT_NE(scoped, nullptr);
  EXPECT_NEAR((*scoped)["cpu_total_ns"].get<double>(), 0.4e9, 0.1e9);
  std::filesystem::remove_all(out);
}
