// Attach (`hotscope attach`, docs/heap.md "Attach to a running program"). Loaded by dlopen into a
// running process, this library's allocation functions are reached by nobody: every module's
// calls were bound to the C library's when it loaded. hotscope_heap_attach points the modules'
// GOT entries for them at this library's, as the dynamic loader does for a preloaded library;
// hotscope_heap_detach points them back and writes the profile.
#include "heap/interposer/interposer.hpp"
#include "heap/interposer/real_allocator.hpp"
#include "heap/interposer/recording.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

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
  bool read_only; // in the module's RELRO part, made read-only after its relocation
};

// Static storage: patching allocates nothing. A process rarely has more than a few hundred.
constexpr std::size_t max_slots = 8192;
Slot slots[max_slots];
std::size_t slot_count = 0;
bool attached = false;
std::mutex attach_mutex;

struct Patching {
  std::uintptr_t own_base;
  std::uintptr_t ours[hooked_count];
};

void write_entry(const Slot& slot, std::uintptr_t value) {
  const auto page_size = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  void* page =
      reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(slot.entry) & ~(page_size - 1));
  if (slot.read_only && mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0) {
    return;
  }
  __atomic_store_n(slot.entry, value, __ATOMIC_RELEASE);
  if (slot.read_only) {
    mprotect(page, page_size, PROT_READ);
  }
}

// An address from the dynamic section: the loader has relocated most entries, not all (vDSO).
std::uintptr_t dynamic_address(std::uintptr_t base, ElfW(Addr) value) {
  return value < base ? base + value : value;
}

// Finds, in the relocations [begin, begin + bytes), the GOT entries of the hooked functions.
void find_slots(const dl_phdr_info& info, const ElfW(Rela) * begin, std::size_t bytes,
                const ElfW(Sym) * symbols, const char* names, std::uintptr_t relro_begin,
                std::uintptr_t relro_end, const Patching& patching) {
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
      const std::uintptr_t entry = info.dlpi_addr + relocation.r_offset;
      Slot& slot = slots[slot_count++];
      slot.entry = reinterpret_cast<std::uintptr_t*>(entry);
      slot.original = __atomic_load_n(slot.entry, __ATOMIC_ACQUIRE);
      slot.read_only = entry >= relro_begin && entry < relro_end;
      write_entry(slot, patching.ours[hook]);
    }
  }
}

// dl_iterate_phdr's callback: patches one module, unless it is this library or the loader.
int patch_module(dl_phdr_info* info, std::size_t, void* context) {
  const auto& patching = *static_cast<const Patching*>(context);
  if (info->dlpi_addr == patching.own_base ||
      std::strstr(info->dlpi_name, "/ld-linux") != nullptr) {
    return 0;
  }
  const auto page_size = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const ElfW(Dyn)* dynamic = nullptr;
  std::uintptr_t relro_begin = 0;
  std::uintptr_t relro_end = 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + header.p_vaddr);
    } else if (header.p_type == PT_GNU_RELRO) {
      // The loader protects the whole pages within it.
      relro_begin = (info->dlpi_addr + header.p_vaddr) & ~(page_size - 1);
      relro_end = (info->dlpi_addr + header.p_vaddr + header.p_memsz) & ~(page_size - 1);
    }
  }
  if (dynamic == nullptr) {
    return 0;
  }
  const ElfW(Sym)* symbols = nullptr;
  const char* names = nullptr;
  const ElfW(Rela)* plt = nullptr;
  const ElfW(Rela)* data = nullptr;
  std::size_t plt_bytes = 0;
  std::size_t data_bytes = 0;
  const std::uintptr_t base = info->dlpi_addr;
  for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
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
    find_slots(*info, plt, plt_bytes, symbols, names, relro_begin, relro_end, patching);
  }
  if (data != nullptr) {
    find_slots(*info, data, data_bytes, symbols, names, relro_begin, relro_end, patching);
  }
  return 0;
}

// This library's own definitions of the hooked functions (not the C library's, which a lookup
// from here finds first, this library being the last loaded).
bool own_definitions(Patching& patching) {
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
  if (!interposer::loaded_for_attach) {
    return HOTSCOPE_ATTACH_PRELOADED;
  }
  if (attached) {
    return HOTSCOPE_ATTACH_ALREADY;
  }
  Patching patching{};
  if (!interposer::resolve_real() || !own_definitions(patching) ||
      interposer::start_attached_recording() == nullptr) {
    return HOTSCOPE_ATTACH_OFF;
  }
  dl_iterate_phdr(patch_module, &patching);
  attached = true;
  return HOTSCOPE_ATTACH_DONE;
}

HOTSCOPE_EXPORT int hotscope_heap_detach(void) {
  {
    const interposer::Inside inside;
    const std::lock_guard lock(attach_mutex);
    if (!attached) {
      return HOTSCOPE_ATTACH_NOT_ATTACHED;
    }
    // Newest first: an entry seen twice (GLOB_DAT and JUMP_SLOT) gets its first value back.
    for (std::size_t i = slot_count; i-- > 0;) {
      write_entry(slots[i], slots[i].original);
    }
    slot_count = 0;
    attached = false;
  }
  interposer::write_report_now(); // recording stops; a later attach starts it again
  return HOTSCOPE_ATTACH_DONE;
}
