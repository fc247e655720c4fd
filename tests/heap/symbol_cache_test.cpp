// A symbolizer kept across profiles (as the heap libraries keep one for the profile on demand):
// a repeated profile equals the first and a fresh symbolizer's, and the cache follows dlopen and
// dlclose (tests/heap/programs/loaded_a.c, loaded_b.c).
#include "export/export.hpp"
#include "heap/heap.hpp"
#include "symbols/symbols.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <array>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace heap = hotscope::heap;
using hotscope::symbols::Symbolizer;

__attribute__((noinline)) std::vector<std::uintptr_t> capture() {
  std::array<std::uintptr_t, 64> frames{};
  const std::size_t depth = heap::capture_stack(heap::Unwinder::Libunwind, {}, frames);
  asm volatile("" ::: "memory"); // keep this frame: no tail call
  return {frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(depth)};
}

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
  const auto own = reinterpret_cast<std::uintptr_t>(&capture);
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

// Symbolizing ahead resolves each return address once, up to main, and again after a refresh
// that made the symbolizer forget.
TEST(HeapSymbolCache, AheadResolvesEachAddressOnceAndAgainAfterTheCacheForgets) {
  const std::vector<std::uintptr_t> stack = capture();
  const std::vector<std::uintptr_t> again = capture(); // the same frames but the innermost
  Symbolizer symbolizer;
  symbolizer.refresh(); // libdw may load libdebuginfod on first use
  heap::AheadSymbolizer ahead;
  ahead.add(stack, symbolizer);
  const std::size_t resolved = symbolizer.cached();
  EXPECT_GT(resolved, 1u);
  EXPECT_LE(resolved, stack.size()) << "nothing past main";
  ahead.add(again, symbolizer);
  EXPECT_LE(symbolizer.cached(), resolved + 1) << "only its innermost frame is new";
  void* loaded = dlopen(HEAP_LOADED_A, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(loaded, nullptr) << dlerror();
  ASSERT_EQ(dlclose(loaded), 0);
  ASSERT_TRUE(symbolizer.refresh());
  ASSERT_EQ(symbolizer.cached(), 0u) << "after an unload nothing cached is trusted";
  ahead.add(stack, symbolizer);
  EXPECT_EQ(symbolizer.cached(), resolved) << "resolved again after the cache forgot";
}
} // namespace
