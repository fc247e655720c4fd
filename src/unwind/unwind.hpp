// The stack walks (docs/architecture.md). The walk by the frames' .eh_frame rules (x86-64), each
// rule read once and cached by return address for the whole process: within a sixth of
// libunwind's unw_backtrace, fifteen times libgcc's speed, with no memory per thread and no
// library to load. Where those rules do not reach (a signal frame, DWARF expressions), libgcc's
// walk: linked into the calling library when it was linked with -static-libgcc and without
// libunwind (the heap preload library), else looked up by name in libgcc_s; a program that loaded
// libunwind first resolves _Unwind_Backtrace to libunwind's version of it, which blocks signals
// (two system calls) at every frame. libgcc's walks without a system call and keeps no memory of
// its own (unw_backtrace's trace cache is 256 KiB a thread). libunwind: loaded only by a caller
// that walks many stacks (the heap's full mode).
#pragma once

#include <unwind.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace hotscope::unwind {

struct Libgcc {
  _Unwind_Reason_Code (*backtrace)(_Unwind_Trace_Fn, void*) = nullptr;
  _Unwind_Ptr (*ip_info)(_Unwind_Context*, int*) = nullptr;
  _Unwind_Word (*cfa)(_Unwind_Context*) = nullptr;
};

// libgcc's unwinder, looked up at the first call (dlopen of libgcc_s, kept loaded): make that
// call where the loader may be entered, never from a signal handler. Null when libgcc_s lacks
// these functions, and for a caller while another thread looks it up (it never waits: a thread
// inside dlopen may be the one that holds the loader's lock).
const Libgcc* find_libgcc() noexcept;
// The unwinder if it was looked up already, else null; never looks it up (a signal handler's).
const Libgcc* libgcc_if_found() noexcept;

struct Libunwind {
  int (*backtrace)(void**, int) = nullptr; // unw_backtrace
  // Its executable segment: the frames of its own at the top of the stacks it walks.
  std::uintptr_t code_begin = 0;
  std::uintptr_t code_end = 0;
  bool contains(std::uintptr_t address) const {
    return address >= code_begin && address < code_end;
  }
};

// libunwind (dlopen of libunwind.so.8, local, kept loaded, its per-thread cache policy set),
// loaded at the first call, under the same rules as find_libgcc. Null when it cannot be loaded.
const Libunwind* find_libunwind() noexcept;
// libunwind if it was loaded already, else null; never loads it.
const Libunwind* libunwind_if_found() noexcept;

// The calling thread's return addresses into `out`, innermost first, from the function this is
// inlined into (as unw_backtrace's); how many.
[[gnu::always_inline]] inline std::size_t backtrace(const Libgcc& libgcc,
                                                    std::span<std::uintptr_t> out) noexcept {
  struct Walk {
    const Libgcc& libgcc;
    std::span<std::uintptr_t> out;
    std::size_t count = 0;
  } walk{libgcc, out};
  if (out.empty()) {
    return 0;
  }
  libgcc.backtrace(
      [](_Unwind_Context* context, void* data) {
        auto& walk = *static_cast<Walk*>(data);
        int signal_frame = 0;
        const std::uintptr_t ip = walk.libgcc.ip_info(context, &signal_frame);
        if (ip == 0) {
          return _URC_END_OF_STACK;
        }
        walk.out[walk.count++] = ip;
        return walk.count < walk.out.size() ? _URC_NO_REASON : _URC_END_OF_STACK;
      },
      &walk);
  return walk.count;
}

// A word of this thread's stack: always mapped, but under ASan it may lie in a caller's redzone.
__attribute__((no_sanitize_address)) inline std::uintptr_t stack_word(std::uintptr_t address) {
  return *reinterpret_cast<const std::uintptr_t*>(address);
}

// The calling thread's stack, [low, high).
struct StackBounds {
  std::uintptr_t low = 0;
  std::uintptr_t high = 0;
};

// What x86-64's walk needs of a frame: its return address, and the stack pointer and frame
// pointer it returns with.
struct FrameRegisters {
  std::uintptr_t ip = 0;
  std::uintptr_t sp = 0;
  std::uintptr_t rbp = 0;
};

// Those of the caller of the function whose frame is at `frame_address`
// (__builtin_frame_address(0), which gives that function a frame pointer).
FrameRegisters caller_registers(std::uintptr_t frame_address) noexcept;

// The return addresses from `frame` on, outermost last, into `addresses`, and the address each
// was read from into `slots` (if not empty: as many as `addresses`), by the rules of the loaded
// objects' .eh_frame, each read once and then cached by return address (rules_walk.cpp). How
// many; nullopt where a frame needs more than these rules (a signal frame, a rule by DWARF
// expression, a stack outside `bounds`, code without unwind tables): libgcc's walk then.
// Allocates nothing and takes no lock (the loader's objects by _dl_find_object).
std::optional<std::size_t> walk_by_rules(FrameRegisters frame, StackBounds bounds,
                                         std::span<std::uintptr_t> addresses,
                                         std::span<std::uintptr_t> slots = {}) noexcept;
// Forgets the cached rules: after an object was unloaded, whose addresses another object loaded
// later may take. Called by the dlclose interposers (the heap preload library's, libhotscope's).
void forget_rules() noexcept;

} // namespace hotscope::unwind
