// The interposer's state (locks.hpp), apart from what writes records: the profiler's threads mark
// themselves with own_thread(), also in the heap libraries, which must not take the ring's
// registration, and the runtime with it, out of libhotscope for that.
#include "locks/locks.hpp"

namespace hotscope::locks {
namespace detail {
std::atomic<Mode> mode{Mode::Off};
__thread ThreadLocks tls_locks __attribute__((tls_model("initial-exec")));
} // namespace detail

void own_thread() noexcept {
  detail::tls_locks.quiet = 1u << 30; // never back to 0, whatever Quiet does
}

} // namespace hotscope::locks
