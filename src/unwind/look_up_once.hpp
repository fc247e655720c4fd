// The first caller looks an unwinder up; the others never wait for it (a thread inside dlopen
// may hold the loader's lock they would need): they go on without it meanwhile. Internal to
// src/unwind.
#pragma once

#include <atomic>

namespace hotscope::unwind::detail {

class LookUpOnce {
public:
  // Runs `look_up` if no caller did yet.
  template <class LookUp> void run(LookUp look_up) noexcept {
    int now = state_.load(std::memory_order_acquire);
    if (now == NotLookedUp && state_.compare_exchange_strong(now, LookingUp)) {
      look_up();
      state_.store(LookedUp, std::memory_order_release);
    }
  }
  bool done() const noexcept { return state_.load(std::memory_order_acquire) == LookedUp; }

private:
  enum : int { NotLookedUp, LookingUp, LookedUp };
  std::atomic<int> state_{NotLookedUp};
};

} // namespace hotscope::unwind::detail
