// The validated stack cache of capture_stack (src/heap/capture.cpp): what it learns and when.
#include "heap/capture.hpp"

#include <gtest/gtest.h>

#include <array>
#include <thread>

namespace hotscope::heap {
namespace {

// Captures at `depth` calls below the caller: each depth is a stack of its own.
__attribute__((noinline)) bool captured_from_cache(int depth) {
  if (depth > 0) {
    const bool cached = captured_from_cache(depth - 1);
    asm volatile("" ::: "memory"); // not a tail call: each level keeps its frame
    return cached;
  }
  std::array<std::uintptr_t, 32> frames{};
  RememberedStack remembered;
  capture_stack(Unwinder::Libunwind, {}, frames, &remembered);
  return remembered.cached();
}

// A program whose start-up allocates from stacks that never repeat, then loops on one stack (a
// compiler's parse, then an interpreter's loop): the loop's stack is cached, although the
// start-up used up what the cache may learn while it found no repeats.
TEST(StackCache, ALaterPhaseWhoseStacksRepeatIsCachedAfterAStartUpWhoseStacksDidNot) {
  int cached = 0;
  std::thread fresh_cache([&] { // the cache is per thread
    for (int depth = 1; depth <= 300; ++depth) {
      captured_from_cache(depth);
    }
    for (int i = 0; i < 2000; ++i) {
      cached += captured_from_cache(400) ? 1 : 0;
    }
  });
  fresh_cache.join();
  EXPECT_GE(cached, 1500);
}

// A stack short enough to be unwound to its end (the program's first frame, on the main thread,
// where libgcc reports a last frame without an address) is cached too.
TEST(StackCache, AWholeStackDownToTheProgramsFirstFrameIsCached) {
  int cached = 0;
  for (int i = 0; i < 1000; ++i) {
    cached += captured_from_cache(3) ? 1 : 0;
  }
  EXPECT_GE(cached, 700); // this thread's cache may have used up its learning budget before
}

__attribute__((noinline)) RememberedStack remembered_here() {
  std::array<std::uintptr_t, 32> frames{};
  RememberedStack remembered;
  capture_stack(Unwinder::Libunwind, {}, frames, &remembered);
  asm volatile("" ::: "memory");
  return remembered;
}

// A drainer may tell an ended thread's cache an id: the cache is kept (for the next thread, which
// starts with it empty), so the slot is still there, and the id lands on no stack of the next
// thread's.
TEST(StackCache, AnIdToldAfterItsThreadEndedLandsOnNoStackOfTheNextThread) {
  RememberedStack ended;
  std::thread first([&] { ended = remembered_here(); });
  first.join();
  ASSERT_TRUE(ended.cached());
  RememberedStack next;
  std::thread second([&] { next = remembered_here(); }); // most likely the same cache
  second.join();
  RememberedStack::remember(*ended.slot(), ended.generation(), 7);
  ASSERT_TRUE(next.cached());
  EXPECT_FALSE(RememberedStack(*next.slot()).known())
      << "the next thread's stack got the ended thread's id";
  if (next.slot() == ended.slot()) {
    EXPECT_NE(next.generation(), ended.generation());
  }
}

} // namespace
} // namespace hotscope::heap
