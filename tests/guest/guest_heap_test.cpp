// GuestHeap on its own (docs/guest.md, "Guest heap profiles"): heap events as the validator hands
// them over, applied to the heap Engine; what does not add up is counted and reported once per
// kind, and the bounds on host memory hold.
#include "guest/runner/guest_heap.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hotscope::guest {
namespace {

struct Fixture {
  std::vector<std::string> reports;
  GuestHeap heap{1000,
                 [](std::uint64_t address) {
                   return Symbol{"guest_fn", address & 0xff};
                 },
                 "guest.elf", [this](const std::string& line) { reports.push_back(line); }};
  std::vector<std::uint64_t> stack{0x100010, 0x100120};
  std::uint64_t ticks = 2000;

  void apply(std::uint32_t kind, std::uint64_t address, std::uint64_t size,
             std::uint64_t old_address = 0) {
    GuestHeapEvent event;
    event.kind = kind;
    event.ticks = ticks += 10;
    event.address = address;
    event.old_address = old_address;
    event.size = size;
    event.stack = stack;
    heap.apply({&event, 1});
  }
};

TEST(GuestHeap, ProblemsAreCountedAndReportedOncePerKind) {
  Fixture f;
  f.apply(HOTSCOPE_RECORD_HEAP_FREE, 0x5000, 0); // never allocated
  f.apply(HOTSCOPE_RECORD_HEAP_FREE, 0x5010, 0);
  f.apply(HOTSCOPE_RECORD_HEAP_ALLOC, 0x6000, 32);
  f.apply(HOTSCOPE_RECORD_HEAP_FREE, 0x6000, 0);
  f.apply(HOTSCOPE_RECORD_HEAP_FREE, 0x6000, 0);             // twice
  f.apply(HOTSCOPE_RECORD_HEAP_REALLOC, 0x7000, 48, 0x6100); // of a block that is not live
  f.apply(HOTSCOPE_RECORD_HEAP_ALLOC, 0x7000, 16);           // over the live one
  const GuestHeapCounts& counts = f.heap.counts();
  EXPECT_EQ(counts.unknown_frees, 2u);
  EXPECT_EQ(counts.double_frees, 1u);
  EXPECT_EQ(counts.unknown_reallocs, 1u);
  EXPECT_EQ(counts.allocations_over_live, 1u);
  ASSERT_EQ(f.reports.size(), 4u);
  EXPECT_EQ(f.reports[0], "guest heap: free of 0x5000, which is not a live block at "
                          "guest_fn+0x10; counted, and later ones of this kind only counted");
  EXPECT_NE(f.reports[1].find("double free of 0x6000"), std::string::npos) << f.reports[1];
  EXPECT_NE(f.reports[2].find("realloc of 0x6100, which is not a live block"), std::string::npos)
      << f.reports[2];
  EXPECT_NE(f.reports[3].find("allocation of 0x7000, which is a live block already"),
            std::string::npos)
      << f.reports[3];
  // The realloc's block (48 bytes) was freed by the allocation over it (16 bytes).
  const heap::Totals totals = f.heap.totals();
  EXPECT_EQ(totals.total_bytes, 32u + 48u + 16u);
  EXPECT_EQ(totals.live_bytes, 16u);
  EXPECT_EQ(totals.live_blocks, 1u);
}

TEST(GuestHeap, OnlyTheLatestFreesAreRememberedForDoubleFrees) {
  Fixture f;
  for (std::uint64_t i = 0; i <= GuestHeap::kRememberedFrees; ++i) {
    f.apply(HOTSCOPE_RECORD_HEAP_ALLOC, 0x10000 + 16 * i, 16);
    f.apply(HOTSCOPE_RECORD_HEAP_FREE, 0x10000 + 16 * i, 0);
  }
  f.apply(HOTSCOPE_RECORD_HEAP_FREE, 0x10000, 0); // forgotten: the set started over
  f.apply(HOTSCOPE_RECORD_HEAP_FREE, 0x10000 + 16 * GuestHeap::kRememberedFrees, 0);
  EXPECT_EQ(f.heap.counts().unknown_frees, 1u);
  EXPECT_EQ(f.heap.counts().double_frees, 1u);
}

TEST(GuestHeap, NewStacksPastTheBoundArePooledUnderOneSite) {
  Fixture f;
  const std::size_t stacks = GuestHeap::kMaxStacks + 10;
  for (std::uint64_t i = 0; i < stacks; ++i) {
    f.stack = {0x100000 + i};
    f.apply(HOTSCOPE_RECORD_HEAP_ALLOC, 0x10000 + 16 * i, 8);
  }
  f.stack = {0x100000}; // a known one is still its own site
  f.apply(HOTSCOPE_RECORD_HEAP_ALLOC, 0x10000 + 16 * stacks, 8);
  EXPECT_EQ(f.heap.counts().stacks_over_bound, 10u);
  ASSERT_EQ(f.reports.size(), 1u);
  EXPECT_NE(f.reports[0].find("more than 16384 distinct allocation stacks"), std::string::npos);
  const HeapProfile profile = f.heap.profile(f.ticks, "test");
  ASSERT_EQ(profile.sites.size(), GuestHeap::kMaxStacks + 1);
  const HeapSite& pooled = profile.sites.back();
  ASSERT_EQ(pooled.frames.size(), 1u);
  EXPECT_EQ(profile.frames[pooled.frames[0]], "0x1: [stacks past the bound] (in guest.elf)");
  EXPECT_EQ(pooled.total_blocks, 10u);
  EXPECT_EQ(profile.sites.front().total_blocks, 2u);
  EXPECT_EQ(profile.frames[profile.sites.front().frames[0]],
            "0xFFFFF: guest_fn (in guest.elf)"); // the call instruction: return address - 1
}

TEST(GuestHeap, LiveBlocksPastTheBoundAreNotProfiled) {
  Fixture f;
  const std::uint64_t blocks = GuestHeap::kMaxLiveBlocks + 5;
  for (std::uint64_t i = 0; i < blocks; ++i) {
    f.apply(HOTSCOPE_RECORD_HEAP_ALLOC, 0x10000 + 16 * i, 16);
  }
  EXPECT_EQ(f.heap.counts().over_live_bound, 5u);
  EXPECT_EQ(f.heap.totals().live_blocks, GuestHeap::kMaxLiveBlocks);
  // One freed makes room again.
  f.apply(HOTSCOPE_RECORD_HEAP_FREE, 0x10000, 0);
  f.apply(HOTSCOPE_RECORD_HEAP_ALLOC, 0x10000, 16);
  EXPECT_EQ(f.heap.counts().over_live_bound, 5u);
  EXPECT_EQ(f.reports.size(), 1u);
}

} // namespace
} // namespace hotscope::guest
