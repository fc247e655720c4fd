// A symbolizer kept across profiles (as the heap libraries keep one for the profile on demand):
// a repeated profile equals the first and a fresh symbolizer's, and the cache follows dlopen and
// dlclose (tests/heap/programs/loaded_a.c, loaded_b.c).
#include "capture_here.hpp"
#include "export/export.hpp"
#include "heap/engine.hpp"
#include "heap/profile.hpp"
#include "symbols/symbols.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <array>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace heap = hotscope::heap;
using hotscope::HeapProfile;
using hotscope::symbols::Symbolizer;

using hotscope::test_support::capture;

__attribute__((always_inline)) inline std::vector<std::uintptr_t> inlined_capture() {
  return capture();
}

__attribute__((noinline)) std::vector<std::uintptr_t> through_inlined_code() {
  std::vector<std::uintptr_t> stack = inlined_capture();
  asm volatile("" ::: "memory");
  return stack;
}

std::string dhat_json(const hotscope::HeapProfile& profile) {
  std::ostringstream out;
  hotscope::exporters::write_dhat_json(profile, out);
  return std::move(out).str();
}

TEST(HeapSymbolCache, ARepeatedProfileEqualsTheFirstAndAFreshSymbolizersFrameForFrame) {
  const std::vector<std::uintptr_t> captured = capture();
  const std::vector<std::uintptr_t> inlined = through_inlined_code();
  const std::vector<std::uintptr_t> in_no_object = {0x10, 0x20};
  heap::RawProfile raw;
  raw.end_time = 10;
  raw.sites.push_back({captured, {.total_bytes = 8, .total_blocks = 1}});
  raw.sites.push_back({inlined, {.total_bytes = 16, .total_blocks = 2}});
  raw.sites.push_back({in_no_object, {.total_bytes = 4, .total_blocks = 1}});
  Symbolizer kept;
  const std::string first = dhat_json(heap::build_profile(raw, "prog", 1, kept));
  EXPECT_NE(first.find("inlined_capture"), std::string::npos) << first;
  EXPECT_NE(first.find("through_inlined_code"), std::string::npos) << first;
  EXPECT_GT(kept.cached(), 0u);
  EXPECT_EQ(dhat_json(heap::build_profile(raw, "prog", 1, kept)), first);
  EXPECT_EQ(dhat_json(heap::build_profile(raw, "prog", 1, kept)), first);
  Symbolizer fresh;
  EXPECT_EQ(dhat_json(heap::build_profile(raw, "prog", 1, fresh)), first);
}

std::uintptr_t function_address(void* library, const char* name) {
  void* function = library == nullptr ? nullptr : dlsym(library, name);
  EXPECT_NE(function, nullptr) << name << ": " << dlerror();
  return reinterpret_cast<std::uintptr_t>(function);
}

TEST(HeapSymbolCache, RefreshLearnsLoadedLibrariesAndForgetsUnloadedOnes) {
  Symbolizer symbolizer;
  const auto own = reinterpret_cast<std::uintptr_t>(&hotscope::test_support::capture);
  symbolizer.resolve(own);
  symbolizer.refresh(); // libdw may load libdebuginfod on first use
  ASSERT_NE(symbolizer.resolve(own).back().function.find("capture"), std::string::npos);
  EXPECT_FALSE(symbolizer.refresh()) << "nothing was loaded or unloaded";
  EXPECT_EQ(symbolizer.cached(), 1u);

  void* a = dlopen(HEAP_LOADED_A, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(a, nullptr) << dlerror();
  const std::uintptr_t in_a = function_address(a, "loaded_a_allocates");
  // The memory map read before the dlopen has no object there.
  EXPECT_EQ(symbolizer.resolve(in_a).back().function, "");
  EXPECT_TRUE(symbolizer.refresh());
  EXPECT_EQ(symbolizer.cached(), 1u) << "the result inside the new object goes, the other stays";
  EXPECT_EQ(symbolizer.resolve(in_a).back().function, "loaded_a_allocates");
  EXPECT_NE(symbolizer.resolve(in_a).back().object.find("heap_loaded_a"), std::string::npos);
  EXPECT_FALSE(symbolizer.refresh());
  EXPECT_EQ(symbolizer.resolve(in_a).back().function, "loaded_a_allocates");

  ASSERT_EQ(dlclose(a), 0);
  void* b = dlopen(HEAP_LOADED_B, RTLD_NOW | RTLD_LOCAL); // often where a was
  ASSERT_NE(b, nullptr) << dlerror();
  const std::uintptr_t in_b = function_address(b, "loaded_b_allocates");
  EXPECT_TRUE(symbolizer.refresh());
  EXPECT_EQ(symbolizer.cached(), 0u) << "after an unload nothing cached is trusted";
  EXPECT_EQ(symbolizer.resolve(in_b).back().function, "loaded_b_allocates");
  EXPECT_NE(symbolizer.resolve(in_a).back().function, "loaded_a_allocates");
  EXPECT_NE(symbolizer.resolve(own).back().function.find("capture"), std::string::npos);
  dlclose(b);
}

// Building ahead resolves each return address once, up to main, and again after a refresh that
// made the symbolizer forget.
TEST(HeapSymbolCache, AheadResolvesEachAddressOnceAndAgainAfterTheCacheForgets) {
  const std::vector<std::uintptr_t> stack = capture();
  const std::vector<std::uintptr_t> again = capture(); // the same frames but the innermost
  Symbolizer symbolizer;
  symbolizer.refresh(); // libdw may load libdebuginfod on first use
  heap::ProfileBuilder builder;
  builder.add(stack, symbolizer);
  const std::size_t resolved = symbolizer.cached();
  EXPECT_GT(resolved, 1u);
  EXPECT_LE(resolved, stack.size()) << "nothing past main";
  builder.add(again, symbolizer);
  EXPECT_LE(symbolizer.cached(), resolved + 1) << "only its innermost frame is new";
  EXPECT_EQ(builder.added(), 2u);
  void* loaded = dlopen(HEAP_LOADED_A, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(loaded, nullptr) << dlerror();
  ASSERT_EQ(dlclose(loaded), 0);
  ASSERT_TRUE(symbolizer.refresh());
  ASSERT_EQ(symbolizer.cached(), 0u) << "after an unload nothing cached is trusted";
  builder.forget_if_stale(symbolizer);
  EXPECT_EQ(builder.added(), 0u) << "built from symbols the cache no longer trusts";
  builder.add(stack, symbolizer);
  EXPECT_EQ(symbolizer.cached(), resolved) << "resolved again after the cache forgot";
}

// A profile of stacks added ahead is the profile of the same stacks built at once; the stacks of
// raw sites the builder has not seen (another table's) are added by the profile.
TEST(HeapSymbolCache, AProfileBuiltAheadIsTheProfileBuiltAtOnce) {
  const std::vector<std::uintptr_t> first = capture();
  const std::vector<std::uintptr_t> second = capture();
  const std::vector<std::uintptr_t> third = [&] { // differs below main: the same site as `first`
    std::vector<std::uintptr_t> frames = first;
    frames.push_back(0x1234);
    return frames;
  }();
  heap::RawProfile raw;
  raw.end_time = 100;
  for (const std::vector<std::uintptr_t>* stack : {&first, &second, &third}) {
    heap::SiteCounts counts;
    counts.total_bytes = 8 * stack->size();
    counts.total_blocks = 1;
    raw.sites.push_back(
        heap::RawSite{*stack, counts, static_cast<heap::StackId>(raw.sites.size())});
  }
  Symbolizer symbolizer;
  const HeapProfile at_once = heap::build_profile(raw, "test", 1, symbolizer);
  heap::ProfileBuilder builder;
  builder.add(first, symbolizer);
  builder.add(second, symbolizer); // `third` is added by the profile
  const HeapProfile ahead = builder.build(raw, "test", 1, symbolizer);
  const auto same = [](const HeapProfile& a, const HeapProfile& b) {
    EXPECT_EQ(a.frames, b.frames);
    ASSERT_EQ(a.sites.size(), b.sites.size());
    for (std::size_t i = 0; i < a.sites.size(); ++i) {
      EXPECT_EQ(a.sites[i].frames, b.sites[i].frames) << i;
      EXPECT_EQ(a.sites[i].total_bytes, b.sites[i].total_bytes) << i;
      EXPECT_EQ(a.sites[i].total_blocks, b.sites[i].total_blocks) << i;
    }
  };
  same(at_once, ahead);
  EXPECT_EQ(at_once.sites.size(), 2u) << "`third` merged into `first`'s site";
  // Another table's stacks, with the ids of this table's: `second`'s id, but `first`'s frames,
  // kept elsewhere.
  const std::vector<std::uintptr_t> copy = first;
  heap::RawProfile other;
  other.sites.push_back(heap::RawSite{copy, raw.sites[0].counts, 1});
  const HeapProfile afresh = builder.build(other, "test", 1, symbolizer);
  ASSERT_EQ(afresh.sites.size(), 1u);
  EXPECT_EQ(afresh.sites[0].frames, at_once.sites[0].frames);
  EXPECT_EQ(builder.added(), 2u) << "another table's stacks are not this table's next ones";
  same(at_once, builder.build(raw, "test", 1, symbolizer)); // this table's still as they were
  // The last profile takes the builder's tables: `third`, added by it, still merges into `first`'s
  // site. A profile after it is built afresh.
  heap::ProfileBuilder last;
  last.add(first, symbolizer);
  last.add(second, symbolizer);
  same(at_once, last.build_last(raw, "test", 1, symbolizer));
  same(at_once, last.build(raw, "test", 1, symbolizer));
}
} // namespace
