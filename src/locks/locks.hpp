// The pthread lock interposer (docs/locks.md, "Interposed mode"): pthread_mutex_*, pthread_rwlock_*
// and pthread_cond_*wait, defined in interposer.cpp, forward to glibc's and record into the calling
// thread's ring its contended acquisitions (LOCK_WAIT, LOCK_HOLDER, STACK, LOCK_ACQUIRE), its
// failed try-locks and the order in which it nests locks (LOCK_ORDER, STACK). Off until start().
#pragma once

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdint>

namespace hotscope::locks {

// HOTSCOPE_LOCKS: 0, 1 (contended acquisitions, try-lock failures, orders) or `hold` (every
// acquisition and release too: hold times).
enum class Mode : std::uint8_t { Off, Contended, Hold };

// Records in `mode` from now on (Off: records nothing more).
void start(Mode mode) noexcept;

// The calling thread is the profiler's own for the rest of its life (the collector, the agent's
// threads: they lock the profiler's mutexes): nothing it locks is recorded.
void own_thread() noexcept;

namespace detail {

// Locks the thread holds, innermost last, that it took through the interposer; deeper nesting
// is not followed. A pair of nested locks is recorded once per thread (a direct-mapped cache of
// the pairs sent: a pair evicted by another may be sent again).
constexpr std::uint32_t kHeldMax = 8;
constexpr std::uint32_t kPairSlots = 32;

// Zero-initialised, as a __thread variable must be.
struct ThreadLocks {
  std::uint32_t quiet; // > 0: nothing is recorded (own_thread, Quiet)
  std::uint16_t held_count;
  std::uint16_t ring_taken;      // 1 once the interposer registered the thread's ring
  std::uintptr_t held[kHeldMax]; // a lock's address | 1 when its ACQUIRE was recorded
  std::uint32_t pairs[kPairSlots];
  std::uint32_t libgcc_walks; // stacks walked with libgcc's unwinder (recording.cpp)
};

extern std::atomic<Mode> mode;
inline bool off() noexcept {
  return __builtin_expect(mode.load(std::memory_order_relaxed) == Mode::Off, 1);
}
// The real functions: glibc's (the next definition after the interposer's), each looked up on
// its first call; in a sanitizer build the sanitizer's.
struct Real {
  using Mutex = pthread_mutex_t*;
  using Rwlock = pthread_rwlock_t*;
  using Deadline = const timespec*;
  int (*mutex_lock)(Mutex);
  int (*mutex_trylock)(Mutex);
  int (*mutex_unlock)(Mutex);
  int (*mutex_timedlock)(Mutex, Deadline);
  int (*mutex_clocklock)(Mutex, clockid_t, Deadline);
  int (*rwlock_rdlock)(Rwlock);
  int (*rwlock_wrlock)(Rwlock);
  int (*rwlock_tryrdlock)(Rwlock);
  int (*rwlock_trywrlock)(Rwlock);
  int (*rwlock_timedrdlock)(Rwlock, Deadline);
  int (*rwlock_timedwrlock)(Rwlock, Deadline);
  int (*rwlock_clockrdlock)(Rwlock, clockid_t, Deadline);
  int (*rwlock_clockwrlock)(Rwlock, clockid_t, Deadline);
  int (*rwlock_unlock)(Rwlock);
  int (*cond_wait)(pthread_cond_t*, Mutex);
  int (*cond_timedwait)(pthread_cond_t*, Mutex, Deadline);
  int (*cond_clockwait)(pthread_cond_t*, Mutex, clockid_t, Deadline);
};
extern Real real;
extern __thread ThreadLocks tls_locks __attribute__((tls_model("initial-exec")));

} // namespace detail

// While one lives the calling thread records nothing of its locks: the profiler's code on a
// program's thread (registering its ring, writing records), whose locks are not the program's
// and must not be recorded from inside a record. Nests.
class Quiet {
public:
  Quiet() noexcept { ++detail::tls_locks.quiet; }
  ~Quiet() { --detail::tls_locks.quiet; }
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;
};

// The work of the interposed functions when the mode is not Off, over the real ones (glibc's; in a
// sanitizer build the sanitizer's, as the pthread functions are not interposed there). `caller`:
// the program's return address, where the recorded stacks begin.
int mutex_lock(pthread_mutex_t* mutex, const void* caller) noexcept;
int mutex_trylock(pthread_mutex_t* mutex) noexcept;
int mutex_timedlock(pthread_mutex_t* mutex, clockid_t clock, const timespec* deadline,
                    bool with_clock, const void* caller) noexcept;
int mutex_unlock(pthread_mutex_t* mutex) noexcept;
int rwlock_lock(pthread_rwlock_t* rwlock, bool shared, const void* caller) noexcept;
int rwlock_trylock(pthread_rwlock_t* rwlock, bool shared) noexcept;
int rwlock_timedlock(pthread_rwlock_t* rwlock, bool shared, clockid_t clock,
                     const timespec* deadline, bool with_clock, const void* caller) noexcept;
int rwlock_unlock(pthread_rwlock_t* rwlock) noexcept;
// deadline null: pthread_cond_wait.
int cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
              const timespec* deadline, bool with_clock) noexcept;

} // namespace hotscope::locks
