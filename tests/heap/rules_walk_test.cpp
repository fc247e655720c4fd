// The stack walk by the frames' .eh_frame rules (src/unwind/rules_walk.cpp), checked against
// libgcc's walk of the same stacks: frame pointers or not, alloca, the C library's code, another
// thread, a library loaded where an unloaded one was, a signal handler, a stack outside bounds.
#include "heap/capture.hpp"
#include "unwind/unwind.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <alloca.h>
#include <array>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

namespace hotscope::unwind {
namespace {

struct Walks {
  std::optional<std::vector<std::uintptr_t>> rules; // from the caller of walk_both
  std::vector<std::uintptr_t> rule_slots;
  std::vector<std::uintptr_t> libgcc; // from walk_both itself: its first frame dropped
  std::vector<std::uintptr_t> libgcc_slots;
};

StackBounds this_thread_stack() {
  pthread_attr_t attributes;
  EXPECT_EQ(pthread_getattr_np(pthread_self(), &attributes), 0);
  void* base = nullptr;
  std::size_t size = 0;
  EXPECT_EQ(pthread_attr_getstack(&attributes, &base, &size), 0);
  pthread_attr_destroy(&attributes);
  const auto low = reinterpret_cast<std::uintptr_t>(base);
  return {low, low + size};
}

__attribute__((noinline)) Walks walk_both(std::optional<StackBounds> bounds = std::nullopt) {
  Walks walks;
  std::array<std::uintptr_t, 128> addresses{};
  std::array<std::uintptr_t, 128> slots{};
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  if (const auto count = walk_by_rules(caller_registers(frame),
                                       bounds.value_or(this_thread_stack()), addresses, slots)) {
    walks.rules.emplace(addresses.begin(), addresses.begin() + static_cast<std::ptrdiff_t>(*count));
    walks.rule_slots.assign(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(*count));
  }
  struct LibgccWalk {
    const Libgcc& libgcc;
    Walks& walks;
  } walk{*find_libgcc(), walks};
  walk.libgcc.backtrace(
      [](_Unwind_Context* context, void* data) {
        auto& walk = *static_cast<LibgccWalk*>(data);
        int signal_frame = 0;
        const std::uintptr_t ip = walk.libgcc.ip_info(context, &signal_frame);
        if (ip == 0) {
          return _URC_END_OF_STACK;
        }
        walk.walks.libgcc.push_back(ip);
        walk.walks.libgcc_slots.push_back(walk.libgcc.cfa(context) - sizeof(std::uintptr_t));
        return walk.walks.libgcc.size() < 129 ? _URC_NO_REASON : _URC_END_OF_STACK;
      },
      &walk);
  walks.libgcc.erase(walks.libgcc.begin());
  walks.libgcc_slots.erase(walks.libgcc_slots.begin());
  asm volatile("" ::: "memory"); // keep this frame: no tail call
  return walks;
}

void expect_same(const Walks& walks) {
  ASSERT_TRUE(walks.rules.has_value()) << "the rules did not reach the end of the stack";
  EXPECT_EQ(*walks.rules, walks.libgcc);
  EXPECT_EQ(walks.rule_slots, walks.libgcc_slots);
  EXPECT_GE(walks.rules->size(), 3u);
}

__attribute__((noinline)) Walks recursing(int depth) {
  if (depth == 0) {
    return walk_both();
  }
  Walks walks = recursing(depth - 1);
  asm volatile("" ::: "memory");
  return walks;
}

// A frame whose CFA follows rbp: its size is only known at run time.
__attribute__((noinline)) Walks with_alloca(std::size_t bytes) {
  auto* room = static_cast<volatile char*>(alloca(bytes));
  room[0] = 1;
  Walks walks = recursing(2);
  asm volatile("" ::: "memory");
  walks.rules->push_back(room[0] - 1); // 0: the same on both sides
  walks.libgcc.push_back(0);
  walks.rule_slots.push_back(0);
  walks.libgcc_slots.push_back(0);
  return walks;
}

TEST(RulesWalk, FindsTheSameFramesAndSlotsAsLibgccsWalk) {
  expect_same(recursing(0));
  expect_same(recursing(20));
}

TEST(RulesWalk, FollowsAFrameSizedAtRunTime) {
  expect_same(with_alloca(300));
  expect_same(with_alloca(5000));
}

TEST(RulesWalk, CachedRulesWalkTheSameAsRulesReadAgain) {
  std::vector<Walks> walks;
  for (int i = 0; i < 2; ++i) {
    walks.push_back(recursing(6));
  }
  expect_same(walks[1]);
  EXPECT_EQ(*walks[0].rules, *walks[1].rules);
}

Walks walked_in_qsort;

TEST(RulesWalk, WalksThroughTheCLibrarysCode) {
  std::array<int, 2> values{2, 1};
  qsort(values.data(), values.size(), sizeof(int), [](const void* a, const void* b) {
    walked_in_qsort = recursing(1);
    return *static_cast<const int*>(a) - *static_cast<const int*>(b);
  });
  expect_same(walked_in_qsort);
  EXPECT_EQ(values[0], 1);
}

TEST(RulesWalk, WalksAnotherThreadsStackToItsEnd) {
  Walks walks;
  std::thread([&] { walks = recursing(3); }).join();
  expect_same(walks);
}

// A library unloaded, then another loaded (most likely where the first was): once the rules are
// forgotten, as the heap libraries' dlclose does, the first's cached rules are not applied to the
// second's return addresses.
TEST(RulesWalk, ALibraryLoadedWhereAnUnloadedOneWasIsWalkedByItsOwnRules) {
  using Calls = int (*)(int (*)(void*), void*);
  for (const char* path : {WALK_CALLBACK_A, WALK_CALLBACK_B, WALK_CALLBACK_A}) {
    void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library, nullptr) << dlerror();
    const auto calls = reinterpret_cast<Calls>(dlsym(library, "walk_callback_calls"));
    ASSERT_NE(calls, nullptr);
    Walks walks;
    calls(
        [](void* out) {
          *static_cast<Walks*>(out) = recursing(1);
          return 0;
        },
        &walks);
    expect_same(walks);
    dlclose(library);
    forget_rules();
  }
}

// A signal frame is libgcc's to walk: the rules say so rather than guess.
Walks walked_in_handler;

TEST(RulesWalk, LeavesASignalFrameToLibgcc) {
  struct sigaction action {};
  struct sigaction previous {};
  action.sa_handler = [](int) { walked_in_handler = recursing(1); };
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
  raise(SIGUSR1);
  sigaction(SIGUSR1, &previous, nullptr);
  EXPECT_FALSE(walked_in_handler.rules.has_value());
  EXPECT_GE(walked_in_handler.libgcc.size(), 5u);
}

// The heap library's question at exit (is this a signal handler?), answered by the rules where
// they reach the stack's end, by libgcc's walk where a signal frame stops them.
bool seen_in_handler = false;

TEST(RulesWalk, TellsASignalHandlersStackFromAnOrdinaryOne) {
  heap::prepare_capture(heap::Unwinder::Libunwind, true); // the thread's stack found
  EXPECT_FALSE(heap::in_signal_handler());
  struct sigaction action {};
  struct sigaction previous {};
  action.sa_handler = [](int) { seen_in_handler = heap::in_signal_handler(); };
  ASSERT_EQ(sigaction(SIGUSR2, &action, &previous), 0);
  raise(SIGUSR2);
  sigaction(SIGUSR2, &previous, nullptr);
  EXPECT_TRUE(seen_in_handler);
  bool on_thread = true;
  std::thread([&] {
    heap::prepare_capture(heap::Unwinder::Libunwind, true);
    on_thread = heap::in_signal_handler();
  }).join();
  EXPECT_FALSE(on_thread);
}

TEST(RulesWalk, LeavesAStackOutsideItsBoundsToLibgcc) {
  const StackBounds elsewhere{4096, 8192};
  EXPECT_FALSE(walk_both(elsewhere).rules.has_value());
  EXPECT_FALSE(walk_both(StackBounds{}).rules.has_value());
}

} // namespace
} // namespace hotscope::unwind
