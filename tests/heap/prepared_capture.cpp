// The heap unit tests capture stacks as the full mode does: prepared once before any capture
// (libunwind loaded), as the heap libraries prepare it when they load (src/heap/capture.hpp).
#include "heap/capture.hpp"

namespace {

[[maybe_unused]] const bool prepared =
    (hotscope::heap::prepare_capture(hotscope::heap::Unwinder::Libunwind, false), true);

} // namespace
