// The interposed pthread functions (locks.hpp): off, one predictable branch and glibc's own
// function; on, recording.cpp's.
#include "locks/locks.hpp"

namespace locks = hotscope::locks;

using hotscope::locks::detail::off;
using hotscope::locks::detail::real;

#define HOTSCOPE_EXPORT extern "C" __attribute__((visibility("default")))

HOTSCOPE_EXPORT int pthread_mutex_lock(pthread_mutex_t* mutex) noexcept {
  if (off()) {
    return real.mutex_lock(mutex);
  }
  return locks::mutex_lock(mutex, __builtin_return_address(0));
}

HOTSCOPE_EXPORT int pthread_mutex_trylock(pthread_mutex_t* mutex) noexcept {
  if (off()) {
    return real.mutex_trylock(mutex);
  }
  return locks::mutex_trylock(mutex);
}

HOTSCOPE_EXPORT int pthread_mutex_unlock(pthread_mutex_t* mutex) noexcept {
  if (off()) {
    return real.mutex_unlock(mutex);
  }
  return locks::mutex_unlock(mutex);
}

HOTSCOPE_EXPORT int pthread_mutex_timedlock(pthread_mutex_t* mutex,
                                            const timespec* deadline) noexcept {
  if (off()) {
    return real.mutex_timedlock(mutex, deadline);
  }
  return locks::mutex_timedlock(mutex, CLOCK_REALTIME, deadline, false,
                                __builtin_return_address(0));
}

HOTSCOPE_EXPORT int pthread_mutex_clocklock(pthread_mutex_t* mutex, clockid_t clock,
                                            const timespec* deadline) noexcept {
  if (off()) {
    return real.mutex_clocklock(mutex, clock, deadline);
  }
  return locks::mutex_timedlock(mutex, clock, deadline, true, __builtin_return_address(0));
}

HOTSCOPE_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t* rwlock) noexcept {
  if (off()) {
    return real.rwlock_rdlock(rwlock);
  }
  return locks::rwlock_lock(rwlock, true, __builtin_return_address(0));
}

HOTSCOPE_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t* rwlock) noexcept {
  if (off()) {
    return real.rwlock_wrlock(rwlock);
  }
  return locks::rwlock_lock(rwlock, false, __builtin_return_address(0));
}

HOTSCOPE_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t* rwlock) noexcept {
  if (off()) {
    return real.rwlock_tryrdlock(rwlock);
  }
  return locks::rwlock_trylock(rwlock, true);
}

HOTSCOPE_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t* rwlock) noexcept {
  if (off()) {
    return real.rwlock_trywrlock(rwlock);
  }
  return locks::rwlock_trylock(rwlock, false);
}

HOTSCOPE_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t* rwlock,
                                               const timespec* deadline) noexcept {
  if (off()) {
    return real.rwlock_timedrdlock(rwlock, deadline);
  }
  return locks::rwlock_timedlock(rwlock, true, CLOCK_REALTIME, deadline, false,
                                 __builtin_return_address(0));
}

HOTSCOPE_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t* rwlock,
                                               const timespec* deadline) noexcept {
  if (off()) {
    return real.rwlock_timedwrlock(rwlock, deadline);
  }
  return locks::rwlock_timedlock(rwlock, false, CLOCK_REALTIME, deadline, false,
                                 __builtin_return_address(0));
}

HOTSCOPE_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t* rwlock, clockid_t clock,
                                               const timespec* deadline) noexcept {
  if (off()) {
    return real.rwlock_clockrdlock(rwlock, clock, deadline);
  }
  return locks::rwlock_timedlock(rwlock, true, clock, deadline, true, __builtin_return_address(0));
}

HOTSCOPE_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t* rwlock, clockid_t clock,
                                               const timespec* deadline) noexcept {
  if (off()) {
    return real.rwlock_clockwrlock(rwlock, clock, deadline);
  }
  return locks::rwlock_timedlock(rwlock, false, clock, deadline, true, __builtin_return_address(0));
}

HOTSCOPE_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t* rwlock) noexcept {
  if (off()) {
    return real.rwlock_unlock(rwlock);
  }
  return locks::rwlock_unlock(rwlock);
}

HOTSCOPE_EXPORT int pthread_cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex) {
  if (off()) {
    return real.cond_wait(cond, mutex);
  }
  return locks::cond_wait(cond, mutex, CLOCK_REALTIME, nullptr, false);
}

HOTSCOPE_EXPORT int pthread_cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                                           const timespec* deadline) {
  if (off()) {
    return real.cond_timedwait(cond, mutex, deadline);
  }
  return locks::cond_wait(cond, mutex, CLOCK_REALTIME, deadline, false);
}

HOTSCOPE_EXPORT int pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                                           clockid_t clock, const timespec* deadline) {
  if (off()) {
    return real.cond_clockwait(cond, mutex, clock, deadline);
  }
  return locks::cond_wait(cond, mutex, clock, deadline, true);
}
