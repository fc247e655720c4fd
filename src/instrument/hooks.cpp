// The -finstrument-functions hooks and XRay's handler (docs/instrument.md). Hot path: no lock, no
// allocation, no system call once the thread has its ring; nothing here is instrumented (the
// attribute, and libhotscope is built without the flag), and the ring's registration runs under
// locks::Quiet, which the hooks check first, so a hook never records from inside the profiler.
#include "instrument/instrument.hpp"
#include "locks/locks.hpp"

#include <hotscope/hotscope.hpp>

#include <pthread.h>
#include <sys/mman.h>

#include <cstdint>

namespace hotscope::instrument {
namespace {

using hotscope::detail::Ring;

// An instrumented call the thread is in: the ring its FUNCTION_BEGIN went into, or null when it
// was not recorded (the profiler's own code, a full ring).
struct OpenCall {
  std::uint64_t entry;
  Ring* ring;
  std::uint64_t stack; // the stack pointer in the entry's hook
};

// `depth` counts the calls past kDepthMax too.
struct Calls {
  std::uint32_t depth;
  OpenCall open[kDepthMax];
};

// A thread's Calls, mapped at its first instrumented call: 6 KiB of thread-local storage would not
// fit in the static TLS space left for a library loaded later (`hotscope attach` loads
// libhotscope-run.so into a running program with dlopen). kEnded once the block was released
// at the thread's exit, kMapping while it is being mapped: calls then are not followed.
__thread Calls* tls_calls __attribute__((tls_model("initial-exec"))) = nullptr;
Calls* const kEnded = reinterpret_cast<Calls*>(1);
Calls* const kMapping = reinterpret_cast<Calls*>(2);
pthread_key_t calls_key;
pthread_once_t calls_key_once = PTHREAD_ONCE_INIT;

#define HOTSCOPE_HOOK __attribute__((no_instrument_function))

HOTSCOPE_HOOK void release_calls(void* block) noexcept {
  munmap(block, sizeof(Calls));
  tls_calls = kEnded; // the thread's later exit handlers' calls are not followed
}

HOTSCOPE_HOOK void create_calls_key() noexcept {
  pthread_key_create(&calls_key, &release_calls);
}

// The thread's Calls, or null when its calls are not followed (ended, being mapped, no memory).
// A system call once per thread, as its ring's registration; pthread_setspecific may allocate,
// and an instrumented allocator's calls meanwhile see kMapping.
HOTSCOPE_HOOK __attribute__((noinline)) Calls* map_calls() noexcept {
  Calls* const current = tls_calls;
  if (current == kEnded || current == kMapping) {
    return nullptr;
  }
  tls_calls = kMapping;
  void* block = mmap(nullptr, sizeof(Calls), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0); // zero-filled
  if (block == MAP_FAILED) {
    tls_calls = nullptr; // tried again at the next call
    return nullptr;
  }
  pthread_once(&calls_key_once, &create_calls_key);
  pthread_setspecific(calls_key, block);
  tls_calls = static_cast<Calls*>(block);
  return tls_calls;
}

HOTSCOPE_HOOK inline Calls* thread_calls() noexcept {
  Calls* const calls = tls_calls;
  return __builtin_expect(reinterpret_cast<std::uintptr_t>(calls) > 2, 1) ? calls : map_calls();
}

// The thread's Calls if it has them (an exit never maps them).
HOTSCOPE_HOOK inline Calls* existing_calls() noexcept {
  Calls* const calls = tls_calls;
  return reinterpret_cast<std::uintptr_t>(calls) > 2 ? calls : nullptr;
}

// Only into the ring it was opened in: after the thread's exit handler a call gets a fresh ring,
// whose held slots are not this call's.
HOTSCOPE_HOOK inline void close(const OpenCall& call) noexcept {
  Ring* ring = call.ring;
  if (ring != nullptr && ring == hotscope::detail::tls_ring && ring->reserved_ends != 0) {
    hotscope::detail::close_slice(ring, call.entry, 0, HOTSCOPE_RECORD_FUNCTION_END);
  }
}

// An exit that is not the innermost call's: calls an exception unwound without their exit hook
// (clang calls it only on return). Closes them and returns the depth of `entry`'s call, or
// kNone when no open call is `entry`'s (the exit is then ignored).
constexpr std::uint32_t kNone = UINT32_MAX;
HOTSCOPE_HOOK __attribute__((noinline)) std::uint32_t unwound(Calls& calls, std::uint64_t entry,
                                                              std::uint32_t innermost) noexcept {
  std::uint32_t found = innermost;
  while (found != 0 && calls.open[found - 1].entry != entry) {
    --found;
  }
  if (found == 0) {
    return kNone;
  }
  for (std::uint32_t open = innermost + 1; open-- > found;) {
    close(calls.open[open]);
  }
  return found - 1;
}

HOTSCOPE_HOOK __attribute__((noinline)) void too_deep() noexcept {
  if (Ring* ring = hotscope::detail::tls_ring; ring != nullptr) {
    hotscope::detail::count_dropped(ring, 2); // its BEGIN and its END
  }
}

// A call's entry, by -finstrument-functions' hook or XRay's handler, `stack` the stack pointer
// in it.
HOTSCOPE_HOOK inline __attribute__((always_inline)) void enter(std::uint64_t entry,
                                                               std::uint64_t stack) noexcept {
  Calls* const block = thread_calls();
  if (__builtin_expect(block == nullptr, 0)) {
    return;
  }
  Calls& calls = *block;
  const std::uint32_t depth = calls.depth++;
  if (__builtin_expect(depth >= kDepthMax, 0)) {
    too_deep();
    return;
  }
  auto& call = calls.open[depth];
  call.entry = entry;
  call.ring = nullptr;
  call.stack = stack;
  if (__builtin_expect(hotscope::locks::detail::tls_locks.quiet != 0, 0)) {
    return; // the profiler's own thread, or its code on this one
  }
  if (filtered(entry)) {
    return;
  }
  call.ring = hotscope::detail::open_slice(entry, stack, HOTSCOPE_RECORD_FUNCTION_BEGIN);
}

// A call's exit (XRay: a return or a tail call).
HOTSCOPE_HOOK inline __attribute__((always_inline)) void leave(std::uint64_t entry) noexcept {
  Calls* const block = existing_calls();
  if (__builtin_expect(block == nullptr, 0)) {
    return; // its entry was not followed
  }
  Calls& calls = *block;
  if (__builtin_expect(calls.depth == 0, 0)) {
    return; // its entry came before this thread's calls were followed (XRay: before patching)
  }
  std::uint32_t depth = calls.depth - 1;
  if (__builtin_expect(depth < kDepthMax, 1)) {
    if (__builtin_expect(calls.open[depth].entry != entry, 0)) {
      depth = unwound(calls, entry, depth);
      if (depth == kNone) {
        return;
      }
    }
    close(calls.open[depth]);
  }
  calls.depth = depth;
}

// XRay has no exit on unwinding: at an entry, the open calls whose hooks ran at or above this
// stack pointer have left the stack, unwound by an exception (docs/instrument.md, "XRay").
HOTSCOPE_HOOK __attribute__((noinline)) void close_unwound(Calls& calls,
                                                           std::uint64_t stack) noexcept {
  std::uint32_t depth = calls.depth;
  while (depth != 0 && calls.open[depth - 1].stack <= stack) {
    close(calls.open[--depth]);
  }
  calls.depth = depth;
}

} // namespace

HOTSCOPE_HOOK void xray_event(std::int32_t id, XrayEvent event) noexcept {
  if (__builtin_expect(id <= 0 || id > xray_count, 0)) {
    return;
  }
  const std::uint64_t entry = xray_entries[id - 1];
  if (event == kXrayEntry) {
    const std::uint64_t stack = hotscope::detail::stack_pointer();
    if (Calls* const calls = existing_calls(); calls != nullptr) {
      const std::uint32_t depth = calls->depth;
      if (__builtin_expect(
              depth != 0 && depth <= kDepthMax && calls->open[depth - 1].stack <= stack, 0)) {
        close_unwound(*calls, stack);
      }
    }
    enter(entry, stack);
  } else if (event == kXrayExit || event == kXrayTail) {
    leave(entry);
  }
}

} // namespace hotscope::instrument

extern "C" HOTSCOPE_HOOK __attribute__((visibility("default"))) void
__cyg_profile_func_enter(void* function, void*) {
  hotscope::instrument::enter(reinterpret_cast<std::uintptr_t>(function),
                              hotscope::detail::stack_pointer());
}

extern "C" HOTSCOPE_HOOK __attribute__((visibility("default"))) void
__cyg_profile_func_exit(void* function, void*) {
  hotscope::instrument::leave(reinterpret_cast<std::uintptr_t>(function));
}
