// The real lock functions (locks.hpp, detail::Real). Each pointer starts at a trampoline that
// looks all of them up (dlsym RTLD_NEXT: the definition after the interposer's, glibc's) and then
// calls the real one: a constant initialiser, so it is right from the first call, even from
// another library's constructor that runs before this one's, with no check on the way.
#include "locks/locks.hpp"

#include <dlfcn.h>
#include <errno.h>

namespace hotscope::locks::detail {
namespace {

#if HOTSCOPE_LOCKS_INTERPOSE
void resolve_all() noexcept;

template <class F> struct Call;
template <class R, class... A> struct Call<R (*)(A...)> {
  template <R (*Real::*member)(A...)> static R first(A... arguments) {
    resolve_all();
    return (real.*member)(arguments...);
  }
  // A function this glibc lacks: the program, linked with this glibc, never calls it.
  static R missing(A...) { return ENOSYS; }
};

template <class F> void look_up(F& function, const char* name) {
  if (void* found = dlsym(RTLD_NEXT, name)) {
    function = reinterpret_cast<F>(found); // the default version: pthread_cond_wait@@GLIBC_2.3.2
  } else {
    function = &Call<F>::missing;
  }
}

// Two threads may both get here first: they store the same pointers.
void resolve_all() noexcept {
  look_up(real.mutex_lock, "pthread_mutex_lock");
  look_up(real.mutex_trylock, "pthread_mutex_trylock");
  look_up(real.mutex_unlock, "pthread_mutex_unlock");
  look_up(real.mutex_timedlock, "pthread_mutex_timedlock");
  look_up(real.mutex_clocklock, "pthread_mutex_clocklock");
  look_up(real.rwlock_rdlock, "pthread_rwlock_rdlock");
  look_up(real.rwlock_wrlock, "pthread_rwlock_wrlock");
  look_up(real.rwlock_tryrdlock, "pthread_rwlock_tryrdlock");
  look_up(real.rwlock_trywrlock, "pthread_rwlock_trywrlock");
  look_up(real.rwlock_timedrdlock, "pthread_rwlock_timedrdlock");
  look_up(real.rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
  look_up(real.rwlock_clockrdlock, "pthread_rwlock_clockrdlock");
  look_up(real.rwlock_clockwrlock, "pthread_rwlock_clockwrlock");
  look_up(real.rwlock_unlock, "pthread_rwlock_unlock");
  look_up(real.cond_wait, "pthread_cond_wait");
  look_up(real.cond_timedwait, "pthread_cond_timedwait");
  look_up(real.cond_clockwait, "pthread_cond_clockwait");
}

#define HOTSCOPE_REAL(member) &Call<decltype(Real::member)>::template first<&Real::member>
#else
#define HOTSCOPE_REAL(member) &pthread_##member
#endif

} // namespace

Real real = {
    HOTSCOPE_REAL(mutex_lock),         HOTSCOPE_REAL(mutex_trylock),
    HOTSCOPE_REAL(mutex_unlock),       HOTSCOPE_REAL(mutex_timedlock),
    HOTSCOPE_REAL(mutex_clocklock),    HOTSCOPE_REAL(rwlock_rdlock),
    HOTSCOPE_REAL(rwlock_wrlock),      HOTSCOPE_REAL(rwlock_tryrdlock),
    HOTSCOPE_REAL(rwlock_trywrlock),   HOTSCOPE_REAL(rwlock_timedrdlock),
    HOTSCOPE_REAL(rwlock_timedwrlock), HOTSCOPE_REAL(rwlock_clockrdlock),
    HOTSCOPE_REAL(rwlock_clockwrlock), HOTSCOPE_REAL(rwlock_unlock),
    HOTSCOPE_REAL(cond_wait),          HOTSCOPE_REAL(cond_timedwait),
    HOTSCOPE_REAL(cond_clockwait),
};

} // namespace hotscope::locks::detail
