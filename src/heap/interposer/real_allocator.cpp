#include "heap/interposer/real_allocator.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstring>

namespace hotscope::heap::interposer {

RealAllocator real;
std::atomic<int> real_state{Unresolved};
__thread int in_profiler = 0;
std::atomic<bool> keeping_own_blocks{false};
__thread bool starting_report_thread = false;
HOTSCOPE_LARGE_ZEROED alignas(4096) unsigned char arena[arena_size];
OwnCode own_code;

namespace {

std::atomic<std::size_t> arena_used{0};

template <class F> void look_up(F& function, const char* name) {
  function = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// dl_iterate_phdr's callback: adds the object's executable segments when one contains `address`.
int add_segments_containing(dl_phdr_info* info, std::size_t, void* address) {
  const auto wanted = reinterpret_cast<std::uintptr_t>(address);
  OwnCode found = own_code;
  bool contains = false;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && found.count < 8; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type == PT_LOAD && (header.p_flags & PF_X) != 0) {
      found.begin[found.count] = info->dlpi_addr + header.p_vaddr;
      found.end[found.count] = found.begin[found.count] + header.p_memsz;
      contains =
          contains || (wanted >= found.begin[found.count] && wanted < found.end[found.count]);
      ++found.count;
    }
  }
  if (contains) {
    own_code = found;
  }
  return contains ? 1 : 0;
}

} // namespace

void* arena_allocate(std::size_t size, std::size_t alignment) {
  alignment = std::max<std::size_t>(alignment, 16);
  std::size_t used = arena_used.load(std::memory_order_relaxed);
  for (;;) {
    const std::size_t start = (used + sizeof(std::size_t) + alignment - 1) & ~(alignment - 1);
    if (alignment > 4096 || start + size > arena_size || start + size < start) {
      return nullptr;
    }
    if (arena_used.compare_exchange_weak(used, start + size)) {
      std::memcpy(arena + start - sizeof(std::size_t), &size, sizeof(size));
      return arena + start;
    }
  }
}

void add_own_code(const void* address) {
  dl_iterate_phdr(add_segments_containing, const_cast<void*>(address));
}

std::size_t arena_block_size(const void* pointer) {
  std::size_t size = 0;
  std::memcpy(&size, static_cast<const unsigned char*>(pointer) - sizeof(size), sizeof(size));
  return size;
}

__attribute__((noinline)) bool resolve_real_slow() {
  int expected = Unresolved;
  if (!real_state.compare_exchange_strong(expected, Resolving)) {
    return false;
  }
  const Inside inside;
  look_up(real.malloc, "malloc");
  look_up(real.free, "free");
  look_up(real.calloc, "calloc");
  look_up(real.realloc, "realloc");
  look_up(real.memalign, "memalign");
  look_up(real.pthread_create, "pthread_create");
  add_own_code(reinterpret_cast<const void*>(&add_segments_containing));
  real_state.store(Resolved, std::memory_order_release);
  return true;
}

} // namespace hotscope::heap::interposer
