// Attach (`hotscope attach`, docs/heap.md "Attach to a running program"). Loaded by dlopen into a
// running process, this library's allocation functions are reached by nobody: every module's
// calls were bound to the C library's when it loaded. hotscope_heap_attach points the modules'
// GOT entries for them at this library's, as the dynamic loader does for a preloaded library, and
// a thread of the profiler's patches the modules loaded after it; hotscope_heap_detach points them
// back and writes the profile.
#include "heap/interposer/interposer.hpp"
#include "heap/interposer/real_allocator.hpp"
#include "heap/interposer/recording.hpp"
#include "threads/threads.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace interposer = hotscope::heap::interposer;

namespace {

// The functions a preloaded library replaces, pthread_create for the profiler's own threads.
constexpr const char* hooked_names[] = {
    "malloc",        "free",           "calloc", "realloc", "reallocarray",  "memalign",
    "aligned_alloc", "posix_memalign", "valloc", "pvalloc", "pthread_create"};
constexpr std::size_t hooked_count = sizeof(hooked_names) / sizeof(hooked_names[0]);

#if defined(__x86_64__)
constexpr std::uint32_t jump_slot = R_X86_64_JUMP_SLOT;
constexpr std::uint32_t glob_dat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr std::uint32_t jump_slot = R_AARCH64_JUMP_SLOT;
constexpr std::uint32_t glob_dat = R_AARCH64_GLOB_DAT;
#endif

struct Slot {
  std::uintptr_t* entry;
  std::uintptr_t original;
  std::uintptr_t ours; // what the entry holds while attached
};

// Static storage: patching allocates nothing. A process rarely has more than a few hundred.
constexpr std::size_t max_slots = 8192;
HOTSCOPE_LARGE_ZEROED Slot slots[max_slots];
std::size_t slot_count = 0;
bool attached = false;
std::mutex attach_mutex; // slots, attached, patching

struct Patching {
  std::uintptr_t own_base;
  std::uintptr_t ours[hooked_count];
};
Patching patching{};

// Where a module lies and which part of it the loader made read-only after relocating it. Read
// inside dl_iterate_phdr's callback: the loader unloads no module meanwhile.
struct Layout {
  const ElfW(Dyn) * dynamic = nullptr;
  std::uintptr_t begin = UINTPTR_MAX, end = 0; // its loaded segments
  std::uintptr_t relro_begin = 0, relro_end = 0;
  bool holds(const void* address) const {
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    return at >= begin && at < end;
  }
};

Layout layout_of(const dl_phdr_info& info) {
  const auto page_size = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  Layout layout;
  for (ElfW(Half) i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info.dlpi_phdr[i];
    const std::uintptr_t start = info.dlpi_addr + header.p_vaddr;
    if (header.p_type == PT_DYNAMIC) {
      layout.dynamic = reinterpret_cast<const ElfW(Dyn)*>(start);
    } else if (header.p_type == PT_LOAD) {
      layout.begin = std::min(layout.begin, start);
      layout.end = std::max(layout.end, start + header.p_memsz);
    } else if (header.p_type == PT_GNU_RELRO) {
      // The loader protects the whole pages within it.
      layout.relro_begin = start & ~(page_size - 1);
      layout.relro_end = (start + header.p_memsz) & ~(page_size - 1);
    }
  }
  return layout;
}

void write_entry(const Layout& module, std::uintptr_t* entry, std::uintptr_t value) {
  const auto page_size = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto at = reinterpret_cast<std::uintptr_t>(entry);
  const bool read_only = at >= module.relro_begin && at < module.relro_end;
  void* page = reinterpret_cast<void*>(at & ~(page_size - 1));
  if (read_only && mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0) {
    return;
  }
  __atomic_store_n(entry, value, __ATOMIC_RELEASE);
  if (read_only) {
    mprotect(page, page_size, PROT_READ);
  }
}

// An address from the dynamic section: the loader has relocated most entries, not all (vDSO).
std::uintptr_t dynamic_address(std::uintptr_t base, ElfW(Addr) value) {
  return value < base ? base + value : value;
}

// Points the GOT entries of the hooked functions among the relocations [begin, begin + bytes) at
// this library's, but those that point there already (patched at an earlier look, or a GLOB_DAT
// and a JUMP_SLOT relocation of one entry).
void patch_slots(const dl_phdr_info& info, const Layout& module, const ElfW(Rela) * begin,
                 std::size_t bytes, const ElfW(Sym) * symbols, const char* names) {
  for (std::size_t i = 0; i < bytes / sizeof(ElfW(Rela)) && slot_count < max_slots; ++i) {
    const ElfW(Rela)& relocation = begin[i];
    const auto type = static_cast<std::uint32_t>(ELF64_R_TYPE(relocation.r_info));
    if (type != jump_slot && type != glob_dat) {
      continue;
    }
    const char* name = names + symbols[ELF64_R_SYM(relocation.r_info)].st_name;
    for (std::size_t hook = 0; hook < hooked_count; ++hook) {
      if (std::strcmp(name, hooked_names[hook]) != 0) {
        continue;
      }
      auto* entry = reinterpret_cast<std::uintptr_t*>(info.dlpi_addr + relocation.r_offset);
      const std::uintptr_t original = __atomic_load_n(entry, __ATOMIC_ACQUIRE);
      if (original != patching.ours[hook]) {
        slots[slot_count++] = Slot{entry, original, patching.ours[hook]};
        write_entry(module, entry, patching.ours[hook]);
      }
      break;
    }
  }
}

// dl_iterate_phdr's callback: patches one module, unless it is this library or the loader.
int patch_module(dl_phdr_info* info, std::size_t, void*) {
  if (info->dlpi_addr == patching.own_base ||
      std::strstr(info->dlpi_name, "/ld-linux") != nullptr) {
    return 0;
  }
  const Layout module = layout_of(*info);
  if (module.dynamic == nullptr) {
    return 0;
  }
  const ElfW(Sym)* symbols = nullptr;
  const char* names = nullptr;
  const ElfW(Rela)* plt = nullptr;
  const ElfW(Rela)* data = nullptr;
  std::size_t plt_bytes = 0;
  std::size_t data_bytes = 0;
  const std::uintptr_t base = info->dlpi_addr;
  for (const ElfW(Dyn)* entry = module.dynamic; entry->d_tag != DT_NULL; ++entry) {
    const std::uintptr_t address = dynamic_address(base, entry->d_un.d_ptr);
    switch (entry->d_tag) {
    case DT_SYMTAB:
      symbols = reinterpret_cast<const ElfW(Sym)*>(address);
      break;
    case DT_STRTAB:
      names = reinterpret_cast<const char*>(address);
      break;
    case DT_JMPREL:
      plt = reinterpret_cast<const ElfW(Rela)*>(address);
      break;
    case DT_PLTRELSZ:
      plt_bytes = entry->d_un.d_val;
      break;
    case DT_RELA:
      data = reinterpret_cast<const ElfW(Rela)*>(address);
      break;
    case DT_RELASZ:
      data_bytes = entry->d_un.d_val;
      break;
    default:
      break;
    }
  }
  if (symbols == nullptr || names == nullptr) {
    return 0;
  }
  if (plt != nullptr) {
    patch_slots(*info, module, plt, plt_bytes, symbols, names);
  }
  if (data != nullptr) {
    patch_slots(*info, module, data, data_bytes, symbols, names);
  }
  return 0;
}

// dl_iterate_phdr's callback: points the patched entries of one loaded module back. A module
// unloaded since it was patched is not listed, and another loaded where it was holds other values
// (or entries patched later, which are restored first), so no stale entry is written.
int restore_module(dl_phdr_info* info, std::size_t, void*) {
  const Layout module = layout_of(*info);
  for (std::size_t i = slot_count; i-- > 0;) {
    const Slot& slot = slots[i];
    if (module.holds(slot.entry) && __atomic_load_n(slot.entry, __ATOMIC_ACQUIRE) == slot.ours) {
      write_entry(module, slot.entry, slot.original);
    }
  }
  return 0;
}

// The loader's count of the modules it has loaded so far.
unsigned long long modules_loaded() {
  unsigned long long loaded = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* count) {
        *static_cast<unsigned long long*>(count) = info->dlpi_adds;
        return 1;
      },
      &loaded);
  return loaded;
}

// Modules loaded after the attach (a plug-in, a Python extension) are bound to the C library's
// functions: a thread of the profiler's looks at the loader's count every 100 ms and patches the
// new ones. (A hook of dlopen would call the real one from this library, and a dlopen resolves a
// relative name with its caller's RUNPATH.) Each attach starts one; it ends at the detach.
std::atomic<unsigned> attach_generation{0};
hotscope::threads::Doorbell watcher_doorbell;
constexpr std::uint64_t watch_period_ns = 100'000'000;

void* watch_new_modules(void* started_generation) {
  ++interposer::in_profiler;
  const hotscope::threads::OwnThread own;
  const auto generation =
      static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(started_generation));
  // The first look patches again (what is patched already is skipped): a module loaded between
  // the attach's pass and this thread's start is not missed.
  unsigned long long seen = 0;
  while (attach_generation.load(std::memory_order_acquire) == generation) {
    watcher_doorbell.wait_for(watch_period_ns);
    const unsigned long long loaded = modules_loaded();
    if (loaded == seen) {
      continue;
    }
    const std::lock_guard lock(attach_mutex);
    if (attach_generation.load(std::memory_order_relaxed) == generation) {
      dl_iterate_phdr(patch_module, nullptr);
    }
    seen = loaded;
  }
  return nullptr;
}

void start_watcher(unsigned generation) {
  const hotscope::threads::SignalsBlocked blocked;
  pthread_t thread;
  if (pthread_create(&thread, nullptr, watch_new_modules,
                     reinterpret_cast<void*>(static_cast<std::uintptr_t>(generation))) == 0) {
    pthread_detach(thread);
  }
}

// This library's own definitions of the hooked functions (not the C library's, which a lookup
// from here finds first, this library being the last loaded).
bool own_definitions() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<const void*>(&own_definitions), &self) == 0) {
    return false;
  }
  patching.own_base = reinterpret_cast<std::uintptr_t>(self.dli_fbase);
  // Kept: this library is never unloaded, and dlclose would bring libhotscope's interposed one
  // (src/trace) into it.
  void* handle = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) {
    return false;
  }
  for (std::size_t hook = 0; hook < hooked_count; ++hook) {
    patching.ours[hook] = reinterpret_cast<std::uintptr_t>(dlsym(handle, hooked_names[hook]));
    if (patching.ours[hook] == 0) {
      return false;
    }
  }
  return true;
}

} // namespace

#define HOTSCOPE_EXPORT extern "C" __attribute__((visibility("default")))

HOTSCOPE_EXPORT int hotscope_heap_attach(void) {
  const interposer::Inside inside;
  const std::lock_guard lock(attach_mutex);
  if (!interposer::loaded_for_attach()) {
    return HOTSCOPE_ATTACH_PRELOADED;
  }
  if (attached) {
    return HOTSCOPE_ATTACH_ALREADY;
  }
  if (!interposer::resolve_real() || !own_definitions() ||
      interposer::start_attached_recording() == nullptr) {
    return HOTSCOPE_ATTACH_OFF;
  }
  dl_iterate_phdr(patch_module, nullptr);
  attached = true;
  start_watcher(attach_generation.load(std::memory_order_relaxed));
  return HOTSCOPE_ATTACH_DONE;
}

HOTSCOPE_EXPORT int hotscope_heap_detach(void) {
  {
    const interposer::Inside inside;
    const std::lock_guard lock(attach_mutex);
    if (!attached) {
      return HOTSCOPE_ATTACH_NOT_ATTACHED;
    }
    dl_iterate_phdr(restore_module, nullptr);
    slot_count = 0;
    attached = false;
    attach_generation.fetch_add(1, std::memory_order_release); // the watcher ends
  }
  watcher_doorbell.ring();
  interposer::write_report_now(); // recording stops; a later attach starts it again
  return HOTSCOPE_ATTACH_DONE;
}
