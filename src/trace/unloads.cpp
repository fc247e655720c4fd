// Shared libraries unloaded while records that point into them wait in the rings
// (docs/architecture.md, "The collector"): dlclose() drains every ring before the library goes,
// and the collector notices each unload through the loader's count of them.
#include "trace/trace.hpp"

#include <dlfcn.h>

// Interposes the C library's dlclose(): each location in the library's static data is read while
// it is still mapped. The drain runs before the real dlclose(), so outside the loader's lock.
extern "C" __attribute__((visibility("default"))) int dlclose(void* handle) {
  using Close = int (*)(void*);
  static const auto real = reinterpret_cast<Close>(dlsym(RTLD_NEXT, "dlclose"));
  hotscope::trace::before_unload();
  return real(handle);
}
