#pragma once
// The calling thread's stack as the heap library captures it (libunwind), taken in a frame of its
// own: the tests find "capture" among the names of a symbolized stack.
#include "heap/capture.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hotscope::test_support {

__attribute__((noinline)) inline std::vector<std::uintptr_t> capture() {
  std::array<std::uintptr_t, 64> frames{};
  const std::size_t depth = heap::capture_stack(heap::Unwinder::Libunwind, {}, frames);
  asm volatile("" ::: "memory"); // keep this frame: no tail call
  return {frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(depth)};
}

} // namespace hotscope::test_support
