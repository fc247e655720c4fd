// The hooks called by hand, as clang's -finstrument-functions calls them when an exception
// unwinds instrumented frames: no exit for the unwound calls (docs/instrument.md, "What the hooks
// guarantee").
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

extern "C" void __cyg_profile_func_enter(void* function, void* call_site);
extern "C" void __cyg_profile_func_exit(void* function, void* call_site);

namespace {

__attribute__((noinline)) void outer_call() {}
__attribute__((noinline)) void unwound_middle() {}
__attribute__((noinline)) void unwound_inner() {}
__attribute__((noinline)) void never_entered() {}

void* address(void (*function)()) {
  return reinterpret_cast<void*>(function);
}

std::uint64_t calls_of(const hotscope::Snapshot& snapshot, const std::string& name) {
  for (const hotscope::FunctionStats& function : snapshot.functions) {
    if (function.name == name) {
      return function.stats.calls;
    }
  }
  return 0;
}

TEST(InstrumentHooks, AnExitBelowTheInnermostCallClosesTheCallsAboveIt) {
  __cyg_profile_func_enter(address(outer_call), nullptr);
  __cyg_profile_func_enter(address(unwound_middle), nullptr);
  __cyg_profile_func_enter(address(unwound_inner), nullptr);
  __cyg_profile_func_exit(address(never_entered), nullptr); // ignored: no such call is open
  __cyg_profile_func_exit(address(outer_call), nullptr);    // the other two were unwound
  __cyg_profile_func_enter(address(outer_call), nullptr);   // the stack of calls is right again
  __cyg_profile_func_exit(address(outer_call), nullptr);
  const hotscope::Snapshot snapshot = hotscope::trace::snapshot();
  EXPECT_EQ(calls_of(snapshot, "(anonymous namespace)::outer_call"), 2u);
  EXPECT_EQ(calls_of(snapshot, "(anonymous namespace)::unwound_middle"), 1u);
  EXPECT_EQ(calls_of(snapshot, "(anonymous namespace)::unwound_inner"), 1u);
  EXPECT_EQ(calls_of(snapshot, "(anonymous namespace)::never_entered"), 0u);
  for (const hotscope::ThreadInfo& thread : snapshot.threads) {
    EXPECT_TRUE(thread.open_scopes.empty()) << thread.name;
  }
}

} // namespace
