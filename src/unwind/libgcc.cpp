#include "unwind/unwind.hpp"

#include <dlfcn.h>

#include <atomic>

namespace hotscope::unwind {
namespace {

Libgcc libgcc;
enum : int { NotLookedUp, LookingUp, LookedUp };
std::atomic<int> libgcc_state{NotLookedUp};

// Whether the _Unwind_* this object calls are inside it: libgcc's, linked with -static-libgcc
// into a library that does not link libunwind (the heap preload library).
bool linked_in() {
  Dl_info own{};
  Dl_info unwinder{};
  return dladdr(reinterpret_cast<const void*>(&linked_in), &own) != 0 &&
         dladdr(reinterpret_cast<const void*>(&_Unwind_Backtrace), &unwinder) != 0 &&
         own.dli_fbase == unwinder.dli_fbase;
}

void look_up() {
  if (linked_in()) {
    libgcc = Libgcc{_Unwind_Backtrace, _Unwind_GetIPInfo, _Unwind_GetCFA};
    return;
  }
  // A C program may not have loaded it: glibc loads it the same way for pthread_cancel. Local to
  // this lookup.
  void* library = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return;
  }
  libgcc.backtrace =
      reinterpret_cast<decltype(libgcc.backtrace)>(dlsym(library, "_Unwind_Backtrace"));
  libgcc.ip_info = reinterpret_cast<decltype(libgcc.ip_info)>(dlsym(library, "_Unwind_GetIPInfo"));
  libgcc.cfa = reinterpret_cast<decltype(libgcc.cfa)>(dlsym(library, "_Unwind_GetCFA"));
}

} // namespace

const Libgcc* find_libgcc() noexcept {
  int state = libgcc_state.load(std::memory_order_acquire);
  if (state == NotLookedUp && libgcc_state.compare_exchange_strong(state, LookingUp)) {
    look_up();
    libgcc_state.store(LookedUp, std::memory_order_release);
  }
  return libgcc_if_found();
}

const Libgcc* libgcc_if_found() noexcept {
  const bool usable = libgcc_state.load(std::memory_order_acquire) == LookedUp &&
                      libgcc.backtrace != nullptr && libgcc.ip_info != nullptr &&
                      libgcc.cfa != nullptr;
  return usable ? &libgcc : nullptr;
}

} // namespace hotscope::unwind
