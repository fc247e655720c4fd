// Whole-program instrumentation (docs/instrument.md): the compiler's entry and exit hooks
// (`__cyg_profile_func_enter` and `_exit`, defined in hooks.cpp) write a FUNCTION_BEGIN and a
// FUNCTION_END record named by the function's entry address into the thread's ring.
#pragma once

#include <cstdint>

namespace hotscope::instrument {

// Deepest nesting of instrumented calls a thread follows; deeper calls are not recorded (their
// records are counted dropped).
constexpr std::uint32_t kDepthMax = 256;

} // namespace hotscope::instrument
