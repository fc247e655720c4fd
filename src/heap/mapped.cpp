// The profiler's growing tables, mapped directly (TableAllocator).
#include "heap/heap.hpp"

#include <sys/mman.h>

#include <new>

namespace hotscope::heap {

void* map_table(std::size_t bytes) {
  void* table = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (table == MAP_FAILED) {
    throw std::bad_alloc();
  }
  return table;
}

void unmap_table(void* table, std::size_t bytes) {
  munmap(table, bytes);
}

} // namespace hotscope::heap
