// What the interposed functions do (locks.hpp): a try first, and records only when it fails, when
// locks nest, or in the hold mode. Everything that writes runs under Quiet, so the locks taken by
// the ring's registration, libunwind or the heap library pass straight through.
#include "locks/locks.hpp"

#include "unwind/unwind.hpp"

#include <hotscope/hotscope.hpp>

#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <unwind.h>

#include <cstring>
#include <iterator>

namespace hotscope::locks {

using detail::tls_locks;

// Here, with what the interposed functions call: the runtime, which calls it, takes this file
// out of libhotscope, so that the pthread functions linked after libhotscope find it.
void start(Mode mode) noexcept {
  if (mode != Mode::Off) {
    unwind::find_libgcc(); // here, where the loader may be entered: never on a lock's path
  }
  detail::mode.store(mode, std::memory_order_relaxed);
}

namespace {

constexpr std::uintptr_t kRecorded = 1;
constexpr std::uint32_t kStackSkipMax = 8; // the interposer's own frames above the caller's

bool hold_mode() noexcept {
  return detail::mode.load(std::memory_order_relaxed) == Mode::Hold;
}

// Records go only into a ring the thread has: registering one takes the profiler's locks, which
// the thread may hold (a snapshot, fork's handlers), so only take_ring() registers, where that is
// safe. And never while the thread is quiet.
bool may_record() noexcept {
  return tls_locks.quiet == 0 && hotscope::detail::tls_ring != nullptr;
}

// A thread's first acquisition, holding no lock it took here, registers its ring, which its
// later records need: the profiler's locks a registration takes cannot be held then. Not again
// after the thread's exit handler took its ring (its last locks are not worth a new ring).
[[gnu::noinline]] void take_ring() noexcept {
  if (tls_locks.held_count == 0 && tls_locks.quiet == 0 && tls_locks.ring_taken == 0) {
    const Quiet quiet;
    tls_locks.ring_taken = 1;
    hotscope::detail::current_ring();
  }
}

std::uint64_t ref_of(bool rwlock) noexcept {
  return rwlock ? HOTSCOPE_LOCK_REF_PTHREAD_RWLOCK : HOTSCOPE_LOCK_REF_PTHREAD_MUTEX;
}

// A thread walks its first kLibgccWalks stacks with libgcc's unwinder, which keeps no memory
// (unwind.hpp), then with unw_backtrace, about ten times faster but with a trace cache of 256 KiB
// per thread, written at its first call: a program of many short threads that wait for locks
// never pays for those caches, one that waits often soon walks at unw_backtrace's speed.
constexpr std::uint32_t kLibgccWalks = 1024;

// The calling thread's stack from the program's frame at `caller` out, into `frames`.
std::uint32_t capture_stack(const void* caller, std::uint64_t* frames) noexcept {
  std::uintptr_t raw[HOTSCOPE_STACK_FRAMES_MAX + kStackSkipMax];
#if defined(__SANITIZE_THREAD__)
  // Under TSan, always libgcc's walk: libunwind's per-thread cache locks a mutex in its destructor
  // at thread exit, where TSan no longer follows the thread (and crashes).
  const unwind::Libgcc linked{_Unwind_Backtrace, _Unwind_GetIPInfo, _Unwind_GetCFA};
  const std::size_t got = unwind::backtrace(linked, raw);
#else
  const unwind::Libgcc* libgcc =
      tls_locks.libgcc_walks < kLibgccWalks ? unwind::libgcc_if_found() : nullptr;
  std::size_t got = 0;
  if (libgcc != nullptr) {
    ++tls_locks.libgcc_walks;
    got = unwind::backtrace(*libgcc, raw);
  } else {
    got = static_cast<std::size_t>(
        unw_backtrace(reinterpret_cast<void**>(raw), static_cast<int>(std::size(raw))));
  }
#endif
  const auto program = reinterpret_cast<std::uintptr_t>(caller);
  std::size_t first = 0;
  while (first < got && first < kStackSkipMax && raw[first] != program) {
    ++first;
  }
  if (first == got || raw[first] != program) {
    first = 0;
  }
  std::uint32_t count = 0;
  for (std::size_t i = first; i < got && count < HOTSCOPE_STACK_FRAMES_MAX; ++i) {
    frames[count++] = raw[i];
  }
  return count;
}

// A pair of nested locks not sent yet from this thread (then it is marked sent).
bool new_pair(std::uintptr_t outer, std::uintptr_t inner) noexcept {
  std::uint64_t hash = (outer * 0x9E3779B97F4A7C15ull) ^ (inner * 0xC2B2AE3D27D4EB4Full);
  hash ^= hash >> 29;
  const auto tag = static_cast<std::uint32_t>(hash >> 32) | 1u;
  std::uint32_t& slot = tls_locks.pairs[hash % detail::kPairSlots];
  if (slot == tag) {
    return false;
  }
  slot = tag;
  return true;
}

std::uintptr_t innermost_held() noexcept {
  const std::uint32_t count = tls_locks.held_count;
  return count == 0 ? 0 : tls_locks.held[count - 1] & ~kRecorded;
}

void push_held(std::uintptr_t entry) noexcept {
  if (tls_locks.held_count < detail::kHeldMax) {
    tls_locks.held[tls_locks.held_count++] = entry;
  }
}

// Takes the lock's innermost entry off the held stack: its entry, or 0 when it is not there.
std::uintptr_t pop_held(std::uintptr_t lock) noexcept {
  std::uint32_t i = tls_locks.held_count;
  while (i > 0 && (tls_locks.held[i - 1] & ~kRecorded) != lock) {
    --i;
  }
  if (i == 0) {
    return 0;
  }
  const std::uintptr_t entry = tls_locks.held[i - 1];
  std::memmove(&tls_locks.held[i - 1], &tls_locks.held[i],
               (tls_locks.held_count - i) * sizeof tls_locks.held[0]);
  --tls_locks.held_count;
  return entry;
}

// LOCK_ORDER and its stack when the thread takes `lock` inside another for the first time.
[[gnu::noinline]] void note_order(std::uintptr_t lock, const void* caller) noexcept {
  const std::uintptr_t outer = innermost_held();
  if (outer == 0 || outer == lock || !may_record() || !new_pair(outer, lock)) {
    return;
  }
  const Quiet quiet;
  hotscope::detail::write_single(outer, lock, HOTSCOPE_RECORD_LOCK_ORDER);
  std::uint64_t frames[HOTSCOPE_STACK_FRAMES_MAX];
  hotscope::detail::write_stack(frames, capture_stack(caller, frames));
}

// The thread holds `lock` now; `waited`: it was contended (its LOCK_WAIT is written).
[[gnu::noinline]] void acquired(std::uintptr_t lock, bool rwlock, bool shared,
                                bool waited) noexcept {
  std::uintptr_t entry = lock;
  if ((waited || hold_mode()) && may_record()) {
    const Quiet quiet;
    hotscope::detail::write_single(ref_of(rwlock), lock,
                                   shared ? HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED
                                          : HOTSCOPE_RECORD_LOCK_ACQUIRE);
    entry |= kRecorded;
  }
  push_held(entry);
}

// Before a wait: LOCK_WAIT, the holder the lock names, the waiter's stack (may_record() is
// checked by the caller).
void begin_wait(std::uintptr_t lock, bool rwlock, std::uint64_t holder_tid,
                const void* caller) noexcept {
  const Quiet quiet;
  const std::uint64_t ref = ref_of(rwlock);
  hotscope::detail::write_single(ref, lock, HOTSCOPE_RECORD_LOCK_WAIT);
  hotscope::detail::write_single(holder_tid, lock, HOTSCOPE_RECORD_LOCK_HOLDER);
  std::uint64_t frames[HOTSCOPE_STACK_FRAMES_MAX];
  hotscope::detail::write_stack(frames, capture_stack(caller, frames));
}

void write_plain(std::uintptr_t lock, bool rwlock, std::uint32_t kind) noexcept {
  const Quiet quiet;
  hotscope::detail::write_single(ref_of(rwlock), lock, kind);
}

// An acquisition that records nothing: the lock joins the held list.
inline void acquired_quietly(std::uintptr_t lock) noexcept {
  detail::ThreadLocks& thread = tls_locks;
  if (__builtin_expect(thread.held_count < detail::kHeldMax, 1)) {
    thread.held[thread.held_count++] = lock;
  }
}

// Before the lock is given back: its RELEASE when its acquisition was recorded, while the thread
// still has its ring (a record after the thread's exit handler would register a new one).
[[gnu::noinline]] void released_slowly(std::uintptr_t lock, bool rwlock) noexcept {
  const std::uintptr_t entry = pop_held(lock);
  if ((entry & kRecorded) != 0 && hotscope::detail::tls_ring != nullptr) {
    write_plain(lock, rwlock, HOTSCOPE_RECORD_LOCK_RELEASE);
  }
}

// The common case first: the innermost lock, its acquisition not recorded.
inline void released(std::uintptr_t lock, bool rwlock) noexcept {
  detail::ThreadLocks& thread = tls_locks;
  const std::uint32_t count = thread.held_count;
  if (__builtin_expect(count != 0 && thread.held[count - 1] == lock, 1)) {
    thread.held_count = static_cast<std::uint16_t>(count - 1);
    return;
  }
  released_slowly(lock, rwlock);
}

bool acquired_code(int result) noexcept {
  return result == 0 || result == EOWNERDEAD;
}

std::uint64_t owner_of(const pthread_mutex_t* mutex) noexcept {
#if defined(__GLIBC__)
  return static_cast<std::uint32_t>(mutex->__data.__owner);
#else
  (void)mutex;
  return 0;
#endif
}

std::uint64_t writer_of(const pthread_rwlock_t* rwlock) noexcept {
#if defined(__GLIBC__)
  return static_cast<std::uint32_t>(rwlock->__data.__cur_writer);
#else
  (void)rwlock;
  return 0;
#endif
}

// A blocking acquisition whose try failed with `result`: on EBUSY the wait is recorded around
// `block()`. `holder`: the thread the lock names as its owner, read as the wait begins.
template <class Holder, class Block>
[[gnu::noinline]] int acquire_after_try(int result, std::uintptr_t lock, bool rwlock, bool shared,
                                        Holder holder, Block block, const void* caller) noexcept {
  if (acquired_code(result)) { // EOWNERDEAD: a robust mutex's owner died
    acquired(lock, rwlock, shared, false);
    return result;
  }
  const bool recorded = result == EBUSY && may_record();
  if (recorded) {
    begin_wait(lock, rwlock, holder(), caller);
  }
  result = block();
  if (acquired_code(result)) {
    acquired(lock, rwlock, shared, recorded);
  } else if (recorded) {
    write_plain(lock, rwlock, HOTSCOPE_RECORD_LOCK_TRY_FAIL); // timed out, or refused
  }
  return result;
}

// A blocking acquisition of any kind: the try first, and nothing else when it succeeds.
template <class Try, class Holder, class Block>
inline int acquire(std::uintptr_t lock, bool rwlock, bool shared, Try try_lock, Holder holder,
                   Block block, const void* caller) noexcept {
  if (__builtin_expect(hotscope::detail::tls_ring == nullptr, 0)) {
    take_ring();
  }
  if (__builtin_expect(tls_locks.held_count != 0, 0)) {
    note_order(lock, caller);
  }
  const int result = try_lock();
  if (__builtin_expect(result == 0 && !hold_mode(), 1)) {
    acquired_quietly(lock);
    return 0;
  }
  if (result == 0) {
    acquired(lock, rwlock, shared, false);
    return 0;
  }
  return acquire_after_try(result, lock, rwlock, shared, holder, block, caller);
}

int try_result(int result, std::uintptr_t lock, bool rwlock, bool shared) noexcept {
  if (__builtin_expect(hotscope::detail::tls_ring == nullptr, 0)) {
    take_ring();
  }
  if (__builtin_expect(result == 0 && !hold_mode(), 1)) {
    acquired_quietly(lock);
  } else if (acquired_code(result)) {
    acquired(lock, rwlock, shared, false);
  } else if (result == EBUSY && may_record()) {
    write_plain(lock, rwlock, HOTSCOPE_RECORD_LOCK_TRY_FAIL);
  }
  return result;
}

} // namespace

int mutex_lock(pthread_mutex_t* mutex, const void* caller) noexcept {
  return acquire(
      reinterpret_cast<std::uintptr_t>(mutex), false, false,
      [mutex] { return detail::real.mutex_trylock(mutex); }, [mutex] { return owner_of(mutex); },
      [mutex] { return detail::real.mutex_lock(mutex); }, caller);
}

int mutex_trylock(pthread_mutex_t* mutex) noexcept {
  return try_result(detail::real.mutex_trylock(mutex), reinterpret_cast<std::uintptr_t>(mutex),
                    false, false);
}

int mutex_timedlock(pthread_mutex_t* mutex, clockid_t clock, const timespec* deadline,
                    bool with_clock, const void* caller) noexcept {
  return acquire(
      reinterpret_cast<std::uintptr_t>(mutex), false, false,
      [mutex] { return detail::real.mutex_trylock(mutex); }, [mutex] { return owner_of(mutex); },
      [=] {
        return with_clock ? detail::real.mutex_clocklock(mutex, clock, deadline)
                          : detail::real.mutex_timedlock(mutex, deadline);
      },
      caller);
}

int mutex_unlock(pthread_mutex_t* mutex) noexcept {
  released(reinterpret_cast<std::uintptr_t>(mutex), false);
  return detail::real.mutex_unlock(mutex);
}

int rwlock_lock(pthread_rwlock_t* rwlock, bool shared, const void* caller) noexcept {
  return acquire(
      reinterpret_cast<std::uintptr_t>(rwlock), true, shared,
      [=] {
        return shared ? detail::real.rwlock_tryrdlock(rwlock)
                      : detail::real.rwlock_trywrlock(rwlock);
      },
      [rwlock] { return writer_of(rwlock); },
      [=] {
        return shared ? detail::real.rwlock_rdlock(rwlock) : detail::real.rwlock_wrlock(rwlock);
      },
      caller);
}

int rwlock_trylock(pthread_rwlock_t* rwlock, bool shared) noexcept {
  const int result =
      shared ? detail::real.rwlock_tryrdlock(rwlock) : detail::real.rwlock_trywrlock(rwlock);
  return try_result(result, reinterpret_cast<std::uintptr_t>(rwlock), true, shared);
}

int rwlock_timedlock(pthread_rwlock_t* rwlock, bool shared, clockid_t clock,
                     const timespec* deadline, bool with_clock, const void* caller) noexcept {
  const detail::Real& r = detail::real;
  return acquire(
      reinterpret_cast<std::uintptr_t>(rwlock), true, shared,
      [=, &r] { return shared ? r.rwlock_tryrdlock(rwlock) : r.rwlock_trywrlock(rwlock); },
      [rwlock] { return writer_of(rwlock); },
      [=, &r] {
        if (with_clock) {
          return shared ? r.rwlock_clockrdlock(rwlock, clock, deadline)
                        : r.rwlock_clockwrlock(rwlock, clock, deadline);
        }
        return shared ? r.rwlock_timedrdlock(rwlock, deadline)
                      : r.rwlock_timedwrlock(rwlock, deadline);
      },
      caller);
}

int rwlock_unlock(pthread_rwlock_t* rwlock) noexcept {
  released(reinterpret_cast<std::uintptr_t>(rwlock), true);
  return detail::real.rwlock_unlock(rwlock);
}

int cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
              const timespec* deadline, bool with_clock) noexcept {
  // The mutex is given back for the wait and taken again after: not contention, and not held.
  const auto lock = reinterpret_cast<std::uintptr_t>(mutex);
  released(lock, false);
  const detail::Real& r = detail::real;
  const int result = deadline == nullptr ? r.cond_wait(cond, mutex)
                     : with_clock        ? r.cond_clockwait(cond, mutex, clock, deadline)
                                         : r.cond_timedwait(cond, mutex, deadline);
  if (__builtin_expect(!hold_mode(), 1)) {
    acquired_quietly(lock);
  } else {
    acquired(lock, false, false, false);
  }
  return result;
}

} // namespace hotscope::locks
