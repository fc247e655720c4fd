// libhotscope-heap.so (the CMake target hotscope::heap): the heap profiler linked into a
// program. The interposer (src/heap/interposer) does the C functions; this adds every
// operator new and delete form, so a `new` expression is recorded at its own call site whether
// or not libstdc++'s operator new would have called malloc. It records nothing until
// HOTSCOPE_HEAP_MODE=full or sampled, and writes heap.json at exit only where HOTSCOPE_OUT says.
#include "heap/interposer/interposer.hpp"

#include <malloc.h>

#include <cstddef>
#include <cstdlib>
#include <new>

const hotscope::heap::interposer::Flavour hotscope::heap::interposer::flavour{HOTSCOPE_HEAP_OFF,
                                                                              true};

namespace {

namespace interposer = hotscope::heap::interposer;

// One try: this library's, or the process's malloc when another heap library comes first (then
// that one records the block, as under `hotscope run --heap`).
void* try_block(std::size_t size, std::size_t alignment, const void* caller) {
  if (interposer::preceded()) {
    return alignment == 0 ? std::malloc(size) : memalign(alignment, size);
  }
  return alignment == 0 ? interposer::allocate(size, caller)
                        : interposer::allocate_aligned(alignment, size, caller);
}

void release_block(void* pointer, const void* caller) {
  if (interposer::preceded()) {
    std::free(pointer);
  } else {
    interposer::release(pointer, caller);
  }
}

// operator new's contract: retry through the new handler, throw std::bad_alloc without one.
void* new_block(std::size_t size, std::size_t alignment, const void* caller) {
  for (;;) {
    void* pointer = try_block(size, alignment, caller);
    if (pointer != nullptr) {
      return pointer;
    }
    const std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) {
      throw std::bad_alloc();
    }
    handler();
  }
}

void* new_block_or_null(std::size_t size, std::size_t alignment, const void* caller) noexcept {
  try {
    return new_block(size, alignment, caller);
  } catch (...) {
    return nullptr;
  }
}

std::size_t alignment_of(std::align_val_t alignment) {
  return static_cast<std::size_t>(alignment);
}

} // namespace

#define HOTSCOPE_CALLER __builtin_return_address(0)
#define HOTSCOPE_EXPORT __attribute__((visibility("default")))

HOTSCOPE_EXPORT void* operator new(std::size_t size) {
  return new_block(size, 0, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void* operator new[](std::size_t size) {
  return new_block(size, 0, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return new_block_or_null(size, 0, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return new_block_or_null(size, 0, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void* operator new(std::size_t size, std::align_val_t alignment) {
  return new_block(size, alignment_of(alignment), HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void* operator new[](std::size_t size, std::align_val_t alignment) {
  return new_block(size, alignment_of(alignment), HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void* operator new(std::size_t size, std::align_val_t alignment,
                                   const std::nothrow_t&) noexcept {
  return new_block_or_null(size, alignment_of(alignment), HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void* operator new[](std::size_t size, std::align_val_t alignment,
                                     const std::nothrow_t&) noexcept {
  return new_block_or_null(size, alignment_of(alignment), HOTSCOPE_CALLER);
}

// Every delete form frees the block; the size and alignment it is given are not needed.
HOTSCOPE_EXPORT void operator delete(void* pointer) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void operator delete[](void* pointer) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void operator delete(void* pointer, std::size_t) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void operator delete[](void* pointer, std::size_t) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void operator delete(void* pointer, const std::nothrow_t&) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void operator delete[](void* pointer, const std::nothrow_t&) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void operator delete(void* pointer, std::align_val_t) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void operator delete[](void* pointer, std::align_val_t) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void operator delete(void* pointer, std::size_t, std::align_val_t) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void operator delete[](void* pointer, std::size_t, std::align_val_t) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void operator delete(void* pointer, std::align_val_t,
                                     const std::nothrow_t&) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
HOTSCOPE_EXPORT void operator delete[](void* pointer, std::align_val_t,
                                       const std::nothrow_t&) noexcept {
  release_block(pointer, HOTSCOPE_CALLER);
}
