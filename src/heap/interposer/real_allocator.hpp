// The heap libraries' bottom floor: the real allocator behind the hooks (found with
// dlsym(RTLD_NEXT)), the bootstrap arena that serves requests while it is being found, this
// library's own code (calls from it are not counted), and the thread-local flag that marks a
// thread inside the profiler.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

// Everything here is the library's own; hidden declarations let the hooks reach it directly.
#pragma GCC visibility push(hidden)

// For zeroed static storage of many pages (the bootstrap arena, the sampled addresses, the
// attach's slots, the program's signal actions): x86-64's section for large zeroed data, which
// the linker places after the other zeroed variables. Those, each first read and then written at
// a program's start, then share a few pages instead of lying between these: page faults fewer
// by a dozen, a page fault being some 2 µs of a short program's time (docs/performance.md).
#if defined(__x86_64__)
#define HOTSCOPE_LARGE_ZEROED __attribute__((section(".lbss")))
#else
#define HOTSCOPE_LARGE_ZEROED
#endif

namespace hotscope::heap::interposer {

struct RealAllocator {
  void* (*malloc)(std::size_t);
  void (*free)(void*);
  void* (*calloc)(std::size_t, std::size_t);
  void* (*realloc)(void*, std::size_t);
  void* (*memalign)(std::size_t, std::size_t);
  int (*pthread_create)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
};
// Named for the x86-64 malloc and free entries (hooks.cpp), which jump through it.
extern RealAllocator real asm("hotscope_real");

enum : int { Unresolved, Resolving, Resolved };
extern std::atomic<int> real_state;

// True once the real functions are known. False while they are being looked up: the caller is
// then dlsym itself (or a thread racing with it at start-up) and uses the arena.
bool resolve_real_slow();
inline bool resolve_real() {
  return __builtin_expect(real_state.load(std::memory_order_acquire) == Resolved, 1) ||
         resolve_real_slow();
}

// A thread inside the profiler (capturing a stack, updating tables, writing the report): what it
// allocates goes straight to the real allocator, uncounted.
extern __thread int in_profiler __attribute__((tls_model("initial-exec")));

struct Inside {
  Inside() { ++in_profiler; }
  ~Inside() { --in_profiler; }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

// Set for good when a signal handler called exit() (reports.cpp, report_from_handler): the thread
// it interrupted may hold the real allocator's lock for ever, so the profiler's own blocks are no
// longer handed back to it (the process is ending), and the thread that called exit() takes what
// starting the report's thread needs from the arena below (starting_report_thread).
extern std::atomic<bool> keeping_own_blocks;
extern __thread bool starting_report_thread __attribute__((tls_model("initial-exec")));

// The bootstrap arena: bump allocation, never reused. Each block is preceded by its size.
inline constexpr std::size_t arena_size = 1 << 18; // with room for start-up blocks
extern unsigned char arena[arena_size];

inline bool in_arena(const void* pointer) {
  const auto* byte = static_cast<const unsigned char*>(pointer);
  return byte >= arena && byte < arena + arena_size;
}
// nullptr when the arena is used up.
void* arena_allocate(std::size_t size, std::size_t alignment);
std::size_t arena_block_size(const void* pointer);

// This library's own code: the executable segments of its object, and of libhotscope-run.so when
// it is preloaded with it (add_own_code). Each carries a private, static copy of the C++ runtime,
// whose start-up allocations (the exception emergency pool) must not count: a C program would
// not make them. Added to at load only, before the program runs a thread.
struct OwnCode {
  std::uintptr_t begin[8];
  std::uintptr_t end[8];
  int count;
};
extern OwnCode own_code;
// Adds the executable segments of the loaded object that contains `address` to own_code.
void add_own_code(const void* address);

// True when the hook was called from this library's own code (outside any Inside section).
inline bool called_by_self(const void* return_address) {
  const auto address = reinterpret_cast<std::uintptr_t>(return_address);
  for (int i = 0; i < own_code.count; ++i) {
    if (address >= own_code.begin[i] && address < own_code.end[i]) {
      return true;
    }
  }
  return false;
}

// Calls the profiler must not count: its own, made inside it or from its own code.
inline bool untracked(const void* caller) {
  return in_profiler != 0 || called_by_self(caller);
}

} // namespace hotscope::heap::interposer

#pragma GCC visibility pop
