// From raw figures to the exporters' model: symbolized frames, the frame table, trimming below
// main and merging of sites that end with the same frames.
#include "heap/capture.hpp"
#include "heap/engine.hpp"
#include "heap/profile.hpp"
#include "symbols/symbols.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>

namespace hotscope::heap {
namespace {

// This thread's stack, cut just below main.
std::vector<std::uintptr_t> stack_through_main() {
  std::array<std::uintptr_t, 64> frames{};
  const std::size_t depth = capture_stack(Unwinder::Libunwind, {}, frames);
  symbols::Symbolizer symbolizer;
  std::vector<std::uintptr_t> stack;
  for (std::size_t i = 0; i < depth; ++i) {
    stack.push_back(frames[i]);
    if (symbolizer.resolve(frames[i] - 1).back().function == "main") {
      return stack;
    }
  }
  ADD_FAILURE() << "main is not on the stack";
  return stack;
}

TEST(HeapProfileBuild, SymbolizesTrimsBelowMainAndMergesEqualSites) {
  RawProfile raw;
  raw.end_time = 100;
  raw.gmax_time = 40;
  raw.unknown_frees = 2;
  // Two raw stacks that differ only below main end up with the same frames.
  std::vector<std::uintptr_t> one = stack_through_main();
  std::vector<std::uintptr_t> other = one;
  one.push_back(0x1111);
  other.push_back(0x2222);
  raw.sites.push_back({one,
                       {.total_bytes = 10,
                        .total_blocks = 1,
                        .lifetimes = 5,
                        .curr_bytes = 0,
                        .curr_blocks = 0,
                        .max_bytes = 10,
                        .max_blocks = 1,
                        .gmax_bytes = 10,
                        .gmax_blocks = 1}});
  raw.sites.push_back({other,
                       {.total_bytes = 30,
                        .total_blocks = 2,
                        .lifetimes = 7,
                        .curr_bytes = 20,
                        .curr_blocks = 2,
                        .max_bytes = 30,
                        .max_blocks = 2,
                        .gmax_bytes = 25,
                        .gmax_blocks = 1}});
  raw.sites.push_back({{}, {.total_bytes = 1, .total_blocks = 1}}); // no frames at all
  symbols::Symbolizer symbolizer;
  const HeapProfile profile = build_profile(raw, "./prog arg", 77, symbolizer);

  EXPECT_EQ(profile.command, "./prog arg");
  EXPECT_EQ(profile.pid, 77);
  EXPECT_EQ(profile.end_us, 100u);
  EXPECT_EQ(profile.gmax_us, 40u);
  EXPECT_EQ(profile.unknown_frees, 2u);
  ASSERT_FALSE(profile.frames.empty());
  EXPECT_EQ(profile.frames[0], "[root]");
  EXPECT_EQ(std::set<std::string>(profile.frames.begin(), profile.frames.end()).size(),
            profile.frames.size());

  ASSERT_EQ(profile.sites.size(), 2u);
  const HeapSite& merged = profile.sites[0];
  EXPECT_EQ(merged.total_bytes, 40u);
  EXPECT_EQ(merged.total_blocks, 3u);
  EXPECT_EQ(merged.lifetimes_us, 12u);
  EXPECT_EQ(merged.gmax_bytes, 35u);
  EXPECT_EQ(merged.gmax_blocks, 2u);
  EXPECT_EQ(merged.end_bytes, 20u);
  EXPECT_EQ(merged.end_blocks, 2u);
  EXPECT_EQ(merged.max_bytes, 30u); // the larger single maximum
  EXPECT_EQ(merged.max_blocks, 2u);
  ASSERT_FALSE(merged.frames.empty());
  bool names_this_file = false;
  for (std::uint32_t index : merged.frames) {
    ASSERT_NE(index, 0u);
    const std::string& frame = profile.frames.at(index);
    EXPECT_EQ(frame.rfind("0x", 0), 0u) << frame;
    EXPECT_EQ(frame.back(), ')') << frame;
    names_this_file = names_this_file || frame.find("stack_through_main") != std::string::npos;
  }
  EXPECT_TRUE(names_this_file);
  // The same frames, as the symbolizer resolved them, for pprof: in this test's own mapping.
  ASSERT_EQ(profile.frame_details.size(), profile.frames.size());
  const HeapFrame& innermost = profile.frame_details.at(merged.frames.front());
  EXPECT_NE(innermost.address, 0u);
  ASSERT_NE(innermost.mapping, 0u);
  const HeapMapping& object = profile.mappings.at(innermost.mapping - 1);
  EXPECT_LE(object.start, innermost.address);
  EXPECT_LT(innermost.address, object.limit);
  EXPECT_NE(object.path.find("heap_unit_test"), std::string::npos) << object.path;
  EXPECT_EQ(profile.frame_details.at(merged.frames.back()).function, "main");
  EXPECT_FALSE(profile.frame_details.at(merged.frames.back()).inlined);
  EXPECT_NE(profile.frames.at(merged.frames.back()).find(": main ("), std::string::npos);
  EXPECT_TRUE(profile.sites[1].frames.empty());
}

} // namespace
} // namespace hotscope::heap
