// The -finstrument-functions hooks (docs/instrument.md). Hot path: no lock, no allocation, no
// system call once the thread has its ring; nothing here is instrumented (the attribute, and
// libhotscope is built without the flag), and the ring's registration runs under locks::Quiet,
// which the hooks check first, so a hook never records from inside the profiler.
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

} // namespace
} // namespace hotscope::instrument

using hotscope::instrument::tls_calls;

extern "C" HOTSCOPE_HOOK __attribute__((visibility("default"))) void
__cyg_profile_func_enter(void* function, void*) {
  auto& calls = tls_calls;
  const std::uint32_t depth = calls.depth++;
  if (__builtin_expect(depth >= hotscope::instrument::kDepthMax, 0)) {
    hotscope::instrument::too_deep();
    return;
  }
  auto& call = calls.open[depth];
  call.entry = reinterpret_cast<std::uintptr_t>(function);
  call.ring = nullptr;
  if (__builtin_expect(hotscope::locks::detail::tls_locks.quiet != 0, 0)) {
    return; // the profiler's own thread, or its code on this one
  }
  if (hotscope::instrument::filtered(call.entry)) {
    return;
  }
  call.ring = hotscope::detail::open_slice(call.entry, hotscope::detail::stack_pointer(),
                                           HOTSCOPE_RECORD_FUNCTION_BEGIN);
}

extern "C" HOTSCOPE_HOOK __attribute__((visibility("default"))) void
__cyg_profile_func_exit(void* function, void*) {
  auto& calls = tls_calls;
  if (__builtin_expect(calls.depth == 0, 0)) {
    return; // its entry came before this thread's calls were followed (cannot happen in order)
  }
  std::uint32_t depth = calls.depth - 1;
  if (__builtin_expect(depth < hotscope::instrument::kDepthMax, 1)) {
    const auto entry = reinterpret_cast<std::uintptr_t>(function);
    if (__builtin_expect(calls.open[depth].entry != entry, 0)) {
      depth = hotscope::instrument::unwound(calls, entry, depth);
      if (depth == hotscope::instrument::kNone) {
        return;
      }
    }
    hotscope::instrument::close(calls.open[depth]);
  }
  calls.depth = depth;
}
