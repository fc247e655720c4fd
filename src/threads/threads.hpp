// The profiler's own threads: they take none of the program's signals (a program that blocks a
// signal in all its threads to sigwait() for it must not find it delivered to one of ours, where
// its default action may end the process), and its collectors sleep on a Doorbell that the
// program's threads ring when their rings fill. Header-only: the heap libraries use it too.
#pragma once

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

namespace hotscope::threads {

// One thread sleeps on it for a while, others wake it sooner: a futex word. Ringing makes a system
// call only when the word was clear, so the first of many rings between two sleeps pays it.
class Doorbell {
public:
  void ring() noexcept {
    if (word_.exchange(1, std::memory_order_acq_rel) == 0) {
      syscall(SYS_futex, &word_, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
    }
  }
  // Sleeps up to `timeout_ns` unless it was rung since the last call (a signal ends it too).
  // True when it was rung; the ring is answered, so the next call sleeps again.
  bool wait_for(std::uint64_t timeout_ns) noexcept {
    const timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000),
                           static_cast<long>(timeout_ns % 1'000'000'000)};
    syscall(SYS_futex, &word_, FUTEX_WAIT_PRIVATE, 0, &timeout, nullptr, 0);
    return word_.exchange(0, std::memory_order_acq_rel) == 1;
  }

private:
  std::atomic<std::uint32_t> word_{0};
};

// Blocks every signal in the calling thread while it lives: threads started meanwhile start
// with every signal blocked, from their first instruction.
class SignalsBlocked {
public:
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before_);
  }
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

private:
  sigset_t before_;
};

} // namespace hotscope::threads
