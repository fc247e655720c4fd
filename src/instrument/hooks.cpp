// The -finstrument-functions hooks and XRay's handler (docs/instrument.md). Hot path: no lock, no
// allocation, no system call once the thread has its ring; nothing here is instrumented (the
// attribute, and libhotscope is built without the flag), and the ring's registration runs under
// locks::Quiet, which the hooks check first, so a hook never records from inside the profiler.
#include "instrument/instrument.hpp"
#include "locks/locks.hpp"

#include <hotscope/hotscope.hpp>

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

// Zero-initialised, as a __thread variable must be. `depth` counts the calls past kDepthMax too.
struct Calls {
  std::uint32_t depth;
  OpenCall open[kDepthMax];
};

__thread Calls tls_calls __attribute__((tls_model("initial-exec")));

#define HOTSCOPE_HOOK __attribute__((no_instrument_function))

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
  auto& calls = tls_calls;
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
  auto& calls = tls_calls;
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
    auto& calls = tls_calls;
    const std::uint32_t depth = calls.depth;
    if (__builtin_expect(depth != 0 && depth <= kDepthMax && calls.open[depth - 1].stack <= stack,
                         0)) {
      close_unwound(calls, stack);
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
