// A frame's unwind rule on x86-64, read from its object's .eh_frame (docs/heap.md, "Walking the
// stacks"): where the caller's stack pointer, frame pointer and return address are, at a return
// address. Internal to the unwind component (rules_walk.cpp caches and applies them).
#pragma once

#include <cstdint>

namespace hotscope::unwind::detail {

struct FrameRule {
  enum class Kind : std::uint8_t {
    // Beyond what the walk follows: a signal frame, a CFA or a saved rbp given by an expression
    // or in another register, code without unwind tables. Walked with libgcc's unwinder instead.
    Unsupported,
    Frame,     // the rules below apply
    Outermost, // the return address is undefined: the stack ends at this frame
  };
  Kind kind = Kind::Unsupported;
  bool cfa_from_rbp = false;      // the CFA is rbp + cfa_offset, else rsp + cfa_offset
  bool rbp_saved = false;         // the caller's rbp is at CFA + rbp_offset, else rbp unchanged
  std::int64_t cfa_offset = 0;    //
  std::int64_t rbp_offset = 0;    //
  std::int64_t return_offset = 0; // the return address is at CFA + return_offset
};

// The rule of the frame whose return address is `return_address` (the row of its function's CFI
// for the call instruction before it). Reads the loaded objects' unwind tables, found through the
// loader without its lock (_dl_find_object); allocates nothing.
FrameRule rule_at(std::uintptr_t return_address) noexcept;

} // namespace hotscope::unwind::detail
