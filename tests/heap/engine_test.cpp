// The accounting engine against hand-computed figures, following valgrind's dh_main.c step by
// step (docs/heap.md, "Accounting").
#include "heap/engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <span>
#include <unordered_map>
#include <vector>

namespace hotscope::heap {
namespace {

constexpr std::array<std::uintptr_t, 2> stack_a = {0x1000, 0x2000};
constexpr std::array<std::uintptr_t, 2> stack_b = {0x1100, 0x2000};
constexpr std::array<std::uintptr_t, 1> stack_c = {0x1200};

const SiteCounts& counts(const RawProfile& raw, StackId id) {
  return raw.sites.at(id).counts;
}

// A realloc that succeeds, its two steps with nothing in between (as on one thread).
void reallocate(Engine& engine, std::uintptr_t old_address, std::uintptr_t new_address,
                std::size_t size, std::uint64_t now) {
  engine.realloc_begin(now, old_address);
  engine.realloc_end(now, new_address, size, 0, now);
}

TEST(HeapEngine, InternsEachDistinctStackOnce) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  const StackId b = engine.intern(stack_b);
  EXPECT_NE(a, b);
  EXPECT_EQ(engine.intern(stack_a), a);
  EXPECT_EQ(engine.intern(std::array<std::uintptr_t, 2>{0x1100, 0x2000}), b);
  const RawProfile raw = engine.snapshot(0);
  ASSERT_EQ(raw.sites.size(), 2u);
  EXPECT_TRUE(std::ranges::equal(raw.sites[a].stack, stack_a));
  EXPECT_TRUE(std::ranges::equal(raw.sites[b].stack, stack_b));
}

// The frames are kept in fixed blocks: an empty stack first (every frame inside the profiler),
// then enough long stacks to fill several blocks, each read back whole.
TEST(HeapEngine, StacksStayWholeAcrossTheFrameBlocks) {
  Engine engine;
  const StackId empty = engine.intern(std::span<const std::uintptr_t>{});
  std::vector<std::vector<std::uintptr_t>> stacks;
  for (std::uintptr_t i = 0; i < 3000; ++i) { // 3,000 × 48 frames: three blocks of 65,536
    std::vector<std::uintptr_t> stack(48);
    for (std::size_t j = 0; j < stack.size(); ++j) {
      stack[j] = 0x10000 + i * 0x100 + j;
    }
    EXPECT_EQ(engine.intern(stack), i + 1);
    stacks.push_back(std::move(stack));
  }
  EXPECT_EQ(engine.intern(std::span<const std::uintptr_t>{}), empty);
  EXPECT_TRUE(engine.stack(empty).empty());
  for (std::size_t i = 0; i < stacks.size(); ++i) {
    const auto kept = engine.stack(static_cast<StackId>(i + 1));
    ASSERT_TRUE(std::equal(kept.begin(), kept.end(), stacks[i].begin(), stacks[i].end())) << i;
  }
}

// malloc(100) at A, malloc(50) at B, realloc to 200, free A, malloc(0) at C, end.
TEST(HeapEngine, CountsAllocationsReallocsAndFreesAsValgrind) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  const StackId b = engine.intern(stack_b);
  const StackId c = engine.intern(stack_c);
  engine.alloc(0xA0, 100, a, 0);
  engine.alloc(0xB0, 50, b, 1);
  reallocate(engine, 0xB0, 0xB8, 200, 2); // grows and moves: the new global peak
  ASSERT_TRUE(engine.free(0xA0, 3));      // leaves the peak: gb/gbk are taken here
  engine.alloc(0xC0, 0, c, 4);            // malloc(0) counts as 1 byte
  EXPECT_TRUE(engine.is_live(0xB8));
  EXPECT_FALSE(engine.is_live(0xB0));
  EXPECT_EQ(engine.live_bytes(), 201u);
  const Totals totals = engine.totals(); // the gauges of /v1/metrics
  EXPECT_EQ(totals.total_bytes, 351u);
  EXPECT_EQ(totals.total_blocks, 4u);
  EXPECT_EQ(totals.live_bytes, 201u);
  EXPECT_EQ(totals.live_blocks, 2u);
  EXPECT_EQ(totals.peak_bytes, 300u);
  EXPECT_EQ(totals.peak_blocks, 2u);

  const RawProfile raw = engine.snapshot(10);
  EXPECT_EQ(raw.end_time, 10u);
  EXPECT_EQ(raw.gmax_time, 2u);

  const SiteCounts& site_a = counts(raw, a);
  EXPECT_EQ(site_a.total_bytes, 100u);
  EXPECT_EQ(site_a.total_blocks, 1u);
  EXPECT_EQ(site_a.lifetimes, 3u);
  EXPECT_EQ(site_a.max_bytes, 100u);
  EXPECT_EQ(site_a.max_blocks, 1u);
  EXPECT_EQ(site_a.gmax_bytes, 100u);
  EXPECT_EQ(site_a.gmax_blocks, 1u);
  EXPECT_EQ(site_a.curr_bytes, 0u);
  EXPECT_EQ(site_a.curr_blocks, 0u);

  // The realloc counts as a second block of 200 bytes; the block keeps its allocation time.
  const SiteCounts& site_b = counts(raw, b);
  EXPECT_EQ(site_b.total_bytes, 250u);
  EXPECT_EQ(site_b.total_blocks, 2u);
  EXPECT_EQ(site_b.lifetimes, 9u);
  EXPECT_EQ(site_b.max_bytes, 200u);
  EXPECT_EQ(site_b.max_blocks, 1u);
  EXPECT_EQ(site_b.gmax_bytes, 200u);
  EXPECT_EQ(site_b.gmax_blocks, 1u);
  EXPECT_EQ(site_b.curr_bytes, 200u);
  EXPECT_EQ(site_b.curr_blocks, 1u);

  const SiteCounts& site_c = counts(raw, c);
  EXPECT_EQ(site_c.total_bytes, 1u);
  EXPECT_EQ(site_c.total_blocks, 1u);
  EXPECT_EQ(site_c.lifetimes, 6u);
  EXPECT_EQ(site_c.max_bytes, 0u); // never at a global peak: valgrind leaves mb at 0
  EXPECT_EQ(site_c.gmax_bytes, 0u);
  EXPECT_EQ(site_c.curr_bytes, 1u);
  EXPECT_EQ(site_c.curr_blocks, 1u);
}

TEST(HeapEngine, TheLatestOfEqualPeaksWins) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  const StackId b = engine.intern(stack_b);
  engine.alloc(0x10, 100, a, 0);
  engine.free(0x10, 1);
  engine.alloc(0x20, 100, b, 5);
  const RawProfile raw = engine.snapshot(7); // ends on the peak: the exit check takes it
  EXPECT_EQ(raw.gmax_time, 5u);
  EXPECT_EQ(counts(raw, a).gmax_bytes, 0u);
  EXPECT_EQ(counts(raw, b).gmax_bytes, 100u);
  EXPECT_EQ(counts(raw, b).gmax_blocks, 1u);
  EXPECT_EQ(counts(raw, b).lifetimes, 2u);
}

TEST(HeapEngine, ShrinkingReallocLeavesThePeakFirst) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  engine.alloc(0x10, 100, a, 0);
  reallocate(engine, 0x10, 0x10, 10, 1);
  const RawProfile raw = engine.snapshot(2);
  EXPECT_EQ(raw.gmax_time, 0u);
  EXPECT_EQ(counts(raw, a).gmax_bytes, 100u);
  EXPECT_EQ(counts(raw, a).total_bytes, 110u);
  EXPECT_EQ(counts(raw, a).total_blocks, 2u);
  EXPECT_EQ(counts(raw, a).curr_bytes, 10u);
  EXPECT_EQ(counts(raw, a).curr_blocks, 1u);
}

// valgrind moves a site's mb/mbk only when the global peak moves.
TEST(HeapEngine, SiteMaximumFollowsGlobalPeaksOnly) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  const StackId b = engine.intern(stack_b);
  engine.alloc(0x10, 100, a, 0);
  engine.alloc(0x20, 100, b, 1);
  engine.free(0x10, 2);
  engine.alloc(0x30, 50, b, 3); // b now has 150 live, but the global peak (200) stands
  const RawProfile raw = engine.snapshot(4);
  EXPECT_EQ(counts(raw, b).max_bytes, 100u);
  EXPECT_EQ(counts(raw, b).max_blocks, 1u);
  EXPECT_EQ(counts(raw, b).curr_bytes, 150u);
  EXPECT_EQ(counts(raw, b).gmax_bytes, 100u);
  EXPECT_EQ(counts(raw, a).gmax_bytes, 100u);
}

TEST(HeapEngine, UnknownPointersAreCountedAndChangeNothing) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  engine.alloc(0x10, 8, a, 0);
  EXPECT_FALSE(engine.free(0x999, 1));
  EXPECT_FALSE(engine.free(0x11, 1)); // inside a block is not the block
  const RawProfile raw = engine.snapshot(2);
  EXPECT_EQ(raw.unknown_frees, 2u);
  EXPECT_EQ(counts(raw, a).total_blocks, 1u);
  EXPECT_EQ(engine.live_bytes(), 8u);
}

// A realloc of an unknown block is counted, and its new block recorded at the realloc's stack.
TEST(HeapEngine, UnknownReallocsAreCountedAndTheirBlocksRecorded) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  const StackId b = engine.intern(stack_b);
  engine.alloc(0x10, 8, a, 0);
  engine.realloc_begin(1, 0x998);
  engine.realloc_end(1, 0x40, 16, b, 1);
  const RawProfile raw = engine.snapshot(2);
  EXPECT_EQ(raw.unknown_reallocs, 1u);
  EXPECT_EQ(counts(raw, b).total_blocks, 1u);
  EXPECT_EQ(counts(raw, b).total_bytes, 16u);
  EXPECT_EQ(engine.live_bytes(), 24u);
}

// Attached to a running process, a free or realloc of a block never seen is one allocated before
// the attach (docs/heap.md, "Attach to a running program"), not an unknown pointer.
TEST(HeapEngine, AttachedUnknownPointersAreBlocksAllocatedBeforeTheAttach) {
  Engine engine;
  engine.count_unknown_as_before_attach();
  const StackId a = engine.intern(stack_a);
  engine.alloc(0x10, 8, a, 0);
  EXPECT_FALSE(engine.free(0x999, 1));
  engine.realloc_begin(1, 0x998);
  engine.realloc_end(1, 0x40, 16, a, 1);
  EXPECT_TRUE(engine.free(0x10, 2));
  const RawProfile raw = engine.snapshot(3);
  EXPECT_EQ(raw.frees_before_attach, 1u);
  EXPECT_EQ(raw.reallocs_before_attach, 1u);
  EXPECT_EQ(raw.unknown_frees + raw.unknown_reallocs, 0u);
  EXPECT_EQ(engine.live_bytes(), 16u);
}

// A failed realloc leaves the block as it was; realloc(p, 0) that returns null freed it.
TEST(HeapEngine, FailedReallocsKeepTheBlockAndReallocToZeroFreesIt) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  engine.alloc(0x10, 100, a, 0);
  engine.realloc_begin(1, 0x10);
  engine.realloc_end(1, 0, 1 << 30, a, 1);
  EXPECT_TRUE(engine.is_live(0x10));
  EXPECT_EQ(engine.live_bytes(), 100u);
  EXPECT_EQ(engine.totals().total_blocks, 1u);
  engine.realloc_begin(2, 0x10);
  engine.realloc_end(2, 0, 0, a, 3);
  EXPECT_FALSE(engine.is_live(0x10));
  const RawProfile raw = engine.snapshot(4);
  EXPECT_EQ(counts(raw, a).curr_blocks, 0u);
  EXPECT_EQ(counts(raw, a).lifetimes, 3u);
  EXPECT_EQ(raw.unknown_frees + raw.unknown_reallocs, 0u);
}

// realloc(p, 0) gives p back inside the call: another thread may allocate it before the second
// step, which must then retire the old block without touching the new one.
TEST(HeapEngine, ReallocToZeroRetiresItsBlockWhateverNowLivesAtItsAddress) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  const StackId b = engine.intern(stack_b);
  engine.alloc(0x10, 100, a, 0);
  engine.realloc_begin(1, 0x10);
  engine.alloc(0x10, 40, b, 1); // the other thread
  engine.realloc_end(1, 0, 0, a, 2);
  EXPECT_EQ(engine.live_bytes(), 40u);
  EXPECT_TRUE(engine.free(0x10, 3));
  const RawProfile raw = engine.snapshot(4);
  EXPECT_EQ(raw.unknown_frees + raw.unknown_reallocs, 0u);
  EXPECT_EQ(counts(raw, a).curr_blocks, 0u);
  EXPECT_EQ(counts(raw, b).curr_blocks, 0u);
}

// A second step that never came (given up on) leaves its entry: the next realloc under the same
// key does not take that block for its own.
TEST(HeapEngine, AReallocWhoseSecondStepWasLostIsCountedNotReused) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  engine.alloc(0x10, 100, a, 0);
  engine.alloc(0x20, 50, a, 1);
  engine.realloc_begin(1, 0x10); // its second step is lost
  engine.realloc_begin(1, 0x20);
  engine.realloc_end(1, 0x30, 60, a, 2);
  EXPECT_TRUE(engine.is_live(0x30));
  EXPECT_EQ(engine.snapshot(3).unknown_reallocs, 1u);
}

// Another thread may get the old address from the allocator between the two steps, and free
// the realloc's new address before it is handed to the realloc: both are told apart.
TEST(HeapEngine, AddressesReusedBetweenTheStepsOfAReallocStayApart) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  const StackId b = engine.intern(stack_b);
  engine.alloc(0x10, 100, a, 0);
  engine.alloc(0x20, 30, b, 1);
  engine.realloc_begin(7, 0x10);
  engine.free(0x20, 2);          // the other thread frees 0x20 ...
  engine.alloc(0x10, 40, b, 3);  // ... gets 0x10, which the realloc gave back ...
  engine.realloc_begin(8, 0x10); // ... and reallocs it in place
  engine.realloc_end(8, 0x10, 40, b, 3);
  engine.realloc_end(7, 0x20, 200, a, 4); // the first realloc's block moved to 0x20
  EXPECT_EQ(engine.live_bytes(), 240u);
  const RawProfile raw = engine.snapshot(5);
  EXPECT_EQ(counts(raw, a).curr_bytes, 200u);
  EXPECT_EQ(counts(raw, a).curr_blocks, 1u);
  EXPECT_EQ(counts(raw, b).curr_bytes, 40u);
  EXPECT_EQ(raw.unknown_frees + raw.unknown_reallocs, 0u);
  EXPECT_TRUE(engine.free(0x20, 6));
  EXPECT_TRUE(engine.free(0x10, 6));
}

TEST(HeapEngine, SnapshotLeavesTheEngineUnchanged) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  engine.alloc(0x10, 8, a, 0);
  const RawProfile first = engine.snapshot(5);
  const RawProfile second = engine.snapshot(5);
  EXPECT_EQ(counts(first, a).lifetimes, 5u);
  EXPECT_EQ(counts(second, a).lifetimes, 5u);
  engine.free(0x10, 6);
  EXPECT_EQ(counts(engine.snapshot(9), a).lifetimes, 6u);
}

// The live-block table against a reference map, through growth and many deletions.
TEST(HeapEngine, TracksManyBlocksThroughGrowthAndDeletion) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  std::unordered_map<std::uintptr_t, std::uint64_t> reference;
  std::uint32_t random = 7;
  const auto next = [&random] {
    random = random * 1664525u + 1013904223u;
    return random >> 8;
  };
  std::uint64_t now = 0;
  for (int step = 0; step < 200000; ++step) {
    // Addresses 16 bytes apart, as an allocator hands them out, in a small range so that
    // frees, reallocs and reuse of addresses all happen often.
    const std::uintptr_t address = 0x10000 + 16 * (next() % 20000);
    const auto live = reference.find(address);
    if (live == reference.end()) {
      const std::size_t size = 1 + next() % 100;
      engine.alloc(address, size, a, ++now);
      reference[address] = size;
    } else if (next() % 4 == 0) {
      const std::uintptr_t moved = 0x10000 + 16 * (next() % 20000);
      if (reference.contains(moved) && moved != address) {
        continue;
      }
      const std::size_t size = 1 + next() % 100;
      ASSERT_TRUE(engine.is_live(address));
      reallocate(engine, address, moved, size, ++now);
      reference.erase(live);
      reference[moved] = size;
    } else {
      ASSERT_TRUE(engine.free(address, ++now));
      reference.erase(live);
    }
  }
  std::uint64_t bytes = 0;
  for (const auto& [address, size] : reference) {
    ASSERT_TRUE(engine.is_live(address));
    bytes += size;
  }
  EXPECT_EQ(engine.live_bytes(), bytes);
  const RawProfile raw = engine.snapshot(now);
  EXPECT_EQ(counts(raw, a).curr_blocks, reference.size());
  for (std::uintptr_t address = 0x10000; address < 0x10000 + 16 * 20000; address += 16) {
    ASSERT_EQ(engine.is_live(address), reference.contains(address)) << address;
  }
}

TEST(HeapEngine, TimesConvertToMicrosecondsAtTheEnd) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  engine.alloc(0x10, 8, a, 1000); // times in a clock of 2.5 units per µs
  engine.alloc(0x20, 8, a, 3000);
  engine.free(0x10, 2000);
  const RawProfile raw = in_microseconds(engine.snapshot(5000), 0.4);
  EXPECT_EQ(raw.end_time, 2000u);
  EXPECT_EQ(raw.gmax_time, 1200u);
  EXPECT_EQ(counts(raw, a).lifetimes, 1200u); // (1000 + 2000) units
  EXPECT_EQ(counts(raw, a).total_bytes, 16u);
}

// A reset (POST /v1/reset): the totals restart from the blocks still live; freed ones are gone.
TEST(HeapEngine, RestartKeepsTheLiveBlocksAsTheNewWindowsStart) {
  Engine engine;
  const StackId a = engine.intern(stack_a);
  const StackId b = engine.intern(stack_b);
  engine.alloc(0x10, 100, a, 10);
  engine.alloc(0x20, 50, b, 20);
  engine.free(0x20, 30);
  EXPECT_FALSE(engine.free(0x999, 31));
  engine.restart(40);
  const RawProfile at_restart = engine.snapshot(40);
  EXPECT_EQ(at_restart.unknown_frees, 0u);
  EXPECT_EQ(at_restart.gmax_time, 40u);
  EXPECT_EQ(counts(at_restart, a).total_bytes, 100u);
  EXPECT_EQ(counts(at_restart, a).gmax_bytes, 100u);
  EXPECT_EQ(counts(at_restart, b).total_blocks, 0u);

  engine.alloc(0x30, 10, a, 50); // a new peak: 110 bytes
  engine.free(0x10, 55);         // a block from before the reset, freed in the window
  const RawProfile raw = engine.snapshot(60);
  EXPECT_EQ(raw.gmax_time, 50u);
  const SiteCounts& site = counts(raw, a);
  EXPECT_EQ(site.total_bytes, 110u);
  EXPECT_EQ(site.total_blocks, 2u);
  EXPECT_EQ(site.gmax_bytes, 110u);
  EXPECT_EQ(site.max_bytes, 110u); // its live bytes once its allocation made the new peak
  EXPECT_EQ(site.curr_bytes, 10u);
  EXPECT_EQ(site.lifetimes, 45u + 10u); // lifetimes count from the allocation itself
  EXPECT_EQ(counts(raw, b).total_bytes, 0u);
}

TEST(HashIndex, EqualHashesStillGiveEachEntryItsOwnIdAcrossGrowth) {
  // Every key hashes alike (the worst case), and there are more than the first table holds.
  std::vector<int> keys;
  HashIndex index;
  const auto find_or_add = [&](int key, std::uint64_t hash) {
    const auto next = static_cast<std::uint32_t>(keys.size());
    const std::uint32_t id =
        index.find_or_add(hash, next, [&](std::uint32_t known) { return keys[known] == key; });
    if (id == next) {
      keys.push_back(key);
    }
    return id;
  };
  for (int key = 0; key < 1000; ++key) {
    EXPECT_EQ(find_or_add(key * 7, 42), static_cast<std::uint32_t>(key));
  }
  for (int key = 999; key >= 0; --key) {
    EXPECT_EQ(find_or_add(key * 7, 42), static_cast<std::uint32_t>(key)) << "found again";
  }
  EXPECT_EQ(find_or_add(3, 42), 1000u) << "a new key with a known hash is new";
  EXPECT_EQ(find_or_add(7, 43), 1001u) << "a known key under another hash is another entry";
  EXPECT_EQ(keys.size(), 1002u);
}

} // namespace
} // namespace hotscope::heap
