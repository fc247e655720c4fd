// The profiler's growing tables are mapped directly (TableAllocator): freeing one leaves glibc's
// threshold for mapping large blocks where it was, so the program's own large blocks stay out of
// its heap.
#include "heap/tables.hpp"

#include <gtest/gtest.h>

#include <malloc.h>

#include <cstdint>
#include <cstdlib>

namespace {

using hotscope::heap::Table;

// Sanitizers replace malloc: glibc's figures then say nothing.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool glibc_malloc = false;
#else
constexpr bool glibc_malloc = true;
#endif

// Whether glibc maps a block of `bytes` (rather than carving it from the heap) now.
bool malloc_maps(std::size_t bytes) {
  const std::size_t mapped_before = mallinfo2().hblks;
  void* volatile block = std::malloc(bytes); // volatile: the pair is not optimized away
  const bool mapped = mallinfo2().hblks == mapped_before + 1;
  std::free(block);
  return mapped;
}

TEST(HeapTables, GrowingAndFreeingATableLeavesMallocsMappingThresholdAlone) {
  if (!glibc_malloc) {
    GTEST_SKIP() << "malloc is the sanitizer's";
  }
  // glibc's threshold starts at 128 KiB and rises (to 32 MiB at most) to the size of each mapped
  // block freed, which this process may have done already, and which each probe does.
  constexpr std::size_t megabytes = 1 << 20;
  if (!malloc_maps(4 * megabytes)) {
    GTEST_SKIP() << "malloc's threshold is above 4 MiB in this process already";
  }
  {
    Table<std::uint64_t> table;
    for (std::uint64_t i = 0; i < 32 * megabytes / sizeof(std::uint64_t); ++i) {
      table.push_back(i); // regrown to 32 MiB: the arrays of 8 and 16 MiB freed on the way
    }
    EXPECT_EQ(table[12345], 12345u);
  }
  EXPECT_TRUE(malloc_maps(6 * megabytes)) << "the threshold rose above 6 MiB";
  // What a table through malloc would have done: freeing a mapped block of 16 MiB raises the
  // threshold to 16 MiB, and a block of 12 MiB then comes from the heap.
  void* volatile large = std::malloc(16 * megabytes);
  std::free(large);
  EXPECT_FALSE(malloc_maps(12 * megabytes));
}

// Every table is a mapping of its own, a small one within one page.
TEST(HeapTables, SmallTablesAndLargeOnesHoldWhatIsPutInThem) {
  Table<std::uint32_t> small(100, 7);
  Table<std::uint32_t> large(1 << 20, 9); // 4 MiB
  small.resize(100000, 8);                // regrown into a larger mapping, copied over
  EXPECT_EQ(small[99], 7u);
  EXPECT_EQ(small[99999], 8u);
  EXPECT_EQ(large.front(), 9u);
  EXPECT_EQ(large.back(), 9u);
  large.clear();
  large.shrink_to_fit();
  EXPECT_EQ(large.capacity(), 0u);
}

} // namespace
