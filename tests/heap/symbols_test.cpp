// Stack capture and libdw symbolization on this test's own code, and the frame syntax.
#include "heap/capture.hpp"
#include "symbols/symbols.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <string>
#include <thread>
#include <vector>

namespace {

using hotscope::symbols::Frame;

struct Captured {
  std::vector<std::uintptr_t> stack;
  unsigned line; // the line of the call in the outer function
};

__attribute__((noinline)) std::vector<std::uintptr_t> capture(hotscope::heap::Unwinder unwinder) {
  std::array<std::uintptr_t, 32> frames{};
  const std::size_t depth = hotscope::heap::capture_stack(unwinder, {}, frames);
  asm volatile("" ::: "memory"); // keep this frame: no tail call
  return {frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(depth)};
}

__attribute__((noinline)) Captured outer_function(hotscope::heap::Unwinder unwinder) {
  Captured captured{capture(unwinder), __LINE__};
  asm volatile("" ::: "memory");
  return captured;
}

// The inlined body's call to capture() sits at a known line; its caller at another.
__attribute__((always_inline)) inline std::vector<std::uintptr_t> inlined_helper() {
  return capture(hotscope::heap::Unwinder::Libunwind); // line checked below
}
constexpr unsigned inlined_helper_line = __LINE__ - 2;

__attribute__((noinline)) std::vector<std::uintptr_t> calls_inlined_helper() {
  std::vector<std::uintptr_t> stack = inlined_helper();
  asm volatile("" ::: "memory");
  return stack;
}
constexpr unsigned calls_inlined_helper_line = __LINE__ - 4;

// Two levels of inlining: each inlined body is a frame of its own, naming its call site.
__attribute__((always_inline)) inline std::vector<std::uintptr_t> inner_inlined() {
  return capture(hotscope::heap::Unwinder::Libunwind);
}
constexpr unsigned inner_inlined_line = __LINE__ - 2;

__attribute__((always_inline)) inline std::vector<std::uintptr_t> middle_inlined() {
  return inner_inlined();
}
constexpr unsigned middle_inlined_line = __LINE__ - 2;

volatile int nested_inline_calls = 0; // tells this function's code from calls_inlined_helper's

__attribute__((noinline)) std::vector<std::uintptr_t> calls_nested_inlines() {
  std::vector<std::uintptr_t> stack = middle_inlined();
  nested_inline_calls = nested_inline_calls + 1;
  return stack;
}
constexpr unsigned calls_nested_inlines_line = __LINE__ - 4;

// The same stack through the cache and through unw_backtrace. Only the return addresses into
// this function differ: the two calls sit at different places in it.
struct TwoCaptures {
  std::vector<std::uintptr_t> cached;
  std::vector<std::uintptr_t> uncached;
};

__attribute__((noinline)) TwoCaptures capture_both() {
  TwoCaptures both{capture(hotscope::heap::Unwinder::Libunwind),
                   capture(hotscope::heap::Unwinder::LibunwindUncached)};
  asm volatile("" ::: "memory");
  return both;
}

// Two callers of the same shape: capture_stack runs at the same frame address from both.
__attribute__((noinline)) TwoCaptures via_first_caller() {
  TwoCaptures both = capture_both();
  asm volatile("" ::: "memory");
  return both;
}

__attribute__((noinline)) TwoCaptures via_second_caller() {
  TwoCaptures both = capture_both();
  asm volatile("" ::: "memory");
  return both;
}

// What the cache remembers of the stack captured here; `written`: how many frames the capture
// wrote.
__attribute__((noinline)) hotscope::heap::RememberedStack
remembered_stack(hotscope::heap::Unwinder unwinder, std::size_t* written = nullptr) {
  std::array<std::uintptr_t, 32> frames{};
  hotscope::heap::RememberedStack remembered;
  const std::size_t count = hotscope::heap::capture_stack(unwinder, {}, frames, &remembered);
  if (written != nullptr) {
    *written = count;
  }
  asm volatile("" ::: "memory");
  return remembered;
}

__attribute__((noinline)) hotscope::heap::RememberedStack remembered_stack_elsewhere() {
  hotscope::heap::RememberedStack remembered =
      remembered_stack(hotscope::heap::Unwinder::Libunwind);
  asm volatile("" ::: "memory");
  return remembered;
}

// The symbolized frames of a captured stack, innermost first.
std::vector<Frame> symbolize(const std::vector<std::uintptr_t>& stack) {
  hotscope::symbols::Symbolizer symbolizer;
  std::vector<Frame> frames;
  for (std::uintptr_t address : stack) {
    const auto& resolved = symbolizer.resolve(address - 1);
    frames.insert(frames.end(), resolved.begin(), resolved.end());
  }
  return frames;
}

const Frame* find_function(const std::vector<Frame>& frames, const std::string& needle) {
  const auto found = std::find_if(frames.begin(), frames.end(), [&](const Frame& frame) {
    return frame.function.find(needle) != std::string::npos;
  });
  return found == frames.end() ? nullptr : &*found;
}

TEST(HeapSymbols, LibunwindStackResolvesToFunctionFileAndLine) {
  const Captured captured = outer_function(hotscope::heap::Unwinder::Libunwind);
  const std::vector<Frame> frames = symbolize(captured.stack);
  const Frame* outer = find_function(frames, "outer_function");
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->file, "symbols_test.cpp");
  EXPECT_EQ(outer->line, captured.line);
  EXPECT_NE(outer->function.find("hotscope::config::Unwinder"), std::string::npos)
      << "demangled with its parameters: " << outer->function;
  EXPECT_NE(find_function(frames, "LibunwindStackResolvesToFunctionFileAndLine"), nullptr);
}

TEST(HeapSymbols, FramePointerStackFindsTheSameCaller) {
  const Captured captured = outer_function(hotscope::heap::Unwinder::FramePointers);
  const std::vector<Frame> frames = symbolize(captured.stack);
  const Frame* outer = find_function(frames, "outer_function");
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->line, captured.line);
}

// The frames at the return address into `function` (the outermost of them is `function`'s own,
// holding the call): empty when the stack does not pass through it.
std::vector<Frame> frames_returning_into(const std::vector<std::uintptr_t>& stack,
                                         const std::string& function) {
  hotscope::symbols::Symbolizer symbolizer;
  for (const std::uintptr_t address : stack) {
    const std::vector<Frame>& frames = symbolizer.resolve(address - 1);
    if (frames.back().function.find(function) != std::string::npos) {
      return frames;
    }
  }
  return {};
}

TEST(HeapSymbols, InlinedFramesShareTheAddressAndNameTheirCallSites) {
  // The return address into calls_inlined_helper() lies inside the inlined helper's body.
  const std::vector<Frame> frames =
      frames_returning_into(calls_inlined_helper(), "calls_inlined_helper");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_NE(frames[0].function.find("inlined_helper"), std::string::npos);
  EXPECT_EQ(frames[0].line, inlined_helper_line);
  EXPECT_NE(frames[1].function.find("calls_inlined_helper"), std::string::npos);
  EXPECT_EQ(frames[1].line, calls_inlined_helper_line);
  EXPECT_EQ(frames[1].file, "symbols_test.cpp");
}

TEST(HeapSymbols, NestedInlinedFramesComeInnermostFirst) {
  const std::vector<Frame> frames =
      frames_returning_into(calls_nested_inlines(), "calls_nested_inlines");
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_NE(frames[0].function.find("inner_inlined"), std::string::npos);
  EXPECT_EQ(frames[0].line, inner_inlined_line);
  EXPECT_NE(frames[1].function.find("middle_inlined"), std::string::npos);
  EXPECT_EQ(frames[1].line, middle_inlined_line);
  EXPECT_NE(frames[2].function.find("calls_nested_inlines"), std::string::npos);
  EXPECT_EQ(frames[2].line, calls_nested_inlines_line);
}

TEST(HeapSymbols, UnknownAddressesStillGetAFrame) {
  hotscope::symbols::Symbolizer symbolizer;
  const auto& frames = symbolizer.resolve(0x10);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(hotscope::symbols::describe(0x10, frames[0]), "0x10: ?\?? (in ?\?\?)");
}

TEST(HeapSymbols, DescribeUsesValgrindsFrameSyntax) {
  using hotscope::symbols::describe;
  EXPECT_EQ(describe(0x4011A6, Frame{"make_node(int)", "tree.cpp", 12, "/bin/t"}),
            "0x4011A6: make_node(int) (tree.cpp:12)");
  EXPECT_EQ(describe(0x7F00, Frame{"memcpy", "", 0, "/lib/libc.so.6"}),
            "0x7F00: memcpy (in /lib/libc.so.6)");
  EXPECT_EQ(describe(0x7F00, Frame{"", "", 0, "/lib/x.so"}), "0x7F00: ?\?? (in /lib/x.so)");
}

TEST(HeapCapture, DropsTheLeadingFramesOfTheProfilersOwnCode) {
  const hotscope::heap::CodeRanges skip =
      hotscope::heap::own_and_allocator_code(reinterpret_cast<const void*>(&capture));
  EXPECT_TRUE(skip.contains(reinterpret_cast<std::uintptr_t>(&capture)));
  EXPECT_TRUE(skip.contains(reinterpret_cast<std::uintptr_t>(dlsym(RTLD_DEFAULT, "_Znwm"))));
  std::array<std::uintptr_t, 64> frames{};
  const std::size_t depth =
      hotscope::heap::capture_stack(hotscope::heap::Unwinder::Libunwind, skip, frames);
  ASSERT_GT(depth, 0u);
  // Everything above the C library's call of main is this test program's own code.
  EXPECT_FALSE(skip.contains(frames[0]));
  hotscope::symbols::Symbolizer symbolizer;
  EXPECT_NE(symbolizer.resolve(frames[0] - 1).back().object.find("libc.so"), std::string::npos);
}

TEST(HeapCapture, CachedStacksEqualLibunwindsAndTellCallersApart) {
  // unw_backtrace also reports the profiler's own frames (capture_stack's, and more in a debug
  // build), which a non-empty `skip` drops: compare from the return into capture().
  const auto expect_same = [](const TwoCaptures& both) {
    ASSERT_GE(both.cached.size(), 4u);
    const auto start = std::find(both.uncached.begin(), both.uncached.end(), both.cached[0]);
    ASSERT_NE(start, both.uncached.end());
    ASSERT_EQ(static_cast<std::size_t>(both.uncached.end() - start), both.cached.size());
    EXPECT_TRUE(std::equal(both.cached.begin() + 2, both.cached.end(), start + 2));
  };
  for (int round = 0; round < 4; ++round) { // later rounds find the stacks in the cache
    const TwoCaptures first = via_first_caller();
    const TwoCaptures second = via_second_caller();
    expect_same(first);
    expect_same(second);
    // Same depth, same innermost frames: only the slot check tells the two callers apart.
    EXPECT_EQ(first.cached[0], second.cached[0]);
    EXPECT_EQ(first.cached[1], second.cached[1]);
    EXPECT_NE(first.cached, second.cached);
  }
}

TEST(HeapCapture, TheCachedStackKeepsTheIdItWasInternedAs) {
  using hotscope::heap::RememberedStack;
  using hotscope::heap::Unwinder;
  std::uint64_t* first = nullptr;
  for (int round = 0; round < 3; ++round) { // the same stack each time
    std::size_t written = 0;
    const RememberedStack remembered = remembered_stack(Unwinder::Libunwind, &written);
    ASSERT_TRUE(remembered.cached());
    if (round == 0) {
      EXPECT_GT(written, 0u);
      EXPECT_FALSE(remembered.known());
      first = remembered.slot();
      // What the drainer interned it as, told twice: the second time changes nothing.
      RememberedStack::remember(*first, remembered.generation(), 7);
      RememberedStack::remember(*first, remembered.generation(), 8);
    } else {
      EXPECT_EQ(written, 0u) << "the caller has the id: no frames are copied";
      EXPECT_TRUE(remembered.known());
    }
    EXPECT_EQ(remembered.slot(), first);
    EXPECT_EQ(RememberedStack(*first).id(), 7u);
  }
  const RememberedStack other = remembered_stack_elsewhere();
  ASSERT_TRUE(other.cached());
  EXPECT_NE(other.slot(), first);
  EXPECT_FALSE(other.known());
  EXPECT_FALSE(remembered_stack(Unwinder::LibunwindUncached).cached());
  EXPECT_FALSE(remembered_stack(Unwinder::FramePointers).cached());
}

// An id interned for an entry that was replaced meanwhile (its generation is past) is not
// remembered for the stack that replaced it.
TEST(HeapCapture, AnIdForAReplacedCacheEntryIsNotRemembered) {
  using hotscope::heap::RememberedStack;
  std::uint64_t slot = std::uint64_t{5} << 32 | hotscope::heap::unknown_stack;
  RememberedStack::remember(slot, 4, 9); // interned for the entry's previous stack
  EXPECT_FALSE(RememberedStack(slot).known());
  RememberedStack::remember(slot, 5, 3);
  EXPECT_EQ(RememberedStack(slot).id(), 3u);
  EXPECT_EQ(RememberedStack(slot).generation(), 5u);
}

// Captures into `frames`, from `levels` calls deeper, dropping the leading frames in `skip`. Each
// `path` is a function of its own: the same depths through another path are other stacks.
template <int path = 0>
__attribute__((noinline)) std::size_t capture_deeper(hotscope::heap::Unwinder unwinder, int levels,
                                                     const hotscope::heap::CodeRanges& skip,
                                                     std::span<std::uintptr_t> frames) {
  if (levels > 0) {
    const std::size_t written = capture_deeper<path>(unwinder, levels - 1, skip, frames);
    asm volatile("" ::: "memory");
    return written;
  }
  return hotscope::heap::capture_stack(unwinder, skip, frames);
}

// Only as many frames are unwound as are kept plus the most leading frames seen so far: a capture
// with more leading frames than that still keeps its whole depth. Here each capture drops more
// frames than the last (the program's own, from deeper each time); the first of the process drops
// more than none. On a thread of its own, the first frame left is the C++ library's.
TEST(HeapCapture, MoreLeadingFramesThanSeenBeforeStillLeaveTheWholeDepth) {
  using hotscope::heap::Unwinder;
  const hotscope::heap::CodeRanges skip =
      hotscope::heap::own_and_allocator_code(reinterpret_cast<const void*>(&capture));
  hotscope::symbols::Symbolizer symbolizer;
  int levels = 1;
  for (const Unwinder unwinder :
       {Unwinder::Libunwind, Unwinder::LibunwindUncached, Unwinder::FramePointers}) {
    std::array<std::uintptr_t, 1> frames{};
    std::size_t written = 0;
    std::thread([&] { written = capture_deeper(unwinder, levels, skip, frames); }).join();
    ASSERT_EQ(written, 1u);
    EXPECT_NE(symbolizer.resolve(frames[0] - 1).back().object.find("libstdc++"), std::string::npos);
    levels += 3;
  }
}

long minor_faults_of_this_thread() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

// A thread whose stacks the cache does not hold walks them with libgcc, not with unw_backtrace,
// whose trace cache writes 256 KiB (64 pages) at a thread's first call. The thread first learns
// 64 stacks (the cache's budget without hits), which touches its stack and the cache's pages;
// then 100 other stacks at the same depths, which the cache neither holds nor learns.
TEST(HeapCapture, AThreadsUncachedStacksTakeNoTraceCacheOfLibunwinds) {
  const hotscope::heap::CodeRanges skip =
      hotscope::heap::own_and_allocator_code(reinterpret_cast<const void*>(&capture));
  long faults = -1;
  std::size_t written = 0;
  std::thread([&] {
    std::array<std::uintptr_t, 32> frames{};
    for (int levels = 0; levels < 64; ++levels) {
      capture_deeper(hotscope::heap::Unwinder::Libunwind, levels, skip, frames);
    }
    const long before = minor_faults_of_this_thread();
    for (int round = 0; round < 100; ++round) {
      written += capture_deeper<1>(hotscope::heap::Unwinder::Libunwind, round % 64, skip, frames);
    }
    faults = minor_faults_of_this_thread() - before;
  }).join();
  EXPECT_GE(written, 100u); // every stack was walked
  EXPECT_LT(faults, 16);
}

TEST(HeapCapture, KeepsAtMostTheRequestedDepth) {
  std::array<std::uintptr_t, 2> frames{};
  EXPECT_EQ(hotscope::heap::capture_stack(hotscope::heap::Unwinder::Libunwind, {}, frames), 2u);
  EXPECT_EQ(hotscope::heap::capture_stack(hotscope::heap::Unwinder::LibunwindUncached, {}, frames),
            2u);
  EXPECT_EQ(hotscope::heap::capture_stack(hotscope::heap::Unwinder::FramePointers, {}, frames), 2u);
}

} // namespace
