// A heap profile the size of a compiler's (20,000 sites, 4,008 locations) is read by
// `go tool pprof` whole: every sample, every location, the right values.
#include "export/export.hpp"
#include "support/child_process.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace {

using hotscope::HeapFrame;
using hotscope::HeapProfile;
using hotscope::HeapSite;

// 20,000 sites: a leaf function of 4,000, under one of 7 callers, under main. Site i allocated
// i + 1 blocks of 16 bytes, of which one is live at the end.
HeapProfile profile_of_many_sites() {
  constexpr std::uint32_t leaves = 4000;
  constexpr std::uint32_t callers = 7;
  HeapProfile profile;
  profile.end_us = 1000;
  profile.frames.assign(1, "[root]");
  profile.frame_details.assign(1, HeapFrame{});
  const auto add_frame = [&](std::uint64_t address, const std::string& function) {
    profile.frames.push_back("0x" + std::to_string(address) + ": " + function + " (a.c:1)");
    profile.frame_details.push_back(HeapFrame{address, function, "a.c", 1, 0, false});
    return static_cast<std::uint32_t>(profile.frames.size() - 1);
  };
  const std::uint32_t main_frame = add_frame(0x400000, "main");
  std::vector<std::uint32_t> caller_frames;
  for (std::uint32_t i = 0; i < callers; ++i) {
    caller_frames.push_back(add_frame(0x410000 + i * 16, "caller_" + std::to_string(i)));
  }
  std::vector<std::uint32_t> leaf_frames;
  for (std::uint32_t i = 0; i < leaves; ++i) {
    leaf_frames.push_back(add_frame(0x500000 + i * 16, "leaf_" + std::to_string(i)));
  }
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const std::uint64_t blocks = i + 1;
    profile.sites.push_back(
        HeapSite{blocks * 16,
                 blocks,
                 0,
                 0,
                 0,
                 0,
                 0,
                 16,
                 1,
                 {leaf_frames[i % leaves], caller_frames[i % callers], main_frame}});
  }
  return profile;
}

TEST(HeapPprof, ALargeProfileIsReadWholeByGoToolPprof) {
  const HeapProfile profile = profile_of_many_sites();
  const hotscope::testing::ScratchDir scratch("pprof-large");
  const std::filesystem::path file = scratch.path() / "heap.pb.gz";
  {
    std::ofstream out(file, std::ios::binary);
    hotscope::exporters::write_pprof_heap(profile, 1, out);
  }
  // -raw lists every sample as "values: location ids", then every location as "id: address
  // function ...".
  const std::string raw =
      hotscope::test_support::output_of("PPROF_TMPDIR=" + (scratch.path() / "tmp").string() + " " +
                                        GO + " tool pprof -raw " + file.string() + " 2>&1");
  static const std::regex sample_line(R"(^\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+): ((?:\d+ ?)+)$)");
  static const std::regex location_line(R"(^\s*(\d+): 0x([0-9a-f]+) M=\d+ (\S+) )");
  std::size_t samples = 0;
  std::uint64_t total_blocks = 0;
  std::uint64_t total_bytes = 0;
  std::uint64_t live_blocks = 0;
  std::map<std::string, std::string> function_of_location;
  std::istringstream lines(raw);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, sample_line)) {
      ++samples;
      total_blocks += std::stoull(match[1]);
      total_bytes += std::stoull(match[2]);
      live_blocks += std::stoull(match[3]);
    } else if (std::regex_search(line, match, location_line)) {
      function_of_location[match[1]] = match[3];
    }
  }
  ASSERT_EQ(samples, 20000u) << raw.substr(0, 2000);
  EXPECT_EQ(total_blocks, std::uint64_t{20000} * 20001 / 2);
  EXPECT_EQ(total_bytes, std::uint64_t{16} * 20000 * 20001 / 2);
  EXPECT_EQ(live_blocks, 20000u);
  // Every location, whichever part added it: 4,000 leaves, 7 callers and main.
  EXPECT_EQ(function_of_location.size(), 4008u);
  std::size_t leaves = 0;
  for (const auto& [id, function] : function_of_location) {
    leaves += function.rfind("leaf_", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(leaves, 4000u);
}

} // namespace
