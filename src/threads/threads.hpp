// The profiler's own threads: they take none of the program's signals (a program that blocks a
// signal in all its threads to sigwait() for it must not find it delivered to one of ours, where
// its default action may end the process), and its collectors sleep on a Doorbell that the
// program's threads ring when their rings fill. And the reports at an exit() called by a signal
// handler: the code it interrupted may hold any lock for ever, the allocator's among them, so the
// exiting thread waits for threads that write them only while they work. Header-only: the heap
// libraries use it too.
#pragma once

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
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
// with every signal blocked, from their first instruction. All but the faults: one the kernel
// raises while it is blocked ends the process at once, where the crash report (docs/crash.md)
// would have run.
class SignalsBlocked {
public:
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    for (const int fault : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) {
      sigdelset(&all, fault);
    }
    pthread_sigmask(SIG_SETMASK, &all, &before_);
  }
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

private:
  sigset_t before_;
};

// The profiler's own threads of one library, by thread id, while they run: a listing of an
// unmodified program's threads leaves them out (docs/heap.md, "Live: a program under `hotscope run
// --heap`"). Fixed room, no lock, no allocation: a thread finding it full goes unmarked.
class OwnThreads {
public:
  static constexpr int capacity = 64;
  // Marks the calling thread; unmark() with the slot returned (-1: not marked).
  int mark() noexcept {
    const auto tid = static_cast<std::int32_t>(syscall(SYS_gettid));
    for (int slot = 0; slot < capacity; ++slot) {
      std::int32_t free_slot = 0;
      if (tids_[slot].compare_exchange_strong(free_slot, tid, std::memory_order_acq_rel)) {
        return slot;
      }
    }
    return -1;
  }
  void unmark(int slot) noexcept {
    if (slot >= 0) {
      tids_[slot].store(0, std::memory_order_release);
    }
  }
  bool contains(std::int64_t tid) const noexcept {
    for (const std::atomic<std::int32_t>& each : tids_) {
      if (tid != 0 && each.load(std::memory_order_acquire) == tid) {
        return true;
      }
    }
    return false;
  }

private:
  std::atomic<std::int32_t> tids_[capacity]{};
};

// The registry of the object this header is compiled into (libhotscope or libhotscope-run.so, and
// each heap library, which answers for its own through hotscope_heap_own_thread).
inline OwnThreads& own_threads() noexcept {
  static OwnThreads registry;
  return registry;
}

// Marks the calling thread as the profiler's while it lives.
class OwnThread {
public:
  OwnThread() noexcept : slot_(own_threads().mark()) {}
  ~OwnThread() { own_threads().unmark(slot_); }
  OwnThread(const OwnThread&) = delete;
  OwnThread& operator=(const OwnThread&) = delete;

private:
  int slot_;
};

// The threads that write a process's reports at exit, each counted in by itself, and whether they
// are done. The exit waits for them with wait_while_working.
class ReportWriters {
public:
  // Counts the calling thread in (two threads at most).
  void join() noexcept {
    clockid_t clock;
    const int slot = joined_.fetch_add(1, std::memory_order_relaxed);
    if (slot < capacity && pthread_getcpuclockid(pthread_self(), &clock) == 0) {
      clocks_[slot] = clock;
      set_[slot].store(true, std::memory_order_release);
    }
  }
  void finished() noexcept {
    done_.store(true, std::memory_order_release);
    bell_.ring();
  }
  // Waits until they are finished, as long as they spend CPU time: a thread that waits for a lock
  // held by the code a signal handler interrupted spends none. False after `patience_ns` without.
  // Allocates nothing.
  bool wait_while_working(std::uint64_t patience_ns) noexcept {
    constexpr std::uint64_t look_ns = 20'000'000;
    std::uint64_t spent_ns = cpu_ns();
    std::uint64_t idle_ns = 0;
    while (!done_.load(std::memory_order_acquire)) {
      bell_.wait_for(look_ns);
      if (const std::uint64_t now_spent_ns = cpu_ns(); now_spent_ns != spent_ns) {
        spent_ns = now_spent_ns;
        idle_ns = 0;
      } else if ((idle_ns += look_ns) >= patience_ns) {
        return done_.load(std::memory_order_acquire);
      }
    }
    return true;
  }

private:
  // Their CPU time so far, without the threads that ended.
  std::uint64_t cpu_ns() const noexcept {
    std::uint64_t total = 0;
    for (int slot = 0; slot < capacity; ++slot) {
      timespec spent{};
      if (set_[slot].load(std::memory_order_acquire) && clock_gettime(clocks_[slot], &spent) == 0) {
        total += static_cast<std::uint64_t>(spent.tv_sec) * 1'000'000'000 +
                 static_cast<std::uint64_t>(spent.tv_nsec);
      }
    }
    return total;
  }

  static constexpr int capacity = 2;
  std::atomic<int> joined_{0};
  clockid_t clocks_[capacity]{};
  std::atomic<bool> set_[capacity]{};
  std::atomic<bool> done_{false};
  Doorbell bell_;
};

} // namespace hotscope::threads
