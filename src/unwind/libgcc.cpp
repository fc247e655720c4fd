#include "unwind/unwind.hpp"

#include "unwind/look_up_once.hpp"

#include <dlfcn.h>

namespace hotscope::unwind {
namespace {

Libgcc libgcc;
detail::LookUpOnce libgcc_lookup;

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
  libgcc_lookup.run(look_up);
  return libgcc_if_found();
}

const Libgcc* libgcc_if_found() noexcept {
  const bool usable = libgcc_lookup.done() && libgcc.backtrace != nullptr &&
                      libgcc.ip_info != nullptr && libgcc.cfa != nullptr;
  return usable ? &libgcc : nullptr;
}

} // namespace hotscope::unwind
