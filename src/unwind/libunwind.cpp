#include "unwind/unwind.hpp"

#include "unwind/look_up_once.hpp"

#include <dlfcn.h>
#include <link.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h> // its types and names only: the library is loaded at run time

namespace hotscope::unwind {
namespace {

Libunwind libunwind;
detail::LookUpOnce libunwind_lookup;

// dl_iterate_phdr's callback: the executable segment holding libunwind.backtrace.
int note_code(dl_phdr_info* info, std::size_t, void*) {
  const auto address = reinterpret_cast<std::uintptr_t>(libunwind.backtrace);
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    const std::uintptr_t begin = info->dlpi_addr + header.p_vaddr;
    if (header.p_type == PT_LOAD && (header.p_flags & PF_X) != 0 && address >= begin &&
        address < begin + header.p_memsz) {
      libunwind.code_begin = begin;
      libunwind.code_end = begin + header.p_memsz;
      return 1;
    }
  }
  return 0;
}

// The name a libunwind function or variable has in the library (its header maps unw_* to the
// target's names).
#define HOTSCOPE_LIBUNWIND_NAME(name) HOTSCOPE_LIBUNWIND_TEXT(name)
#define HOTSCOPE_LIBUNWIND_TEXT(name) #name

void look_up() {
  void* library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return;
  }
  const auto set_policy = reinterpret_cast<decltype(&unw_set_caching_policy)>(
      dlsym(library, HOTSCOPE_LIBUNWIND_NAME(unw_set_caching_policy)));
  const auto* local_space = static_cast<const unw_addr_space_t*>(
      dlsym(library, HOTSCOPE_LIBUNWIND_NAME(unw_local_addr_space)));
  const auto backtrace = reinterpret_cast<int (*)(void**, int)>(
      dlsym(library, HOTSCOPE_LIBUNWIND_NAME(unw_backtrace)));
  if (set_policy == nullptr || local_space == nullptr || backtrace == nullptr) {
    return;
  }
  // Its default global cache takes a lock that blocks signals (two system calls) on every step.
  set_policy(*local_space, UNW_CACHE_PER_THREAD);
  libunwind.backtrace = backtrace;
  dl_iterate_phdr(note_code, nullptr);
}

} // namespace

const Libunwind* find_libunwind() noexcept {
  libunwind_lookup.run(look_up);
  return libunwind_if_found();
}

const Libunwind* libunwind_if_found() noexcept {
  const bool usable =
      libunwind_lookup.done() && libunwind.backtrace != nullptr && libunwind.code_end != 0;
  return usable ? &libunwind : nullptr;
}

} // namespace hotscope::unwind
