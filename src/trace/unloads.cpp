// Shared libraries unloaded while records that point into them wait in the rings
// (docs/architecture.md, "The collector"): dlclose() drains every ring before the library goes,
// and the collector notices each unload through the loader's count of them.
#include "trace/trace.hpp"

#include <cstddef>
#include <dlfcn.h>
#include <link.h>

namespace hotscope::trace {

std::uint64_t objects_unloaded() noexcept {
  std::uint64_t unloaded = 0;
  // Takes only the loader's list lock, which no thread holds while it runs the program's code:
  // safe under the collector's lock while another thread waits in dlclose().
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t size, void* out) {
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
          *static_cast<std::uint64_t*>(out) = info->dlpi_subs;
        }
        return 1; // the counts are the same in every entry
      },
      &unloaded);
  return unloaded;
}

} // namespace hotscope::trace

// Interposes the C library's dlclose(): each location in the library's static data is read while
// it is still mapped. The drain runs before the real dlclose(), so outside the loader's lock.
extern "C" __attribute__((visibility("default"))) int dlclose(void* handle) {
  using Close = int (*)(void*);
  static const auto real = reinterpret_cast<Close>(dlsym(RTLD_NEXT, "dlclose"));
  hotscope::trace::before_unload();
  return real(handle);
}
